/* secret.c: libFuzzer harness for lib/base/secret.c, the credential's
 * placeholder and the substitution the egress proxy runs over a vendor's
 * streamed answers.  The input: a byte giving N (1 to 32), FROM and TO
 * (N bytes each), a byte giving how many piece sizes follow (0 to 15),
 * those sizes (a byte each, 0 an empty feed), then the stream, fed in
 * pieces of those sizes in turn.
 *
 * Beyond not crashing, checked against code of the harness's own: after
 * every feed, all written so far is the head of a plain whole-buffer
 * replace of the stream, no feed writes more than its bytes and N - 1,
 * and what is held back is at most N - 1 bytes, those last fed, a prefix
 * of FROM; after the flush, the whole replace.  The stream is also taken
 * as a credential: refused exactly when it is empty, too long, holds a
 * byte outside 0x21..0x7e or nothing to draw past its prefix, with one
 * printable line; otherwise its placeholder has its length, its prefix,
 * each byte of its class, and is not it. */
#include <stdint.h>
#include <string.h>

#include "common.h"
#include "secret.h"

#define INPUT_MAX 65536

/* The leftmost occurrence, then on after it: the rule a replace-all of
 * the whole buffer follows. */
static size_t replace(const uint8_t *in, size_t len, const uint8_t *from,
    const uint8_t *to, size_t n, uint8_t *out)
{
	size_t i = 0, o = 0;

	while (i < len) {
		if (len - i >= n && memcmp(in + i, from, n) == 0) {
			memcpy(out + o, to, n);
			o += n;
			i += n;
		} else
			out[o++] = in[i++];
	}
	return o;
}

static int piece(size_t at, size_t len, const uint8_t *sizes, size_t nsizes,
    size_t k, size_t *take)
{
	size_t i, sum = 0;

	for (i = 0; i < nsizes; i++)
		sum += sizes[i];
	if (at == len)
		return 0;
	/* Sizes that are all 0 would never end: one empty feed, then the
	 * rest. */
	if (nsizes == 0 || (sum == 0 && k >= nsizes))
		*take = len - at;
	else
		*take = sizes[k % nsizes] < len - at ? sizes[k % nsizes] :
		    len - at;
	return 1;
}

static void stream(const uint8_t *from, const uint8_t *to, size_t n,
    const uint8_t *sizes, size_t nsizes, const uint8_t *in, size_t len)
{
	static uint8_t want[INPUT_MAX], got[INPUT_MAX], buf[INPUT_MAX + 64];
	struct ab_subst s;
	size_t at = 0, o = 0, k, take, w, nw;

	nw = replace(in, len, from, to, n, want);
	if (ab_subst_init(&s, (const char *)from, (const char *)to, n) < 0)
		abort();
	for (k = 0; piece(at, len, sizes, nsizes, k, &take); k++) {
		w = ab_subst_feed(&s, (const char *)in + at, take, (char *)buf);
		at += take;
		if (w > take + n - 1 || s.nheld > n - 1 ||
		    o + w + s.nheld != at)
			abort();
		memcpy(got + o, buf, w);
		o += w;
		if (o > nw || memcmp(got, want, o) != 0)
			abort();
		if (s.nheld > 0 &&
		    (memcmp(in + at - s.nheld, from, s.nheld) != 0 ||
		    memcmp(s.held, in + at - s.nheld, s.nheld) != 0))
			abort();
	}
	w = ab_subst_flush(&s, (char *)buf);
	if (w > n - 1 || s.nheld != 0)
		abort();
	memcpy(got + o, buf, w);
	o += w;
	if (o != nw || memcmp(got, want, nw) != 0)
		abort();
	ab_subst_free(&s);
}

static int of_class(uint8_t c, uint8_t p)
{
	if (c >= '0' && c <= '9')
		return p >= '0' && p <= '9';
	if (c >= 'a' && c <= 'z')
		return p >= 'a' && p <= 'z';
	if (c >= 'A' && c <= 'Z')
		return p >= 'A' && p <= 'Z';
	return p == c;
}

static int drawn(uint8_t c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z');
}

/* The known prefix, as the header states it. */
static size_t prefix_of(const uint8_t *c, size_t n)
{
	static const char *const known[] = {
		"sk-ant-api03-", "sk-ant-oat01-", "sk-ant-ort01-", "sk-proj-",
		"sk-"
	};
	size_t i, best = 0;

	for (i = 0; i < sizeof known / sizeof known[0]; i++)
		if (n >= strlen(known[i]) &&
		    memcmp(c, known[i], strlen(known[i])) == 0 &&
		    strlen(known[i]) > best)
			best = strlen(known[i]);
	return best;
}

static void placeholder(const uint8_t *c, size_t n)
{
	static char out[AB_SECRET_LEN_MAX + 1];
	struct ab_err err;
	size_t i, pre = prefix_of(c, n);
	int bad = n == 0 || n > AB_SECRET_LEN_MAX, draw = 0;

	for (i = 0; i < n && !bad; i++) {
		if (c[i] < 0x21 || c[i] > 0x7e)
			bad = 1;
		if (i >= pre && drawn(c[i]))
			draw = 1;
	}
	memset(&err, 0, sizeof err);
	if (ab_placeholder((const char *)c, n, out, &err) < 0) {
		if (!bad && draw)
			abort();
		fuzz_err(&err);
		return;
	}
	if (bad || !draw || memcmp(out, c, pre) != 0 || memcmp(out, c, n) == 0)
		abort();
	for (i = pre; i < n; i++)
		if (!of_class(c[i], (uint8_t)out[i]))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *from, *to, *sizes;
	size_t n, nsizes;

	if (size < 1 || size > INPUT_MAX)
		return 0;
	n = 1 + data[0] % 32;
	if (size < 1 + 2 * n + 1)
		return 0;
	from = data + 1;
	to = from + n;
	nsizes = to[n] % 16;
	sizes = to + n + 1;
	if ((size_t)(data + size - sizes) < nsizes)
		return 0;
	stream(from, to, n, sizes, nsizes, sizes + nsizes,
	    (size_t)(data + size - sizes - nsizes));
	placeholder(sizes + nsizes, (size_t)(data + size - sizes - nsizes));
	return 0;
}
