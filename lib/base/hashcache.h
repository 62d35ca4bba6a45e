/* hashcache.h: SHA-256s of files, known again by their identity.
 *
 * Reusing a registered image must know the recipe's hash, which covers
 * every input's bytes: 1.1 GB for the agents recipe (its wheels and what
 * was taken out of them), some 1.2 s a task.  A file whose device, inode,
 * size, mtime and ctime are those it had when it was hashed still has
 * that hash: no write leaves the ctime as it was, and only the clock (root)
 * can set it back.  As git does for "racily clean" index entries, a file
 * whose mtime or ctime is less than AB_HC_SETTLE seconds older than the
 * hash is not recorded, since a write in the same clock tick would go
 * unseen.
 *
 * The cache is one file of the state directory (AB_HC_FILE), as trusted
 * as the image records beside it.  It is only ever a shortcut: one that
 * cannot be read, or a line that cannot be parsed, is as if empty, so the
 * file is hashed.  Concurrent writers each rename a whole file; the loser's
 * entries cost one hash later.
 */
#ifndef AB_HASHCACHE_H
#define AB_HASHCACHE_H

#include <stddef.h>
#include <sys/stat.h>

#include "err.h"

#define AB_HC_FILE "hashes"
#define AB_HC_MAX 1024		/* entries kept */
#define AB_HC_SETTLE 2		/* seconds */

struct ab_hc_entry {
	char *path;
	char sha[65];
	unsigned long long dev, ino;
	long long size, mtime_ns, ctime_ns;
	int used;		/* looked up or recorded by this process */
};

struct ab_hashcache {
	int dirfd;		/* not owned */
	struct ab_hc_entry *e;
	size_t n;
	int dirty;
	int hits;		/* files answered for without a read */
};

/* Reads AB_HC_FILE under DIRFD; never fails (see above). */
void ab_hc_load(struct ab_hashcache *c, int dirfd);
/* The SHA-256 (hex) of the open regular file FD, named PATH for the
 * cache, whose fstat is ST: from the cache when the identity matches,
 * else read from FD's start and hashed (and recorded when settled).  C
 * may be NULL: always read.  -1 with err when reading fails or the file
 * changed while it was read. */
int ab_hc_file(struct ab_hashcache *c, int fd, const char *path,
    const struct stat *st, char sha[65], struct ab_err *err);
/* Writes the cache back when it changed. */
int ab_hc_save(struct ab_hashcache *c, struct ab_err *err);
void ab_hc_free(struct ab_hashcache *c);

#endif
