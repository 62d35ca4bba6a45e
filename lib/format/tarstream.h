/* tarstream.h: a tar archive produced on demand, for an upload body.
 *
 * curl reads; instead of a thread or a temporary file, each read asks the
 * source for the next piece (one header, or one chunk of one file) and
 * hands out its bytes, so the archive is never held whole in memory or on
 * disk.  Paths are bytes, written as they are (ustar, and pax records for
 * long ones).
 */
#ifndef AB_TARSTREAM_H
#define AB_TARSTREAM_H

#include <stddef.h>

#include "err.h"

enum ab_tar_type { AB_TAR_FILE, AB_TAR_DIR, AB_TAR_SYMLINK };

struct ab_tar_entry {
	const char *path;	/* relative, no leading slash */
	enum ab_tar_type type;
	unsigned mode;		/* permission bits */
	unsigned uid, gid;
	long long size;		/* files only */
	const char *link;	/* symlinks only */
	long long mtime;
};

struct ab_tar_source {
	/* 1 with *e filled, 0 at the end, -1 on error. */
	int (*next)(void *ctx, struct ab_tar_entry *e, struct ab_err *err);
	/* The current file's bytes: count, 0 at its end, -1 on error. */
	long (*data)(void *ctx, char *p, size_t n, struct ab_err *err);
	void *ctx;
};

struct ab_tar;

int ab_tar_open(struct ab_tar **t, const struct ab_tar_source *src,
    struct ab_err *err);
/* An ab_reader (engine.h) over the archive bytes. */
long ab_tar_read(void *t, char *p, size_t n, struct ab_err *err);
void ab_tar_close(struct ab_tar *t);

#endif
