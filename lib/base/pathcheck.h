/* pathcheck.h: which tree paths and symlinks agentbox lets into /work.
 *
 * Every path of a git tree is checked before it is seeded into a
 * container's /work, and every entry read back from /work is checked
 * again.  The checks are lexical: they look at names, never at the
 * filesystem; ab_path_write_ok alone (a file change Codex asks agentbox
 * to approve) also walks it, through the lstat it is given.  The one
 * mount point inside /work is /work/.git, so the main job is keeping
 * anything from landing on, replacing or pointing into .git in any
 * spelling some filesystem (or git) takes for .git.
 */
#ifndef AB_PATHCHECK_H
#define AB_PATHCHECK_H

#include <stddef.h>
#include <sys/stat.h>

#include "err.h"

/* Longest path (relative to /work) and component accepted, in bytes. */
#define AB_PATHCHECK_PATH_MAX	4096
#define AB_PATHCHECK_NAME_MAX	255

/* Checks one tree path (relative to /work, '/'-separated, as git stores
 * it).  Refuses (AB_EREFUSED, naming the path) an empty or absolute path,
 * a trailing '/', an empty, "." or ".." component, a .git component (see
 * ab_is_dotgit), a control byte (< 0x20 or 0x7f), a backslash, a path
 * longer than 4096 bytes and a component longer than 255. */
int ab_path_check(const char *path, struct ab_err *err);

/* Checks a symlink at PATH (which must pass ab_path_check, and is checked
 * again) pointing at TARGET.  Refuses an empty or absolute target, one
 * longer than 4096 bytes, with a control byte or a backslash, with a .git
 * component anywhere, and one that, resolved lexically from the link's
 * own directory, ever climbs above /work.  Lexical resolution assumes each
 * component before a ".." is a directory, not another symlink: the caller
 * still has to open what it reads under /work beneath /work (openat2
 * RESOLVE_BENEATH or O_NOFOLLOW walks). */
int ab_symlink_check(const char *path, const char *target,
    struct ab_err *err);

/* Each target checked by ab_symlink_check holds only if no component
 * before a ".." is itself a symlink of the tree, which would put the walk
 * elsewhere ("s" -> ".", "l" -> "s/../x").  LINKS are the tree's symlink
 * paths, sorted with ab_path_cmp (a qsort comparator of char *). */
int ab_link_chain_check(const char *path, const char *target,
    const char *const *links, size_t n, struct ab_err *err);
int ab_path_cmp(const void *a, const void *b);

/* 1 when component c[0..n) (not NUL-terminated) names .git somewhere:
 * any case, trailing dots and spaces (NTFS drops them), the 8.3 short name
 * git~1, an NTFS stream suffix (".git::$INDEX_ALLOCATION") and the
 * code points HFS+ ignores (".g\u200cit"); 0 otherwise. */
int ab_is_dotgit(const char *c, size_t n);

/* 0 when PATH (absolute) may be written by an accepted file change:
 * under ROOT, no empty, "." or ".." component, no .git component in any
 * spelling (ab_is_dotgit) and no .codex, no control byte, and, walking
 * from ROOT with LSTAT, every component that exists a real directory
 * (the last one a regular file) and none a symbolic link.  -1 otherwise,
 * with the reason in why. */
int ab_path_write_ok(const char *root, const char *path,
    int (*lstat_fn)(const char *, struct stat *), char *why, size_t cap);

#endif
