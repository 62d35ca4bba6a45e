/* httpmsg.c: libFuzzer harness for the egress proxy's HTTP/1.1 framing
 * (lib/format/httpmsg.c), every byte the agent's (requests) or the vendor's
 * (responses).  The first byte says what the rest is: bit 0-1 a
 * connection's requests, a connection's responses (bits 2-3 the request's
 * method), or a chunked body alone; the second seeds the sizes the bytes
 * arrive in.  Beyond not crashing, the harness checks with oracles of its
 * own:
 *   - a body fed in pieces of any size ends where, and as, it ends fed
 *     whole; a head is found at the same length whatever follows it;
 *   - a chunked decoder written here (whole-input, line by line, with
 *     RFC 9112's grammar read another way) agrees with the framer that a
 *     body is whole (and where), cut short, or malformed;
 *   - an accepted head written again from its parsed fields parses to
 *     the same fields and framing;
 *   - a head reader written here (CRLF lines, a start line, field lines)
 *     accepts what the parser accepts, with the same fields, and refuses
 *     what it refuses for its form;
 *   - an accepted head's framing follows from its fields as counted here:
 *     one "chunked" and no length, or one length of digits, never both;
 *     keep-alive, upgrade and 100-continue as its options say; no value
 *     holds a control, no name is a framing field's lookalike.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "httpmsg.h"

#define INPUT_MAX (256 * 1024)
#define MESSAGES_MAX 16

/* --- pieces ------------------------------------------------------------ */

static uint32_t rng;

static size_t piece(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng % 8 == 0 ? 1 + rng % 4096 : 1 + rng % 7;
}

struct verdict {
	long end;	/* bytes of the message; -1 refused */
	int done;
};

static struct verdict whole(const struct ab_http_head *h, const char *p,
    size_t n)
{
	struct ab_http_framer fr;
	struct verdict v;
	int done;

	ab_http_framer_init(&fr, h);
	v.end = ab_http_framer_feed(&fr, p, n, &v.done);
	if (v.end > (long)n || (v.end >= 0 && !v.done && v.end != (long)n))
		abort();
	/* Whole is whole: nothing more is taken. */
	if (v.done && (ab_http_framer_feed(&fr, p, n, &done) != 0 || !done ||
	    !ab_http_framer_eof_ok(&fr)))
		abort();
	if (v.end < 0 && ab_http_framer_feed(&fr, p, n, &done) != -1)
		abort();
	return v;
}

static struct verdict pieces(const struct ab_http_head *h, const char *p,
    size_t n)
{
	struct ab_http_framer fr;
	struct verdict v = { 0, 0 };
	size_t k;
	long got;

	ab_http_framer_init(&fr, h);
	if (ab_http_framer_feed(&fr, p, 0, &v.done) != 0)
		abort();
	while (!v.done && (size_t)v.end < n) {
		k = piece();
		if (k > n - (size_t)v.end)
			k = n - (size_t)v.end;
		if ((got = ab_http_framer_feed(&fr, p + v.end, k,
		    &v.done)) < 0)
			return (struct verdict){ -1, 0 };
		/* Short of its piece only when the message is whole. */
		if ((size_t)got > k || ((size_t)got < k && !v.done))
			abort();
		v.end += got;
	}
	return v;
}

/* --- a chunked decoder of the harness's own ---------------------------- */

enum { M_BAD, M_PREFIX, M_ACCEPT };	/* a line's content matched */
#define R_BAD (-1L)
#define R_MORE (-2L)

/* A visible character that is no delimiter (RFC 9110's tchar, read from
 * the other side). */
static int ref_tchar(int c)
{
	return c > 0x20 && c < 0x7f && strchr("\"(),/:;<=>?@[\\]{}", c) ==
	    NULL;
}

static int ref_ws(int c)
{
	return c == ' ' || c == '\t';
}

struct cur {
	const unsigned char *s;
	size_t n, i;
};

static int more(const struct cur *c)
{
	return c->i < c->n;
}

static void bws(struct cur *c)
{
	while (more(c) && ref_ws(c->s[c->i]))
		c->i++;
}

static int hexdig(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	    (c >= 'A' && c <= 'F');
}

/* 1*HEXDIG whose value fits a long long: at most 16 digits past the
 * leading zeros, the first of sixteen at most 7. */
static int chunk_size(struct cur *c, unsigned long long *size)
{
	size_t start = c->i, sig = 0;
	int first = 0, d;

	*size = 0;
	while (more(c) && hexdig(c->s[c->i])) {
		d = c->s[c->i] <= '9' ? c->s[c->i] - '0' :
		    (c->s[c->i] | 0x20) - 'a' + 10;
		c->i++;
		if (sig == 0 && d == 0)
			continue;
		if (sig++ == 0)
			first = d;
		if (sig > 16 || (sig == 16 && first > 7))
			return M_BAD;
		*size = *size * 16 + (unsigned)d;
	}
	if (c->i == start)
		return more(c) ? M_BAD : M_PREFIX;
	return M_ACCEPT;
}

/* HTAB, SP, VCHAR or obs-text: what a quoted string holds, escaped or
 * not (but for '"' and '\\', which only an escape holds). */
static int ref_qchar(int c)
{
	return c == '\t' || c == ' ' || (c > 0x20 && c != 0x7f);
}

/* quoted-string, from its opening quote. */
static int quoted(struct cur *c)
{
	int ch;

	for (c->i++; more(c); c->i++) {
		ch = c->s[c->i];
		if (ch == '"') {
			c->i++;
			return M_ACCEPT;
		}
		if (ch == '\\' && ++c->i == c->n)
			return M_PREFIX;
		if (!ref_qchar(c->s[c->i]))
			return M_BAD;
	}
	return M_PREFIX;
}

/* chunk-size *( BWS ";" BWS name [ BWS "=" BWS ( token / quoted ) ] ),
 * the N bytes at S without their CRLF (or a prefix of them). */
static int size_line(const unsigned char *s, size_t n,
    unsigned long long *size)
{
	struct cur c = { s, n, 0 };
	size_t save;
	int r;

	if ((r = chunk_size(&c, size)) != M_ACCEPT)
		return r;
	for (;;) {
		if (!more(&c))
			return M_ACCEPT;
		bws(&c);
		if (!more(&c))
			return M_PREFIX;
		if (s[c.i++] != ';')
			return M_BAD;
		bws(&c);
		if (!more(&c))
			return M_PREFIX;
		if (!ref_tchar(s[c.i]))
			return M_BAD;
		while (more(&c) && ref_tchar(s[c.i]))
			c.i++;
		save = c.i;
		bws(&c);
		if (!more(&c))
			return save == c.i ? M_ACCEPT : M_PREFIX;
		if (s[c.i] != '=') {
			c.i = save;
			continue;
		}
		c.i++;
		bws(&c);
		if (!more(&c))
			return M_PREFIX;
		if (s[c.i] == '"') {
			if ((r = quoted(&c)) != M_ACCEPT)
				return r;
		} else if (ref_tchar(s[c.i])) {
			while (more(&c) && ref_tchar(s[c.i]))
				c.i++;
		} else {
			return M_BAD;
		}
	}
}

/* name ":" value, controls but HTAB refused. */
static int field_line(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n && ref_tchar(s[i]))
		i++;
	if (i == n)
		return M_PREFIX;
	if (i == 0 || s[i] != ':')
		return M_BAD;
	for (i++; i < n; i++)
		if (s[i] != '\t' && (s[i] < 0x20 || s[i] == 0x7f))
			return M_BAD;
	return M_ACCEPT;
}

/* A line at P of N bytes, at most MAX with its CRLF, its content read by
 * MATCH: its length, or R_BAD, or R_MORE when it may yet be good. */
static long line(const unsigned char *p, size_t n, size_t max,
    int (*match)(const unsigned char *, size_t, unsigned long long *),
    unsigned long long *arg)
{
	size_t w = n < max ? n : max;
	const unsigned char *lf = memchr(p, '\n', w);
	size_t len;

	if (lf != NULL) {
		len = (size_t)(lf - p);
		if (len == 0 || p[len - 1] != '\r')
			return R_BAD;
		return match(p, len - 1, arg) == M_ACCEPT ? (long)len + 1 :
		    R_BAD;
	}
	/* Past its bound only once a byte past it has come. */
	if (n > max)
		return R_BAD;
	if (w > 0 && p[w - 1] == '\r')
		return match(p, w - 1, arg) == M_ACCEPT ? R_MORE : R_BAD;
	return match(p, w, arg) == M_BAD ? R_BAD : R_MORE;
}

static int trailer_match(const unsigned char *s, size_t n,
    unsigned long long *blank)
{
	*blank = n == 0;
	return n == 0 ? M_ACCEPT : field_line(s, n);
}

static int size_match(const unsigned char *s, size_t n,
    unsigned long long *size)
{
	return size_line(s, n, size);
}

/* The trailer section and its blank line, all within their bound. */
static struct verdict ref_trailers(const unsigned char *p, size_t n,
    size_t at)
{
	size_t start = at, left = AB_HTTP_TRAILER_MAX;
	unsigned long long blank;
	long len;

	for (;;) {
		len = line(p + at, n - at, left, trailer_match, &blank);
		if (len == R_BAD)
			return (struct verdict){ -1, 0 };
		if (len == R_MORE)
			return (struct verdict){ (long)n, 0 };
		at += (size_t)len;
		if (blank)
			return (struct verdict){ (long)at, 1 };
		left = AB_HTTP_TRAILER_MAX - (at - start);
	}
}

static struct verdict ref_chunked(const unsigned char *p, size_t n)
{
	unsigned long long size;
	size_t at = 0;
	long len;

	for (;;) {
		len = line(p + at, n - at, AB_HTTP_CHUNK_LINE_MAX, size_match,
		    &size);
		if (len == R_BAD)
			return (struct verdict){ -1, 0 };
		if (len == R_MORE)
			return (struct verdict){ (long)n, 0 };
		at += (size_t)len;
		if (size == 0)
			return ref_trailers(p, n, at);
		if (n - at < size + 2) {
			/* The data, and as much of its CRLF as came. */
			if (n - at > size && p[at + size] != '\r')
				return (struct verdict){ -1, 0 };
			return (struct verdict){ (long)n, 0 };
		}
		at += size;
		if (p[at] != '\r' || p[at + 1] != '\n')
			return (struct verdict){ -1, 0 };
		at += 2;
	}
}

/* --- bodies ------------------------------------------------------------ */

/* The body of H at P: where it ends, the same in pieces as whole (and as
 * the decoder here has it, when chunked). */
static struct verdict body(const struct ab_http_head *h, const char *p,
    size_t n)
{
	struct verdict a = whole(h, p, n), b = pieces(h, p, n), r;

	if (a.end != b.end || a.done != b.done)
		abort();
	switch (h->body) {
	case AB_BODY_CHUNKED:
		r = ref_chunked((const unsigned char *)p, n);
		if (r.end != a.end || r.done != a.done)
			abort();
		break;
	case AB_BODY_LENGTH:
		if (a.end != (h->length < (long long)n ? h->length :
		    (long long)n) || a.done != (h->length <= (long long)n))
			abort();
		break;
	case AB_BODY_EOF:
		if (a.end != (long)n || a.done)
			abort();
		break;
	default:
		if (a.end != 0 || !a.done)
			abort();
	}
	return a;
}

/* --- heads ------------------------------------------------------------- */

static int ref_ieq(const char *s, size_t n, const char *name)
{
	size_t i;

	if (strlen(name) != n)
		return 0;
	for (i = 0; i < n; i++)
		if ((s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]) != name[i])
			return 0;
	return 1;
}

static int ref_is(const char *s, size_t n, const char *name)
{
	char c[32];
	size_t i;

	/* '_' read as '-': the lookalikes must be gone too. */
	if (n >= sizeof c)
		return 0;
	for (i = 0; i < n; i++)
		c[i] = s[i] == '_' ? '-' : s[i];
	return ref_ieq(c, n, name);
}

/* --- a head reader of the harness's own -------------------------------- */

static int ref_version(const char *s)
{
	return memcmp(s, "HTTP/", 5) == 0 && s[5] >= '0' && s[5] <= '9' &&
	    s[6] == '.' && s[7] >= '0' && s[7] <= '9';
}

static int ref_vchar(int c)
{
	return c > 0x20 && c < 0x7f;
}

static int ref_value_char(int c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* method SP target SP HTTP-version, or HTTP-version SP 3DIGIT SP
 * reason with a status of 100-599. */
static int ref_start(const unsigned char *s, size_t n, int request)
{
	size_t i = 0, t;

	if (!request) {
		if (n < 13 || !ref_version((const char *)s) || s[8] != ' ' ||
		    s[12] != ' ' || s[9] < '1' || s[9] > '5' ||
		    s[10] < '0' || s[10] > '9' || s[11] < '0' || s[11] > '9')
			return 0;
		for (i = 13; i < n; i++)
			if (!ref_value_char(s[i]))
				return 0;
		return 1;
	}
	while (i < n && ref_tchar(s[i]))
		i++;
	if (i == 0 || i == n || s[i] != ' ')
		return 0;
	for (t = ++i; i < n && ref_vchar(s[i]); i++)
		;
	return i > t && i + 9 == n && s[i] == ' ' &&
	    ref_version((const char *)s + i + 1);
}

/* name ":" OWS value OWS. */
static int ref_field(const char *s, size_t n, struct ab_http_field *f)
{
	size_t colon = 0, a, b, i;

	while (colon < n && ref_tchar((unsigned char)s[colon]))
		colon++;
	if (colon == 0 || colon == n || s[colon] != ':')
		return 0;
	for (a = colon + 1; a < n && ref_ws(s[a]); a++)
		;
	for (b = n; b > a && ref_ws(s[b - 1]); b--)
		;
	for (i = a; i < b; i++)
		if (!ref_value_char((unsigned char)s[i]))
			return 0;
	f->name = s;
	f->name_len = colon;
	f->value = s + a;
	f->value_len = b - a;
	return 1;
}

/* The head of N bytes at P read line by line, each ended by CRLF and no
 * CR or LF elsewhere: 1 when every line is well-formed, with its fields
 * in F (*NF of them, counted past the array's end too). */
static int ref_head(const char *p, size_t n, int request,
    struct ab_http_field *f, int *nf)
{
	size_t start, end;
	int line = 0;

	*nf = 0;
	for (start = 0; start < n; start = end + 2, line++) {
		for (end = start; end < n && p[end] != '\r' &&
		    p[end] != '\n'; end++)
			;
		if (end + 1 >= n || p[end] != '\r' || p[end + 1] != '\n')
			return 0;
		if (end == start)
			return line > 0 && end + 2 == n;
		if (line == 0) {
			if (!ref_start((const unsigned char *)p + start,
			    end - start, request))
				return 0;
		} else if (!ref_field(p + start, end - start,
		    &f[*nf <= AB_HTTP_HEADERS_MAX ? *nf : 0])) {
			return 0;
		} else {
			++*nf;
		}
	}
	return 0;
}

/* What the lib said of a head against what the reader here says: an
 * accepted head is well-formed, with the same fields; a head refused
 * for its form is not well-formed.  Refusals for what a well-formed
 * head asks (a version, a form of target, a coding) are not judged. */
static void same_reading(const char *p, size_t n, int request,
    const char *why, const struct ab_http_head *h)
{
	static const char *const form[] = { "bad-head", "bad-request-line",
	    "bad-target", "bare-cr", "bare-lf", "obs-fold", "header-space",
	    "bad-field-name", "bad-field-value", "bad-status-line", NULL };
	static struct ab_http_field f[AB_HTTP_HEADERS_MAX + 1];
	int nf, good = ref_head(p, n, request, f, &nf), i;

	if (why == NULL) {
		if (!good || nf != h->nf)
			abort();
		for (i = 0; i < nf; i++)
			if (f[i].name != h->f[i].name ||
			    f[i].name_len != h->f[i].name_len ||
			    f[i].value != h->f[i].value ||
			    f[i].value_len != h->f[i].value_len)
				abort();
		return;
	}
	if (strcmp(why, "header-too-many") == 0 && nf < AB_HTTP_HEADERS_MAX)
		abort();
	for (i = 0; form[i] != NULL; i++)
		if (strcmp(why, form[i]) == 0 && good)
			abort();
}

/* Connection's options, read here: whether "close" and "keep-alive" are
 * among them. */
static void options(const char *s, size_t n, int *close, int *keep)
{
	size_t a = 0, b, e;

	while (a <= n) {
		e = a;
		while (e < n && s[e] != ',')
			e++;
		b = e;
		while (b > a && ref_ws(s[b - 1]))
			b--;
		while (a < b && ref_ws(s[a]))
			a++;
		*close |= ref_ieq(s + a, b - a, "close");
		*keep |= ref_ieq(s + a, b - a, "keep-alive");
		a = e + 1;
	}
}

/* ab_http_field_find of ASKED against the COUNT fields seen named NAME
 * (ASKED in another case). */
static void found(const struct ab_http_head *h, const char *asked,
    const char *name, int count)
{
	int i = ab_http_field_find(h, asked);

	if (count == 0 ? i != -1 : count > 1 ? i != -2 : i < 0 || i >= h->nf ||
	    !ref_ieq(h->f[i].name, h->f[i].name_len, name))
		abort();
}

/* The facts the proxy relies on, counted here from the fields. */
static void facts(const struct ab_http_head *h, const char *buf, size_t n,
    int request)
{
	const struct ab_http_field *f;
	int i, nte = 0, ncl = 0, nhost = 0, nup = 0, nexp = 0;
	int close = 0, keep = 0;
	long long len = 0;
	size_t k;

	if (h->nf < 0 || h->nf > AB_HTTP_HEADERS_MAX || h->minor < 0 ||
	    h->minor > 1)
		abort();
	for (i = 0; i < h->nf; i++) {
		f = &h->f[i];
		if (f->name < buf || f->name + f->name_len > buf + n ||
		    f->value < buf || f->value + f->value_len > buf + n ||
		    f->name_len == 0)
			abort();
		for (k = 0; k < f->name_len; k++)
			if (!ref_tchar((unsigned char)f->name[k]))
				abort();
		for (k = 0; k < f->value_len; k++)
			if ((f->value[k] != '\t' &&
			    (unsigned char)f->value[k] < 0x20) ||
			    f->value[k] == 0x7f)
				abort();
		if (f->value_len > 0 && (ref_ws(f->value[0]) ||
		    ref_ws(f->value[f->value_len - 1])))
			abort();
		if (ref_is(f->name, f->name_len, "transfer-encoding")) {
			nte++;
			if (!ref_ieq(f->value, f->value_len, "chunked"))
				abort();
		} else if (ref_is(f->name, f->name_len, "content-length")) {
			ncl++;
			for (k = 0, len = 0; k < f->value_len; k++) {
				if (f->value[k] < '0' || f->value[k] > '9')
					abort();
				len = len * 10 + (f->value[k] - '0');
			}
		} else if (ref_is(f->name, f->name_len, "host")) {
			nhost++;
		} else if (ref_is(f->name, f->name_len, "upgrade")) {
			nup++;
		} else if (ref_is(f->name, f->name_len, "expect")) {
			nexp++;
		} else if (ref_is(f->name, f->name_len, "connection")) {
			options(f->value, f->value_len, &close, &keep);
		}
		if (memchr(f->name, '_', f->name_len) != NULL &&
		    (ref_is(f->name, f->name_len, "transfer-encoding") ||
		    ref_is(f->name, f->name_len, "content-length") ||
		    ref_is(f->name, f->name_len, "host")))
			abort();
	}
	found(h, "Transfer-encoding", "transfer-encoding", nte);
	found(h, "Content-Length", "content-length", ncl);
	found(h, "HOST", "host", nhost);
	if (nte > 1 || ncl > 1 || (nte && ncl) || (nte && h->minor == 0))
		abort();
	if (h->body != (nte ? AB_BODY_CHUNKED : ncl ? AB_BODY_LENGTH :
	    request ? AB_BODY_NONE : AB_BODY_EOF) &&
	    (request || h->body != AB_BODY_NONE))
		abort();
	if (h->body == AB_BODY_LENGTH && h->length != len)
		abort();
	/* Kept alive: 1.1 unless "close", 1.0 with "keep-alive"; never
	 * past a body read to close or a tunnel. */
	if (h->keep_alive != (!close && (h->minor == 1 || keep) &&
	    h->body != AB_BODY_EOF && (request || !h->upgrade)))
		abort();
	if (!request)
		return;
	if (nhost > 1 || (h->minor == 1 && nhost == 0) ||
	    h->upgrade != (nup > 0) ||
	    h->expect_continue != (nexp > 0 && h->minor == 1))
		abort();
	if (h->method_len == 0 || h->target_len == 0 || h->target[0] != '/' ||
	    (h->method_len == 7 && memcmp(h->method, "CONNECT", 7) == 0))
		abort();
	for (k = 0; k < h->method_len; k++)
		if (!ref_tchar((unsigned char)h->method[k]))
			abort();
	for (k = 0; k < h->target_len; k++)
		if ((unsigned char)h->target[k] <= 0x20 ||
		    (unsigned char)h->target[k] >= 0x7f)
			abort();
}

static size_t put(char *out, size_t at, const char *s, size_t n)
{
	if (at + n <= AB_HTTP_HEAD_MAX + 1)
		memcpy(out + at, s, n);
	return at + n;
}

/* H written again: its start line (STATUS < 0: a request), then each
 * field with OWS of a kind chosen by STYLE. */
static size_t write_head(const struct ab_http_head *h, int style,
    char *out)
{
	static const char *const before[] = { "", " ", "\t", "  " };
	static const char *const after[] = { "", "", " \t", " " };
	char line[32];
	size_t at = 0;
	int i;

	if (h->status == 0) {
		at = put(out, at, h->method, h->method_len);
		at = put(out, at, " ", 1);
		at = put(out, at, h->target, h->target_len);
		at = put(out, at, h->minor ? " HTTP/1.1\r\n" : " HTTP/1.0\r\n",
		    11);
	} else {
		memcpy(line, "HTTP/1.x 000 R\r\n", 16);
		line[7] = (char)('0' + h->minor);
		line[9] = (char)('0' + h->status / 100);
		line[10] = (char)('0' + h->status / 10 % 10);
		line[11] = (char)('0' + h->status % 10);
		at = put(out, at, line, 16);
	}
	for (i = 0; i < h->nf; i++) {
		at = put(out, at, h->f[i].name, h->f[i].name_len);
		at = put(out, at, ":", 1);
		at = put(out, at, before[style], strlen(before[style]));
		at = put(out, at, h->f[i].value, h->f[i].value_len);
		at = put(out, at, after[style], strlen(after[style]));
		at = put(out, at, "\r\n", 2);
	}
	return put(out, at, "\r\n", 2);
}

static void same_head(const struct ab_http_head *a,
    const struct ab_http_head *b)
{
	int i;

	if (a->method_len != b->method_len || a->target_len != b->target_len ||
	    (a->method_len > 0 && (memcmp(a->method, b->method,
	    a->method_len) != 0 || memcmp(a->target, b->target,
	    a->target_len) != 0)) ||
	    a->status != b->status || a->minor != b->minor ||
	    a->nf != b->nf || a->body != b->body || a->length != b->length ||
	    a->keep_alive != b->keep_alive ||
	    a->expect_continue != b->expect_continue ||
	    a->upgrade != b->upgrade)
		abort();
	for (i = 0; i < a->nf; i++)
		if (a->f[i].name_len != b->f[i].name_len ||
		    a->f[i].value_len != b->f[i].value_len ||
		    memcmp(a->f[i].name, b->f[i].name, a->f[i].name_len) ||
		    memcmp(a->f[i].value, b->f[i].value, a->f[i].value_len))
			abort();
}

/* The head parsed again from its fields, written with STYLE's OWS (none
 * when that would not fit: the original fitted with at least that). */
static void round_trip(const struct ab_http_head *h, int style,
    const char *method, size_t method_len)
{
	static char out[AB_HTTP_HEAD_MAX + 1];
	static struct ab_http_head again;
	size_t n = write_head(h, style, out);
	const char *why;
	int st;

	if (n > AB_HTTP_HEAD_MAX)
		n = write_head(h, 0, out);
	if (n > AB_HTTP_HEAD_MAX || ab_http_head_len(out, n) != (long)n)
		abort();
	why = h->status == 0 ? ab_http_request(out, n, &again, &st) :
	    ab_http_response(out, n, method, method_len, &again);
	if (why != NULL)
		abort();
	same_head(h, &again);
}

/* Where the head at P ends, checked against shorter and longer reads. */
static long head(const char *p, size_t n)
{
	long len = ab_http_head_len(p, n);

	if (len == -1 && n < AB_HTTP_HEAD_MAX)
		abort();
	if (len < -1 || len > (long)n || len > AB_HTTP_HEAD_MAX)
		abort();
	if (len > 0 && (ab_http_head_len(p, (size_t)len - 1) != 0 ||
	    ((size_t)len < n && ab_http_head_len(p, (size_t)len + 1) != len)))
		abort();
	return len;
}

/* --- connections ------------------------------------------------------- */

static void requests(const char *p, size_t n, int style)
{
	static struct ab_http_head h;
	struct verdict v;
	const char *why;
	size_t at = 0;
	long len;
	int i, st;

	for (i = 0; i < MESSAGES_MAX && at < n; i++) {
		if ((len = head(p + at, n - at)) <= 0)
			return;
		why = ab_http_request(p + at, (size_t)len, &h, &st);
		same_reading(p + at, (size_t)len, 1, why, &h);
		if (why != NULL) {
			if (st != 400 && st != 417 && st != 431 &&
			    st != 501 && st != 505)
				abort();
			return;
		}
		facts(&h, p + at, (size_t)len, 1);
		round_trip(&h, style, NULL, 0);
		at += (size_t)len;
		v = body(&h, p + at, n - at);
		if (!v.done)
			return;
		at += (size_t)v.end;
	}
}

static void responses(const char *p, size_t n, int style, const char *method)
{
	static struct ab_http_head h;
	struct verdict v;
	const char *why;
	size_t at = 0, mlen = strlen(method);
	long len;
	int i;

	for (i = 0; i < MESSAGES_MAX && at < n; i++) {
		if ((len = head(p + at, n - at)) <= 0)
			return;
		why = ab_http_response(p + at, (size_t)len, method, mlen, &h);
		same_reading(p + at, (size_t)len, 0, why, &h);
		if (why != NULL)
			return;
		facts(&h, p + at, (size_t)len, 0);
		if (h.status < 100 || h.status > 599 ||
		    (h.upgrade && h.body != AB_BODY_NONE) ||
		    ((h.status / 100 == 1 || h.status == 204 ||
		    h.status == 304 || strcmp(method, "HEAD") == 0) &&
		    h.body != AB_BODY_NONE))
			abort();
		round_trip(&h, style, method, mlen);
		at += (size_t)len;
		v = body(&h, p + at, n - at);
		if (!v.done || h.upgrade)
			return;
		at += (size_t)v.end;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const methods[] = { "GET", "HEAD", "POST",
	    "CONNECT" };
	static struct ab_http_head h;
	const char *p = (const char *)data + 2;
	size_t n = size - 2;

	if (size < 2 || size > INPUT_MAX)
		return 0;
	rng = 0x9e3779b9u ^ data[1] ^ (uint32_t)size << 8;
	switch (data[0] & 3) {
	case 0:
	case 3:
		requests(p, n, data[1] & 3);
		break;
	case 1:
		responses(p, n, data[1] & 3, methods[data[0] >> 2 & 3]);
		break;
	default:
		memset(&h, 0, sizeof h);
		h.body = AB_BODY_CHUNKED;
		body(&h, p, n);
	}
	return 0;
}
