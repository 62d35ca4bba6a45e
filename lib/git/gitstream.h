/* gitstream.h: git objects written out as streams, never held whole:
 * what ab-export writes costs a few buffers whatever a file's size.
 *
 * A loose object is read from its file (objects/xx/yyyy) and inflated as
 * it comes: libgit2's loose read stream (1.5.1) maps the whole file, and
 * the mapped pages count as memory (an incompressible 1 GiB blob: 1 GiB),
 * and its inflater never returns from a truncated file.
 * An object that is not loose (packed, or an alternate's) is read whole by
 * libgit2, which inflates packed objects whole: one at a time.  Every
 * object is hashed as it streams and refused when it does not match its
 * name, its header's size or its type.  On failure FD holds a partial
 * hunk or pack: the caller discards it.
 */
#ifndef AB_GITSTREAM_H
#define AB_GITSTREAM_H

#include <git2.h>
#include <stddef.h>

#include "err.h"

/* The forward hunk of a "GIT binary patch" for blob ID of REPO:
 * "literal SIZE\n", the deflated blob in git's base85 lines, an empty
 * line.  A NULL or zero ID writes "literal 0" and the empty stream (a
 * deletion's forward hunk).  Called once more with the old blob, it
 * writes the reverse hunk git itself adds. */
int ab_gitstream_literal(git_repository *repo, const git_oid *id, int fd,
    struct ab_err *err);

/* A version 2 pack of the N distinct objects IDS of REPO, each whole (no
 * deltas), to FD, its SHA-1 last.  Memory grows with N (20 bytes each),
 * not with the objects' sizes. */
int ab_gitstream_pack(git_repository *repo, const git_oid *ids, size_t n,
    int fd, struct ab_err *err);

#endif
