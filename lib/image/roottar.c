#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "roottar.h"
#include "tarstream.h"

#define BLOCK 512
#define CHUNK (64 * 1024)
#define NAME_MAX_BYTES (64 * 1024)
#define ACCOUNTS_MAX (1 << 20)
/* What one step hands out: the held long-name entries (pending's bound)
 * and a header, or a chunk. */
#define EMIT_MAX (NAME_MAX_BYTES + 3 * BLOCK + CHUNK)
/* An account file: the root's and the agent's line. */
#define ADD_MAX (ACCOUNTS_MAX + 128)

enum { ROOT, LAYER };

struct ab_roottar {
	int fd, phase;
	const struct ab_rootfs *rf;
	/* bytes ready to hand out */
	struct ab_buf emit;
	size_t emit_off;
	/* the root's current entry */
	long long left;		/* data bytes (padded) still to pass */
	long long data;		/* of which real data */
	int skip;		/* left out: the layer has the path */
	int held;		/* a long name's entry: held until its owner */
	struct ab_buf *capture;	/* what the entry's data goes into */
	struct ab_buf pending;	/* long-name entries not yet passed on */
	struct ab_buf longname;	/* a pax or GNU long name's data */
	int longname_pax;
	char *next_name;	/* the name it gives the next entry */
	struct ab_buf acct[2];	/* the root's /etc/passwd and /etc/group */
	/* the layer */
	struct ab_tar_source layer;
	int layer_done, extra;
	struct ab_buf add[2];
	size_t add_off;
	struct ab_tar *tar;
};

static int not_tar(struct ab_err *err)
{
	return ab_fail(err, AB_EREFUSED, "the root filesystem is not a tar "
	    "archive agentbox can read");
}

static int oom(struct ab_err *err)
{
	return ab_fail(err, AB_EENGINE, "out of memory");
}

static int emit_fail(const struct ab_roottar *t, struct ab_err *err)
{
	return ab_buf_fail(&t->emit, AB_EENGINE, "a root entry's tar bytes",
	    err);
}

/* A numeric field: octal, or base-256 when its first byte says so. */
static int number(const unsigned char *f, size_t w, long long *v)
{
	size_t i = 0;

	*v = 0;
	if (f[0] & 0x80) {
		if (f[0] != 0x80)
			return -1;
		for (i = 1; i < w; i++) {
			if (*v > (1LL << 54))
				return -1;
			*v = (*v << 8) | f[i];
		}
		return 0;
	}
	while (i < w && f[i] == ' ')
		i++;
	for (; i < w && f[i] >= '0' && f[i] <= '7'; i++) {
		if (*v > (1LL << 54))
			return -1;
		*v = (*v << 3) | (f[i] - '0');
	}
	return i == w || f[i] == ' ' || f[i] == '\0' ? 0 : -1;
}

static int checksum_ok(const unsigned char *h)
{
	long long want;
	unsigned long sum = 0;
	int i;

	if (number(h + 148, 8, &want) < 0)
		return 0;
	for (i = 0; i < BLOCK; i++)
		sum += (i >= 148 && i < 156) ? ' ' : h[i];
	return (long long)sum == want;
}

static int read_full(int fd, char *p, size_t n, struct ab_err *err)
{
	size_t got = 0;
	ssize_t k;

	while (got < n) {
		k = read(fd, p + got, n - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return ab_fail_errno(err, AB_EENGINE,
			    "cannot read the root filesystem");
		if (k == 0)
			break;
		got += (size_t)k;
	}
	return (int)(got == n ? 1 : got == 0 ? 0 : -2);
}

/* "./etc/passwd", "/etc/passwd", "etc/passwd/" are one path; "." is "". */
static int plain_path(const char *s, char *out, size_t cap)
{
	size_t n;

	for (;;) {
		if (s[0] == '/')
			s++;
		else if (s[0] == '.' && (s[1] == '/' || s[1] == '\0'))
			s += s[1] ? 2 : 1;
		else
			break;
	}
	if (ab_fmt(out, cap, "%s", s) < 0)
		return -1;
	n = strlen(out);
	while (n > 0 && out[n - 1] == '/')
		out[--n] = '\0';
	return 0;
}

/* The pax record "path=..." of a pax header's data, or NULL. */
static char *pax_path(const struct ab_buf *b)
{
	const char *p = b->data, *end, *sp, *eq;
	long long n;
	char *q;

	/* An empty pax header has no data at all. */
	if (p == NULL)
		return NULL;
	end = p + b->len;
	while (p < end) {
		n = strtoll(p, &q, 10);
		if (q == p || *q != ' ' || n <= 0 || n > end - p)
			return NULL;
		sp = q + 1;
		/* A record ends in its newline, past its length and space
		 * ("1 path=x\n" says 1 byte: memchr's length went negative). */
		if (sp >= p + n || p[n - 1] != '\n')
			return NULL;
		eq = memchr(sp, '=', (size_t)(p + n - 1 - sp));
		if (eq != NULL && eq - sp == 4 && memcmp(sp, "path", 4) == 0)
			return strndup(eq + 1, (size_t)(p + n - 1 - (eq + 1)));
		p += n;
	}
	return NULL;
}

static int by_path(const void *key, const void *e)
{
	return strcmp(key, ((const struct ab_rentry *)e)->path);
}

/* The layer has PATH, or it is an account file the layer writes anew:
 * the root's entry is left out (the engine refuses a path twice). */
static int replaced(const struct ab_roottar *t, const char *path)
{
	/* agentbox's own directory holds the layer's files alone: nothing
	 * of the root's stands first on the image's PATH or beside the
	 * probe. */
	return strncmp(path, "usr/lib/agentbox/", 17) == 0 ||
	    strcmp(path, "etc/passwd") == 0 ||
	    strcmp(path, "etc/group") == 0 ||
	    bsearch(path, t->rf->e, t->rf->n, sizeof *t->rf->e,
	    by_path) != NULL;
}

static int name_done(struct ab_roottar *t, struct ab_err *err);

static int header(struct ab_roottar *t, struct ab_err *err)
{
	unsigned char h[BLOCK];
	char name[257], path[PATH_MAX];
	long long size;
	int i, rc;
	char type;

	rc = read_full(t->fd, (char *)h, BLOCK, err);
	if (rc == -1)
		return -1;
	if (rc == -2)
		return not_tar(err);
	for (i = 0; rc == 1 && i < BLOCK && h[i] == 0; i++)
		;
	if (rc == 0 || i == BLOCK) {
		t->phase = LAYER;	/* the end marker stays out */
		return 0;
	}
	if (!checksum_ok(h) || number(h + 124, 12, &size) < 0 || size < 0)
		return not_tar(err);
	type = (char)h[156];
	t->data = size;
	t->left = (size + BLOCK - 1) / BLOCK * BLOCK;
	t->capture = NULL;
	t->skip = t->held = 0;
	if (type == 'x' || type == 'L' || type == 'K') {
		/* Held with its owner, which may be left out. */
		if (size > NAME_MAX_BYTES)
			return not_tar(err);
		t->held = 1;
		if (ab_buf_add(&t->pending, h, BLOCK) < 0)
			return not_tar(err);
		if (type == 'K')
			return 0;
		ab_buf_reset(&t->longname);
		t->capture = &t->longname;
		t->longname_pax = type == 'x';
		return size == 0 ? name_done(t, err) : 0;
	}
	if (type == 'g')
		return ab_buf_add(&t->emit, h, BLOCK) < 0 ? emit_fail(t, err) :
		    0;
	if (t->next_name != NULL) {
		rc = plain_path(t->next_name, path, sizeof path);
	} else {
		/* Cut to fit by their precisions. */
		if (memcmp(h + 257, "ustar", 5) == 0 && h[345] != '\0')
			rc = ab_fmt(name, sizeof name, "%.155s/%.100s",
			    (char *)h + 345, (char *)h);
		else
			rc = ab_fmt(name, sizeof name, "%.100s", (char *)h);
		if (rc == 0)
			rc = plain_path(name, path, sizeof path);
	}
	/* Longer than a path: no account file, which is all it is for. */
	if (rc < 0)
		path[0] = '\0';
	free(t->next_name);
	t->next_name = NULL;
	for (i = 0; i < 2; i++)
		if (strcmp(path, i ? "etc/group" : "etc/passwd") == 0) {
			ab_buf_reset(&t->acct[i]);
			/* Not a regular file: the agent's lines alone. */
			if (type == '0' || type == '\0')
				t->capture = &t->acct[i];
		}
	t->skip = replaced(t, path);
	if (!t->skip && ((t->pending.len > 0 && ab_buf_add(&t->emit,
	    t->pending.data, t->pending.len) < 0) ||
	    ab_buf_add(&t->emit, h, BLOCK) < 0))
		return emit_fail(t, err);
	ab_buf_reset(&t->pending);
	return 0;
}

/* The long name's data ended: it names the next entry. */
static int name_done(struct ab_roottar *t, struct ab_err *err)
{
	free(t->next_name);
	t->next_name = NULL;
	if (t->longname_pax)
		t->next_name = pax_path(&t->longname);
	else if (t->longname.len > 0)
		t->next_name = strndup(t->longname.data,
		    strnlen(t->longname.data, t->longname.len));
	if (!t->longname_pax && t->next_name == NULL)
		return not_tar(err);
	return 0;
}

static int root_step(struct ab_roottar *t, struct ab_err *err)
{
	char chunk[CHUNK];
	size_t n;
	long long real;
	int rc;

	if (t->left == 0)
		return header(t, err);
	n = t->left < CHUNK ? (size_t)t->left : CHUNK;
	rc = read_full(t->fd, chunk, n, err);
	if (rc == -1)
		return -1;
	if (rc != 1)
		return not_tar(err);
	real = t->data < (long long)n ? t->data : (long long)n;
	if (t->capture != NULL && real > 0 &&
	    ab_buf_add(t->capture, chunk, (size_t)real) < 0)
		return ab_fail(err, AB_EREFUSED, "the root filesystem's "
		    "/etc/passwd, /etc/group or a long name is too large");
	if (t->held ? ab_buf_add(&t->pending, chunk, n) < 0 :
	    !t->skip && ab_buf_add(&t->emit, chunk, n) < 0)
		return t->held ? not_tar(err) : emit_fail(t, err);
	t->data -= real;
	t->left -= (long long)n;
	if (t->left == 0 && t->capture == &t->longname)
		return name_done(t, err);
	return 0;
}

/* 1 when a line of the account file has ID as its third field. */
static int has_id(const struct ab_buf *b, const char *id)
{
	const char *p = b->data, *end, *eol, *f;
	size_t k = strlen(id);
	int i;

	if (p == NULL)
		return 0;
	for (end = p + b->len; p < end; p = eol + 1) {
		eol = memchr(p, '\n', (size_t)(end - p));
		if (eol == NULL)
			eol = end;
		f = p;
		for (i = 0; i < 2 && f != NULL; i++) {
			f = memchr(f, ':', (size_t)(eol - f));
			if (f != NULL)
				f++;
		}
		if (f != NULL && (size_t)(eol - f) > k &&
		    memcmp(f, id, k) == 0 && f[k] == ':')
			return 1;
	}
	return 0;
}

static int accounts(struct ab_roottar *t, struct ab_err *err)
{
	static const char *const line[2] = {
		"agent:x:10001:10001:agent:/home/agent:/bin/sh\n",
		"agent:x:10001:\n" };
	int i;

	for (i = 0; i < 2; i++) {
		struct ab_buf *a = &t->add[i], *r = &t->acct[i];

		if (r->len > 0 && ab_buf_add(a, r->data, r->len) < 0)
			return ab_fail(err, AB_EENGINE, "out of memory");
		if (r->len > 0 && r->data[r->len - 1] != '\n' &&
		    ab_buf_adds(a, "\n") < 0)
			return ab_fail(err, AB_EENGINE, "out of memory");
		if (!has_id(r, "10001") && ab_buf_adds(a, line[i]) < 0)
			return ab_fail(err, AB_EENGINE, "out of memory");
	}
	return 0;
}

/* The layer's entries, then the two account files. */
static int layer_next(void *ctx, struct ab_tar_entry *e, struct ab_err *err)
{
	struct ab_roottar *t = ctx;
	int rc;

	if (!t->layer_done) {
		rc = t->layer.next(t->layer.ctx, e, err);
		if (rc != 0)
			return rc;
		t->layer_done = 1;
	}
	if (t->extra == 2)
		return 0;
	memset(e, 0, sizeof *e);
	e->path = t->extra ? "etc/group" : "etc/passwd";
	e->type = AB_TAR_FILE;
	e->mode = 0644;
	e->size = (long long)t->add[t->extra].len;
	t->add_off = 0;
	t->extra++;
	return 1;
}

static long layer_data(void *ctx, char *p, size_t n, struct ab_err *err)
{
	struct ab_roottar *t = ctx;
	struct ab_buf *b;
	size_t k;

	if (!t->layer_done)
		return t->layer.data(t->layer.ctx, p, n, err);
	b = &t->add[t->extra - 1];
	k = b->len - t->add_off;
	if (k > n)
		k = n;
	memcpy(p, b->data + t->add_off, k);
	t->add_off += k;
	return (long)k;
}

int ab_roottar_open(struct ab_roottar **rt, int fd, struct ab_rootfs *layer,
    struct ab_err *err)
{
	struct ab_roottar *t = calloc(1, sizeof *t);
	int i;

	*rt = NULL;
	if (t == NULL)
		return oom(err);
	t->fd = fd;
	t->rf = layer;
	ab_buf_init(&t->emit, EMIT_MAX);
	ab_buf_init(&t->pending, NAME_MAX_BYTES + 2 * BLOCK + CHUNK);
	ab_buf_init(&t->longname, NAME_MAX_BYTES);
	for (i = 0; i < 2; i++) {
		ab_buf_init(&t->acct[i], ACCOUNTS_MAX);
		ab_buf_init(&t->add[i], ADD_MAX);
	}
	ab_rootfs_source(layer, &t->layer);
	*rt = t;
	return 0;
}

static int layer_open(struct ab_roottar *t, struct ab_err *err)
{
	struct ab_tar_source src;

	if (accounts(t, err) < 0)
		return -1;
	src.next = layer_next;
	src.data = layer_data;
	src.ctx = t;
	return ab_tar_open(&t->tar, &src, err);
}

long ab_roottar_read(void *arg, char *p, size_t n, struct ab_err *err)
{
	struct ab_roottar *t = arg;
	size_t k;

	while (t->phase == ROOT && t->emit_off == t->emit.len) {
		ab_buf_reset(&t->emit);
		t->emit_off = 0;
		if (root_step(t, err) < 0)
			return -1;
		if (t->phase == LAYER && layer_open(t, err) < 0)
			return -1;
	}
	if (t->emit_off < t->emit.len) {
		k = t->emit.len - t->emit_off;
		if (k > n)
			k = n;
		memcpy(p, t->emit.data + t->emit_off, k);
		t->emit_off += k;
		return (long)k;
	}
	return ab_tar_read(t->tar, p, n, err);
}

void ab_roottar_close(struct ab_roottar *t)
{
	int i;

	if (t == NULL)
		return;
	if (t->tar != NULL)
		ab_tar_close(t->tar);
	ab_buf_free(&t->emit);
	ab_buf_free(&t->pending);
	ab_buf_free(&t->longname);
	for (i = 0; i < 2; i++) {
		ab_buf_free(&t->acct[i]);
		ab_buf_free(&t->add[i]);
	}
	free(t->next_name);
	free(t);
}
