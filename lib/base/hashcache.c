/* hashcache.c: SHA-256s of files, known again by their identity. */
#include "hashcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "deadline.h"
#include "file.h"
#include "hash.h"

/* An entry line is short; 1,024 of them with long paths stay far below. */
#define FILE_MAX (4u << 20)

static int same(const struct ab_hc_entry *x, const char *path,
    const struct stat *st)
{
	return x->dev == (unsigned long long)st->st_dev &&
	    x->ino == (unsigned long long)st->st_ino &&
	    x->size == (long long)st->st_size &&
	    x->mtime_ns == ab_ns(&st->st_mtim) &&
	    x->ctime_ns == ab_ns(&st->st_ctim) && strcmp(x->path, path) == 0;
}

static int is_hex64(const char *s)
{
	size_t i;

	for (i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[64] == '\0';
}

/* "v1 SHA DEV INO SIZE MTIME CTIME PATH"; 0 when LINE is one. */
static int parse_line(char *line, struct ab_hc_entry *x)
{
	char sha[65];
	int off = 0;

	if (sscanf(line, "v1 %64s %llu %llu %lld %lld %lld %n", sha, &x->dev,
	    &x->ino, &x->size, &x->mtime_ns, &x->ctime_ns, &off) != 6 ||
	    off == 0 || line[off] != '/' || !is_hex64(sha))
		return -1;
	memcpy(x->sha, sha, sizeof sha);
	x->path = strdup(line + off);
	x->used = 0;
	return x->path != NULL ? 0 : -1;
}

void ab_hc_load(struct ab_hashcache *c, int dirfd)
{
	struct ab_buf b;
	struct ab_err err;
	char *p, *nl;

	memset(c, 0, sizeof *c);
	c->dirfd = dirfd;
	ab_buf_init(&b, FILE_MAX);
	if (ab_file_read_at(dirfd, AB_HC_FILE, &b, NULL, &err) < 0 ||
	    b.data == NULL || (c->e = calloc(AB_HC_MAX, sizeof *c->e)) ==
	    NULL) {
		ab_buf_free(&b);
		return;
	}
	for (p = b.data; c->n < AB_HC_MAX && (nl = strchr(p, '\n')) != NULL;
	    p = nl + 1) {
		*nl = '\0';
		if (parse_line(p, &c->e[c->n]) == 0)
			c->n++;
	}
	ab_buf_free(&b);
}

static struct ab_hc_entry *find(struct ab_hashcache *c, const char *path,
    const struct stat *st)
{
	size_t i;

	for (i = 0; c != NULL && i < c->n; i++)
		if (same(&c->e[i], path, st))
			return &c->e[i];
	return NULL;
}

/* Records PATH's hash; the least wanted entry (unused, oldest) makes
 * room. */
static void put(struct ab_hashcache *c, const char *path,
    const struct stat *st, const char sha[65])
{
	struct ab_hc_entry *x;
	char *copy;
	size_t i;

	if (c->e == NULL && (c->e = calloc(AB_HC_MAX, sizeof *c->e)) == NULL)
		return;
	if (strchr(path, '\n') != NULL || (copy = strdup(path)) == NULL)
		return;
	if (c->n == AB_HC_MAX) {
		for (i = 0; i + 1 < c->n && c->e[i].used; i++)
			;
		free(c->e[i].path);
		memmove(&c->e[i], &c->e[i + 1], (c->n - i - 1) * sizeof *x);
		c->n--;
	}
	x = &c->e[c->n++];
	x->path = copy;
	memcpy(x->sha, sha, 65);
	x->dev = (unsigned long long)st->st_dev;
	x->ino = (unsigned long long)st->st_ino;
	x->size = (long long)st->st_size;
	x->mtime_ns = ab_ns(&st->st_mtim);
	x->ctime_ns = ab_ns(&st->st_ctim);
	x->used = 1;
	c->dirty = 1;
}

static int read_hash(int fd, const char *path, const struct stat *st,
    char sha[65], struct ab_err *err)
{
	char chunk[1 << 16];
	struct ab_sha256 h;
	long long total = 0;
	ssize_t got;

	if (ab_sha256_init(&h, err) < 0)
		return -1;
	while ((got = pread(fd, chunk, sizeof chunk, total)) > 0) {
		ab_sha256_add(&h, chunk, (size_t)got);
		total += got;
	}
	if (got < 0) {
		ab_sha256_free(&h);
		return ab_fail_errno(err, AB_EENGINE, "cannot read %s", path);
	}
	if (total != (long long)st->st_size) {
		ab_sha256_free(&h);
		return ab_fail(err, AB_EUSAGE, "%s changed while it was read",
		    path);
	}
	return ab_sha256_hex(&h, sha, err);
}

int ab_hc_file(struct ab_hashcache *c, int fd, const char *path,
    const struct stat *st, char sha[65], struct ab_err *err)
{
	struct ab_hc_entry *x = find(c, path, st);
	struct timespec now;
	struct stat after;
	long long settled;

	if (x != NULL) {
		x->used = 1;
		c->hits++;
		memcpy(sha, x->sha, 65);
		return 0;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	if (read_hash(fd, path, st, sha, err) < 0)
		return -1;
	if (c == NULL)
		return 0;
	settled = ab_ns(&now) - AB_HC_SETTLE * 1000000000LL;
	if (fstat(fd, &after) == 0 &&
	    ab_ns(&after.st_ctim) == ab_ns(&st->st_ctim) &&
	    ab_ns(&st->st_mtim) < settled && ab_ns(&st->st_ctim) < settled)
		put(c, path, st, sha);
	return 0;
}

int ab_hc_save(struct ab_hashcache *c, struct ab_err *err)
{
	struct ab_buf b;
	size_t i;
	int rc = 0;

	if (!c->dirty)
		return 0;
	ab_buf_init(&b, FILE_MAX);
	for (i = 0; i < c->n && rc == 0; i++)
		rc = ab_buf_addf(&b, "v1 %s %llu %llu %lld %lld %lld %s\n",
		    c->e[i].sha, c->e[i].dev, c->e[i].ino, c->e[i].size,
		    c->e[i].mtime_ns, c->e[i].ctime_ns, c->e[i].path);
	if (rc < 0)
		rc = ab_fail(err, AB_EENGINE, "the hash cache is too large");
	else
		rc = ab_file_write_at(c->dirfd, AB_HC_FILE, b.data ? b.data :
		    "", b.len, 0600, NULL, err);
	ab_buf_free(&b);
	if (rc == 0)
		c->dirty = 0;
	return rc;
}

void ab_hc_free(struct ab_hashcache *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		free(c->e[i].path);
	free(c->e);
	c->e = NULL;
	c->n = 0;
}
