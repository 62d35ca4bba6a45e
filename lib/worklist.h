/* worklist.h: what in an allocation's /work the engine's archive cannot
 * carry, found by listing /work from inside.
 *
 * The engine's tar of /work leaves out, without a word, a Unix socket
 * and anything whose path is longer than PATH_MAX (a directory tree 371
 * levels deep): the archive alone cannot tell that anything is missing.
 * So a short locked container (network none, no capability, the task
 * volume read-only, nothing else) runs the image's find(1) over /work,
 * and each socket it lists, and each path it could not reach, is
 * reported.  Its output is the agent's doing and read as hostile bytes.
 */
#ifndef AB_WORKLIST_H
#define AB_WORKLIST_H

#include "alloc.h"
#include "engine.h"
#include "err.h"
#include "state.h"

/* Called with a path relative to /work (or "." for /work itself) and
 * why the archive cannot carry it. */
typedef void (*ab_worklist_found)(void *ctx, const char *path,
    const char *why);

int ab_worklist_unarchivable(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, ab_worklist_found found, void *ctx,
    struct ab_err *err);

#endif
