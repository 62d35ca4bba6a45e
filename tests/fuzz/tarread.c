/* tarread.c: libFuzzer harness for the tar reader (lib/format/tarread.c), which
 * reads back what the agent left in /work for ab-export: every byte is the
 * agent's.  Beyond not crashing: an entry has a path, a file's data is
 * exactly its size, an entry's type is one the reader names, and a
 * refusal is one printable line; and the same bytes fed in pieces of any
 * size (ab_tarread_open_fed, as an archive made inside comes) give the
 * same entries, data and outcome as read whole. */
#include <stdint.h>
#include <string.h>

#include "common.h"
#include "tarread.h"

#define INPUT_MAX (1 << 20)

/* What a read saw: a hash over every entry's fields and bytes. */
static uint64_t seen;

static void mix(const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n-- > 0)
		seen = (seen ^ *c++) * 1099511628211ULL;
}

static int one(struct ab_tarread *t, const struct ab_tarread_entry *e,
    struct ab_err *err)
{
	char buf[4096];
	long long total = 0;
	long got;

	if (e->path == NULL || e->type > AB_TR_OTHER || e->size < 0)
		abort();
	if ((e->type == AB_TR_SYMLINK || e->type == AB_TR_HARDLINK) &&
	    e->link == NULL)
		abort();
	mix(e->path, strlen(e->path) + 1);
	if (e->link != NULL)
		mix(e->link, strlen(e->link) + 1);
	mix(&e->type, sizeof e->type);
	mix(&e->mode, sizeof e->mode);
	mix(&e->size, sizeof e->size);
	while ((got = ab_tarread_data(t, buf, sizeof buf, err)) > 0) {
		mix(buf, (size_t)got);
		total += got;
	}
	if (got < 0)
		return -1;
	if (e->type == AB_TR_FILE && total != e->size)
		abort();
	return 0;
}

struct feed {
	struct ab_tarread *t;
	const uint8_t *p;
	size_t n, at;
	uint32_t rng;
};

/* Pieces of 0 to 1,500 bytes, drawn from the input's length. */
static int pull(void *ctx, struct ab_err *err)
{
	struct feed *f = ctx;
	size_t k;

	if (f->at == f->n)
		return 1;
	f->rng ^= f->rng << 13;
	f->rng ^= f->rng >> 17;
	f->rng ^= f->rng << 5;
	k = f->rng % 1501;
	if (k > f->n - f->at)
		k = f->n - f->at;
	if (ab_tarread_feed(f->t, (const char *)f->p + f->at, k, err) < 0)
		return -1;
	f->at += k;
	return 0;
}

static int read_all(struct ab_tarread *t, int rc, struct ab_err *err)
{
	const struct ab_tarread_entry *e;

	seen = 14695981039346656037ULL;
	while (rc == 0 && (rc = ab_tarread_next(t, &e, err)) == 1)
		rc = one(t, e, err);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct feed f = { NULL, data, size, 0, (uint32_t)size * 2654435761u | 1 };
	uint64_t whole;
	int fed;
	struct ab_tarread *t = NULL;
	struct ab_err err;
	int rc;

	if (size > INPUT_MAX)
		return 0;
	memset(&err, 0, sizeof err);
	rc = ab_tarread_open_mem(&t, data, size, INPUT_MAX, "archive", &err);
	rc = read_all(t, rc, &err);
	if (rc < 0)
		fuzz_err(&err);
	ab_tarread_close(t);
	whole = seen;
	memset(&err, 0, sizeof err);
	fed = ab_tarread_open_fed(&f.t, pull, &f, INPUT_MAX, "archive", &err);
	fed = read_all(f.t, fed, &err);
	if (fed < 0)
		fuzz_err(&err);
	ab_tarread_close(f.t);
	if (fed != rc || (rc == 0 && seen != whole))
		abort();
	return 0;
}
