/* worklist.h: /work listed from inside the allocation, by name.
 *
 * The engine's tar of /work leaves out, without a word, a Unix socket
 * and anything whose path is longer than PATH_MAX (a directory tree 371
 * levels deep): the archive alone cannot tell that anything is missing.
 * It reads a sparse file's holes as zeros: a 1 TiB file of holes costs
 * nothing to make and would cost a terabyte to read.  And an archive
 * request for one entry names it as the engine's JSON stat does, a name
 * that is not UTF-8 made into another.  So a short locked container
 * (network none, no capability, the task and git volumes read-only,
 * nothing else) runs the image's find(1) and stat(1) over /work first,
 * naming every path but /work/.git's with its type, each regular file
 * and directory with its size, links, inode, permissions and change
 * time, and the seed's mark's change time (seed.h), by which ab-export
 * knows the files the agent never touched; what find could not reach is
 * reported.  The listing is what
 * ab-export accounts for: every entry of it is read or named.  Its
 * output is the agent's doing and read as hostile bytes, through an
 * attach (oneshot.h), so names stay bytes.
 */
#ifndef AB_WORKLIST_H
#define AB_WORKLIST_H

#include "alloc.h"
#include "engine.h"
#include "err.h"
#include "listing.h"
#include "oneshot.h"
#include "state.h"

/* The most bytes of names and sizes kept: 200,000 paths of 120 bytes
 * fit.  A listing past it is refused: what it left out is not known. */
#define AB_WORKLIST_MAX (32LL << 20)

/* Called with a path relative to /work and why the listing could not
 * reach it. */
typedef void (*ab_worklist_found)(void *ctx, const char *path,
    const char *why);

struct ab_worklist {
	struct ab_oneshot o;	/* its output holds the names */
	struct ab_listing l;
};

/* Lists /work.  Each path find could not reach goes to FOUND; a
 * complaint that names no path, a listing past its bound or not as
 * find and stat print it is a refusal. */
int ab_worklist_open(struct ab_worklist *w, struct ab_state *s,
    struct ab_engine *e, const struct ab_alloc *a, ab_worklist_found found,
    void *ctx, struct ab_err *err);
void ab_worklist_close(struct ab_worklist *w);

#endif
