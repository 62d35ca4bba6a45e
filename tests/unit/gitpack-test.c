/* gitpack-test.c: unit tests for ab_deflate (lib/git/gitpack.c), the one
 * deflate loop of the pack writer, the loose blobs (gitstage.c) and the
 * streamed packs and patches (gitstream.c).  TAP output. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "gitpack.h"
#include "tap.h"

#define MIB (1024 * 1024)
#define OUTCAP (64 * 1024)

/* The input, handed over PIECE bytes at a time; the output, collected. */
struct mem {
	const unsigned char *in;
	size_t len, off, piece;
	int fail_read_at;	/* the read that fails, counted from 1; 0 */
	int fail_write;		/* 1: every write fails */
	int reads;
	unsigned char *out;
	size_t outlen, outmax, biggest;
};

static long mem_read(void *arg, const unsigned char **p, struct ab_err *err)
{
	struct mem *m = arg;
	size_t k = m->len - m->off < m->piece ? m->len - m->off : m->piece;

	if (++m->reads == m->fail_read_at)
		return ab_fail(err, AB_EENGINE, "the source broke");
	*p = m->in + m->off;
	m->off += k;
	return (long)k;
}

static int mem_write(void *arg, const unsigned char *p, size_t n,
    struct ab_err *err)
{
	struct mem *m = arg;

	if (m->fail_write)
		return ab_fail(err, AB_EENGINE, "the sink is full");
	if (n > m->biggest)
		m->biggest = n;
	if (m->outlen + n > m->outmax)
		return ab_fail(err, AB_EENGINE, "more output than expected");
	memcpy(m->out + m->outlen, p, n);
	m->outlen += n;
	return 0;
}

/* Deflates IN (LEN bytes) through Z into M->out; 0 or -1. */
static int run(z_stream *z, struct mem *m, const unsigned char *in,
    size_t len, size_t piece, size_t outcap, size_t probe,
    struct ab_err *err)
{
	static unsigned char buf[OUTCAP];
	struct ab_deflate_io io = { .read = mem_read, .write = mem_write,
	    .arg = m, .out = buf, .outcap = outcap, .probe = probe };

	m->in = in;
	m->len = len;
	m->off = 0;
	m->piece = piece;
	m->reads = 0;
	m->outlen = 0;
	m->biggest = 0;
	return ab_deflate(z, &io, err);
}

/* 1 when M's output inflates to exactly IN. */
static int inflates_to(const struct mem *m, const unsigned char *in,
    size_t len)
{
	unsigned char *back = malloc(len + 1);
	uLongf n = (uLongf)len + 1;
	int same;

	if (back == NULL)
		return 0;
	same = uncompress(back, &n, m->out, (uLong)m->outlen) == Z_OK &&
	    n == len && memcmp(back, in, len) == 0;
	free(back);
	return same;
}

/* Bytes drawn evenly from NSYM values (xorshift64, so a failure
 * repeats): with 192, zlib's fastest level gets them to some 96%, not
 * below 90%. */
static void draw(unsigned char *p, size_t n, unsigned nsym)
{
	uint64_t x = 0x9e3779b97f4a7c15u;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (unsigned char)(x % nsym);
	}
}

/* Lines of text: shrinks to a few percent. */
static void text(unsigned char *p, size_t n)
{
	static const char line[] = "int main(void) { return 0; }\n";
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)line[i % (sizeof line - 1)];
}

static void probes(z_stream *z, struct mem *m)
{
	size_t len = 4 * MIB;
	unsigned char *dense = malloc(len), *plain = malloc(len);
	struct ab_err err;

	if (dense == NULL || plain == NULL) {
		printf("Bail out! out of memory\n");
		exit(1);
	}
	draw(dense, len, 192);
	text(plain, len);

	ok(run(z, m, dense, len, len, OUTCAP, 0, &err) == 0 &&
	    inflates_to(m, dense, len) && m->outlen < len / 100 * 97,
	    "without a probe, input that shrinks by less than a tenth is "
	    "deflated throughout");
	ok(run(z, m, dense, len, 64 * 1024, OUTCAP, MIB, &err) == 0 &&
	    inflates_to(m, dense, len) && m->outlen > len / 100 * 98 &&
	    m->outlen < len + len / 100,
	    "with a probe of 1 MiB, it is stored from there on");
	ok(run(z, m, plain, len, 64 * 1024, OUTCAP, MIB, &err) == 0 &&
	    inflates_to(m, plain, len) && m->outlen < len / 10,
	    "the same stream, once it stored, deflates the next input again");
	ok(run(z, m, plain, len, len, 1000, MIB, &err) == 0 &&
	    inflates_to(m, plain, len) && m->biggest <= 1000,
	    "no write is longer than the output buffer");
	ok(run(z, m, dense, len, 64 * 1024, 1000, MIB, &err) == 0 &&
	    inflates_to(m, dense, len) && m->biggest <= 1000 &&
	    m->outlen > len / 100 * 98,
	    "nor while it switches to storing");
	free(dense);
	free(plain);
}

static void edges(z_stream *z, struct mem *m)
{
	static const unsigned char none[1];
	unsigned char small[3000];
	struct ab_err err;

	text(small, sizeof small);
	ok(run(z, m, none, 0, 1, OUTCAP, MIB, &err) == 0 &&
	    inflates_to(m, none, 0), "no input is the empty stream");
	ok(run(z, m, small, sizeof small, 7, OUTCAP, MIB, &err) == 0 &&
	    inflates_to(m, small, sizeof small),
	    "input in pieces of 7 bytes inflates back whole");
	m->fail_read_at = 3;
	ok(run(z, m, small, sizeof small, 7, OUTCAP, MIB, &err) == -1 &&
	    strcmp(err.msg, "the source broke") == 0,
	    "a read that fails is the call's failure, its message kept");
	m->fail_read_at = 0;
	m->fail_write = 1;
	ok(run(z, m, small, sizeof small, 7, OUTCAP, MIB, &err) == -1 &&
	    strcmp(err.msg, "the sink is full") == 0,
	    "a write that fails is the call's failure, its message kept");
	m->fail_write = 0;
	ok(run(z, m, small, sizeof small, 7, OUTCAP, MIB, &err) == 0 &&
	    inflates_to(m, small, sizeof small),
	    "the stream serves again after a failure");
}

int main(void)
{
	struct mem m;
	z_stream z;

	memset(&m, 0, sizeof m);
	memset(&z, 0, sizeof z);
	m.outmax = 5 * MIB;
	if ((m.out = malloc(m.outmax)) == NULL ||
	    deflateInit(&z, Z_BEST_SPEED) != Z_OK) {
		printf("Bail out! cannot start zlib\n");
		return 1;
	}
	plan(10);
	probes(&z, &m);
	edges(&z, &m);
	deflateEnd(&z);
	free(m.out);
	return done_testing();
}
