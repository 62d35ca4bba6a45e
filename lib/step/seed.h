/* seed.h: the trusted commit into an allocation's volumes (ab-seed). */
#ifndef AB_SEED_H
#define AB_SEED_H

#include "alloc.h"
#include "engine.h"
#include "err.h"
#include "image.h"
#include "state.h"

struct ab_seed_opts {
	const char *repo, *rev, *expect;
	long depth;		/* 0: the whole history (gitstage.h) */
	ab_progress progress;
};

int ab_seed(struct ab_state *s, struct ab_engine *e, struct ab_alloc *a,
    const struct ab_seed_opts *o, struct ab_err *err);

/* The seed's mark, written after everything else of the seed, on the git
 * volume, which no agent ever mounts writable: its change time, set by
 * the kernel, is the moment after which any change to /work is the
 * agent's (worklist.h).  AB_SEED_MARK_DIR/AB_SEED_MARK_SUB/..._NAME. */
#define AB_SEED_MARK_DIR "/work/.git"
#define AB_SEED_MARK_SUB "agentbox"
#define AB_SEED_MARK_NAME "seeded"
#define AB_SEED_MARK AB_SEED_MARK_DIR "/" AB_SEED_MARK_SUB "/" \
    AB_SEED_MARK_NAME

#endif
