#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <zlib.h>

#include "zip.h"

/* The records, as APPNOTE.TXT lays them out (little-endian). */
#define EOCD_SIG 0x06054b50UL	/* end of central directory */
#define EOCD_LEN 22
#define LOC64_SIG 0x07064b50UL	/* zip64 end of central directory locator */
#define LOC64_LEN 20
#define CEN_SIG 0x02014b50UL	/* central directory file header */
#define CEN_LEN 46
#define LOC_SIG 0x04034b50UL	/* local file header */
#define LOC_LEN 30

#define COMMENT_MAX 65535
#define CD_MAX (16u << 20)
#define CHUNK (256u << 10)
#define MAX32 0xffffffffUL	/* a 32-bit field saying "see the zip64 one" */

#define FLAG_ENCRYPTED 0x0001
#define FLAG_DESCRIPTOR 0x0008	/* sizes and CRC follow the data */
#define FLAG_STRONG 0x0040	/* strong encryption */
#define FLAG_MASKED 0x2000	/* encrypted central directory */
#define EXTRA_ZIP64 0x0001
#define MADE_ON_UNIX 3

struct entry {
	const unsigned char *name;	/* in z->cd, not NUL-terminated */
	size_t name_len;
	unsigned long long size, csize, offset;
	unsigned long long limit;	/* where the next member begins */
	unsigned long crc;
	int method;
	unsigned mode;
};

struct ab_zip {
	int fd;
	unsigned long long cd_offset;
	unsigned char *cd;
	struct entry *e;		/* in central directory order */
	struct entry **by_name;		/* sorted, for ab_zip_find */
	size_t n;
};

/* One member being read. */
struct job {
	struct ab_zip *z;
	const struct entry *e;
	ab_zip_out out;
	void *ctx;
	unsigned char *in, *buf;	/* CHUNK each */
	unsigned long long at, left;	/* compressed bytes still to read */
	unsigned long long got;		/* uncompressed bytes handed on */
	unsigned long crc;
};

static unsigned get16(const unsigned char *p)
{
	return (unsigned)p[0] | (unsigned)p[1] << 8;
}

static unsigned long get32(const unsigned char *p)
{
	return (unsigned long)p[0] | (unsigned long)p[1] << 8 |
	    (unsigned long)p[2] << 16 | (unsigned long)p[3] << 24;
}

/* A name as it goes into a one-line message: the archive chose its
 * bytes (ab_quote). */
static void show(char *s, size_t cap, const unsigned char *name, size_t n)
{
	ab_quote(s, cap, (const char *)name, n);
}

static int refuse_member(struct ab_err *err, const struct entry *e,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int refuse_member(struct ab_err *err, const struct entry *e,
    const char *fmt, ...)
{
	char name[128], why[256];
	va_list ap;

	/* A reason cut short still reads. */
	va_start(ap, fmt);
	(void)ab_vfmt(why, sizeof why, fmt, ap);
	va_end(ap);
	show(name, sizeof name, e->name, e->name_len);
	return ab_fail(err, AB_EREFUSED, "zip: member %s: %s", name, why);
}

/* N bytes at OFF.  The file ending first is corruption: every offset was
 * checked against its size, so it was listed wrong or has shrunk. */
static int read_at(int fd, void *p, size_t n, unsigned long long off,
    struct ab_err *err)
{
	unsigned char *c = p;
	ssize_t r;

	while (n > 0) {
		r = pread(fd, c, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return ab_fail_errno(err, AB_EENGINE,
			    "zip: cannot read at offset %llu", off);
		if (r == 0)
			return ab_fail(err, AB_EREFUSED,
			    "zip: corrupt: the file ends at offset %llu", off);
		c += r;
		off += (unsigned long long)r;
		n -= (size_t)r;
	}
	return 0;
}

/* 1 when extra fields P hold a zip64 one, 0 when not, -1 when a field
 * runs past their end.  Up to 3 bytes left over are padding, as some
 * aligning tools write it. */
static int extra_zip64(const unsigned char *p, size_t n)
{
	size_t len;

	while (n >= 4) {
		len = get16(p + 2);
		if (len > n - 4)
			return -1;
		if (get16(p) == EXTRA_ZIP64)
			return 1;
		p += 4 + len;
		n -= 4 + len;
	}
	return 0;
}

/* The end record: the one signature in the last 64 KiB whose comment
 * ends exactly at the end of the file.  Two such would give two readings
 * of one archive, so that is refused too. */
static int find_end(int fd, unsigned long long size, unsigned long long *at,
    unsigned char rec[EOCD_LEN], struct ab_err *err)
{
	size_t i, n, pos = 0, found = 0, sigs = 0;
	unsigned char *tail;

	if (size < EOCD_LEN)
		return ab_fail(err, AB_EREFUSED,
		    "zip: corrupt: too short for a zip archive");
	n = size < EOCD_LEN + COMMENT_MAX ? (size_t)size :
	    EOCD_LEN + COMMENT_MAX;
	if ((tail = malloc(n)) == NULL)
		return ab_fail(err, AB_EENGINE, "zip: out of memory");
	if (read_at(fd, tail, n, size - n, err) < 0) {
		free(tail);
		return -1;
	}
	for (i = n - EOCD_LEN + 1; i-- > 0;) {
		if (get32(tail + i) != EOCD_SIG)
			continue;
		sigs++;
		if (i + EOCD_LEN + get16(tail + i + 20) != n)
			continue;
		if (found++ == 0)
			pos = i;
	}
	if (found == 1)
		memcpy(rec, tail + pos, EOCD_LEN);
	free(tail);
	if (found > 1)
		return ab_fail(err, AB_EREFUSED, "zip: corrupt: more than one "
		    "end of central directory record");
	if (found == 0)
		return ab_fail(err, AB_EREFUSED, sigs ? "zip: corrupt: the "
		    "archive comment does not end the file" : "zip: corrupt: "
		    "no end of central directory record (not a zip archive)");
	*at = size - n + pos;
	return 0;
}

/* Checks the end record at AT and reads the central directory it names;
 * *count is its number of entries. */
static int read_cd(struct ab_zip *z, unsigned long long at,
    const unsigned char *rec, size_t *count, size_t *len, struct ab_err *err)
{
	unsigned char sig[4];
	unsigned long size, off;

	if (at >= LOC64_LEN) {
		if (read_at(z->fd, sig, sizeof sig, at - LOC64_LEN, err) < 0)
			return -1;
		if (get32(sig) == LOC64_SIG)
			return ab_fail(err, AB_EREFUSED,
			    "zip: zip64 is not supported");
	}
	size = get32(rec + 12);
	off = get32(rec + 16);
	if (size == MAX32 || off == MAX32 || get16(rec + 4) == 0xffff)
		return ab_fail(err, AB_EREFUSED,
		    "zip: zip64 is not supported");
	if (get16(rec + 4) != 0 || get16(rec + 6) != 0 ||
	    get16(rec + 8) != get16(rec + 10))
		return ab_fail(err, AB_EREFUSED,
		    "zip: multi-disk archives are not supported");
	if (size > CD_MAX)
		return ab_fail(err, AB_EREFUSED,
		    "zip: the central directory is over 16 MiB");
	/* Nothing between the directory and the end record: data prepended
	 * to an archive (as a self-extractor has) shifts every offset, and
	 * other readers differ on what to make of that. */
	if ((unsigned long long)off + size != at)
		return ab_fail(err, AB_EREFUSED, "zip: corrupt: the central "
		    "directory does not end where the end record begins");
	*count = get16(rec + 10);
	if (*count > size / CEN_LEN)
		return ab_fail(err, AB_EREFUSED, "zip: corrupt: %zu entries "
		    "do not fit in a central directory of %lu bytes", *count,
		    size);
	z->cd_offset = off;
	*len = size;
	if ((z->cd = malloc(size ? size : 1)) == NULL)
		return ab_fail(err, AB_EENGINE, "zip: out of memory");
	return read_at(z->fd, z->cd, size, off, err);
}

/* What is refused of an entry once its name is known. */
static int check_entry(struct ab_zip *z, const struct entry *e,
    const unsigned char *h, struct ab_err *err)
{
	unsigned flags = get16(h + 8);
	int x64 = extra_zip64(h + CEN_LEN + e->name_len, get16(h + 30));

	if (memchr(e->name, '\0', e->name_len) != NULL)
		return refuse_member(err, e, "corrupt: the name holds a NUL");
	if (flags & (FLAG_ENCRYPTED | FLAG_STRONG | FLAG_MASKED))
		return refuse_member(err, e, "encryption is not supported");
	if (x64 < 0)
		return refuse_member(err, e, "corrupt: malformed extra field");
	if (x64 > 0 || e->size == MAX32 || e->csize == MAX32 ||
	    e->offset == MAX32 || get16(h + 34) == 0xffff)
		return refuse_member(err, e, "zip64 is not supported");
	if (get16(h + 34) != 0)
		return refuse_member(err, e,
		    "multi-disk archives are not supported");
	if (e->method != 0 && e->method != 8)
		return refuse_member(err, e,
		    "compression method %d is not supported", e->method);
	if (e->method == 0 && e->size != e->csize)
		return refuse_member(err, e, "corrupt: stored, but its sizes "
		    "differ (%llu, %llu)", e->size, e->csize);
	/* A lower bound of its extent (the local extra field is not known
	 * yet): members lie before the directory. */
	if (e->offset + LOC_LEN + e->name_len + e->csize > z->cd_offset)
		return refuse_member(err, e,
		    "corrupt: its data points outside the file");
	return 0;
}

/* Entry I of the directory at *pos (LEN bytes in all); *pos moves past
 * it. */
static int parse_entry(struct ab_zip *z, size_t len, size_t *pos, size_t i,
    struct ab_err *err)
{
	const unsigned char *h = z->cd + *pos;
	struct entry *e = &z->e[i];
	size_t n, rest;

	if (len - *pos < CEN_LEN || get32(h) != CEN_SIG)
		return ab_fail(err, AB_EREFUSED, "zip: corrupt: central "
		    "directory entry %zu is not where it should be", i + 1);
	n = get16(h + 28);
	rest = n + get16(h + 30) + get16(h + 32);
	if (len - *pos - CEN_LEN < rest)
		return ab_fail(err, AB_EREFUSED, "zip: corrupt: central "
		    "directory entry %zu runs past its end", i + 1);
	*pos += CEN_LEN + rest;
	if (n == 0 || n >= AB_ZIP_NAME_MAX)
		return ab_fail(err, AB_EREFUSED, "zip: corrupt: central "
		    "directory entry %zu has a name of %zu bytes", i + 1, n);
	e->name = h + CEN_LEN;
	e->name_len = n;
	e->method = (int)get16(h + 10);
	e->crc = get32(h + 16);
	e->csize = get32(h + 20);
	e->size = get32(h + 24);
	e->offset = get32(h + 42);
	e->mode = get16(h + 4) >> 8 == MADE_ON_UNIX ?
	    (unsigned)(get32(h + 38) >> 16) : 0;
	return check_entry(z, e, h, err);
}

static int by_name(const void *a, const void *b)
{
	const struct entry *x = *(const struct entry *const *)a;
	const struct entry *y = *(const struct entry *const *)b;
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->name, y->name, n);

	if (c != 0)
		return c;
	return (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

static int by_offset(const void *a, const void *b)
{
	const struct entry *x = *(const struct entry *const *)a;
	const struct entry *y = *(const struct entry *const *)b;

	return (x->offset > y->offset) - (x->offset < y->offset);
}

/* Members must not overlap: overlapping ones are how a small archive
 * claims far more data than it holds.  Each member's limit is where the
 * next begins; reading checks its data against it. */
static int set_limits(struct ab_zip *z, struct ab_err *err)
{
	struct entry *e, **s = z->by_name;
	unsigned long long next;
	size_t i;

	qsort(s, z->n, sizeof *s, by_offset);
	for (i = 0; i < z->n; i++) {
		e = s[i];
		next = i + 1 < z->n ? s[i + 1]->offset : z->cd_offset;
		if (e->offset + LOC_LEN + e->name_len + e->csize > next)
			return refuse_member(err, e,
			    "corrupt: overlaps the next member");
		e->limit = next;
	}
	return 0;
}

/* One reading of each name: a second entry of it is refused, as readers
 * differ on which one wins. */
static int index_names(struct ab_zip *z, struct ab_err *err)
{
	size_t i;

	qsort(z->by_name, z->n, sizeof *z->by_name, by_name);
	for (i = 1; i < z->n; i++)
		if (by_name(&z->by_name[i - 1], &z->by_name[i]) == 0)
			return refuse_member(err, z->by_name[i],
			    "listed twice in the central directory");
	return 0;
}

static int load(struct ab_zip *z, struct ab_err *err)
{
	/* Set before use; gcc -O2 cannot see that through find_end. */
	unsigned char rec[EOCD_LEN] = { 0 };
	unsigned long long at = 0;
	struct stat st;
	size_t i, len = 0, pos = 0;

	if (fstat(z->fd, &st) < 0)
		return ab_fail_errno(err, AB_EENGINE, "zip: cannot stat");
	if (!S_ISREG(st.st_mode))
		return ab_fail(err, AB_EREFUSED, "zip: not a regular file");
	if (find_end(z->fd, (unsigned long long)st.st_size, &at, rec,
	    err) < 0 || read_cd(z, at, rec, &z->n, &len, err) < 0)
		return -1;
	z->e = calloc(z->n ? z->n : 1, sizeof *z->e);
	z->by_name = calloc(z->n ? z->n : 1, sizeof *z->by_name);
	if (z->e == NULL || z->by_name == NULL)
		return ab_fail(err, AB_EENGINE, "zip: out of memory");
	for (i = 0; i < z->n; i++) {
		if (parse_entry(z, len, &pos, i, err) < 0)
			return -1;
		z->by_name[i] = &z->e[i];
	}
	if (pos != len)
		return ab_fail(err, AB_EREFUSED, "zip: corrupt: the central "
		    "directory holds more than its %zu entries", z->n);
	if (set_limits(z, err) < 0)
		return -1;
	return index_names(z, err);
}

int ab_zip_open(struct ab_zip **zp, int fd, struct ab_err *err)
{
	struct ab_zip *z;

	*zp = NULL;
	if ((z = calloc(1, sizeof *z)) == NULL)
		return ab_fail(err, AB_EENGINE, "zip: out of memory");
	z->fd = fd;
	if (load(z, err) < 0) {
		ab_zip_close(z);
		return -1;
	}
	*zp = z;
	return 0;
}

void ab_zip_close(struct ab_zip *z)
{
	if (z == NULL)
		return;
	free(z->cd);
	free(z->e);
	free(z->by_name);
	free(z);
}

size_t ab_zip_count(const struct ab_zip *z)
{
	return z->n;
}

static void fill(struct ab_zip_member *m, const struct entry *e)
{
	memcpy(m->name, e->name, e->name_len);
	m->name[e->name_len] = '\0';
	m->size = e->size;
	m->csize = e->csize;
	m->crc = e->crc;
	m->method = e->method;
	m->mode = e->mode;
	m->local_offset = e->offset;
}

int ab_zip_member_at(const struct ab_zip *z, size_t i,
    struct ab_zip_member *m)
{
	if (i >= z->n)
		return 0;
	fill(m, &z->e[i]);
	return 1;
}

static struct entry *lookup(struct ab_zip *z, const char *name, size_t n)
{
	struct entry key, *k = &key, **hit;

	if (z->n == 0)
		return NULL;
	key.name = (const unsigned char *)name;
	key.name_len = n;
	hit = bsearch(&k, z->by_name, z->n, sizeof *z->by_name, by_name);
	return hit ? *hit : NULL;
}

int ab_zip_find(struct ab_zip *z, const char *name, struct ab_zip_member *m,
    struct ab_err *err)
{
	struct entry *e = lookup(z, name, strlen(name));

	(void)err;	/* the directory was checked whole when opened */
	if (e == NULL)
		return 0;
	fill(m, e);
	return 1;
}

/* The entry M describes.  M is the caller's copy, so it is taken only
 * when it still says what the directory says. */
static const struct entry *entry_of(struct ab_zip *z,
    const struct ab_zip_member *m, struct ab_err *err)
{
	size_t n = strnlen(m->name, sizeof m->name);
	const struct entry *e;

	e = n < sizeof m->name ? lookup(z, m->name, n) : NULL;
	if (e == NULL || e->offset != m->local_offset || e->size != m->size ||
	    e->csize != m->csize || e->crc != m->crc ||
	    e->method != m->method) {
		ab_fail(err, AB_EUSAGE,
		    "zip: a member not as this archive lists it");
		return NULL;
	}
	return e;
}

/* The local header must repeat the directory: a reader going by one and
 * a reader going by the other must not get different files.  Sets
 * j->at to the first byte of the data. */
static int check_local(struct job *j, struct ab_err *err)
{
	const struct entry *e = j->e;
	unsigned char h[LOC_LEN + AB_ZIP_NAME_MAX];
	unsigned long long start;
	unsigned flags;
	size_t x;
	int x64;

	if (read_at(j->z->fd, h, LOC_LEN + e->name_len, e->offset, err) < 0)
		return -1;
	if (get32(h) != LOC_SIG)
		return refuse_member(err, e, "corrupt: no local header");
	if (get16(h + 26) != e->name_len ||
	    memcmp(h + LOC_LEN, e->name, e->name_len) != 0)
		return refuse_member(err, e,
		    "corrupt: the local header names another file");
	flags = get16(h + 6);
	if (flags & (FLAG_ENCRYPTED | FLAG_STRONG | FLAG_MASKED))
		return refuse_member(err, e, "encryption is not supported");
	if ((int)get16(h + 8) != e->method)
		return refuse_member(err, e,
		    "corrupt: the local header has another method");
	x = get16(h + 28);
	start = e->offset + LOC_LEN + e->name_len + x;
	if (start + e->csize > e->limit)
		return refuse_member(err, e,
		    "corrupt: its data runs into the next member");
	/* The extra field is at most 64 KiB: j->in has room. */
	if (read_at(j->z->fd, j->in, x, e->offset + LOC_LEN + e->name_len,
	    err) < 0)
		return -1;
	x64 = extra_zip64(j->in, x);
	if (x64 < 0)
		return refuse_member(err, e,
		    "corrupt: malformed local extra field");
	if (x64 > 0 || (!(flags & FLAG_DESCRIPTOR) &&
	    (get32(h + 18) == MAX32 || get32(h + 22) == MAX32)))
		return refuse_member(err, e, "zip64 is not supported");
	/* With bit 3 the sizes and CRC follow the data; the directory's
	 * are the ones checked against it. */
	if (!(flags & FLAG_DESCRIPTOR) && (get32(h + 14) != e->crc ||
	    get32(h + 18) != e->csize || get32(h + 22) != e->size))
		return refuse_member(err, e, "corrupt: the local header "
		    "disagrees with the central directory");
	j->at = start;
	j->left = e->csize;
	return 0;
}

/* Counts, sums and hands on uncompressed bytes; never more than the
 * member's size reach OUT. */
static int emit(struct job *j, const unsigned char *p, size_t n,
    struct ab_err *err)
{
	if (n > j->e->size - j->got)
		return refuse_member(err, j->e,
		    "corrupt: more than its %llu bytes", j->e->size);
	j->got += n;
	j->crc = crc32(j->crc, p, (uInt)n);
	return j->out(j->ctx, p, n, err);
}

/* Up to CHUNK more compressed bytes into j->in: their count. */
static int more(struct job *j, size_t *n, struct ab_err *err)
{
	*n = j->left < CHUNK ? (size_t)j->left : CHUNK;
	if (read_at(j->z->fd, j->in, *n, j->at, err) < 0)
		return -1;
	j->at += *n;
	j->left -= *n;
	return 0;
}

static int copy_stored(struct job *j, struct ab_err *err)
{
	size_t n;

	while (j->left > 0)
		if (more(j, &n, err) < 0 || emit(j, j->in, n, err) < 0)
			return -1;
	return 0;
}

/* One inflate step; 1 at the end of the deflate stream. */
static int inflate_step(struct job *j, z_stream *zs, struct ab_err *err)
{
	size_t n, have;
	int rc;

	if (zs->avail_in == 0 && j->left > 0) {
		if (more(j, &n, err) < 0)
			return -1;
		zs->next_in = j->in;
		zs->avail_in = (uInt)n;
	}
	zs->next_out = j->buf;
	zs->avail_out = CHUNK;
	rc = inflate(zs, Z_NO_FLUSH);
	if (rc == Z_MEM_ERROR)
		return ab_fail(err, AB_EENGINE, "zip: out of memory");
	if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
		return refuse_member(err, j->e, "corrupt: bad deflate "
		    "data%s%s", zs->msg ? ": " : "", zs->msg ? zs->msg : "");
	have = CHUNK - zs->avail_out;
	if (have > 0 && emit(j, j->buf, have, err) < 0)
		return -1;
	if (rc == Z_STREAM_END)
		return 1;
	/* No input left and nothing came out: the stream was cut short
	 * (inflate makes progress whenever it can). */
	if (have == 0 && zs->avail_in == 0 && j->left == 0)
		return refuse_member(err, j->e,
		    "corrupt: the deflate data ends early");
	return 0;
}

static int copy_deflated(struct job *j, struct ab_err *err)
{
	z_stream zs;
	int rc;

	/* No data at all (not even an empty deflate block) is an empty
	 * member for some writers, and for Python's zipfile; the size and
	 * CRC checks still apply. */
	if (j->left == 0)
		return 0;
	memset(&zs, 0, sizeof zs);
	/* Raw deflate: a zip member has no zlib header. */
	if (inflateInit2(&zs, -MAX_WBITS) != Z_OK)
		return ab_fail(err, AB_EENGINE, "zip: cannot set up inflate");
	while ((rc = inflate_step(j, &zs, err)) == 0)
		;
	if (rc > 0 && (zs.avail_in > 0 || j->left > 0))
		rc = refuse_member(err, j->e, "corrupt: bytes after the "
		    "deflate data within its compressed size");
	inflateEnd(&zs);
	return rc < 0 ? -1 : 0;
}

int ab_zip_read(struct ab_zip *z, const struct ab_zip_member *m,
    ab_zip_out out, void *ctx, struct ab_err *err)
{
	struct job j;
	int rc;

	memset(&j, 0, sizeof j);
	if ((j.e = entry_of(z, m, err)) == NULL)
		return -1;
	j.z = z;
	j.out = out;
	j.ctx = ctx;
	j.crc = crc32(0, NULL, 0);
	if ((j.in = malloc(2 * (size_t)CHUNK)) == NULL)
		return ab_fail(err, AB_EENGINE, "zip: out of memory");
	j.buf = j.in + CHUNK;
	rc = check_local(&j, err);
	if (rc == 0)
		rc = j.e->method == 0 ? copy_stored(&j, err) :
		    copy_deflated(&j, err);
	free(j.in);
	if (rc < 0)
		return -1;
	if (j.got != j.e->size)
		return refuse_member(err, j.e, "corrupt: %llu bytes, not the "
		    "%llu listed", j.got, j.e->size);
	if (j.crc != j.e->crc)
		return refuse_member(err, j.e, "corrupt: CRC-32 mismatch");
	return 0;
}

static int to_buf(void *ctx, const void *p, size_t n, struct ab_err *err)
{
	struct ab_buf *b = ctx;

	if (ab_buf_add(b, p, n) < 0)
		return ab_fail(err, b->over ? AB_EREFUSED : AB_EENGINE,
		    b->over ? "zip: a member over its size" :
		    "zip: out of memory");
	return 0;
}

int ab_zip_read_small(struct ab_zip *z, const char *name, struct ab_buf *b,
    size_t max, struct ab_err *err)
{
	struct ab_zip_member m;
	char s[128];
	int rc;

	ab_buf_init(b, max);
	show(s, sizeof s, (const unsigned char *)name, strlen(name));
	rc = ab_zip_find(z, name, &m, err);
	if (rc == 0)
		return ab_fail(err, AB_EREFUSED, "zip: no member %s", s);
	if (rc < 0)
		return -1;
	if (m.size > max)
		return ab_fail(err, AB_EREFUSED, "zip: member %s is over %zu "
		    "bytes (%llu)", s, max, m.size);
	/* An empty member still gets a buffer, so b->data is "". */
	if (ab_buf_add(b, "", 0) < 0)
		return ab_fail(err, AB_EENGINE, "zip: out of memory");
	if (ab_zip_read(z, &m, to_buf, b, err) < 0) {
		ab_buf_free(b);
		return -1;
	}
	return 0;
}
