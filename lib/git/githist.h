/* githist.h: the commit's history, packed and checked by this host's git.
 *
 * libgit2's packbuilder computes every delta anew, on one thread: git's own
 * repository (850,000 objects) took 15 minutes where git clone takes 43 s.
 * git pack-objects sends the deltas the source's packs already hold, as
 * they are stored, so the history is walked and packed by it, and checked
 * and indexed by git index-pack, as git clone does.  Both are the host's
 * git, run with an environment and a configuration of ours alone:
 *  - GIT_DIR is the staging clone (whose config libgit2 wrote); the source
 *    is only GIT_OBJECT_DIRECTORY, so its config, hooks, refs, grafts,
 *    replace refs and shallow file are never read, and nothing of it runs;
 *  - no system or user configuration; the source's commit-graph,
 *    multi-pack index and bitmaps are not used (they could lie about a
 *    commit's parents or a pack's contents), and the limits that decide
 *    memory are pinned;
 *  - index-pack hashes every object it is given, and
 *    --check-self-contained-and-connected makes it refuse a pack that lacks
 *    an object one of its objects names ("did not receive expected object
 *    ID"): a damaged or forged object of the source arrives under another
 *    name and leaves its own missing.  A pack that cannot even be decoded is
 *    traced to the source entry whose stored bytes changed (packcheck.h).
 * The copy is the objects reachable from the commit, down to the commits
 * listed in the staging clone's shallow file when there is one: nothing of
 * another branch.
 */
#ifndef AB_GITHIST_H
#define AB_GITHIST_H

#include "err.h"

struct ab_git_hist {
	const char *objects;	/* the source repository's object directory */
	const char *stage;	/* the staging clone (gitstage.h) */
	const char *tip;	/* the commit, 40 hex digits */
	long long max_bytes;	/* the largest pack accepted; 0: any */
	/* Asked about five times a second; nonzero ends the copy, as a
	 * failure, with both processes killed. */
	int (*stop)(void *arg);
	void *arg;
	/* git's counting and writing lines, at most one a second; NULL:
	 * none. */
	void (*progress)(const char *line);
};

/* Packs the history into the staging clone's objects/pack.  The pack and
 * its index are git's own (deltas as the source stored them). */
int ab_git_history(const struct ab_git_hist *h, struct ab_err *err);

#endif
