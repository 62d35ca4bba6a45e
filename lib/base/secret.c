#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "secret.h"

/* --- placeholders ------------------------------------------------------ */

/* Longest first: the first that matches is the longest. */
static const char *const prefixes[] = {
	"sk-ant-api03-", "sk-ant-oat01-", "sk-ant-ort01-", "sk-proj-", "sk-"
};

static size_t known_prefix(const char *cred, size_t n)
{
	size_t i, k;

	for (i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
		k = strlen(prefixes[i]);
		if (n >= k && memcmp(cred, prefixes[i], k) == 0)
			return k;
	}
	return 0;
}

/* The first byte and the size of C's class, or 0 for a byte kept as is.
 * Ranges, not ctype: the locale must not change a placeholder. */
static unsigned class_of(char c, char *base)
{
	if (c >= '0' && c <= '9')
		*base = '0';
	else if (c >= 'a' && c <= 'z')
		*base = 'a';
	else if (c >= 'A' && c <= 'Z')
		*base = 'A';
	else
		return 0;
	return *base == '0' ? 10 : 26;
}

static int check(const char *cred, size_t n, size_t pre, struct ab_err *err)
{
	size_t i;
	char base;
	int drawable = 0;

	if (n == 0)
		return ab_fail(err, AB_EUSAGE, "the credential is empty");
	if (n > AB_SECRET_LEN_MAX)
		return ab_fail(err, AB_EUSAGE, "the credential is %zu bytes, "
		    "more than %d", n, AB_SECRET_LEN_MAX);
	for (i = 0; i < n; i++) {
		if ((unsigned char)cred[i] < 0x21 ||
		    (unsigned char)cred[i] > 0x7e)
			return ab_fail(err, AB_EUSAGE, "the credential's byte %zu "
			    "of %zu is a space, a control byte or not ASCII "
			    "(a placeholder stands only for printable ASCII)",
			    i + 1, n);
		if (i >= pre && class_of(cred[i], &base) > 0)
			drawable = 1;
	}
	if (!drawable)
		return ab_fail(err, AB_EUSAGE, "the credential has no letter or "
		    "digit past its prefix: no placeholder could differ from it");
	return 0;
}

/* getrandom's bytes, a buffer at a time. */
struct draw {
	unsigned char b[256];
	size_t i, n;
};

static int draw_byte(struct draw *d, unsigned char *c, struct ab_err *err)
{
	ssize_t r;

	if (d->i == d->n) {
		do
			r = getrandom(d->b, sizeof d->b, 0);
		while (r < 0 && errno == EINTR);
		/* The explicit -1 lets the compiler see C is set on 0. */
		if (r < 0) {
			ab_fail_errno(err, AB_EENGINE, "getrandom");
			return -1;
		}
		if (r == 0) {
			ab_fail(err, AB_EENGINE, "getrandom gave no bytes");
			return -1;
		}
		d->i = 0;
		d->n = (size_t)r;
	}
	*c = d->b[d->i++];
	return 0;
}

/* Uniform in [0, K): a byte at or above the largest multiple of K below
 * 256 is drawn again, so no value is likelier than another. */
static int draw_below(struct draw *d, unsigned k, unsigned *v,
    struct ab_err *err)
{
	unsigned char c;
	unsigned lim = 256 - 256 % k;

	do
		if (draw_byte(d, &c, err) < 0)
			return -1;
	while (c >= lim);
	*v = c % k;
	return 0;
}

static int fill(struct draw *d, const char *cred, size_t n, size_t pre,
    char *out, struct ab_err *err)
{
	size_t i;
	unsigned k, v;
	char base;

	memcpy(out, cred, n);
	for (i = pre; i < n; i++) {
		if ((k = class_of(cred[i], &base)) == 0)
			continue;
		if (draw_below(d, k, &v, err) < 0)
			return -1;
		out[i] = (char)(base + v);
	}
	return 0;
}

int ab_placeholder(const char *cred, size_t n, char *out, struct ab_err *err)
{
	struct draw d = { .i = 0, .n = 0 };
	size_t pre = known_prefix(cred, n);
	int rc;

	if (check(cred, n, pre, err) < 0)
		return -1;
	/* check made sure a byte is drawn: the loop ends. */
	while ((rc = fill(&d, cred, n, pre, out, err)) == 0 &&
	    memcmp(out, cred, n) == 0)
		;
	explicit_bzero(&d, sizeof d);
	if (rc < 0)
		explicit_bzero(out, n);
	return rc;
}

int ab_random_b64url(char *out, size_t n, struct ab_err *err)
{
	static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789-_";
	struct draw d = { .i = 0, .n = 0 };
	unsigned v;
	size_t i;

	for (i = 0; i < n; i++) {
		if (draw_below(&d, 64, &v, err) < 0)
			return -1;
		out[i] = abc[v];
	}
	explicit_bzero(&d, sizeof d);
	return 0;
}

/* --- the stream's substitution ----------------------------------------- */

int ab_subst_init(struct ab_subst *s, const char *from, const char *to,
    size_t n)
{
	memset(s, 0, sizeof *s);
	if (n == 0 || n > AB_SECRET_LEN_MAX) {
		errno = EINVAL;
		return -1;
	}
	/* malloc(0) may be NULL or not: N of 1 holds nothing back. */
	if (n > 1 && (s->held = malloc(n - 1)) == NULL)
		return -1;
	s->from = from;
	s->to = to;
	s->n = n;
	return 0;
}

void ab_subst_free(struct ab_subst *s)
{
	if (s->held != NULL) {
		explicit_bzero(s->held, s->n - 1);
		free(s->held);
	}
	memset(s, 0, sizeof *s);
}

/* Whether the K bytes at P are FROM's first K. */
static int begins(const struct ab_subst *s, const char *p, size_t k)
{
	return p[0] == s->from[0] && memcmp(p, s->from, k) == 0;
}

/* The held bytes followed by IN's head: writes what of them is certain,
 * and either ends an occurrence that began in them (returning how many
 * bytes of IN it took), or keeps back the bytes from the first place an
 * occurrence could still begin (returning LEN: IN is all taken). */
static size_t meet(struct ab_subst *s, const char *in, size_t len,
    char *out, size_t *o)
{
	size_t i, k, rest;

	if (s->nheld == 0)
		return 0;
	for (i = 0; i < s->nheld; i++) {
		k = s->nheld - i;
		rest = s->n - k;
		if (!begins(s, s->held + i, k))
			continue;
		if (len >= rest && memcmp(in, s->from + k, rest) == 0) {
			memcpy(out + *o, s->held, i);
			memcpy(out + *o + i, s->to, s->n);
			*o += i + s->n;
			explicit_bzero(s->held, s->nheld);
			s->nheld = 0;
			return rest;
		}
		if (len < rest && memcmp(in, s->from + k, len) == 0) {
			memcpy(out + *o, s->held, i);
			*o += i;
			memmove(s->held, s->held + i, k);
			memcpy(s->held + k, in, len);
			s->nheld = k + len;
			explicit_bzero(s->held + s->nheld, s->n - 1 - s->nheld);
			return len;
		}
	}
	memcpy(out + *o, s->held, s->nheld);
	*o += s->nheld;
	explicit_bzero(s->held, s->nheld);
	s->nheld = 0;
	return 0;
}

/* Where in [P, END) the bytes up to END could begin an occurrence: the
 * first place within N - 1 of END they are a prefix of FROM, else END. */
static const char *tail(const struct ab_subst *s, const char *p,
    const char *end)
{
	const char *t = (size_t)(end - p) > s->n - 1 ? end - (s->n - 1) : p;

	while (t < end && (t = memchr(t, s->from[0], (size_t)(end - t))) !=
	    NULL) {
		if (memcmp(t, s->from, (size_t)(end - t)) == 0)
			return t;
		t++;
	}
	return end;
}

size_t ab_subst_feed(struct ab_subst *s, const char *in, size_t len,
    char *out)
{
	const char *p, *q, *end, *t;
	size_t o = 0;

	/* IN may be NULL then, and NULL + 0 is not a pointer to compute. */
	if (len == 0)
		return 0;
	end = in + len;
	p = in + meet(s, in, len, out, &o);
	if (s->nheld > 0)
		return o;
	while ((q = memmem(p, (size_t)(end - p), s->from, s->n)) != NULL) {
		memcpy(out + o, p, (size_t)(q - p));
		o += (size_t)(q - p);
		memcpy(out + o, s->to, s->n);
		o += s->n;
		p = q + s->n;
	}
	t = tail(s, p, end);
	memcpy(out + o, p, (size_t)(t - p));
	o += (size_t)(t - p);
	s->nheld = (size_t)(end - t);
	if (s->nheld > 0)
		memcpy(s->held, t, s->nheld);
	return o;
}

size_t ab_subst_flush(struct ab_subst *s, char *out)
{
	size_t n = s->nheld;

	if (n > 0) {
		memcpy(out, s->held, n);
		explicit_bzero(s->held, n);
	}
	s->nheld = 0;
	return n;
}

int ab_find_init(struct ab_find *f, const char *needle, size_t n)
{
	memset(f, 0, sizeof *f);
	if (n == 0 || n > AB_SECRET_LEN_MAX) {
		errno = EINVAL;
		return -1;
	}
	if (n > 1 && (f->win = malloc(2 * n - 2)) == NULL)
		return -1;
	f->needle = needle;
	f->n = n;
	return 0;
}

int ab_find_feed(struct ab_find *f, const char *in, size_t len)
{
	size_t k, keep;

	if (f->found || len == 0)
		return f->found;
	/* Where the kept bytes meet the piece: at most 2N - 2 bytes. */
	if (f->nkept > 0) {
		k = len < f->n - 1 ? len : f->n - 1;
		memcpy(f->win + f->nkept, in, k);
		if (memmem(f->win, f->nkept + k, f->needle, f->n) != NULL)
			return f->found = 1;
	}
	if (memmem(in, len, f->needle, f->n) != NULL)
		return f->found = 1;
	if (f->n == 1)
		return 0;
	/* The last N - 1 bytes of all that was fed. */
	if (len >= f->n - 1) {
		memcpy(f->win, in + len - (f->n - 1), f->n - 1);
		f->nkept = f->n - 1;
	} else {
		keep = f->nkept + len > f->n - 1 ? f->n - 1 - len : f->nkept;
		memmove(f->win, f->win + f->nkept - keep, keep);
		memcpy(f->win + keep, in, len);
		f->nkept = keep + len;
	}
	return 0;
}

void ab_find_reset(struct ab_find *f)
{
	if (f->win != NULL)
		explicit_bzero(f->win, 2 * f->n - 2);
	f->nkept = 0;
	f->found = 0;
}

void ab_find_free(struct ab_find *f)
{
	ab_find_reset(f);
	free(f->win);
	f->win = NULL;
}
