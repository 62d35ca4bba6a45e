/* file.h: reading and writing files the careful way.
 *
 * Reads open with O_NOFOLLOW, refuse anything but a regular file, and are
 * bounded: a file that is (or grows) larger than the bound is refused, not
 * read past it.  Writes go to a temporary name, are fsynced and renamed,
 * so a crash never leaves half a file under the real name.
 */
#ifndef AB_FILE_H
#define AB_FILE_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "buf.h"
#include "err.h"

/* Reads at most cap-1 bytes of PATH into buf (NUL-terminated). */
int ab_file_read_small(const char *path, char *buf, size_t cap, size_t *n,
    struct ab_err *err);
/* Reads NAME relative to DIRFD (AT_FDCWD for a path) into b, whose max is
 * the bound.  With st non-NULL, the opened file's stat is returned. */
int ab_file_read_at(int dirfd, const char *name, struct ab_buf *b,
    struct stat *st, struct ab_err *err);
/* Writes DATA as NAME in DIRFD atomically with MODE.  PAUSE names the
 * AB_TEST_PAUSE point between the fsync and the rename (or NULL). */
int ab_file_write_at(int dirfd, const char *name, const void *data,
    size_t len, mode_t mode, const char *pause, struct ab_err *err);
/* Writes all of P to FD, retrying short writes and EINTR. */
int ab_write_all(int fd, const void *p, size_t n);
/* LOCK_EX on FD (flock(2)), waiting at most MS for another holder: a
 * holder stopped while it holds the lock costs a bounded wait, not the
 * deadline.  0, or -1 with errno. */
int ab_flock_within(int fd, long ms);
/* The lock of file NAME under DIRFD, made if missing, within MS: its fd,
 * or -1 with errno (EWOULDBLOCK when another held it all along).
 * ab_flock_drop unlinks NAME and lets go, so no lock file outlives its
 * holder's work. */
int ab_flock_name(int dirfd, const char *name, long ms);
void ab_flock_drop(int dirfd, const char *name, int fd);

/* rm -r of NAME under directory AT, never following a symbolic link out
 * of it; 0 also when NAME was not there. */
int ab_remove_tree(int at, const char *name);

#endif
