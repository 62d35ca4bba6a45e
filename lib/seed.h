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

/* The staging clone of allocation a: $STATE/stage/ID. */
int ab_stage_path(const struct ab_state *s, const struct ab_alloc *a,
    char *out, size_t cap);
/* Refuses a staging clone that is not the one ab-seed recorded. */
int ab_stage_check(const char *stage, const struct ab_alloc *a,
    struct ab_err *err);
/* The allocation's keeper is running and locked as it was created. */
int ab_keeper_ready(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, struct ab_err *err);
/* One file of one invocation on the keeper's volumes: DIR/SUB/NAME, DIR
 * a volume's mount point, SUB the invocation's own directory.  Both SUB
 * and NAME are owned by UID and GID, with their modes. */
struct ab_keeper_file {
	const char *dir;
	char sub[AB_ID_LEN + 1];
	char name[128];
	unsigned uid, gid, sub_mode, mode;
};

/* Puts f through the running, locked keeper, replacing what was there:
 * SUB first (made, or its owner and mode set again), then NAME. */
int ab_keeper_put(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_keeper_file *f,
    const char *data, size_t len, struct ab_err *err);
/* The same for N files of one DIR and SUB, in one upload: each upload
 * costs the engine its lock, the mounts and an unpacking process. */
struct ab_keeper_item {
	struct ab_keeper_file f;
	const char *data;
	size_t len;
};
int ab_keeper_put_all(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_keeper_item *f, int n,
    struct ab_err *err);
/* Puts f through the running, locked proxy onto the egress volume, as
 * ab_keeper_put does through the keeper: the vault's files (vault.h),
 * which no volume of the keeper holds. */
int ab_proxy_put(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_keeper_file *f,
    const char *data, size_t len, struct ab_err *err);
/* The same for N files of one DIR and SUB, in one upload. */
int ab_proxy_put_all(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_keeper_item *f, int n,
    struct ab_err *err);
/* Reads back FILE, a regular file on the keeper's volumes, into b (at
 * most b->max bytes). */
int ab_keeper_get(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const char *file, struct ab_buf *b,
    struct ab_err *err);
/* Reads back FILE, a regular file of the proxy's egress volume (the
 * vault's, which the proxy's uid alone may read inside), into b. */
int ab_proxy_get(struct ab_engine *e, const struct ab_alloc *a,
    const char *file, struct ab_buf *b, struct ab_err *err);

#endif
