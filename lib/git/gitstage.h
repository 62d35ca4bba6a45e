/* gitstage.h: the objects of a staging clone (the seeded /work/.git).
 *
 * The commit and its history are copied out of the source repository by
 * object ID, never as files.  With --depth 1, the commit alone, by this
 * module:
 *  - the tip commit, its trees and its blobs up to AB_GIT_BIG bytes, whole,
 *    in a pack of our own (gitpack.h): deltas there would save little, as
 *    a tip's files are mostly unlike each other, and cost most of the
 *    time;
 *  - each larger blob as a loose object of our own (zlib at its fastest
 *    setting, or stored when it does not compress).
 * A small history (SMALL_OBJECTS and SMALL_BYTES, gitstage.c) is packed
 * the same way, whole.  A larger one is one pack that git pack-objects
 * makes from the deltas the source already stores and git index-pack
 * checks (githist.h), as git clone does.
 */
#ifndef AB_GITSTAGE_H
#define AB_GITSTAGE_H

#include <stddef.h>

#include "err.h"
#include "git.h"

/* 1 when libgit2 is safe to use from two threads at once (each with its
 * own repository handle). */
int ab_git_threads(void);
/* Makes STAGE an empty bare repository. */
int ab_git_stage_init(const char *stage, struct ab_err *err);
/* What ab_git_stage is given besides the repository.  With feed
 * (gitfeed.h), the tip's pack is written by a thread of its own, from
 * the blobs the upload offers there and reads of its own.  With tree,
 * the tip's objects are taken from the upload's listing, which tree(arg)
 * waits for (NULL: stopped); without, they are listed here.  stop(arg),
 * when set, is asked now and then and ends the copy (as a failure) when
 * nonzero. */
struct ab_git_feed;
struct ab_git_tree;
struct ab_git_stage_io {
	struct ab_git_feed *feed;
	const struct ab_git_tree *(*tree)(void *arg);
	int (*stop)(void *arg);
	void *arg;
	/* 0: the whole history; N: the tip and N - 1 generations, with a
	 * shallow file listing where the history stops. */
	long depth;
	/* The git filesystem's byte ceiling: a larger history is refused
	 * before it is written out whole. */
	long long max_bytes;
	/* Progress lines of the history's copy (githist.h), or NULL. */
	void (*progress)(const char *line);
};

/* Copies the commit and its history from the repository at DIR into
 * STAGE.  Safe to run in a thread of its own. */
int ab_git_stage(const char *dir, const char *oid, const char *stage,
    const struct ab_git_stage_io *io, struct ab_err *err);

#endif
