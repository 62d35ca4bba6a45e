#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"

/* A new file beside o->target, with the mode open(2) would have given. */
static int replace(struct ab_outfile *o, const char *shown,
    struct ab_err *err)
{
	mode_t mask;

	if (ab_fmt(o->tmp, sizeof o->tmp, "%s.ab-XXXXXX", o->target) < 0)
		return ab_fail(err, AB_EUSAGE, "%.200s: path too long", shown);
	o->fd = mkostemp(o->tmp, O_CLOEXEC);
	if (o->fd < 0)
		return ab_fail_errno(err, AB_EUSAGE, "cannot write beside "
		    "%.200s", shown);
	mask = umask(0);
	umask(mask);
	(void)fchmod(o->fd, 0666 & ~mask);
	o->replace = 1;
	return 0;
}

/* Written through, never created or truncated.  A FIFO with no reader
 * is refused at once rather than waited for past any deadline. */
static int through(struct ab_outfile *o, const char *shown,
    struct ab_err *err)
{
	int fl;

	o->fd = open(o->target, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (o->fd < 0 && errno == ENXIO)
		return ab_fail(err, AB_EUSAGE, "%.200s: a FIFO with no reader",
		    shown);
	if (o->fd < 0)
		return ab_fail_errno(err, AB_EUSAGE, "cannot open %.200s",
		    shown);
	fl = fcntl(o->fd, F_GETFL);
	if (fl < 0 || fcntl(o->fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return ab_fail_errno(err, AB_EUSAGE, "cannot open %.200s",
		    shown);
	return 0;
}

int ab_outfile_open(struct ab_outfile *o, const char *path,
    struct ab_err *err)
{
	struct stat st;

	memset(o, 0, sizeof *o);
	o->fd = -1;
	if (strcmp(path, "-") == 0) {
		o->fd = STDOUT_FILENO;
		return ab_fmt_err(err, o->target, sizeof o->target,
		    "the output's name", "standard output");
	}
	if (lstat(path, &st) < 0 && errno == ENOENT) {
		if (ab_fmt(o->target, sizeof o->target, "%s", path) < 0)
			return ab_fail(err, AB_EUSAGE, "%.200s: path too long",
			    path);
		return replace(o, path, err);
	}
	if (realpath(path, o->target) == NULL || stat(o->target, &st) < 0)
		return ab_fail_errno(err, AB_EUSAGE, "%.200s", path);
	if (S_ISREG(st.st_mode))
		return replace(o, path, err);
	if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
		return through(o, path, err);
	return ab_fail(err, AB_EUSAGE, "%.200s is not a regular file, a "
	    "character device or a FIFO", path);
}

int ab_outfile_commit(struct ab_outfile *o, struct ab_err *err)
{
	int rc = 0;

	if (o->fd < 0 || o->fd == STDOUT_FILENO)
		return 0;
	if (o->replace && fsync(o->fd) < 0)
		rc = ab_fail_errno(err, AB_EENGINE, "cannot write %.200s",
		    o->target);
	if (close(o->fd) < 0 && rc == 0)
		rc = ab_fail_errno(err, AB_EENGINE, "cannot write %.200s",
		    o->target);
	o->fd = -1;
	if (o->replace && rc == 0 && rename(o->tmp, o->target) < 0)
		rc = ab_fail_errno(err, AB_EENGINE, "cannot rename to %.200s",
		    o->target);
	if (o->replace && rc < 0)
		unlink(o->tmp);
	o->replace = 0;
	return rc;
}

void ab_outfile_abort(struct ab_outfile *o)
{
	if (o->fd >= 0 && o->fd != STDOUT_FILENO)
		close(o->fd);
	if (o->replace)
		unlink(o->tmp);
	o->fd = -1;
	o->replace = 0;
}
