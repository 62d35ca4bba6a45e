#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "testhook.h"

static int open_regular(int dirfd, const char *name, struct stat *st,
    struct ab_err *err)
{
	int fd;

	/* O_NONBLOCK so a FIFO planted under the name cannot hang us. */
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
	    O_NONBLOCK);
	if (fd < 0) {
		if (errno == ELOOP)
			return ab_fail(err, AB_EREFUSED,
			    "%s is a symbolic link", name);
		return ab_fail_errno(err, AB_EENGINE, "cannot open %s", name);
	}
	if (fstat(fd, st) < 0) {
		close(fd);
		return ab_fail_errno(err, AB_EENGINE, "cannot stat %s", name);
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		return ab_fail(err, AB_EREFUSED, "%s is not a regular file",
		    name);
	}
	return fd;
}

/* Reads until EOF or until more than max bytes arrived. */
static int read_bounded(int fd, const char *name, struct ab_buf *b,
    struct ab_err *err)
{
	char chunk[8192];
	ssize_t r;

	for (;;) {
		r = read(fd, chunk, sizeof chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return ab_fail_errno(err, AB_EENGINE, "cannot read %s",
			    name);
		if (r == 0)
			return 0;
		if (ab_buf_add(b, chunk, (size_t)r) < 0) {
			if (b->over)
				return ab_fail(err, AB_EREFUSED,
				    "%s is larger than %zu bytes", name,
				    b->max);
			return ab_fail(err, AB_EENGINE, "out of memory");
		}
	}
}

int ab_file_read_at(int dirfd, const char *name, struct ab_buf *b,
    struct stat *st, struct ab_err *err)
{
	struct stat sb;
	int fd, rc;

	fd = open_regular(dirfd, name, &sb, err);
	if (fd < 0)
		return -1;
	rc = read_bounded(fd, name, b, err);
	close(fd);
	if (rc == 0 && st != NULL)
		*st = sb;
	return rc;
}

int ab_file_read_small(const char *path, char *buf, size_t cap, size_t *n,
    struct ab_err *err)
{
	struct ab_buf b;

	ab_buf_init(&b, cap - 1);
	if (ab_file_read_at(AT_FDCWD, path, &b, NULL, err) < 0) {
		ab_buf_free(&b);
		return -1;
	}
	*n = b.len;
	memcpy(buf, b.data ? b.data : "", b.len + 1);
	ab_buf_free(&b);
	return 0;
}

int ab_write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	ssize_t w;

	while (n > 0) {
		w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int ab_file_write_at(int dirfd, const char *name, const void *data,
    size_t len, mode_t mode, const char *pause, struct ab_err *err)
{
	unsigned char rnd[8];
	char tmp[512];
	int fd;

	if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd)
		return ab_fail_errno(err, AB_EENGINE, "getrandom");
	/* Temporary names start with a dot: never a handle, never listed.
	 * The writer's PID in them lets a sweep tell a crash's leftover from
	 * a write in progress. */
	if (ab_fmt_err(err, tmp, sizeof tmp, "a file's name",
	    ".tmp-%ld-%02x%02x%02x%02x%02x%02x%02x%02x-%s", (long)getpid(),
	    rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7],
	    name) < 0)
		return -1;
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, mode);
	if (fd < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot create %s", tmp);
	if (ab_write_all(fd, data, len) < 0 || fsync(fd) < 0) {
		ab_fail_errno(err, AB_EENGINE, "cannot write %s", name);
		close(fd);
		unlinkat(dirfd, tmp, 0);
		return -1;
	}
	close(fd);
	ab_test_pause(pause);
	if (renameat(dirfd, tmp, dirfd, name) < 0) {
		ab_fail_errno(err, AB_EENGINE, "cannot rename %s", name);
		unlinkat(dirfd, tmp, 0);
		return -1;
	}
	/* The rename is durable only once the directory is. */
	if (dirfd != AT_FDCWD && fsync(dirfd) < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot sync %s", name);
	return 0;
}

int ab_remove_tree(int at, const char *name)
{
	struct dirent *d;
	DIR *dir;
	int fd;

	if (unlinkat(at, name, 0) == 0 || errno == ENOENT)
		return 0;
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0)
		return -1;
	if ((dir = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	while ((d = readdir(dir)) != NULL)
		if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0 &&
		    ab_remove_tree(dirfd(dir), d->d_name) < 0) {
			closedir(dir);
			return -1;
		}
	closedir(dir);
	return unlinkat(at, name, AT_REMOVEDIR) == 0 || errno == ENOENT ?
	    0 : -1;
}

int ab_flock_within(int fd, long ms)
{
	struct timespec nap = { 0, 50 * 1000000L };
	long waited;

	for (waited = 0; waited <= ms; waited += 50) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		nanosleep(&nap, NULL);
	}
	errno = EWOULDBLOCK;
	return -1;
}

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The holder unlinks the name before it lets go, so a waiter may get the
 * lock of a file no name leads to any more: it then takes the new one. */
int ab_flock_name(int dirfd, const char *name, long ms)
{
	long long end = mono_ms() + ms, left;
	struct stat held, named;
	int fd, e;

	for (;;) {
		fd = openat(dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
		if (fd < 0)
			return -1;
		left = end - mono_ms();
		if (ab_flock_within(fd, left > 0 ? (long)left : 0) < 0) {
			e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		if (fstat(fd, &held) == 0 && fstatat(dirfd, name, &named,
		    AT_SYMLINK_NOFOLLOW) == 0 && held.st_dev == named.st_dev &&
		    held.st_ino == named.st_ino)
			return fd;
		close(fd);
	}
}

void ab_flock_drop(int dirfd, const char *name, int fd)
{
	unlinkat(dirfd, name, 0);
	close(fd);
}
