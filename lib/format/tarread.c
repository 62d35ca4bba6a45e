#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "tarread.h"

/* Read here, not by libarchive: its reader turned every pax path from
 * UTF-8 into the C locale's charset, with a warning for every name that
 * is not ASCII, and pulled in libxml2, ICU and libstdc++, 2.5 MiB of
 * ab-export's 16 MiB peak.  The engine writes ustar headers, pax ones for
 * what ustar cannot hold, and GNU ones (long names, base-256 numbers)
 * when asked to; nothing else is taken. */

#define BLOCK 512
#define IN_MAX (32u << 20)	/* unread bytes: about one pump's worth */
#define META_MAX (1u << 20)	/* a pax or long-name header's data */
#define NAME_MAX_BYTES 65536

struct ab_tarread {
	struct ab_buf in;	/* what was fed; read from pos */
	size_t pos;
	long long got, max;
	const char *what;
	ab_tarread_pull pull;	/* a fed reader's source, else NULL */
	void *pull_ctx;
	void (*release)(void *ctx);	/* pull_ctx's end, at close */
	int pulled_all;
	long long left;		/* of the current entry's data */
	size_t pad;
	struct ab_buf path, link, meta;
	struct ab_buf xpath, xlink;	/* from a header before the entry */
	int has_xpath, has_xlink, has_xsize;
	long long xsize;
	struct ab_tarread_entry ent;
};

static int on_bytes(void *ctx, const char *p, size_t n, struct ab_err *err)
{
	struct ab_tarread *t = ctx;

	t->got += (long long)n;
	if (t->got > t->max)
		return ab_fail(err, AB_EREFUSED, "%s: more than %lld bytes",
		    t->what, t->max);
	if (t->pos > 0) {
		ab_buf_consume(&t->in, t->pos);
		t->pos = 0;
	}
	if (ab_buf_add(&t->in, p, n) < 0)
		return ab_fail(err, AB_EENGINE, "%s: out of memory", t->what);
	return 0;
}

static int bad(struct ab_tarread *t, const char *why, struct ab_err *err)
{
	return ab_fail(err, AB_EENGINE, "%s: not a tar archive: %s", t->what,
	    why);
}

static size_t avail(const struct ab_tarread *t)
{
	return t->in.len - t->pos;
}

/* More bytes from the source; once it has ended, all there was is
 * there. */
static int more(struct ab_tarread *t, struct ab_err *err)
{
	int rc;

	if (t->pull != NULL && !t->pulled_all) {
		if ((rc = t->pull(t->pull_ctx, err)) < 0)
			return -1;
		t->pulled_all = rc == 1;
		return 0;
	}
	return bad(t, "it ends in the middle of an entry", err);
}

/* N bytes at once, at t->in.data + t->pos. */
static const unsigned char *need(struct ab_tarread *t, size_t n,
    struct ab_err *err)
{
	while (avail(t) < n)
		if (more(t, err) < 0)
			return NULL;
	return (const unsigned char *)t->in.data + t->pos;
}

static int skip(struct ab_tarread *t, long long n, struct ab_err *err)
{
	size_t k;

	while (n > 0) {
		if (avail(t) == 0 && more(t, err) < 0)
			return -1;
		k = (long long)avail(t) < n ? avail(t) : (size_t)n;
		t->pos += k;
		n -= (long long)k;
	}
	return 0;
}

static size_t pad_of(long long n)
{
	return (size_t)((BLOCK - n % BLOCK) % BLOCK);
}

/* Octal, space- or NUL-ended (an empty field is 0), or base-256 with the
 * high bit of the first byte set. */
static int num(const unsigned char *f, size_t w, long long *out)
{
	long long v = 0;
	size_t i = 0;

	if (f[0] & 0x80) {
		if (f[0] != 0x80)
			return -1;	/* negative, or too big for us */
		for (i = 1; i < w; i++) {
			if (v > (LLONG_MAX >> 8))
				return -1;
			v = v << 8 | f[i];
		}
		*out = v;
		return 0;
	}
	while (i < w && f[i] == ' ')
		i++;
	for (; i < w && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v > (LLONG_MAX >> 3))
			return -1;
		v = v * 8 + (f[i] - '0');
	}
	for (; i < w; i++)
		if (f[i] != ' ' && f[i] != '\0')
			return -1;
	*out = v;
	return 0;
}

/* The sum of the header's bytes with its checksum field as spaces;
 * writers that summed signed bytes are taken too. */
static int sum_ok(const unsigned char *h)
{
	long long want;
	long u = 0, s = 0;
	size_t i;

	if (num(h + 148, 8, &want) < 0)
		return 0;
	for (i = 0; i < BLOCK; i++) {
		unsigned char c = i >= 148 && i < 156 ? ' ' : h[i];

		u += c;
		s += (signed char)c;
	}
	return want == u || want == s;
}

/* A name for the next entry: no NUL inside, at most NAME_MAX_BYTES. */
static int set_name(struct ab_tarread *t, struct ab_buf *b, const char *p,
    size_t n, struct ab_err *err)
{
	ab_buf_reset(b);
	if (memchr(p, '\0', n) != NULL)
		return bad(t, "a name holds a NUL", err);
	if (ab_buf_add(b, p, n) < 0)
		return bad(t, "a name is over 64 KiB", err);
	return 0;
}

/* "LEN KEY=VALUE\n" records: path, linkpath and size are taken, the rest
 * (owners, times, extended attributes) is not needed; sparse files are
 * refused. */
static int pax(struct ab_tarread *t, const char *p, size_t n,
    struct ab_err *err)
{
	const char *end = p + n, *key, *eq, *val;
	unsigned long long len;
	char *q;

	while (p < end) {
		len = strtoull(p, &q, 10);
		if (q == p || *q != ' ' || len < 5 || len > (size_t)(end - p) ||
		    p[len - 1] != '\n')
			return bad(t, "a pax record is malformed", err);
		key = q + 1;
		if ((eq = memchr(key, '=', (size_t)(p + len - key))) == NULL)
			return bad(t, "a pax record is malformed", err);
		val = eq + 1;
		n = (size_t)(p + len - 1 - val);
		if (eq - key == 4 && memcmp(key, "path", 4) == 0) {
			if (set_name(t, &t->xpath, val, n, err) < 0)
				return -1;
			t->has_xpath = 1;
		} else if (eq - key == 8 && memcmp(key, "linkpath", 8) == 0) {
			if (set_name(t, &t->xlink, val, n, err) < 0)
				return -1;
			t->has_xlink = 1;
		} else if (eq - key == 4 && memcmp(key, "size", 4) == 0) {
			t->xsize = strtoll(val, &q, 10);
			if (q != eq + 1 + n || n == 0 || t->xsize < 0)
				return bad(t, "a pax size is malformed", err);
			t->has_xsize = 1;
		} else if (eq - key > 11 && memcmp(key, "GNU.sparse.", 11) == 0)
			return bad(t, "a sparse file", err);
		p += len;
	}
	return 0;
}

/* The data of a pax or GNU long-name header, whole. */
static int read_meta(struct ab_tarread *t, long long size, struct ab_err *err)
{
	const unsigned char *p;

	if (size > META_MAX)
		return bad(t, "a header's data is over 1 MiB", err);
	if ((p = need(t, (size_t)size, err)) == NULL)
		return -1;
	ab_buf_reset(&t->meta);
	if (ab_buf_add(&t->meta, p, (size_t)size) < 0)
		return ab_fail(err, AB_EENGINE, "out of memory");
	t->pos += (size_t)size;
	return skip(t, (long long)pad_of(size), err);
}

static enum ab_tarread_type type_of(unsigned char c)
{
	switch (c) {
	case '0': case '\0': case '7':
		return AB_TR_FILE;
	case '1':
		return AB_TR_HARDLINK;
	case '2':
		return AB_TR_SYMLINK;
	case '5':
		return AB_TR_DIR;
	default:	/* devices, FIFOs, what is not known */
		return AB_TR_OTHER;
	}
}

static int entry(struct ab_tarread *t, const unsigned char *h, int posix,
    long long size, struct ab_err *err)
{
	struct ab_tarread_entry *e = &t->ent;
	size_t np = posix ? strnlen((const char *)h + 345, 155) : 0;
	long long mode;
	int rc = 0;

	ab_buf_reset(&t->path);
	ab_buf_reset(&t->link);
	if (t->has_xpath)
		rc = ab_buf_add(&t->path, t->xpath.data, t->xpath.len);
	else if (np > 0)
		rc = ab_buf_add(&t->path, h + 345, np) < 0 ||
		    ab_buf_addc(&t->path, '/') < 0 ||
		    ab_buf_add(&t->path, h, strnlen((const char *)h, 100)) < 0;
	else
		rc = ab_buf_add(&t->path, h, strnlen((const char *)h, 100));
	if (rc == 0)
		rc = t->has_xlink ? ab_buf_add(&t->link, t->xlink.data,
		    t->xlink.len) : ab_buf_add(&t->link, h + 157,
		    strnlen((const char *)h + 157, 100));
	if (rc != 0)
		return ab_fail(err, AB_EENGINE, "out of memory");
	if (t->path.len == 0)
		return bad(t, "an entry has no name", err);
	if (num(h + 100, 8, &mode) < 0)
		return bad(t, "a mode is malformed", err);
	e->path = t->path.data;
	e->type = type_of(h[156]);
	e->link = e->type == AB_TR_SYMLINK || e->type == AB_TR_HARDLINK ?
	    t->link.data : NULL;
	e->size = size;
	e->mode = (unsigned)mode & 07777;
	t->left = size;
	t->pad = pad_of(size);
	return 1;
}

static int all_zero(const unsigned char *h)
{
	size_t i;

	for (i = 0; i < BLOCK; i++)
		if (h[i] != 0)
			return 0;
	return 1;
}

/* One header block: 0 at the end, 1 an entry, 2 a header for the next. */
static int header(struct ab_tarread *t, struct ab_err *err)
{
	const unsigned char *h = need(t, BLOCK, err);
	unsigned char b[BLOCK];
	long long size;
	int posix;

	if (h == NULL)
		return -1;
	if (all_zero(h))
		return 0;
	memcpy(b, h, BLOCK);
	t->pos += BLOCK;
	posix = memcmp(b + 257, "ustar\0" "00", 8) == 0;
	if (!posix && memcmp(b + 257, "ustar  \0", 8) != 0)
		return bad(t, "a header is not ustar", err);
	if (!sum_ok(b))
		return bad(t, "a header's checksum does not match", err);
	if (num(b + 124, 12, &size) < 0)
		return bad(t, "a size is malformed", err);
	switch (b[156]) {
	case 'x':
		return read_meta(t, size, err) < 0 ||
		    pax(t, t->meta.data, t->meta.len, err) < 0 ? -1 : 2;
	case 'g':	/* global: nothing here needs it */
		return skip(t, size + (long long)pad_of(size), err) < 0 ? -1 : 2;
	case 'L':
	case 'K':
		if (read_meta(t, size, err) < 0 ||
		    set_name(t, b[156] == 'L' ? &t->xpath : &t->xlink,
		    t->meta.data, strnlen(t->meta.data, t->meta.len), err) < 0)
			return -1;
		*(b[156] == 'L' ? &t->has_xpath : &t->has_xlink) = 1;
		return 2;
	case 'S':
		return bad(t, "a sparse file", err);
	default:	/* a pax size is the entry's, not a header's */
		return entry(t, b, posix, t->has_xsize ? t->xsize : size, err);
	}
}

static struct ab_tarread *tr_new(long long max, const char *what)
{
	struct ab_tarread *t = calloc(1, sizeof *t);

	if (t == NULL)
		return NULL;
	t->max = max;
	t->what = what;
	ab_buf_init(&t->in, IN_MAX);
	ab_buf_init(&t->path, NAME_MAX_BYTES);
	ab_buf_init(&t->link, NAME_MAX_BYTES);
	ab_buf_init(&t->xpath, NAME_MAX_BYTES);
	ab_buf_init(&t->xlink, NAME_MAX_BYTES);
	ab_buf_init(&t->meta, META_MAX);
	return t;
}

int ab_tarread_open_mem(struct ab_tarread **tp, const void *p, size_t n,
    long long max, const char *what, struct ab_err *err)
{
	struct ab_tarread *t;

	if ((*tp = t = tr_new(max, what)) == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	if (on_bytes(t, p, n, err) == 0)
		return 0;
	ab_tarread_close(t);
	*tp = NULL;
	return -1;
}

int ab_tarread_open_fed(struct ab_tarread **tp, ab_tarread_pull pull,
    void *ctx, long long max, const char *what, struct ab_err *err)
{
	struct ab_tarread *t;

	if ((*tp = t = tr_new(max, what)) == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	t->pull = pull;
	t->pull_ctx = ctx;
	return 0;
}

void ab_tarread_owns(struct ab_tarread *t, void (*release)(void *ctx))
{
	t->release = release;
}

int ab_tarread_feed(struct ab_tarread *t, const char *p, size_t n,
    struct ab_err *err)
{
	return on_bytes(t, p, n, err);
}

int ab_tarread_next(struct ab_tarread *t,
    const struct ab_tarread_entry **ent, struct ab_err *err)
{
	int rc;

	if (skip(t, t->left + (long long)t->pad, err) < 0)
		return -1;
	t->left = 0;
	t->pad = 0;
	t->has_xpath = t->has_xlink = t->has_xsize = 0;
	while ((rc = header(t, err)) == 2)
		;
	if (rc == 1)
		*ent = &t->ent;
	else if (rc == 0 && (t->has_xpath || t->has_xlink || t->has_xsize))
		return bad(t, "it ends after a header for one more entry", err);
	t->has_xpath = t->has_xlink = t->has_xsize = 0;
	return rc;
}

long ab_tarread_data(struct ab_tarread *t, char *p, size_t n,
    struct ab_err *err)
{
	size_t k;

	if (t->left == 0)
		return 0;
	/* more() may bring nothing (a pump of a second with no bytes, an
	 * engine slow under load): 0 is only ever the entry's end, so wait
	 * on, as need() does (seen: a file read as 332 bytes short). */
	while (avail(t) == 0)
		if (more(t, err) < 0)
			return -1;
	k = avail(t) < n ? avail(t) : n;
	if ((long long)k > t->left)
		k = (size_t)t->left;
	memcpy(p, t->in.data + t->pos, k);
	t->pos += k;
	t->left -= (long long)k;
	return (long)k;
}

long long ab_tarread_got(const struct ab_tarread *t)
{
	return t->got;
}

void ab_tarread_close(struct ab_tarread *t)
{
	if (t == NULL)
		return;
	if (t->release != NULL)
		t->release(t->pull_ctx);
	ab_buf_free(&t->in);
	ab_buf_free(&t->path);
	ab_buf_free(&t->link);
	ab_buf_free(&t->xpath);
	ab_buf_free(&t->xlink);
	ab_buf_free(&t->meta);
	free(t);
}

int ab_tarread_one(struct ab_tarread *t, struct ab_buf *b, struct ab_err *err)
{
	const struct ab_tarread_entry *ent;
	char chunk[4096];
	long n;
	int rc;

	if ((rc = ab_tarread_next(t, &ent, err)) < 0)
		return -1;
	if (rc == 0 || ent->type != AB_TR_FILE)
		return ab_fail(err, AB_EREFUSED, "not a regular file");
	while ((n = ab_tarread_data(t, chunk, sizeof chunk, err)) > 0)
		if (ab_buf_add(b, chunk, (size_t)n) < 0) {
			explicit_bzero(chunk, sizeof chunk);
			return ab_fail(err, AB_EREFUSED, "larger than %zu bytes",
			    b->max);
		}
	explicit_bzero(chunk, sizeof chunk);
	if (n < 0 || (rc = ab_tarread_next(t, &ent, err)) < 0)
		return -1;
	return rc == 0 ? 0 : ab_fail(err, AB_EREFUSED, "more than one file");
}
