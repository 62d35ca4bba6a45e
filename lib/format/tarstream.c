#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "tarstream.h"

/* Written here, not by libarchive: its writer turned every path from the
 * locale's charset to UTF-8, so in the C locale a file named "dé.txt"
 * could not be sent at all, and it cloned each entry on the way (a tenth
 * of a seeding's CPU on 100,000 files).  A path is bytes, as git keeps
 * it; ustar headers, with a pax extended header before one whose path or
 * link target is over 100 bytes or whose size or owner does not fit. */

#define CHUNK (64 * 1024)
#define BLOCK 512
#define SIZE_MAX_OCTAL 077777777777LL	/* 11 digits */
#define ID_MAX_OCTAL 07777777u		/* 7 digits */
/* An entry's pax records: a path (4 KiB) and a link target (git and
 * readlink give 4 KiB at most), with a size and owners. */
#define PAX_MAX (64 * 1024)
/* What waits to be handed out: less than one read (curl asks at most
 * its upload buffer, 2 MiB) and one step, a chunk or a header. */
#define OUT_MAX ((2u << 20) + CHUNK + PAX_MAX + 8 * BLOCK)

struct ab_tar {
	struct ab_tar_source src;
	struct ab_buf out;	/* written, not yet handed out */
	size_t pos;
	long long remaining;	/* of the current file */
	size_t pad;		/* zeros after the current file's bytes */
	char path_copy[4096];
	int in_file;
	int finished;
	char chunk[CHUNK];
};

int ab_tar_open(struct ab_tar **tp, const struct ab_tar_source *src,
    struct ab_err *err)
{
	struct ab_tar *t;

	t = calloc(1, sizeof *t);
	if (t == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	t->src = *src;
	ab_buf_init(&t->out, OUT_MAX);
	*tp = t;
	return 0;
}

static int out_fail(const struct ab_tar *t, struct ab_err *err)
{
	return ab_buf_fail(&t->out, AB_EENGINE, "a tar's bytes not yet sent",
	    err);
}

/* WIDTH-1 zero-padded octal digits and a NUL, as snprintf "%0*llo" would
 * write them; by hand because snprintf was a fifth of seeding's main
 * thread at 10,000 files.  The callers keep V within WIDTH-1 digits. */
static void octal(char *f, size_t width, unsigned long long v)
{
	size_t i = width - 1;

	f[i] = '\0';
	while (i-- > 0) {
		f[i] = (char)('0' + (v & 7));
		v >>= 3;
	}
}

/* One header block: name, mode, uid, gid, size, mtime, checksum, type,
 * link name, "ustar\0" "00"; the owner names are left empty. */
static int put_block(struct ab_tar *t, const char *name, char type,
    const struct ab_tar_entry *e, long long size, const char *link)
{
	unsigned char h[BLOCK];
	unsigned sum = 0;
	size_t i;

	memset(h, 0, sizeof h);
	memcpy(h, name, strnlen(name, 100));
	octal((char *)h + 100, 8, e->mode & 07777);
	octal((char *)h + 108, 8, e->uid <= ID_MAX_OCTAL ? e->uid : 0);
	octal((char *)h + 116, 8, e->gid <= ID_MAX_OCTAL ? e->gid : 0);
	octal((char *)h + 124, 12, (unsigned long long)(size <= SIZE_MAX_OCTAL ?
	    size : 0));
	octal((char *)h + 136, 12, (unsigned long long)(e->mtime > 0 &&
	    e->mtime <= SIZE_MAX_OCTAL ? e->mtime : 0));
	h[156] = (unsigned char)type;
	if (link != NULL)
		memcpy(h + 157, link, strnlen(link, 100));
	memcpy(h + 257, "ustar\0" "00", 8);
	memset(h + 148, ' ', 8);
	for (i = 0; i < sizeof h; i++)
		sum += h[i];
	octal((char *)h + 148, 7, sum);
	return ab_buf_add(&t->out, h, sizeof h);
}

static size_t digits(size_t n)
{
	size_t d = 1;

	while (n >= 10) {
		n /= 10;
		d++;
	}
	return d;
}

/* "LEN KEY=VALUE\n", LEN counting itself. */
static int pax_record(struct ab_buf *b, const char *key, const char *val)
{
	size_t n = strlen(key) + strlen(val) + 3, len = n + 1;

	while (digits(len) + n != len)
		len = digits(len) + n;
	return ab_buf_addf(b, "%zu %s=%s\n", len, key, val);
}

static int zeros(struct ab_buf *b, size_t n)
{
	static const char z[BLOCK];

	return n > BLOCK ? -1 : ab_buf_add(b, z, n);
}

static size_t pad_of(unsigned long long n)
{
	return (size_t)((BLOCK - n % BLOCK) % BLOCK);
}

static int put_pax(struct ab_tar *t, const struct ab_tar_entry *e,
    const char *name, const char *link, long long size, struct ab_err *err)
{
	struct ab_tar_entry x = *e;
	struct ab_buf r;
	char num[32];
	int rc = 0;

	ab_buf_init(&r, PAX_MAX);
	if (strlen(name) > 100)
		rc |= pax_record(&r, "path", name);
	if (link != NULL && strlen(link) > 100)
		rc |= pax_record(&r, "linkpath", link);
	if (size > SIZE_MAX_OCTAL) {
		rc |= ab_fmt(num, sizeof num, "%lld", size) < 0 ? -1 :
		    pax_record(&r, "size", num);
	}
	if (e->uid > ID_MAX_OCTAL) {
		rc |= ab_fmt(num, sizeof num, "%u", e->uid) < 0 ? -1 :
		    pax_record(&r, "uid", num);
	}
	if (e->gid > ID_MAX_OCTAL) {
		rc |= ab_fmt(num, sizeof num, "%u", e->gid) < 0 ? -1 :
		    pax_record(&r, "gid", num);
	}
	x.mode = 0644;
	if (rc < 0)
		ab_buf_fail(&r, AB_EREFUSED, "the pax header of a tar entry",
		    err);
	else if (r.len > 0 && (put_block(t, "././@PaxHeader", 'x', &x,
	    (long long)r.len, NULL) < 0 || ab_buf_add(&t->out, r.data,
	    r.len) < 0 || zeros(&t->out, pad_of(r.len)) < 0))
		rc = out_fail(t, err);
	ab_buf_free(&r);
	return rc < 0 ? -1 : 0;
}

static int put_header(struct ab_tar *t, const struct ab_tar_entry *e,
    struct ab_err *err)
{
	const char *link = e->type == AB_TAR_SYMLINK ? e->link : NULL;
	long long size = e->type == AB_TAR_FILE ? e->size : 0;
	char type = e->type == AB_TAR_DIR ? '5' :
	    e->type == AB_TAR_SYMLINK ? '2' : '0';
	char name[4098];

	if (e->path == NULL || e->path[0] == '\0' || size < 0 ||
	    (e->type == AB_TAR_SYMLINK && (link == NULL || link[0] == '\0')))
		return ab_fail(err, AB_EENGINE, "a tar entry without a name, "
		    "target or size");
	if (ab_fmt(name, sizeof name, "%s%s", e->path,
	    e->type == AB_TAR_DIR ? "/" : "") < 0 || (size > 0 &&
	    ab_fmt(t->path_copy, sizeof t->path_copy, "%s", e->path) < 0))
		return ab_fail(err, AB_EREFUSED, "path too long for a tar: "
		    "%.64s...", e->path);
	if (put_pax(t, e, name, link, size, err) < 0)
		return -1;
	if (put_block(t, name, type, e, size, link) < 0)
		return out_fail(t, err);
	if (size > 0) {
		t->in_file = 1;
		t->remaining = size;
		t->pad = pad_of((unsigned long long)size);
	}
	return 0;
}

static int put_data(struct ab_tar *t, struct ab_err *err)
{
	size_t want = t->remaining < CHUNK ? (size_t)t->remaining : CHUNK;
	long got;

	got = t->src.data(t->src.ctx, t->chunk, want, err);
	if (got < 0)
		return -1;
	if (got == 0)
		return ab_fail(err, AB_EREFUSED, "%s shrank while it was read",
		    t->path_copy);
	if ((size_t)got > want)
		return ab_fail(err, AB_EENGINE, "%s: a source gave more than "
		    "asked", t->path_copy);
	if (ab_buf_add(&t->out, t->chunk, (size_t)got) < 0)
		return out_fail(t, err);
	t->remaining -= got;
	if (t->remaining == 0) {
		t->in_file = 0;
		if (zeros(&t->out, t->pad) < 0)
			return out_fail(t, err);
	}
	return 0;
}

/* Produces the next piece of the archive into t->out. */
static int step(struct ab_tar *t, struct ab_err *err)
{
	struct ab_tar_entry e;
	int rc;

	if (t->in_file)
		return put_data(t, err);
	memset(&e, 0, sizeof e);
	rc = t->src.next(t->src.ctx, &e, err);
	if (rc < 0)
		return -1;
	if (rc > 0)
		return put_header(t, &e, err);
	/* The end: two zero blocks. */
	if (zeros(&t->out, BLOCK) < 0 || zeros(&t->out, BLOCK) < 0)
		return out_fail(t, err);
	t->finished = 1;
	return 0;
}

long ab_tar_read(void *arg, char *p, size_t n, struct ab_err *err)
{
	struct ab_tar *t = arg;
	size_t k;

	/* Keep only what is not handed out yet: the buffer stays about one
	 * read's size, never the whole archive (a 50 MiB file would sit in
	 * it whole otherwise). */
	if (t->pos > 0) {
		ab_buf_consume(&t->out, t->pos);
		t->pos = 0;
	}
	/* Fill the caller's whole buffer when we can: one piece per read
	 * would be one small socket write per tar header. */
	while (t->out.len - t->pos < n && !t->finished)
		if (step(t, err) < 0)
			return -1;
	k = t->out.len - t->pos;
	if (k > n)
		k = n;
	if (k > 0)
		memcpy(p, t->out.data + t->pos, k);
	t->pos += k;
	return (long)k;
}

void ab_tar_close(struct ab_tar *t)
{
	if (t == NULL)
		return;
	ab_buf_free(&t->out);
	free(t);
}
