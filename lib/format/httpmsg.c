#include <limits.h>
#include <string.h>

#include "httpmsg.h"

/* --- characters -------------------------------------------------------- */

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static int hex_value(int c)
{
	if (is_digit(c))
		return c - '0';
	c = lower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* RFC 9110's tchar: what methods, field names and list tokens are made
 * of. */
static int tchar(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    is_digit(c) || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static int ows(int c)
{
	return c == ' ' || c == '\t';
}

/* What a field value or a reason phrase holds: visible characters,
 * obs-text, SP and HTAB; no other control. */
static int value_char(int c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* N bytes at S are NAME, case aside. */
static int ieq(const char *s, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (name[i] == '\0' || lower((unsigned char)s[i]) !=
		    lower((unsigned char)name[i]))
			return 0;
	return name[n] == '\0';
}

static const char *refuse(int *status, int code, const char *why)
{
	*status = code;
	return why;
}

/* --- the head ---------------------------------------------------------- */

long ab_http_head_len(const char *buf, size_t n)
{
	size_t i, lim = n < AB_HTTP_HEAD_MAX ? n : AB_HTTP_HEAD_MAX;

	for (i = 0; i < lim; i++) {
		if (buf[i] == '\n') {
			if (i == 0 || buf[i - 1] != '\r')
				return (long)i + 1;	/* a bare LF */
			if (i >= 3 && buf[i - 2] == '\n' && buf[i - 3] == '\r')
				return (long)i + 1;
		} else if (i > 0 && buf[i - 1] == '\r') {
			return (long)i;			/* a bare CR */
		}
	}
	return n >= AB_HTTP_HEAD_MAX ? -1 : 0;
}

/* The CRLF that ends the line at P, before END; or why there is none. */
static const char *line_end(const char *p, const char *end,
    const char **eol)
{
	const char *q;

	for (q = p; q < end; q++) {
		if (*q == '\n')
			return "bare-lf";
		if (*q == '\r') {
			if (end - q < 2 || q[1] != '\n')
				return "bare-cr";
			*eol = q;
			return NULL;
		}
	}
	return "bad-head";
}

/* The fields this module reads: a server (or a gateway before it) that
 * reads '_' as '-' would take "Content_Length" for one of them, and
 * frame the message where we do not. */
static const char *const acted_on[] = { "content-length",
    "transfer-encoding", "host", "connection", "upgrade", "expect", NULL };

static int lookalike(const char *s, size_t n)
{
	char low[24];
	size_t i;
	int k, under = 0;

	if (n >= sizeof low)
		return 0;
	for (i = 0; i < n; i++) {
		under |= s[i] == '_';
		low[i] = s[i] == '_' ? '-' : s[i];
	}
	for (k = 0; under && acted_on[k] != NULL; k++)
		if (ieq(low, n, acted_on[k]))
			return 1;
	return 0;
}

/* One field line "name:" OWS value OWS, P to EOL. */
static const char *field(const char *p, const char *eol,
    struct ab_http_field *f)
{
	const char *colon = p, *v, *e, *q;

	if (ows(*p))
		return "obs-fold";
	while (colon < eol && tchar((unsigned char)*colon))
		colon++;
	if (colon < eol && ows(*colon))
		return "header-space";
	if (colon == p || colon == eol || *colon != ':')
		return "bad-field-name";
	if (lookalike(p, (size_t)(colon - p)))
		return "lookalike-field";
	for (v = colon + 1; v < eol && ows(*v); v++)
		;
	for (e = eol; e > v && ows(e[-1]); e--)
		;
	for (q = v; q < e; q++)
		if (!value_char((unsigned char)*q))
			return "bad-field-value";
	f->name = p;
	f->name_len = (size_t)(colon - p);
	f->value = v;
	f->value_len = (size_t)(e - v);
	return NULL;
}

/* The field lines from P to the blank line, which must end the buffer. */
static const char *fields(const char *p, const char *end,
    struct ab_http_head *h, int *status)
{
	const char *eol, *why;

	for (;;) {
		if ((why = line_end(p, end, &eol)) != NULL)
			return refuse(status, 400, why);
		if (eol == p)
			return eol + 2 == end ? NULL :
			    refuse(status, 400, "bad-head");
		if (h->nf == AB_HTTP_HEADERS_MAX)
			return refuse(status, 431, "header-too-many");
		if ((why = field(p, eol, &h->f[h->nf])) != NULL)
			return refuse(status, 400, why);
		h->nf++;
		p = eol + 2;
	}
}

/* "HTTP/1.1" or "HTTP/1.0": the minor version; -2 for another
 * "HTTP/D.D" (505), -1 for anything else (400). */
static int version(const char *s, size_t n)
{
	if (n != 8 || memcmp(s, "HTTP/", 5) != 0 || !is_digit(s[5]) ||
	    s[6] != '.' || !is_digit(s[7]))
		return -1;
	if (s[5] == '1' && (s[7] == '0' || s[7] == '1'))
		return s[7] - '0';
	return -2;
}

/* --- what the fields say ----------------------------------------------- */

struct framing {
	int nte, chunked;	/* Transfer-Encoding fields; one "chunked" */
	int ncl;
	long long length;
	int nhost, nexpect, expect_ok, nupgrade;
	int close, keep_alive, conn_upgrade;	/* Connection's options */
};

/* 1*DIGIT within a long long. */
static int parse_length(const char *s, size_t n, long long *out)
{
	long long v = 0;
	size_t i;

	if (n == 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (!is_digit(s[i]) || v > (LLONG_MAX - (s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

/* Connection's options: a list of tokens (empty elements allowed, as
 * RFC 9110 section 5.6.1 asks).  An option naming a framing field would
 * have a gateway on the way drop that field: refused. */
static const char *connection(const char *s, size_t n, struct framing *fm)
{
	const char *end = s + n, *e, *a, *b, *q;

	for (;;) {
		e = memchr(s, ',', (size_t)(end - s));
		if (e == NULL)
			e = end;
		for (a = s; a < e && ows(*a); a++)
			;
		for (b = e; b > a && ows(b[-1]); b--)
			;
		for (q = a; q < b; q++)
			if (!tchar((unsigned char)*q))
				return "bad-connection";
		if (ieq(a, (size_t)(b - a), "close"))
			fm->close = 1;
		else if (ieq(a, (size_t)(b - a), "keep-alive"))
			fm->keep_alive = 1;
		else if (ieq(a, (size_t)(b - a), "upgrade"))
			fm->conn_upgrade = 1;
		else if (ieq(a, (size_t)(b - a), "content-length") ||
		    ieq(a, (size_t)(b - a), "transfer-encoding") ||
		    ieq(a, (size_t)(b - a), "host"))
			return "connection-option";
		if (e == end)
			return NULL;
		s = e + 1;
	}
}

static const char *read_field(const struct ab_http_field *f,
    struct framing *fm, int *status)
{
	const char *why;

	if (ieq(f->name, f->name_len, "transfer-encoding")) {
		fm->nte++;
		fm->chunked = ieq(f->value, f->value_len, "chunked");
	} else if (ieq(f->name, f->name_len, "content-length")) {
		/* Even equal values: no client of ours repeats one, and
		 * a server that takes the first of "5, 50" exists. */
		if (++fm->ncl > 1)
			return refuse(status, 400, "length-repeated");
		if (parse_length(f->value, f->value_len, &fm->length) < 0)
			return refuse(status, 400, "bad-length");
	} else if (ieq(f->name, f->name_len, "connection")) {
		if ((why = connection(f->value, f->value_len, fm)) != NULL)
			return refuse(status, 400, why);
	} else if (ieq(f->name, f->name_len, "host")) {
		fm->nhost++;
	} else if (ieq(f->name, f->name_len, "expect")) {
		fm->nexpect++;
		fm->expect_ok = ieq(f->value, f->value_len, "100-continue");
	} else if (ieq(f->name, f->name_len, "upgrade")) {
		fm->nupgrade++;
	}
	return NULL;
}

/* The fields read, and the framing they give decided: one length, or
 * one coding that is "chunked", never both. */
static const char *framing(struct ab_http_head *h, struct framing *fm,
    int *status)
{
	const char *why;
	int i;

	memset(fm, 0, sizeof *fm);
	for (i = 0; i < h->nf; i++)
		if ((why = read_field(&h->f[i], fm, status)) != NULL)
			return why;
	if (fm->nte > 0 && fm->ncl > 0)
		return refuse(status, 400, "both-length-and-chunked");
	/* RFC 9112 section 6.1: 1.0 had no Transfer-Encoding; such a
	 * message's framing is faulty. */
	if (fm->nte > 0 && h->minor == 0)
		return refuse(status, 400, "http10-transfer-encoding");
	if (fm->nte > 1 || (fm->nte == 1 && !fm->chunked))
		return refuse(status, 501, "transfer-coding");
	if (fm->nte > 0) {
		h->body = AB_BODY_CHUNKED;
	} else if (fm->ncl > 0) {
		h->body = AB_BODY_LENGTH;
		h->length = fm->length;
	} else {
		h->body = AB_BODY_NONE;
	}
	h->keep_alive = fm->close ? 0 : h->minor == 1 ? 1 : fm->keep_alive;
	return NULL;
}

/* --- requests ---------------------------------------------------------- */

/* "METHOD SP origin-form SP HTTP/1.x", P to EOL. */
static const char *request_line(const char *p, const char *eol,
    struct ab_http_head *h, int *status)
{
	const char *m = p, *t, *v, *q;
	int minor;

	if (eol - p == 14 && memcmp(p, "PRI * HTTP/2.0", 14) == 0)
		return refuse(status, 505, "http2-preface");
	while (m < eol && tchar((unsigned char)*m))
		m++;
	if (m == p || m == eol || *m != ' ')
		return refuse(status, 400, "bad-request-line");
	t = m + 1;
	v = memchr(t, ' ', (size_t)(eol - t));
	if (v == NULL || v == t)
		return refuse(status, 400, "bad-request-line");
	if ((minor = version(v + 1, (size_t)(eol - v - 1))) == -1)
		return refuse(status, 400, "bad-request-line");
	if (minor == -2)
		return refuse(status, 505, "version");
	if (m - p == 7 && memcmp(p, "CONNECT", 7) == 0)
		return refuse(status, 501, "connect");
	/* Methods are case-sensitive: a server that read "head" as HEAD
	 * (or "connect" as CONNECT) would frame its answer as we do not. */
	if (ieq(p, (size_t)(m - p), "connect") ||
	    (ieq(p, (size_t)(m - p), "head") && memcmp(p, "HEAD", 4) != 0))
		return refuse(status, 400, "method-case");
	if (*t != '/')
		return refuse(status, 400, v - t == 1 && *t == '*' ?
		    "asterisk-form" : "absolute-form");
	for (q = t; q < v; q++)
		if ((unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f)
			return refuse(status, 400, "bad-target");
	h->method = p;
	h->method_len = (size_t)(m - p);
	h->target = t;
	h->target_len = (size_t)(v - t);
	h->minor = minor;
	return NULL;
}

/* Host, Expect and Upgrade, which only a request has to be right. */
static const char *request_fields(struct ab_http_head *h,
    const struct framing *fm, int *status)
{
	if (fm->nhost > 1)
		return refuse(status, 400, "host-repeated");
	if (fm->nhost == 0 && h->minor == 1)
		return refuse(status, 400, "host-missing");
	if (fm->nexpect > 1 || (fm->nexpect == 1 && !fm->expect_ok))
		return refuse(status, 417, "expect");
	/* RFC 9110 section 10.1.1: a 1.0 request's expectation is
	 * ignored. */
	h->expect_continue = fm->nexpect == 1 && h->minor == 1;
	/* Upgrade without its connection option, or in 1.0, is ignored by
	 * some servers and honoured by others. */
	if (fm->nupgrade > 0 && (h->minor == 0 || !fm->conn_upgrade))
		return refuse(status, 400, "bad-upgrade");
	h->upgrade = fm->nupgrade > 0;
	return NULL;
}

const char *ab_http_request(const char *buf, size_t n, struct ab_http_head *h,
    int *status)
{
	const char *eol, *why;
	struct framing fm;

	memset(h, 0, sizeof *h);
	*status = 400;
	if (n > AB_HTTP_HEAD_MAX)
		return refuse(status, 431, "head-too-large");
	if ((why = line_end(buf, buf + n, &eol)) != NULL)
		return refuse(status, 400, why);
	if ((why = request_line(buf, eol, h, status)) != NULL ||
	    (why = fields(eol + 2, buf + n, h, status)) != NULL ||
	    (why = framing(h, &fm, status)) != NULL ||
	    (why = request_fields(h, &fm, status)) != NULL)
		return why;
	return NULL;
}

/* --- responses --------------------------------------------------------- */

/* "HTTP/1.x SP 3DIGIT SP reason", P to EOL; the reason may be empty. */
static const char *status_line(const char *p, const char *eol,
    struct ab_http_head *h)
{
	const char *q;
	int minor;

	if ((minor = version(p, eol - p < 8 ? (size_t)(eol - p) : 8)) == -2)
		return "version";
	if (minor < 0 || eol - p < 13 || p[8] != ' ' || !is_digit(p[9]) ||
	    !is_digit(p[10]) || !is_digit(p[11]) || p[12] != ' ')
		return "bad-status-line";
	h->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	if (h->status < 100 || h->status > 599)
		return "bad-status-line";
	for (q = p + 13; q < eol; q++)
		if (!value_char((unsigned char)*q))
			return "bad-status-line";
	h->minor = minor;
	return NULL;
}

const char *ab_http_response(const char *buf, size_t n, const char *method,
    size_t method_len, struct ab_http_head *h)
{
	const char *eol, *why;
	struct framing fm;
	int status, st;

	memset(h, 0, sizeof *h);
	if (n > AB_HTTP_HEAD_MAX)
		return "head-too-large";
	if ((why = line_end(buf, buf + n, &eol)) != NULL ||
	    (why = status_line(buf, eol, h)) != NULL ||
	    (why = fields(eol + 2, buf + n, h, &status)) != NULL ||
	    (why = framing(h, &fm, &status)) != NULL)
		return why;
	st = h->status;
	if (st == 101 || (st / 100 == 2 && method_len == 7 &&
	    memcmp(method, "CONNECT", 7) == 0)) {
		h->upgrade = 1;
		h->keep_alive = 0;	/* what follows is no longer HTTP */
		h->body = AB_BODY_NONE;
	} else if (st / 100 == 1 || st == 204 || st == 304 ||
	    (method_len == 4 && memcmp(method, "HEAD", 4) == 0)) {
		h->body = AB_BODY_NONE;
	} else if (h->body == AB_BODY_NONE) {
		h->body = AB_BODY_EOF;
		h->keep_alive = 0;
	}
	h->length = h->body == AB_BODY_LENGTH ? h->length : 0;
	return NULL;
}

int ab_http_field_find(const struct ab_http_head *h, const char *name)
{
	int i, found = -1;

	for (i = 0; i < h->nf; i++) {
		if (!ieq(h->f[i].name, h->f[i].name_len, name))
			continue;
		if (found >= 0)
			return -2;
		found = i;
	}
	return found;
}

/* --- the body ---------------------------------------------------------- */

enum {
	F_DONE, F_FAILED, F_LENGTH, F_EOF,
	/* chunk-size [ chunk-ext ] CRLF, RFC 9112 section 7.1 */
	C_SIZE0, C_SIZE, C_BWS, C_NAME0, C_NAME, C_NAME_END, C_VAL0, C_TOKEN,
	C_QUOTED, C_QUOTED_ESC, C_QUOTED_END, C_LF,
	C_DATA, C_DATA_CR, C_DATA_LF,
	/* trailer-section CRLF */
	T_LINE0, T_NAME, T_VALUE, T_LF, T_END_LF
};

void ab_http_framer_init(struct ab_http_framer *fr,
    const struct ab_http_head *h)
{
	memset(fr, 0, sizeof *fr);
	fr->kind = h->body;
	switch (h->body) {
	case AB_BODY_LENGTH:
		fr->left = h->length;
		fr->state = h->length > 0 ? F_LENGTH : F_DONE;
		break;
	case AB_BODY_CHUNKED:
		fr->state = C_SIZE0;
		break;
	case AB_BODY_EOF:
		fr->state = F_EOF;
		break;
	default:
		fr->state = F_DONE;
		break;
	}
}

/* After a chunk size or an extension: BWS before the next ';', the next
 * extension, or the line's end (no whitespace before it). */
static int ext_next(int c)
{
	return ows(c) ? C_BWS : c == ';' ? C_NAME0 : c == '\r' ? C_LF :
	    F_FAILED;
}

static int qdtext(int c)
{
	return c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c <= 0x5b) ||
	    (c >= 0x5d && c <= 0x7e) || c >= 0x80;
}

static int size_digit(struct ab_http_framer *fr, int c)
{
	int d = hex_value(c);

	if (d < 0)
		return fr->state == C_SIZE ? ext_next(c) : F_FAILED;
	if (fr->size > LLONG_MAX >> 4)
		return F_FAILED;
	fr->size = fr->size * 16 + d;
	return C_SIZE;
}

/* The next state of the chunk-size line on byte C. */
static int size_line(struct ab_http_framer *fr, int c)
{
	switch (fr->state) {
	case C_SIZE0:
	case C_SIZE:
		return size_digit(fr, c);
	case C_BWS:
		return ows(c) ? C_BWS : c == ';' ? C_NAME0 : F_FAILED;
	case C_NAME0:
		return ows(c) ? C_NAME0 : tchar(c) ? C_NAME : F_FAILED;
	case C_NAME:
		if (tchar(c))
			return C_NAME;
		if (ows(c))
			return C_NAME_END;
		return c == '=' ? C_VAL0 : ext_next(c);
	case C_NAME_END:
		return ows(c) ? C_NAME_END : c == '=' ? C_VAL0 : c == ';' ?
		    C_NAME0 : F_FAILED;
	case C_VAL0:
		return ows(c) ? C_VAL0 : c == '"' ? C_QUOTED : tchar(c) ?
		    C_TOKEN : F_FAILED;
	case C_TOKEN:
		return tchar(c) ? C_TOKEN : ext_next(c);
	case C_QUOTED:
		return c == '"' ? C_QUOTED_END : c == '\\' ? C_QUOTED_ESC :
		    qdtext(c) ? C_QUOTED : F_FAILED;
	case C_QUOTED_ESC:
		return c == '\t' || (c >= 0x20 && c != 0x7f) ? C_QUOTED :
		    F_FAILED;
	case C_QUOTED_END:
		return ext_next(c);
	default:	/* C_LF */
		if (c != '\n')
			return F_FAILED;
		fr->left = fr->size;
		return fr->size == 0 ? T_LINE0 : C_DATA;
	}
}

/* The next state of the trailer section on byte C: field lines as a
 * head has them, then CRLF. */
static int trailer(int state, int c)
{
	switch (state) {
	case T_LINE0:
		return c == '\r' ? T_END_LF : tchar(c) ? T_NAME : F_FAILED;
	case T_NAME:
		return tchar(c) ? T_NAME : c == ':' ? T_VALUE : F_FAILED;
	case T_VALUE:
		return c == '\r' ? T_LF : value_char(c) ? T_VALUE : F_FAILED;
	case T_LF:
		return c == '\n' ? T_LINE0 : F_FAILED;
	default:	/* T_END_LF */
		return c == '\n' ? F_DONE : F_FAILED;
	}
}

/* One byte of chunked framing (not of chunk data). */
static int chunk_step(struct ab_http_framer *fr, int c)
{
	if (fr->state >= T_LINE0)
		return ++fr->trailer > AB_HTTP_TRAILER_MAX ? F_FAILED :
		    trailer(fr->state, c);
	if (fr->state == C_DATA_CR)
		return c == '\r' ? C_DATA_LF : F_FAILED;
	if (fr->state == C_DATA_LF) {
		if (c != '\n')
			return F_FAILED;
		fr->line = 0;
		fr->size = 0;
		return C_SIZE0;
	}
	return ++fr->line > AB_HTTP_CHUNK_LINE_MAX ? F_FAILED :
	    size_line(fr, c);
}

long ab_http_framer_feed(struct ab_http_framer *fr, const char *p, size_t n,
    int *done)
{
	size_t i = 0, k;

	while (i < n && fr->state != F_DONE && fr->state != F_FAILED) {
		if (fr->state == F_EOF) {
			i = n;
		} else if (fr->state == F_LENGTH || fr->state == C_DATA) {
			k = n - i;
			if ((unsigned long long)fr->left < k)
				k = (size_t)fr->left;
			i += k;
			fr->left -= (long long)k;
			if (fr->left == 0)
				fr->state = fr->state == F_LENGTH ? F_DONE :
				    C_DATA_CR;
		} else {
			fr->state = chunk_step(fr, (unsigned char)p[i++]);
		}
	}
	*done = fr->state == F_DONE;
	return fr->state == F_FAILED ? -1 : (long)i;
}

int ab_http_framer_eof_ok(const struct ab_http_framer *fr)
{
	return fr->state == F_DONE || fr->state == F_EOF;
}

long ab_http_framer_data(struct ab_http_framer *fr, const char *p, size_t n,
    size_t *off, size_t *len, int *done)
{
	size_t i = 0, k = 0;

	while (i < n && fr->state >= C_SIZE0 && fr->state != C_DATA)
		fr->state = chunk_step(fr, (unsigned char)p[i++]);
	*off = i;
	if (fr->state == F_EOF)
		k = n - i;
	else if (fr->state == F_LENGTH || fr->state == C_DATA) {
		k = n - i;
		if ((unsigned long long)fr->left < k)
			k = (size_t)fr->left;
		fr->left -= (long long)k;
		if (fr->left == 0)
			fr->state = fr->state == F_LENGTH ? F_DONE : C_DATA_CR;
	}
	*len = k;
	*done = fr->state == F_DONE;
	return fr->state == F_FAILED ? -1 : (long)(i + k);
}
