#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "file.h"
#include "gitpack.h"
#include "hash.h"

#define CHUNK (64 * 1024)
/* zlib clears its hash table for every stream: 64 KiB at the default
 * memLevel, which on 100,000 small objects was a tenth of the packer's
 * time.  Objects under SMALL bytes get a stream with a table of 4 KiB;
 * above 2 KiB the small table's collisions cost more than the clearing
 * saves (zlib level 1, a C file: 4,000 bytes 19.4 us against 16.9, a
 * tree of 100 entries 74 us against 28). */
#define SMALL (2 * 1024)

struct ab_pack {
	char dir[4200], tmp[4300], tmpidx[4300];
	int fd;
	struct ab_sha1 sha;
	z_stream z[2];		/* small objects, the rest */
	int zinit;
	uint32_t crc;
	uint64_t off;
	size_t n, added, used;
	const unsigned char *in;	/* what of the object is left */
	size_t inleft;
	unsigned char buf[CHUNK], zbuf[CHUNK];
};

static int flush(struct ab_pack *p)
{
	int rc = ab_write_all(p->fd, p->buf, p->used);

	p->used = 0;
	return rc;
}

/* Buffered output, not hashed (the trailers). */
static int put(struct ab_pack *p, const unsigned char *d, size_t n)
{
	size_t k;

	for (; n > 0; d += k, n -= k) {
		if (p->used == CHUNK && flush(p) < 0)
			return -1;
		k = CHUNK - p->used < n ? CHUNK - p->used : n;
		memcpy(p->buf + p->used, d, k);
		p->used += k;
	}
	return 0;
}

/* N is at most CHUNK: crc32 takes a uInt. */
static int emit(struct ab_pack *p, const unsigned char *d, size_t n)
{
	ab_sha1_add(&p->sha, d, n);
	p->crc = (uint32_t)crc32(p->crc, d, (uInt)n);
	p->off += n;
	return put(p, d, n);
}

static int emit32(struct ab_pack *p, uint32_t v)
{
	unsigned char b[4] = { (unsigned char)(v >> 24),
	    (unsigned char)(v >> 16), (unsigned char)(v >> 8),
	    (unsigned char)v };

	return emit(p, b, 4);
}

static int fail_write(struct ab_err *err, const char *path)
{
	return ab_fail_errno(err, AB_EENGINE, "cannot write %s", path);
}

/* A file of DIR under a temporary name, and a fresh checksum. */
static int open_tmp(struct ab_pack *p, char *path, size_t size,
    const char *stem, struct ab_err *err)
{
	if (ab_fmt_err(err, path, size, "the pack's directory",
	    "%s/%s_XXXXXX", p->dir, stem) < 0) {
		path[0] = '\0';
		return -1;
	}
	if ((p->fd = mkstemp(path)) < 0) {
		path[0] = '\0';
		return ab_fail_errno(err, AB_EENGINE, "cannot create a file "
		    "in %s", p->dir);
	}
	p->used = 0;
	return ab_sha1_init(&p->sha, err);
}

int ab_pack_start(struct ab_pack **pp, const char *dir, size_t n,
    struct ab_err *err)
{
	struct ab_pack *p = calloc(1, sizeof *p);

	*pp = NULL;
	if (p == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	p->fd = -1;
	p->n = n;
	if (ab_fmt(p->dir, sizeof p->dir, "%s", dir) < 0) {
		free(p);
		return ab_fail(err, AB_EUSAGE, "the pack's directory: longer "
		    "than %zu bytes", sizeof p->dir - 1);
	}
	if (n > UINT32_MAX) {
		free(p);
		return ab_fail(err, AB_EREFUSED, "more objects than a pack "
		    "holds");
	}
	if (deflateInit2(&p->z[0], Z_BEST_SPEED, Z_DEFLATED, 15, 4,
	    Z_DEFAULT_STRATEGY) == Z_OK)
		p->zinit = 1;
	if (p->zinit == 1 && deflateInit(&p->z[1], Z_BEST_SPEED) == Z_OK)
		p->zinit = 2;
	if (p->zinit < 2) {
		ab_pack_abort(p);
		return ab_fail(err, AB_EENGINE, "cannot start zlib");
	}
	if (open_tmp(p, p->tmp, sizeof p->tmp, "tmp_pack", err) < 0 ||
	    emit(p, (const unsigned char *)"PACK", 4) < 0 ||
	    emit32(p, 2) < 0 || emit32(p, (uint32_t)n) < 0) {
		if (p->fd >= 0)
			fail_write(err, p->tmp);
		ab_pack_abort(p);
		return -1;
	}
	*pp = p;
	return 0;
}

size_t ab_pack_entry_head(unsigned char h[16], int type, size_t size)
{
	unsigned c = ((unsigned)type << 4) | (size & 15);
	size_t k = 0;

	for (size >>= 4; size != 0; size >>= 7) {
		h[k++] = (unsigned char)(c | 0x80);
		c = size & 0x7f;
	}
	h[k++] = (unsigned char)c;
	return k;
}

/* Hands over what the output holds, and empties it. */
static int drain(z_stream *z, const struct ab_deflate_io *io,
    struct ab_err *err)
{
	size_t n = io->outcap - z->avail_out;

	z->next_out = io->out;
	z->avail_out = (uInt)io->outcap;
	return n > 0 ? io->write(io->arg, io->out, n, err) : 0;
}

/* From here on, stored: zlib may need room to end its current block. */
static int store(z_stream *z, const struct ab_deflate_io *io,
    struct ab_err *err)
{
	int zr;

	while ((zr = deflateParams(z, Z_NO_COMPRESSION,
	    Z_DEFAULT_STRATEGY)) == Z_BUF_ERROR)
		if (drain(z, io, err) < 0)
			return -1;
	return zr == Z_OK ? 0 : ab_fail(err, AB_EENGINE, "zlib failed");
}

int ab_deflate(z_stream *z, const struct ab_deflate_io *io,
    struct ab_err *err)
{
	const unsigned char *piece;
	int zr = Z_OK, flush = Z_NO_FLUSH, probed = io->probe == 0;
	long k;

	z->avail_in = 0;
	z->next_out = io->out;
	z->avail_out = (uInt)io->outcap;
	/* A stream left storing by the one before starts at the fastest
	 * level again. */
	if (deflateReset(z) != Z_OK ||
	    deflateParams(z, Z_BEST_SPEED, Z_DEFAULT_STRATEGY) != Z_OK)
		return ab_fail(err, AB_EENGINE, "zlib failed");
	while (zr != Z_STREAM_END) {
		if (z->avail_in == 0 && flush == Z_NO_FLUSH) {
			if ((k = io->read(io->arg, &piece, err)) < 0)
				return -1;
			z->next_in = (unsigned char *)piece;
			z->avail_in = (uInt)k;
			flush = k == 0 ? Z_FINISH : Z_NO_FLUSH;
		}
		if ((zr = deflate(z, flush)) == Z_STREAM_ERROR)
			return ab_fail(err, AB_EENGINE, "zlib failed");
		if ((z->avail_out == 0 || zr == Z_STREAM_END) &&
		    drain(z, io, err) < 0)
			return -1;
		if (!probed && zr != Z_STREAM_END && z->total_in >= io->probe) {
			probed = 1;
			if (z->total_out * 10 > z->total_in * 9 &&
			    store(z, io, err) < 0)
				return -1;
		}
	}
	return 0;
}

/* The object being added, in pieces zlib's uInt takes. */
static long pack_read(void *arg, const unsigned char **d, struct ab_err *err)
{
	struct ab_pack *p = arg;
	size_t k = p->inleft > 1u << 30 ? 1u << 30 : p->inleft;

	(void)err;
	*d = p->in;
	p->in += k;
	p->inleft -= k;
	return (long)k;
}

static int pack_write(void *arg, const unsigned char *d, size_t n,
    struct ab_err *err)
{
	struct ab_pack *p = arg;

	return emit(p, d, n) < 0 ? fail_write(err, p->tmp) : 0;
}

int ab_pack_add(struct ab_pack *p, struct ab_pack_ent *e, int type,
    const void *data, size_t len, struct ab_err *err)
{
	struct ab_deflate_io io = { .read = pack_read, .write = pack_write,
	    .arg = p, .out = p->zbuf, .outcap = CHUNK };
	unsigned char h[16];

	if (p->added == p->n)
		return ab_fail(err, AB_EENGINE, "more objects than counted "
		    "for the pack");
	e->off = p->off;
	p->crc = (uint32_t)crc32(0L, Z_NULL, 0);
	if (emit(p, h, ab_pack_entry_head(h, type, len)) < 0)
		return fail_write(err, p->tmp);
	p->in = data;
	p->inleft = len;
	if (ab_deflate(&p->z[len >= SMALL], &io, err) < 0)
		return -1;
	e->crc = p->crc;
	p->added++;
	return 0;
}

static int cmp_ent(const void *a, const void *b)
{
	return memcmp(((const struct ab_pack_ent *)a)->id,
	    ((const struct ab_pack_ent *)b)->id, AB_OID_RAW);
}

/* Ends the file being written: its checksum last, read-only. */
static int seal(struct ab_pack *p, unsigned char sum[AB_OID_RAW],
    const char *path, struct ab_err *err)
{
	int rc = 0;

	if (ab_sha1_out(&p->sha, sum) < 0)
		rc = ab_fail(err, AB_EENGINE, "cannot hash %s", path);
	else if (put(p, sum, AB_OID_RAW) < 0 || flush(p) < 0 ||
	    fchmod(p->fd, 0444) < 0)
		rc = fail_write(err, path);
	if (close(p->fd) < 0 && rc == 0)
		rc = fail_write(err, path);
	p->fd = -1;
	return rc;
}

/* Index version 2: fan-out table, names, CRCs, 31-bit offsets, then the
 * 64-bit ones for a pack over 2 GiB, the pack's checksum, its own. */
static int write_idx(struct ab_pack *p, const struct ab_pack_ent *e,
    size_t n, const unsigned char packsum[AB_OID_RAW], struct ab_err *err)
{
	static const unsigned char head[8] = { 0xff, 't', 'O', 'c', 0, 0, 0, 2 };
	unsigned char sum[AB_OID_RAW], b[8];
	size_t i, j, nbig = 0;
	int rc;

	if (open_tmp(p, p->tmpidx, sizeof p->tmpidx, "tmp_idx", err) < 0)
		return -1;
	rc = emit(p, head, sizeof head);
	for (i = 0, j = 0; i < 256 && rc == 0; i++) {
		while (j < n && e[j].id[0] <= i)
			j++;
		rc = emit32(p, (uint32_t)j);
	}
	for (i = 0; i < n && rc == 0; i++)
		rc = emit(p, e[i].id, AB_OID_RAW);
	for (i = 0; i < n && rc == 0; i++)
		rc = emit32(p, e[i].crc);
	for (i = 0; i < n && rc == 0; i++)
		rc = emit32(p, e[i].off < 0x80000000u ? (uint32_t)e[i].off :
		    0x80000000u | (uint32_t)nbig++);
	for (i = 0; i < n && rc == 0; i++) {
		if (e[i].off < 0x80000000u)
			continue;
		for (j = 0; j < 8; j++)
			b[j] = (unsigned char)(e[i].off >> (56 - 8 * j));
		rc = emit(p, b, 8);
	}
	if (rc == 0)
		rc = emit(p, packsum, AB_OID_RAW);
	if (rc < 0)
		return fail_write(err, p->tmpidx);
	return seal(p, sum, p->tmpidx, err);
}

static int place(const char *from, const char *dir, const char *hex,
    const char *ext, struct ab_err *err)
{
	char to[4300];

	if (ab_fmt_err(err, to, sizeof to, "the pack's directory",
	    "%s/pack-%s.%s", dir, hex, ext) < 0)
		return -1;
	if (rename(from, to) < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot rename %s", from);
	return 0;
}

int ab_pack_end(struct ab_pack *p, struct ab_pack_ent *e, size_t n,
    struct ab_err *err)
{
	unsigned char sum[AB_OID_RAW];
	char hex[AB_OID_HEX + 1];
	size_t i;
	int rc;

	if (p->added != p->n || n != p->n)
		rc = ab_fail(err, AB_EENGINE, "fewer objects than counted "
		    "for the pack");
	else
		rc = seal(p, sum, p->tmp, err);
	if (rc == 0) {
		qsort(e, n, sizeof *e, cmp_ent);
		for (i = 1; i < n && rc == 0; i++)
			if (memcmp(e[i - 1].id, e[i].id, AB_OID_RAW) == 0)
				rc = ab_fail(err, AB_EENGINE, "an object is "
				    "in the pack twice");
	}
	if (rc == 0)
		rc = write_idx(p, e, n, sum, err);
	for (i = 0; i < AB_OID_RAW && rc == 0; i++)
		rc = ab_fmt_err(err, hex + 2 * i, 3, "a pack's name", "%02x",
		    sum[i]);
	/* The index last: a pack is used only once its index is there. */
	if (rc == 0 && (rc = place(p->tmp, p->dir, hex, "pack", err)) == 0) {
		p->tmp[0] = '\0';
		/* Placed just now under that name: it fits. */
		if ((rc = place(p->tmpidx, p->dir, hex, "idx", err)) < 0 &&
		    ab_fmt(p->tmp, sizeof p->tmp, "%s/pack-%s.pack", p->dir,
		    hex) < 0)
			p->tmp[0] = '\0';
		else if (rc == 0)
			p->tmpidx[0] = '\0';
	}
	ab_pack_abort(p);
	return rc;
}

void ab_pack_abort(struct ab_pack *p)
{
	if (p == NULL)
		return;
	if (p->fd >= 0)
		close(p->fd);
	if (p->tmp[0] != '\0')
		unlink(p->tmp);
	if (p->tmpidx[0] != '\0')
		unlink(p->tmpidx);
	while (p->zinit > 0)
		deflateEnd(&p->z[--p->zinit]);
	ab_sha1_free(&p->sha);
	free(p);
}
