/* changeout.h: the change between two trees of a repository, written out
 * as a binary git patch or a v2 git bundle, whatever its files' sizes.
 *
 * libgit2 holds a blob whole, with its deflated copy and its base85 text,
 * to print a binary diff, and whole with its deltas to pack it: ab-export
 * cost 3.4 times its largest file.  Here a blob over AB_CHANGE_STREAM_AT
 * goes out through gitstream.h, a few buffers at a time, and the bundle's
 * pack holds whole objects streamed the same way; libgit2 prints the rest.
 */
#ifndef AB_CHANGEOUT_H
#define AB_CHANGEOUT_H

#include <git2.h>

#include "err.h"

/* The largest blob libgit2 is given to print. */
#define AB_CHANGE_STREAM_AT (4LL << 20)

/* A patch from BASE to TREE that `git apply` applies to a checkout of
 * BASE; an empty change writes nothing. */
int ab_change_patch(git_repository *repo, git_tree *base, git_tree *tree,
    int fd, struct ab_err *err);

/* A bundle of one commit on PARENT with TREE and MESSAGE, author and
 * committer "agentbox", named refs/heads/agentbox, PARENT its
 * prerequisite; its pack holds what PARENT's tree does not. */
int ab_change_bundle(git_repository *repo, git_commit *parent, git_tree *tree,
    const char *message, int fd, struct ab_err *err);

#endif
