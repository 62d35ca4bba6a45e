/* worklist.h: /work listed from inside the allocation, by name.
 *
 * The engine's tar of /work leaves out, without a word, a Unix socket
 * and anything whose path is longer than PATH_MAX (a directory tree 371
 * levels deep): the archive alone cannot tell that anything is missing.
 * And it reads a sparse file's holes as zeros: a 1 TiB file of holes
 * costs nothing to make and would cost a terabyte to read.  So a short
 * locked container (network none, no capability, the task volume
 * read-only, nothing else) runs the image's find(1) over /work first,
 * naming every path but /work/.git's and marking each socket and each
 * regular file over a size; what find could not reach is reported.  Its
 * output is the agent's doing and read as hostile bytes, through an
 * attach (oneshot.h), so names stay bytes.
 */
#ifndef AB_WORKLIST_H
#define AB_WORKLIST_H

#include "alloc.h"
#include "engine.h"
#include "err.h"
#include "oneshot.h"
#include "state.h"

/* The most bytes of names kept: 200,000 paths of 80 bytes fit. */
#define AB_WORKLIST_MAX (32LL << 20)

enum ab_work_kind { AB_WORK_ENTRY, AB_WORK_SOCKET, AB_WORK_BIG };

/* Called with a path relative to /work (or "." for /work itself) and
 * why the archive cannot carry it. */
typedef void (*ab_worklist_found)(void *ctx, const char *path,
    const char *why);

struct ab_worklist {
	struct ab_oneshot o;
	size_t pos;
	int cut;		/* more names came than AB_WORKLIST_MAX */
};

/* Lists /work, marking regular files of more than MAX_FILE bytes as big.
 * Each path find could not reach goes to FOUND. */
int ab_worklist_open(struct ab_worklist *w, struct ab_state *s,
    struct ab_engine *e, const struct ab_alloc *a, long long max_file,
    ab_worklist_found found, void *ctx, struct ab_err *err);
/* 1 with the next path (relative to /work, never "." ) and its kind, 0
 * at the end, -1 when the listing is not what find prints. */
int ab_worklist_next(struct ab_worklist *w, const char **path,
    enum ab_work_kind *kind, struct ab_err *err);
void ab_worklist_rewind(struct ab_worklist *w);
void ab_worklist_close(struct ab_worklist *w);

#endif
