/* worktar.h: chosen entries of /work, archived from inside the
 * allocation in one stream.
 *
 * The engine's archive endpoint takes one path a request, and each
 * request costs some 40 ms on an engine of fuse-overlayfs: reading a
 * hundred changed files one by one costs seconds, and reading /work
 * whole costs its every byte.  So a short locked container, as the
 * listing's (worklist.h: network none, no capability, the task volume
 * read-only, nothing else), runs agentbox's busybox tar over the paths
 * asked for, and its standard output, an archive, is read as it comes
 * through an attach (mux.h), as hostile bytes, by the same reader and
 * within the same bound as the engine's archive (tarread.h).
 *
 * The paths go into the container's command, so each must be UTF-8
 * (the engine's JSON would change the other bytes) and all together
 * within AB_WORKTAR_ARGS bytes.  What the tar could not carry (a file
 * the agent made unreadable to its own uid, say) is simply absent from
 * the archive: the caller reads it another way.
 */
#ifndef AB_WORKTAR_H
#define AB_WORKTAR_H

#include "alloc.h"
#include "buf.h"
#include "engine.h"
#include "err.h"
#include "mux.h"
#include "state.h"
#include "tarread.h"

/* The paths' bytes one container's command takes, well under the
 * kernel's bound on a program's arguments (ARG_MAX). */
#define AB_WORKTAR_ARGS (256 * 1024)

struct ab_worktar {
	struct ab_engine *e;
	struct ab_tarread *tr;	/* the archive: read it with tarread.h */
	struct ab_stream att;
	struct ab_mux mux;
	struct ab_buf errb;	/* tar's complaints, bounded, unread */
	char name[96];
	const char *sid, *alloc;
	int created;
};

/* Starts the archive of PATHS (N, relative to /work, each a UTF-8 text,
 * their bytes within AB_WORKTAR_ARGS), its entries named "work/PATH",
 * a folder with what it holds; MAX bounds the bytes read.  On failure
 * nothing is left to close. */
int ab_worktar_open(struct ab_worktar *w, struct ab_state *s,
    struct ab_engine *e, const struct ab_alloc *a, char *const *paths,
    size_t n, long long max, struct ab_err *err);
/* Removes the container, whether or not the archive was read to its
 * end; -1 only when the engine would not remove it. */
int ab_worktar_close(struct ab_worktar *w, struct ab_err *err);

#endif
