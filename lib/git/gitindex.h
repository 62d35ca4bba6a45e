/* gitindex.h: the seeded /work/.git/index, written from the tree's
 * listing (git.h) rather than by libgit2, which read every tree back out
 * of the staging clone to build it: a tenth of a seeding's CPU.
 *
 * Index version 2, as git read-tree writes it: an entry a file, symlink
 * or gitlink, in git's order, with no stat data (so git inside rehashes,
 * as before), and the TREE extension (the cache of tree IDs).
 */
#ifndef AB_GITINDEX_H
#define AB_GITINDEX_H

#include "err.h"
#include "git.h"

/* Refuses a listing that is not in git's order, by path bytes, each file
 * once: a damaged tree, which git fsck calls treeNotSorted.  Called
 * before the first byte is sent. */
int ab_git_index_check(const struct ab_git_tree *t, struct ab_err *err);
/* Writes STAGE/index for the checked listing, under a temporary name and
 * then renamed. */
int ab_git_index_write(const struct ab_git_tree *t, const char *stage,
    struct ab_err *err);

#endif
