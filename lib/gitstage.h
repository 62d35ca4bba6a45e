/* gitstage.h: the objects of a staging clone (the seeded /work/.git).
 *
 * The commit and its history are copied out of the source repository by
 * object ID, never as files: one pack written anew by libgit2's
 * packbuilder for everything up to AB_GIT_BIG bytes, and each larger blob
 * as a loose object of our own (zlib at its fastest setting, or stored
 * when it does not compress).  libgit2 deflates a pack at zlib's default
 * level with no setting to change it, which for a few 50 MiB blobs was
 * most of a seeding; blobs this big are never delta-searched anyway.
 */
#ifndef AB_GITSTAGE_H
#define AB_GITSTAGE_H

#include "err.h"

#define AB_GIT_BIG (1024 * 1024)

/* 1 when libgit2 is safe to use from two threads at once (each with its
 * own repository handle). */
int ab_git_threads(void);
/* Makes STAGE an empty bare repository. */
int ab_git_stage_init(const char *stage, struct ab_err *err);
/* Copies the commit and its history from the repository at DIR into
 * STAGE.  Safe to run in a thread of its own; stop(arg), when given, is
 * asked now and then and ends the copy (as a failure) when nonzero. */
int ab_git_stage(const char *dir, const char *oid, const char *stage,
    int (*stop)(void *), void *arg, struct ab_err *err);

#endif
