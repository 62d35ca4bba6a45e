#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "file.h"
#include "gitindex.h"
#include "hash.h"

#define FLUSH_AT (256 * 1024)
/* An extension's size is a 32-bit field. */
#define EXT_MAX ((size_t)UINT32_MAX)
/* What waits to be written: under FLUSH_AT, and one put, the largest
 * the TREE extension whole with its header. */
#define OUT_MAX (FLUSH_AT + EXT_MAX + 8)

/* Bytes on their way to fd (when >= 0), hashed (when sha is set) a chunk
 * at a time: an EVP update a field was most of the writing. */
struct out {
	int fd;
	struct ab_buf b;
	struct ab_sha1 *sha;
	int failed;
};

static void flush(struct out *o)
{
	if (o->sha != NULL)
		ab_sha1_add(o->sha, o->b.data, o->b.len);
	if (ab_write_all(o->fd, o->b.data, o->b.len) < 0)
		o->failed = errno ? errno : EIO;
	ab_buf_reset(&o->b);
}

static void put(struct out *o, const void *p, size_t n)
{
	if (o->failed)
		return;
	if (ab_buf_add(&o->b, p, n) < 0)
		o->failed = o->b.over ? EFBIG : ENOMEM;
	else if (o->fd >= 0 && o->b.len >= FLUSH_AT)
		flush(o);
}

static void put32(struct out *o, uint32_t v)
{
	unsigned char b[4] = { v >> 24, v >> 16, v >> 8, v };

	put(o, b, 4);
}

static int is_entry(const struct ab_git_entry *e)
{
	return e->type != AB_GIT_DIR;
}

static uint32_t git_mode(const struct ab_git_entry *e)
{
	switch (e->type) {
	case AB_GIT_LINK:
		return 0120000;
	case AB_GIT_GITLINK:
		return 0160000;
	default:
		return 0100000 | e->mode;
	}
}

/* Stat data all zero, as git read-tree leaves it; the name length in the
 * flags; NULs to a multiple of eight, at least one. */
static void put_entry(struct out *o, const struct ab_git_entry *e)
{
	static const unsigned char zero[40];
	size_t len = strlen(e->path), pad = 8 - (62 + len) % 8;
	unsigned char flags[2];

	put(o, zero, 24);
	put32(o, git_mode(e));
	put(o, zero, 12);	/* uid, gid, size */
	put(o, e->oid, AB_OID_RAW);
	flags[0] = (unsigned char)((len < 0xfff ? len : 0xfff) >> 8);
	flags[1] = (unsigned char)(len < 0xfff ? len : 0xfff);
	put(o, flags, 2);
	put(o, e->path, len);
	put(o, zero, pad);
}

/* Per directory: the index entries under it and its direct subtrees.
 * Slot n is the root.  The listing is in pre-order, so a stack of the
 * open directories finds each entry's parent. */
struct counts {
	uint32_t *ents, *subs;
};

static int under(const struct ab_git_tree *t, size_t dir, const char *path)
{
	size_t n = strlen(t->e[dir].path);

	return strncmp(path, t->e[dir].path, n) == 0 && path[n] == '/';
}

static int count(const struct ab_git_tree *t, struct counts *c)
{
	size_t *stack = malloc((t->n + 1) * sizeof *stack), top = 0, i;

	c->ents = calloc(t->n + 1, sizeof *c->ents);
	c->subs = calloc(t->n + 1, sizeof *c->subs);
	if (stack == NULL || c->ents == NULL || c->subs == NULL) {
		free(stack);
		return -1;
	}
	stack[0] = t->n;
	for (i = 0; i < t->n; i++) {
		while (top > 0 && !under(t, stack[top], t->e[i].path)) {
			c->ents[stack[top - 1]] += c->ents[stack[top]];
			top--;
		}
		if (is_entry(&t->e[i])) {
			c->ents[stack[top]]++;
			continue;
		}
		c->subs[stack[top]]++;
		stack[++top] = i;
	}
	for (; top > 0; top--)
		c->ents[stack[top - 1]] += c->ents[stack[top]];
	free(stack);
	return 0;
}

static void put_tree(struct out *o, const char *name, uint32_t ents,
    uint32_t subs, const unsigned char oid[AB_OID_RAW])
{
	char num[32];

	/* Two numbers into room for them: a bug here when cut. */
	if (ab_fmt(num, sizeof num, "%u %u\n", ents, subs) < 0)
		abort();
	put(o, name, strlen(name) + 1);
	put(o, num, strlen(num));
	put(o, oid, AB_OID_RAW);
}

/* The TREE extension, in pre-order like the listing: a directory's name
 * is its last component, the root's is empty.  Its size comes first, so
 * it is built aside. */
static void put_trees(struct out *o, const struct ab_git_tree *t)
{
	struct out side = { -1, { 0 }, NULL, 0 };
	struct counts c;
	const char *slash;
	size_t i;

	ab_buf_init(&side.b, EXT_MAX);
	if (count(t, &c) < 0)
		side.failed = ENOMEM;
	else
		put_tree(&side, "", c.ents[t->n], c.subs[t->n], t->root);
	for (i = 0; i < t->n && !side.failed; i++) {
		if (is_entry(&t->e[i]))
			continue;
		slash = strrchr(t->e[i].path, '/');
		put_tree(&side, slash ? slash + 1 : t->e[i].path, c.ents[i],
		    c.subs[i], t->e[i].oid);
	}
	if (side.failed || side.b.len > UINT32_MAX)
		o->failed = side.failed ? side.failed : ENOMEM;
	put(o, "TREE", 4);
	put32(o, (uint32_t)side.b.len);
	put(o, side.b.data, side.b.len);
	ab_buf_free(&side.b);
	free(c.ents);
	free(c.subs);
}

int ab_git_index_check(const struct ab_git_tree *t, struct ab_err *err)
{
	const char *prev = NULL;
	size_t i;

	for (i = 0; i < t->n; i++) {
		if (!is_entry(&t->e[i]))
			continue;
		if (prev != NULL && strcmp(prev, t->e[i].path) >= 0)
			return ab_fail(err, AB_EREFUSED, "the commit's tree is "
			    "not in git's order at \"%.200s\": the repository "
			    "is damaged", t->e[i].path);
		prev = t->e[i].path;
	}
	return 0;
}

static int write_all(int fd, const struct ab_git_tree *t)
{
	struct ab_sha1 sha;
	struct ab_err ignored;
	struct out o = { fd, { 0 }, &sha, 0 };
	unsigned char md[AB_OID_RAW];
	size_t i, n = 0;

	if (ab_sha1_init(&sha, &ignored) < 0)
		return ENOMEM;
	ab_buf_init(&o.b, OUT_MAX);
	for (i = 0; i < t->n; i++)
		n += is_entry(&t->e[i]);
	put(&o, "DIRC", 4);
	put32(&o, 2);
	put32(&o, (uint32_t)n);
	for (i = 0; i < t->n; i++)
		if (is_entry(&t->e[i]))
			put_entry(&o, &t->e[i]);
	put_trees(&o, t);
	if (!o.failed)
		flush(&o);
	o.sha = NULL;
	if (ab_sha1_out(&sha, md) < 0 && !o.failed)
		o.failed = ENOMEM;
	put(&o, md, AB_OID_RAW);
	if (!o.failed)
		flush(&o);
	ab_buf_free(&o.b);
	return o.failed;
}

int ab_git_index_write(const struct ab_git_tree *t, const char *stage,
    struct ab_err *err)
{
	char tmp[4200], path[4200];
	int fd, e;

	if (t->n > UINT32_MAX)
		return ab_fail(err, AB_EREFUSED, "too many files for a git index");
	if (ab_fmt_err(err, path, sizeof path, "the staging clone's path",
	    "%s/index", stage) < 0 || ab_fmt_err(err, tmp, sizeof tmp,
	    "the staging clone's path", "%s/index.XXXXXX", stage) < 0)
		return -1;
	if ((fd = mkstemp(tmp)) < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot create %s", tmp);
	e = write_all(fd, t);
	if (e == 0 && fchmod(fd, 0644) < 0)
		e = errno;
	if (close(fd) < 0 && e == 0)
		e = errno;
	if (e == 0 && rename(tmp, path) < 0)
		e = errno;
	if (e != 0) {
		unlink(tmp);
		errno = e;
		return ab_fail_errno(err, AB_EENGINE, "cannot write %s", path);
	}
	return 0;
}
