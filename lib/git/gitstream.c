#include <errno.h>
#include <fcntl.h>
#include <git2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "file.h"
#include "git.h"
#include "gitpack.h"
#include "gitstream.h"
#include "hash.h"

#define CHUNK (64 * 1024)
/* "commit 18446744073709551615" and its NUL: the longest loose header. */
#define HEAD_MAX 32
/* zlib clears its hash table for every stream (64 KiB at the default
 * memLevel): objects under SMALL bytes get one with a 4 KiB table, as in
 * gitpack.c, where that was measured. */
#define SMALL (2 * 1024)
/* An object that does not shrink by a tenth in its first PROBE bytes is
 * stored from there on (gitpack.h). */
#define PROBE (1024 * 1024)
/* git's base85 lines: a length character, then 5 characters for each 4
 * of at most 52 bytes. */
#define LINE_BYTES 52
#define LINE_CHARS (1 + LINE_BYTES / 4 * 5 + 1)

static const char en85[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    "abcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";

/* Loose headers' type names, by git's type numbers (those of a pack). */
static const char *const type_name[] = { NULL, "commit", "tree", "blob",
    "tag" };

/* One call's state: the object being read, and what is being written. */
struct gs {
	git_odb *odb;
	char objdir[4096];
	int out_fd;
	const char *what;		/* what FD receives, for errors */
	/* The object being read. */
	char hex[GIT_OID_HEXSZ + 1];
	unsigned char id[AB_OID_RAW];
	int fd;				/* its loose file, or -1 */
	git_odb_object *whole;		/* or the object read whole */
	int type;
	size_t size, pos;		/* its header's size; bytes read */
	unsigned char head[HEAD_MAX];	/* the header, and content after it */
	size_t hpos, hlen;
	int eof, ended;			/* the file read out; zlib's end */
	struct ab_sha1 sha;		/* of the object, against its name */
	z_stream inf;
	int inf_init;
	/* What is written. */
	z_stream def[2];		/* small objects, the rest */
	int def_init;
	struct ab_sha1 packsum;		/* the pack's trailer */
	int hashing;
	unsigned char line[LINE_BYTES];	/* the next base85 line's bytes */
	size_t nline, used;
	unsigned char in[CHUNK];	/* from the loose file */
	unsigned char raw[CHUNK];	/* the object's bytes */
	unsigned char zout[CHUNK];	/* deflated */
	unsigned char out[CHUNK];	/* for FD */
};

static int damaged(struct gs *g, const char *why, struct ab_err *err)
{
	return ab_fail(err, AB_EREFUSED, "object %s %s: the repository is "
	    "damaged", g->hex, why);
}

/* -- Output, buffered; the pack's bytes hashed on the way. */

static int flush(struct gs *g, struct ab_err *err)
{
	if (g->used > 0 && ab_write_all(g->out_fd, g->out, g->used) < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot write %s",
		    g->what);
	g->used = 0;
	return 0;
}

static int put(struct gs *g, const unsigned char *p, size_t n,
    struct ab_err *err)
{
	size_t k;

	if (g->hashing)
		ab_sha1_add(&g->packsum, p, n);
	for (; n > 0; p += k, n -= k) {
		if (g->used == CHUNK && flush(g, err) < 0)
			return -1;
		k = CHUNK - g->used < n ? CHUNK - g->used : n;
		memcpy(g->out + g->used, p, k);
		g->used += k;
	}
	return 0;
}

/* -- Reading one object. */

static void obj_close(struct gs *g)
{
	if (g->fd >= 0)
		close(g->fd);
	g->fd = -1;
	git_odb_object_free(g->whole);
	g->whole = NULL;
	ab_sha1_free(&g->sha);
}

/* One step of inflate into what g->inf.next_out points at. */
static int inflate_step(struct gs *g, struct ab_err *err)
{
	ssize_t n;
	int zr;

	if (g->inf.avail_in == 0 && !g->eof) {
		do
			n = read(g->fd, g->in, CHUNK);
		while (n < 0 && errno == EINTR);
		if (n < 0)
			return ab_fail_errno(err, AB_EENGINE, "cannot read "
			    "object %s", g->hex);
		g->eof = n == 0;
		g->inf.next_in = g->in;
		g->inf.avail_in = (uInt)n;
	}
	zr = inflate(&g->inf, Z_NO_FLUSH);
	if (zr == Z_STREAM_END)
		g->ended = 1;
	if (zr == Z_OK || zr == Z_STREAM_END)
		return 0;
	/* Input is refilled before each step: none left is the file's end. */
	if (zr == Z_BUF_ERROR && g->inf.avail_in == 0)
		return damaged(g, "ends early", err);
	if (zr == Z_MEM_ERROR)
		return ab_fail(err, AB_EENGINE, "out of memory");
	return damaged(g, "does not inflate", err);
}

/* "TYPE SIZE" as git writes it: a known type, decimal digits without a
 * leading zero. */
static int parse_head(struct gs *g, size_t len)
{
	const char *h = (const char *)g->head;
	const char *sp = memchr(h, ' ', len);
	size_t i, size = 0;
	int t;

	if (sp == NULL)
		return -1;
	for (t = 1; t <= 4; t++)
		if (strlen(type_name[t]) == (size_t)(sp - h) &&
		    memcmp(h, type_name[t], (size_t)(sp - h)) == 0)
			break;
	i = (size_t)(sp - h) + 1;
	if (t > 4 || i == len || (h[i] == '0' && i + 1 < len))
		return -1;
	for (; i < len; i++) {
		if (h[i] < '0' || h[i] > '9' || size > (SIZE_MAX - 9) / 10)
			return -1;
		size = size * 10 + (size_t)(h[i] - '0');
	}
	g->type = t;
	g->size = size;
	return 0;
}

/* Inflates the loose object's header; what follows it in g->head is the
 * first of its content. */
static int read_head(struct gs *g, struct ab_err *err)
{
	unsigned char *nul;

	if (inflateReset(&g->inf) != Z_OK)
		return ab_fail(err, AB_EENGINE, "zlib failed");
	g->inf.avail_in = 0;
	g->inf.next_out = g->head;
	g->inf.avail_out = HEAD_MAX;
	while ((nul = memchr(g->head, '\0', HEAD_MAX - g->inf.avail_out)) ==
	    NULL) {
		if (g->inf.avail_out == 0 || g->ended)
			return damaged(g, "has no header", err);
		if (inflate_step(g, err) < 0)
			return -1;
	}
	g->hlen = HEAD_MAX - g->inf.avail_out;
	g->hpos = (size_t)(nul - g->head) + 1;
	if (parse_head(g, g->hpos - 1) < 0)
		return damaged(g, "has a malformed header", err);
	if (ab_sha1_init(&g->sha, err) < 0)
		return -1;
	ab_sha1_add(&g->sha, g->head, g->hpos);
	return 0;
}

/* Not loose: libgit2 reads it whole (a packed object is inflated whole
 * there). */
static int open_whole(struct gs *g, const git_oid *id, struct ab_err *err)
{
	char head[64];
	int rc, n;

	if ((rc = git_odb_read(&g->whole, g->odb, id)) < 0) {
		g->whole = NULL;
		/* A name cut short still reads. */
		(void)ab_fmt(head, sizeof head, "object %s", g->hex);
		return ab_git_read_fail(err, rc, head);
	}
	g->type = (int)git_odb_object_type(g->whole);
	g->size = git_odb_object_size(g->whole);
	if (g->type < 1 || g->type > 4)
		return damaged(g, "has no type of its own", err);
	if (ab_sha1_init(&g->sha, err) < 0)
		return -1;
	if (ab_fmt(head, sizeof head, "%s %zu", type_name[g->type],
	    g->size) < 0)
		return damaged(g, "has a header too long", err);
	n = (int)strlen(head);
	ab_sha1_add(&g->sha, head, (size_t)n + 1);
	return 0;
}

static int obj_open(struct gs *g, const git_oid *id, struct ab_err *err)
{
	char path[4200];
	struct stat st;

	obj_close(g);
	git_oid_tostr(g->hex, sizeof g->hex, id);
	memcpy(g->id, id->id, AB_OID_RAW);
	g->pos = g->hpos = g->hlen = 0;
	g->eof = g->ended = 0;
	if (ab_fmt(path, sizeof path, "%s/%.2s/%s", g->objdir, g->hex,
	    g->hex + 2) < 0)
		return ab_fail(err, AB_EENGINE, "the repository's path is too "
		    "long");
	g->fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (g->fd < 0 && errno == ENOENT)
		return open_whole(g, id, err);
	if (g->fd < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot open %s", path);
	if (fstat(g->fd, &st) < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot stat %s", path);
	if (!S_ISREG(st.st_mode))
		return damaged(g, "is not a file", err);
	return read_head(g, err);
}

/* Checks what is left once the content is out: zlib's end and nothing
 * after it in the file, and the object's name. */
static int obj_done(struct gs *g, struct ab_err *err)
{
	ssize_t n = 0;

	if (g->whole == NULL && g->inf.avail_in == 0 && !g->eof) {
		do
			n = read(g->fd, g->in, CHUNK);
		while (n < 0 && errno == EINTR);
		if (n < 0)
			return ab_fail_errno(err, AB_EENGINE, "cannot read "
			    "object %s", g->hex);
	}
	if (g->whole == NULL && (g->inf.avail_in > 0 || n > 0))
		return damaged(g, "has bytes after its end", err);
	if (!ab_sha1_is(&g->sha, g->id))
		return damaged(g, "does not match its name", err);
	return 0;
}

/* The object's next bytes into P (CAP of them at most): their count, 0 at
 * its end once all of it is checked, or -1. */
static long obj_read(struct gs *g, unsigned char *p, size_t cap,
    struct ab_err *err)
{
	size_t k = 0, left = g->size - g->pos;
	unsigned char extra, *to;

	if (g->whole != NULL) {
		k = left < cap ? left : cap;
		memcpy(p, (const unsigned char *)git_odb_object_data(g->whole) +
		    g->pos, k);
	} else if (g->hpos < g->hlen) {
		k = g->hlen - g->hpos < cap ? g->hlen - g->hpos : cap;
		if (k > left)
			return damaged(g, "is longer than its header says",
			    err);
		memcpy(p, g->head + g->hpos, k);
		g->hpos += k;
	} else {
		/* Once the header's size is out, room for one byte more:
		 * there must be none. */
		to = left > 0 ? p : &extra;
		g->inf.next_out = to;
		g->inf.avail_out = left == 0 ? 1 : (uInt)(left < cap ? left :
		    cap);
		while (k == 0 && !g->ended) {
			if (inflate_step(g, err) < 0)
				return -1;
			k = (size_t)(g->inf.next_out - to);
		}
		if (left == 0 && k > 0)
			return damaged(g, "is longer than its header says",
			    err);
		if (left > 0 && k == 0)
			return damaged(g, "is shorter than its header says",
			    err);
	}
	if (k == 0)
		return obj_done(g, err) < 0 ? -1 : 0;
	ab_sha1_add(&g->sha, p, k);
	g->pos += k;
	return (long)k;
}

/* -- Deflating one object (or nothing) into a sink. */

static long obj_piece(void *arg, const unsigned char **p, struct ab_err *err)
{
	struct gs *g = arg;

	*p = g->raw;
	return obj_read(g, g->raw, CHUNK, err);
}

static long no_piece(void *arg, const unsigned char **p, struct ab_err *err)
{
	(void)err;
	*p = ((struct gs *)arg)->raw;
	return 0;
}

static int deflate_obj(struct gs *g, int empty,
    int (*sink)(void *, const unsigned char *, size_t, struct ab_err *),
    struct ab_err *err)
{
	struct ab_deflate_io io = { .read = empty ? no_piece : obj_piece,
	    .write = sink, .arg = g, .out = g->zout, .outcap = CHUNK,
	    .probe = PROBE };

	return ab_deflate(&g->def[!empty && g->size >= SMALL], &io, err);
}

/* -- git's base85: big-endian groups of 4 bytes, the last padded with
 * zeros, 5 characters each, the most significant first. */

static int b85_line(struct gs *g, struct ab_err *err)
{
	unsigned char t[LINE_CHARS];
	size_t i, j, k = 0;
	uint32_t acc;

	t[k++] = (unsigned char)(g->nline <= 26 ? 'A' + g->nline - 1 :
	    'a' + g->nline - 27);
	for (i = 0; i < g->nline; i += 4, k += 5) {
		acc = 0;
		for (j = 0; j < 4; j++)
			acc = acc << 8 | (i + j < g->nline ? g->line[i + j] : 0);
		for (j = 5; j-- > 0; acc /= 85)
			t[k + j] = (unsigned char)en85[acc % 85];
	}
	t[k++] = '\n';
	g->nline = 0;
	return put(g, t, k, err);
}

static int b85_sink(void *arg, const unsigned char *p, size_t n,
    struct ab_err *err)
{
	struct gs *g = arg;
	size_t k;

	for (; n > 0; p += k, n -= k) {
		k = LINE_BYTES - g->nline < n ? LINE_BYTES - g->nline : n;
		memcpy(g->line + g->nline, p, k);
		g->nline += k;
		if (g->nline == LINE_BYTES && b85_line(g, err) < 0)
			return -1;
	}
	return 0;
}

/* -- The two writers. */

static void gs_end(struct gs *g)
{
	if (g == NULL)
		return;
	obj_close(g);
	while (g->def_init > 0)
		deflateEnd(&g->def[--g->def_init]);
	if (g->inf_init)
		inflateEnd(&g->inf);
	ab_sha1_free(&g->packsum);
	git_odb_free(g->odb);
	free(g);
}

static int gs_start(struct gs **gp, git_repository *repo, int fd,
    const char *what, struct ab_err *err)
{
	struct gs *g = calloc(1, sizeof *g);
	const char *dir;

	if ((*gp = g) == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	g->fd = -1;
	g->out_fd = fd;
	g->what = what;
	if (git_repository_odb(&g->odb, repo) < 0)
		return ab_git_fail(err, AB_EENGINE, "cannot read the "
		    "repository");
	/* libgit2's loose objects live under the common directory. */
	dir = git_repository_commondir(repo);
	if (dir == NULL || ab_fmt(g->objdir, sizeof g->objdir, "%sobjects",
	    dir) < 0)
		return ab_fail(err, AB_EENGINE, "the repository's path is too "
		    "long");
	if (deflateInit2(&g->def[0], Z_BEST_SPEED, Z_DEFLATED, 15, 4,
	    Z_DEFAULT_STRATEGY) == Z_OK)
		g->def_init = 1;
	if (g->def_init == 1 && deflateInit(&g->def[1], Z_BEST_SPEED) == Z_OK)
		g->def_init = 2;
	if (g->def_init == 2 && inflateInit(&g->inf) == Z_OK)
		g->inf_init = 1;
	if (!g->inf_init)
		return ab_fail(err, AB_EENGINE, "cannot start zlib");
	return 0;
}

int ab_gitstream_literal(git_repository *repo, const git_oid *id, int fd,
    struct ab_err *err)
{
	int empty = id == NULL || git_oid_is_zero(id), rc = -1;
	char head[64];
	struct gs *g;

	if (gs_start(&g, repo, fd, "the binary patch", err) < 0 ||
	    (!empty && obj_open(g, id, err) < 0))
		goto out;
	if (!empty && g->type != GIT_OBJECT_BLOB) {
		ab_fail(err, AB_EREFUSED, "object %s is a %s, not a blob",
		    g->hex, type_name[g->type]);
		goto out;
	}
	if (ab_fmt(head, sizeof head, "literal %zu\n", empty ? 0 :
	    g->size) < 0) {
		ab_fail(err, AB_EENGINE, "object %s: too large", g->hex);
		goto out;
	}
	if (put(g, (const unsigned char *)head, strlen(head), err) == 0 &&
	    deflate_obj(g, empty, b85_sink, err) == 0 &&
	    (g->nline == 0 || b85_line(g, err) == 0) &&
	    put(g, (const unsigned char *)"\n", 1, err) == 0)
		rc = flush(g, err);
out:
	gs_end(g);
	return rc;
}

static int oid_cmp(const void *a, const void *b)
{
	return git_oid_cmp(a, b);
}

/* A pack naming an object twice is refused by git index-pack. */
static int distinct(const git_oid *ids, size_t n, struct ab_err *err)
{
	git_oid *v;
	size_t i;
	int rc = 0;

	if (n < 2)
		return 0;
	if ((v = malloc(n * sizeof *v)) == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	memcpy(v, ids, n * sizeof *v);
	qsort(v, n, sizeof *v, oid_cmp);
	for (i = 1; i < n && rc == 0; i++)
		if (git_oid_equal(&v[i - 1], &v[i]))
			rc = ab_fail(err, AB_EUSAGE, "object %s is named twice "
			    "for one pack", git_oid_tostr_s(&v[i]));
	free(v);
	return rc;
}

static int pack_sink(void *arg, const unsigned char *p, size_t n,
    struct ab_err *err)
{
	return put(arg, p, n, err);
}

static void be32(unsigned char *b, uint32_t v)
{
	b[0] = (unsigned char)(v >> 24);
	b[1] = (unsigned char)(v >> 16);
	b[2] = (unsigned char)(v >> 8);
	b[3] = (unsigned char)v;
}

int ab_gitstream_pack(git_repository *repo, const git_oid *ids, size_t n,
    int fd, struct ab_err *err)
{
	unsigned char h[16], sum[AB_OID_RAW];
	struct gs *g = NULL;
	size_t i;
	int rc = -1;

	if (n > UINT32_MAX)
		return ab_fail(err, AB_EREFUSED, "more objects than a pack "
		    "holds");
	if (distinct(ids, n, err) < 0 ||
	    gs_start(&g, repo, fd, "the pack", err) < 0 ||
	    ab_sha1_init(&g->packsum, err) < 0)
		goto out;
	g->hashing = 1;
	memcpy(h, "PACK", 4);
	be32(h + 4, 2);
	be32(h + 8, (uint32_t)n);
	if (put(g, h, 12, err) < 0)
		goto out;
	for (i = 0; i < n; i++)
		if (obj_open(g, &ids[i], err) < 0 ||
		    put(g, h, ab_pack_entry_head(h, g->type, g->size), err) < 0 ||
		    deflate_obj(g, 0, pack_sink, err) < 0)
			goto out;
	/* The trailer is the checksum of all before it, not of itself. */
	g->hashing = 0;
	if (ab_sha1_out(&g->packsum, sum) < 0)
		ab_fail(err, AB_EENGINE, "cannot hash the pack");
	else if (put(g, sum, sizeof sum, err) == 0)
		rc = flush(g, err);
out:
	gs_end(g);
	return rc;
}
