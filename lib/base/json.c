/* json.c: a strict JSON reader on top of jsmn, and a small writer.
 *
 * jsmn is a tokenizer, not a validator: even with JSMN_STRICT it takes
 * "[1 2]", "{"a":1,}", several top-level values, bad numbers and raw
 * control bytes in strings.  So once jsmn has built the tokens, check()
 * walks them against the text with a cursor, requiring every byte between
 * tokens to be what RFC 8259 allows there, and validates each string and
 * primitive.  A document that passes has one reading, and the token tree
 * is that reading, which is what the index arithmetic below relies on.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define JSMN_STRICT
#define JSMN_PARENT_LINKS
#define JSMN_STATIC
#include <jsmn.h>

#include "json.h"

/* Bounds on what a document may cost: memory and recursion in check(). */
#define MAXTOK		4000000
#define MAXDEPTH	64

/* Writer state bits in ab_jw.comma[depth - 1]. */
#define JW_WROTE	0x1	/* the container holds a value */
#define JW_OBJ		0x2	/* the container is an object */
/* comma[0] only: the one top-level value has begun.  It shares the byte
 * with the outermost container, which exists only inside that value. */
#define JW_TOP		0x4

struct key {
	const char *p;		/* the unescaped key */
	size_t n;
	char *own;		/* p when it had to be unescaped */
	const char *raw;	/* the source text, for the message */
	size_t rawn;
};

struct walk {
	const char *s;
	size_t len;
	const jsmntok_t *tok;
	int ntok;
	int next;		/* the next token to account for */
	size_t pos;		/* the cursor in s */
	struct ab_err *err;
};

static int value(struct walk *, int);

/* -- Strings: UTF-8 and escapes, shared by the reader and the writer. */

/* The length of the well-formed UTF-8 sequence at s (n > 0 bytes there),
 * or 0.  RFC 3629: no overlongs, no UTF-16 surrogates, nothing past
 * U+10FFFF. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] < 0xc2)
		return 0;
	if (s[0] < 0xe0)
		len = 2;
	else if (s[0] < 0xf0) {
		len = 3;
		if (s[0] == 0xe0)
			lo = 0xa0;
		else if (s[0] == 0xed)
			hi = 0x9f;
	} else if (s[0] < 0xf5) {
		len = 4;
		if (s[0] == 0xf0)
			lo = 0x90;
		else if (s[0] == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

static size_t put_utf8(char *out, unsigned long cp)
{
	unsigned char *o = (unsigned char *)out;

	if (cp < 0x80) {
		o[0] = cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = 0xc0 | cp >> 6;
		o[1] = 0x80 | (cp & 0x3f);
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = 0xe0 | cp >> 12;
		o[1] = 0x80 | (cp >> 6 & 0x3f);
		o[2] = 0x80 | (cp & 0x3f);
		return 3;
	}
	o[0] = 0xf0 | cp >> 18;
	o[1] = 0x80 | (cp >> 12 & 0x3f);
	o[2] = 0x80 | (cp >> 6 & 0x3f);
	o[3] = 0x80 | (cp & 0x3f);
	return 4;
}

/* Four hex digits at p, or -1. */
static long hex4(const char *p, size_t n)
{
	long v = 0;
	size_t i;
	int d;

	if (n < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		if (p[i] >= '0' && p[i] <= '9')
			d = p[i] - '0';
		else if (p[i] >= 'a' && p[i] <= 'f')
			d = p[i] - 'a' + 10;
		else if (p[i] >= 'A' && p[i] <= 'F')
			d = p[i] - 'A' + 10;
		else
			return -1;
		v = v * 16 + d;
	}
	return v;
}

/* Decodes the escape at p (p[0] is the backslash) into *cp and returns
 * its length in the source, or 0 when it is invalid or would put half a
 * surrogate pair into the value.  \u0000 is a character like any other
 * (a command's output holds it); the accessors that hand a value out as
 * a C string refuse it there, where a NUL would cut the value. */
static size_t escape(const char *p, size_t n, unsigned long *cp)
{
	static const char in[] = "\"\\/bfnrt", out[] = "\"\\/\b\f\n\r\t";
	const char *e;
	long hi, lo;

	if (n < 2 || p[1] == '\0')
		return 0;
	if (p[1] != 'u') {
		if ((e = strchr(in, p[1])) == NULL)
			return 0;
		*cp = (unsigned char)out[e - in];
		return 2;
	}
	hi = hex4(p + 2, n - 2);
	if (hi < 0 || (hi >= 0xdc00 && hi <= 0xdfff))
		return 0;
	if (hi < 0xd800 || hi > 0xdbff) {
		*cp = hi;
		return 6;
	}
	if (n < 12 || p[6] != '\\' || p[7] != 'u')
		return 0;
	lo = hex4(p + 8, n - 8);
	if (lo < 0xdc00 || lo > 0xdfff)
		return 0;
	*cp = 0x10000 + ((unsigned long)(hi - 0xd800) << 10) + (lo - 0xdc00);
	return 12;
}

/* Unescapes the n source bytes of a string into out, which has room for
 * n + 1 (no escape decodes to more bytes than it spells), or only checks
 * them when out is NULL.  -1 with *bad at the offending offset. */
static int unescape(const char *p, size_t n, char *out, size_t *outn,
    size_t *bad)
{
	unsigned long cp;
	unsigned char c;
	size_t i, k, o = 0;

	for (i = 0; i < n; i += k) {
		c = p[i];
		if (c == '\\') {
			if ((k = escape(p + i, n - i, &cp)) == 0)
				goto fail;
			if (out != NULL)
				o += put_utf8(out + o, cp);
			continue;
		}
		if (c < 0x20 || c == '"' ||
		    (k = utf8_len((const unsigned char *)p + i, n - i)) == 0)
			goto fail;
		if (out != NULL)
			memcpy(out + o, p + i, k);
		o += k;
	}
	if (outn != NULL)
		*outn = o;
	return 0;
fail:
	if (bad != NULL)
		*bad = i;
	return -1;
}

/* RFC 8259: true, false, null, or
 * -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? */
static int valid_prim(const char *p, size_t n)
{
	size_t i = 0, d;

	if ((n == 4 && (memcmp(p, "true", 4) == 0 ||
	    memcmp(p, "null", 4) == 0)) || (n == 5 && memcmp(p, "false", 5) == 0))
		return 1;
	if (i < n && p[i] == '-')
		i++;
	if (i < n && p[i] == '0')
		i++;
	else if (i < n && p[i] >= '1' && p[i] <= '9')
		while (i < n && p[i] >= '0' && p[i] <= '9')
			i++;
	else
		return 0;
	if (i < n && p[i] == '.') {
		for (d = ++i; i < n && p[i] >= '0' && p[i] <= '9'; i++)
			;
		if (i == d)
			return 0;
	}
	if (i < n && (p[i] == 'e' || p[i] == 'E')) {
		if (++i < n && (p[i] == '+' || p[i] == '-'))
			i++;
		for (d = i; i < n && p[i] >= '0' && p[i] <= '9'; i++)
			;
		if (i == d)
			return 0;
	}
	return i == n;
}

/* -- Checking jsmn's tokens against the text. */

static int nomem(struct ab_err *err)
{
	return ab_fail(err, AB_EENGINE, "out of memory reading JSON");
}

static int bad(struct walk *w)
{
	return ab_fail(w->err, AB_EUSAGE, "not valid JSON at byte %zu",
	    w->pos);
}

static void skipws(struct walk *w)
{
	char c;

	while (w->pos < w->len) {
		c = w->s[w->pos];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		w->pos++;
	}
}

static int expect(struct walk *w, char c)
{
	skipws(w);
	if (w->pos >= w->len || w->s[w->pos] != c)
		return bad(w);
	w->pos++;
	return 0;
}

/* The next token, if it begins at the cursor (a string's token begins
 * after its quote).  jsmn leaves a container's end at -1 until it closes;
 * closing() checks that end, everything else must lie inside the text. */
static const jsmntok_t *take(struct walk *w)
{
	const jsmntok_t *tk;
	size_t at;

	skipws(w);
	if (w->next >= w->ntok)
		return NULL;
	tk = &w->tok[w->next];
	if (tk->start < 0 || (size_t)tk->start > w->len)
		return NULL;
	if (tk->type != JSMN_OBJECT && tk->type != JSMN_ARRAY &&
	    (tk->end < tk->start || (size_t)tk->end > w->len))
		return NULL;
	at = tk->type == JSMN_STRING ? w->pos + 1 : w->pos;
	if ((size_t)tk->start != at)
		return NULL;
	w->next++;
	return tk;
}

static int string(struct walk *w, const jsmntok_t *tk)
{
	size_t off;

	if (w->s[w->pos] != '"' || (size_t)tk->end >= w->len ||
	    w->s[tk->end] != '"')
		return bad(w);
	if (unescape(w->s + tk->start, tk->end - tk->start, NULL, NULL,
	    &off) < 0)
		return ab_fail(w->err, AB_EUSAGE,
		    "invalid JSON string at byte %zu", tk->start + off);
	w->pos = tk->end + 1;
	return 0;
}

static int closing(struct walk *w, const jsmntok_t *tk, char c)
{
	skipws(w);
	if (w->pos >= w->len || w->s[w->pos] != c || tk->end < 0 ||
	    (size_t)tk->end != w->pos + 1)
		return bad(w);
	w->pos++;
	return 0;
}

static int array(struct walk *w, const jsmntok_t *tk, int depth)
{
	int i;

	if (w->s[w->pos] != '[')
		return bad(w);
	w->pos++;
	for (i = 0; i < tk->size; i++) {
		if (i > 0 && expect(w, ',') < 0)
			return -1;
		if (value(w, depth) < 0)
			return -1;
	}
	return closing(w, tk, ']');
}

static int member(struct walk *w, struct key *k, int depth)
{
	const jsmntok_t *tk;

	skipws(w);
	if (w->pos < w->len && w->s[w->pos] != '"')
		return ab_fail(w->err, AB_EUSAGE,
		    "JSON object key is not a string at byte %zu", w->pos);
	if ((tk = take(w)) == NULL || tk->type != JSMN_STRING)
		return bad(w);
	if (string(w, tk) < 0)
		return -1;
	k->raw = k->p = w->s + tk->start;
	k->rawn = k->n = tk->end - tk->start;
	if (expect(w, ':') < 0 || value(w, depth) < 0)
		return -1;
	/* jsmn gives a key one child, its value.  Checked last: walking
	 * on puts the cursor at the real fault for the message. */
	if (tk->size != 1)
		return bad(w);
	return 0;
}

static int keycmp(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	int c;

	c = memcmp(x->p, y->p, x->n < y->n ? x->n : y->n);
	if (c != 0)
		return c;
	return (x->n > y->n) - (x->n < y->n);
}

/* Two members with one name give a record two meanings (and parsers
 * disagree on which wins), so refuse them.  Keys are compared unescaped;
 * sorting keeps a hostile object with many keys from costing n^2. */
static int nodups(struct walk *w, struct key *k, int n)
{
	char show[68];
	int i, r = -1;

	for (i = 0; i < n; i++) {
		if (memchr(k[i].raw, '\\', k[i].rawn) == NULL)
			continue;
		if ((k[i].own = malloc(k[i].rawn + 1)) == NULL) {
			nomem(w->err);
			goto out;
		}
		/* Validated by string() already. */
		(void)unescape(k[i].raw, k[i].rawn, k[i].own, &k[i].n, NULL);
		k[i].p = k[i].own;
	}
	qsort(k, n, sizeof *k, keycmp);
	for (i = 1; i < n; i++)
		if (keycmp(&k[i - 1], &k[i]) == 0) {
			/* The key's name, cut short and kept printable:
			 * the message ends up on a terminal. */
			ab_quote(show, sizeof show, k[i].p, k[i].n);
			ab_fail(w->err, AB_EUSAGE, "duplicate key \"%s\"",
			    show);
			goto out;
		}
	r = 0;
out:
	for (i = 0; i < n; i++)
		free(k[i].own);
	return r;
}

static int object(struct walk *w, const jsmntok_t *tk, int depth)
{
	struct key *keys;
	int i, r = -1;

	if (w->s[w->pos] != '{')
		return bad(w);
	w->pos++;
	if (tk->size == 0)
		return closing(w, tk, '}');
	/* Bounds the allocation: every member has tokens of its own. */
	if (tk->size > w->ntok - w->next)
		return bad(w);
	if ((keys = calloc(tk->size, sizeof *keys)) == NULL)
		return nomem(w->err);
	for (i = 0; i < tk->size; i++) {
		if (i > 0 && expect(w, ',') < 0)
			goto out;
		if (member(w, &keys[i], depth) < 0)
			goto out;
	}
	if (closing(w, tk, '}') == 0)
		r = nodups(w, keys, tk->size);
out:
	free(keys);
	return r;
}

/* One value at the cursor, inside depth containers. */
static int value(struct walk *w, int depth)
{
	const jsmntok_t *tk;

	if ((tk = take(w)) == NULL)
		return bad(w);
	switch (tk->type) {
	case JSMN_STRING:
		if (string(w, tk) < 0)
			return -1;
		/* Only keys have children (see member()). */
		return tk->size == 0 ? 0 : bad(w);
	case JSMN_PRIMITIVE:
		if (tk->size != 0 ||
		    !valid_prim(w->s + tk->start, tk->end - tk->start))
			return bad(w);
		w->pos = tk->end;
		return 0;
	case JSMN_OBJECT:
	case JSMN_ARRAY:
		if (depth >= MAXDEPTH)
			return ab_fail(w->err, AB_EUSAGE,
			    "JSON nested deeper than %d at byte %zu",
			    MAXDEPTH, w->pos);
		if (tk->type == JSMN_OBJECT)
			return object(w, tk, depth + 1);
		return array(w, tk, depth + 1);
	default:
		return bad(w);
	}
}

/* jr and at are jsmn's verdict and where it stopped.  When jsmn failed
 * after a complete first value, the failure is in trailing data: check
 * the value anyway, so the message names the first fault. */
static int check(struct ab_json *j, int jr, unsigned int at,
    struct ab_err *err)
{
	const jsmntok_t *tok = j->tok;
	struct walk w;

	memset(&w, 0, sizeof w);
	w.s = j->text;
	w.len = j->len;
	w.tok = tok;
	w.ntok = j->ntok;
	w.err = err;
	if (j->ntok > 0 && tok[0].end >= 0) {
		if (value(&w, 0) < 0)
			return -1;
		skipws(&w);
		if (w.pos != w.len)
			return ab_fail(err, AB_EUSAGE,
			    "trailing data after the JSON value");
		if (jr < 0 || w.next != j->ntok)
			return bad(&w);
		return 0;
	}
	if (jr == JSMN_ERROR_PART)
		return ab_fail(err, AB_EUSAGE, "JSON text ends early");
	if (jr < 0)
		return ab_fail(err, AB_EUSAGE, "not valid JSON at byte %u",
		    at);
	return ab_fail(err, AB_EUSAGE, "empty JSON document");
}

/* The end of the string whose quote is at s[i], as jsmn finds it. */
static size_t skip_string(const char *s, size_t len, size_t i)
{
	for (i++; i < len && s[i] != '"'; i++)
		if (s[i] == '\\')
			i++;
	return i;
}

/* jsmn closes a container by walking up from its newest token, which
 * costs the nesting depth, so "[[[...]]]" would take quadratic time.
 * Measure the depth first, lexing as jsmn does: brackets count outside
 * strings and outside primitives, which in strict mode run to the next
 * delimiter whatever they hold (a quote included).  Where this and jsmn
 * could differ, jsmn has already failed. */
static int depth_ok(const char *s, size_t len, struct ab_err *err)
{
	size_t i;
	int depth = 0;

	for (i = 0; i < len; i++) {
		switch (s[i]) {
		case '{':
		case '[':
			if (++depth > MAXDEPTH)
				return ab_fail(err, AB_EUSAGE,
				    "JSON nested deeper than %d at byte %zu",
				    MAXDEPTH, i);
			break;
		case '}':
		case ']':
			if (depth > 0)
				depth--;
			break;
		case '"':
			i = skip_string(s, len, i);
			break;
		case ' ':
		case '\t':
		case '\n':
		case '\r':
		case ',':
		case ':':
			break;
		default:
			while (i + 1 < len && strchr(" \t\n\r,]}", s[i + 1]) ==
			    NULL)
				i++;
			break;
		}
	}
	return 0;
}

/* Runs jsmn over the text, doubling the token array whenever it runs
 * out; jsmn resumes where it stopped. */
static int tokenize(struct ab_json *j, int *jr, unsigned int *at,
    struct ab_err *err)
{
	jsmn_parser p;
	jsmntok_t *tok;
	unsigned int n = 0;
	int r;

	jsmn_init(&p);
	do {
		if (n >= MAXTOK)
			return ab_fail(err, AB_EUSAGE,
			    "JSON has more than %d tokens", MAXTOK);
		n = n == 0 ? 64 : n > MAXTOK / 2 ? MAXTOK : n * 2;
		if ((tok = realloc(j->tok, n * sizeof *tok)) == NULL)
			return nomem(err);
		j->tok = tok;
		/* Include the space parse() put after the text. */
		r = jsmn_parse(&p, j->text, j->len + 1, tok, n);
	} while (r == JSMN_ERROR_NOMEM);
	j->ntok = p.toknext;
	*jr = r;
	*at = p.pos;
	return 0;
}

int ab_json_parse(struct ab_json *j, const char *text, size_t len,
    struct ab_err *err)
{
	const char *nul;
	unsigned int at = 0;
	int jr = 0;

	memset(j, 0, sizeof *j);
	if (text == NULL && len > 0)
		return ab_fail(err, AB_EUSAGE, "no JSON text");
	/* jsmn keeps offsets in int. */
	if (len > INT_MAX - 2)
		return ab_fail(err, AB_EUSAGE, "JSON document too large");
	/* jsmn stops at a NUL as if the text ended there. */
	if (len > 0 && (nul = memchr(text, '\0', len)) != NULL)
		return ab_fail(err, AB_EUSAGE, "NUL byte in JSON at byte %zu",
		    (size_t)(nul - text));
	if ((j->text = malloc(len + 2)) == NULL)
		return nomem(err);
	if (len > 0)
		memcpy(j->text, text, len);
	/* Strict jsmn wants a delimiter after every primitive, so a bare
	 * top-level number at the very end would be "partial": give it a
	 * space, then take it back. */
	j->text[len] = ' ';
	j->text[len + 1] = '\0';
	j->len = len;
	if (depth_ok(j->text, len, err) < 0 ||
	    tokenize(j, &jr, &at, err) < 0) {
		ab_json_free(j);
		return -1;
	}
	j->text[len] = '\0';
	if (check(j, jr, at, err) < 0) {
		ab_json_free(j);
		return -1;
	}
	return 0;
}

void ab_json_free(struct ab_json *j)
{
	if (j == NULL)
		return;
	free(j->text);
	free(j->tok);
	memset(j, 0, sizeof *j);
}

/* -- Looking things up. */

static const jsmntok_t *tokat(const struct ab_json *j, int t)
{
	if (j == NULL || j->tok == NULL || j->text == NULL || t < 0 ||
	    t >= j->ntok)
		return NULL;
	return (const jsmntok_t *)j->tok + t;
}

enum ab_json_type ab_json_type(const struct ab_json *j, int t)
{
	const jsmntok_t *tk;

	if ((tk = tokat(j, t)) == NULL)
		return AB_JSON_ABSENT;
	switch (tk->type) {
	case JSMN_OBJECT:
		return AB_JSON_OBJECT;
	case JSMN_ARRAY:
		return AB_JSON_ARRAY;
	case JSMN_STRING:
		return AB_JSON_STRING;
	case JSMN_PRIMITIVE:
		break;
	default:
		return AB_JSON_ABSENT;
	}
	switch (j->text[tk->start]) {
	case 't':
		return AB_JSON_TRUE;
	case 'f':
		return AB_JSON_FALSE;
	case 'n':
		return AB_JSON_NULL;
	default:
		return AB_JSON_NUMBER;
	}
}

int ab_json_count(const struct ab_json *j, int t)
{
	enum ab_json_type ty = ab_json_type(j, t);

	if (ty != AB_JSON_OBJECT && ty != AB_JSON_ARRAY)
		return -1;
	return ((const jsmntok_t *)j->tok)[t].size;
}

int ab_json_skip(const struct ab_json *j, int t)
{
	const jsmntok_t *tok = j == NULL ? NULL : j->tok;
	int k;

	if (tokat(j, t) == NULL)
		return -1;
	/* Tokens are in document order, so T's subtree is the run after
	 * it that starts before T ends. */
	for (k = t + 1; k < j->ntok && tok[k].start < tok[t].end; k++)
		;
	return k;
}

/* 1 when string token T unescapes to the n bytes at s. */
static int str_eqn(const struct ab_json *j, int t, const char *s, size_t n)
{
	const jsmntok_t *tk;
	const char *raw;
	size_t rawn, un;
	char *u;
	int eq;

	if (ab_json_type(j, t) != AB_JSON_STRING || s == NULL)
		return 0;
	tk = (const jsmntok_t *)j->tok + t;
	raw = j->text + tk->start;
	rawn = tk->end - tk->start;
	/* Without escapes the source is the value (parse checked it). */
	if (memchr(raw, '\\', rawn) == NULL)
		return rawn == n && memcmp(raw, s, n) == 0;
	/* The whole value, NULs and all: "a\u0000b" is not "a". */
	if ((u = ab_json_strn(j, t, &un)) == NULL)
		return 0;
	eq = un == n && memcmp(u, s, n) == 0;
	free(u);
	return eq;
}

static int keyn(const struct ab_json *j, int obj, const char *key,
    size_t n)
{
	int i, k, size;

	if ((size = ab_json_count(j, obj)) < 0 ||
	    ab_json_type(j, obj) != AB_JSON_OBJECT)
		return -1;
	for (i = 0, k = obj + 1; i < size; i++, k = ab_json_skip(j, k + 1))
		if (str_eqn(j, k, key, n))
			return k + 1;
	return -1;
}

int ab_json_key(const struct ab_json *j, int obj, const char *key)
{
	if (key == NULL)
		return -1;
	return keyn(j, obj, key, strlen(key));
}

int ab_json_get(const struct ab_json *j, int obj, const char *path)
{
	const char *dot;
	size_t n;

	if (path == NULL)
		return -1;
	for (;;) {
		dot = strchr(path, '.');
		n = dot == NULL ? strlen(path) : (size_t)(dot - path);
		/* "a..b", ".a", "a." and "" name nothing. */
		if (n == 0 || (obj = keyn(j, obj, path, n)) < 0)
			return -1;
		if (dot == NULL)
			return obj;
		path = dot + 1;
	}
}

int ab_json_elem(const struct ab_json *j, int arr, int i)
{
	int k;

	if (ab_json_type(j, arr) != AB_JSON_ARRAY || i < 0 ||
	    i >= ab_json_count(j, arr))
		return -1;
	for (k = arr + 1; i > 0; i--)
		k = ab_json_skip(j, k);
	return k;
}

int ab_json_member(const struct ab_json *j, int obj, int i)
{
	int k;

	if (ab_json_type(j, obj) != AB_JSON_OBJECT || i < 0 ||
	    i >= ab_json_count(j, obj))
		return -1;
	for (k = obj + 1; i > 0; i--)
		k = ab_json_skip(j, k + 1);
	return k;
}

char *ab_json_strn(const struct ab_json *j, int t, size_t *len)
{
	const jsmntok_t *tk;
	size_t n, outn;
	char *s;

	if (ab_json_type(j, t) != AB_JSON_STRING)
		return NULL;
	tk = (const jsmntok_t *)j->tok + t;
	n = tk->end - tk->start;
	if ((s = malloc(n + 1)) == NULL)
		return NULL;
	if (unescape(j->text + tk->start, n, s, &outn, NULL) < 0) {
		free(s);
		return NULL;
	}
	s[outn] = '\0';
	if (len != NULL)
		*len = outn;
	return s;
}

char *ab_json_str(const struct ab_json *j, int t)
{
	size_t n;
	char *s;

	if ((s = ab_json_strn(j, t, &n)) == NULL)
		return NULL;
	/* As a C string the value would end at its first NUL: an ID, a
	 * path or a name read short.  Refused, so callers fail closed. */
	if (memchr(s, '\0', n) != NULL) {
		free(s);
		return NULL;
	}
	return s;
}

int ab_json_copy(const struct ab_json *j, const char *key, char *dst,
    size_t cap)
{
	char *v = ab_json_str(j, ab_json_key(j, 0, key));
	int rc = v != NULL ? ab_fmt(dst, cap, "%s", v) : -1;

	free(v);
	return rc;
}

int ab_json_str_eq(const struct ab_json *j, int t, const char *s)
{
	if (s == NULL)
		return 0;
	return str_eqn(j, t, s, strlen(s));
}

int ab_json_int(const struct ab_json *j, int t, long long *out)
{
	const jsmntok_t *tk;
	const char *p, *e;
	long long v = 0;
	int d, neg;

	if (ab_json_type(j, t) != AB_JSON_NUMBER)
		return -1;
	tk = (const jsmntok_t *)j->tok + t;
	p = j->text + tk->start;
	e = j->text + tk->end;
	if ((neg = p < e && *p == '-'))
		p++;
	if (p == e || (*p == '0' && e - p > 1))
		return -1;
	for (; p < e; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		d = *p - '0';
		/* Accumulate toward the sign so LLONG_MIN fits. */
		if (neg) {
			if (v < LLONG_MIN / 10 ||
			    (v == LLONG_MIN / 10 && d > -(LLONG_MIN % 10)))
				return -1;
			v = v * 10 - d;
		} else {
			if (v > LLONG_MAX / 10 ||
			    (v == LLONG_MAX / 10 && d > LLONG_MAX % 10))
				return -1;
			v = v * 10 + d;
		}
	}
	if (out != NULL)
		*out = v;
	return 0;
}

int ab_json_bool(const struct ab_json *j, int t, int *out)
{
	enum ab_json_type ty = ab_json_type(j, t);

	if (ty != AB_JSON_TRUE && ty != AB_JSON_FALSE)
		return -1;
	if (out != NULL)
		*out = ty == AB_JSON_TRUE;
	return 0;
}

static int edit_place(const void *a, const void *b)
{
	const struct ab_json_edit *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

/* Each edit's new text, written into E's own buffer. */
static int edit_text(const struct ab_json_edit *e, struct ab_buf *tmp)
{
	struct ab_jw w;

	ab_jw_init(&w, tmp);
	if (e->s == NULL)
		ab_jw_int(&w, e->num);
	else
		ab_jw_str(&w, e->s);
	return ab_jw_done(&w);
}

int ab_json_splice(const struct ab_json *j, struct ab_json_edit *e, int n,
    struct ab_buf *out)
{
	struct ab_buf tmp;
	size_t at = 0;
	const char *p;
	int i, rc = 0;

	for (i = 0; i < n; i++) {
		ab_json_span(j, e[i].t, &p, &e[i].len);
		if (p == NULL)
			return -1;
		e[i].at = (size_t)(p - j->text);
	}
	qsort(e, (size_t)n, sizeof e[0], edit_place);
	for (i = 0; i < n; i++)
		if (i > 0 && e[i].at < e[i - 1].at + e[i - 1].len)
			return -1;
	ab_buf_init(&tmp, out->max);
	for (i = 0; rc == 0 && i <= n; i++) {
		tmp.len = 0;
		if (ab_buf_add(out, j->text + at, (i < n ? e[i].at : j->len) -
		    at) < 0 || (i < n && (edit_text(&e[i], &tmp) < 0 || ab_buf_add(out, tmp.data, tmp.len) < 0)))
			rc = -1;
		at = i < n ? e[i].at + e[i].len : j->len;
	}
	if (tmp.data != NULL)
		explicit_bzero(tmp.data, tmp.len);
	ab_buf_free(&tmp);
	return rc;
}

void ab_json_span(const struct ab_json *j, int t, const char **p, size_t *n)
{
	const jsmntok_t *tk;
	int q;

	if ((tk = tokat(j, t)) == NULL) {
		*p = NULL;
		*n = 0;
		return;
	}
	/* jsmn's string tokens leave out the quotes. */
	q = tk->type == JSMN_STRING;
	*p = j->text + tk->start - q;
	*n = tk->end - tk->start + 2 * q;
}

/* -- Writing. */

static void jw_fail(struct ab_jw *w)
{
	w->failed = 1;
}

static void jw_add(struct ab_jw *w, const char *p, size_t n)
{
	if (!w->failed && ab_buf_add(w->b, p, n) < 0)
		jw_fail(w);
}

/* Emits the comma the next value needs, or fails when no value may go
 * here: a second top-level value, or a member value without its key. */
static int jw_begin(struct ab_jw *w)
{
	unsigned char *st;

	if (w->failed)
		return -1;
	if (w->depth == 0) {
		if (w->comma[0] & JW_TOP) {
			jw_fail(w);
			return -1;
		}
		w->comma[0] |= JW_TOP;
		return 0;
	}
	st = &w->comma[w->depth - 1];
	if (*st & JW_OBJ) {
		if (!w->after_key) {
			jw_fail(w);
			return -1;
		}
		w->after_key = 0;
		return 0;
	}
	if (*st & JW_WROTE)
		jw_add(w, ",", 1);
	*st |= JW_WROTE;
	return w->failed ? -1 : 0;
}

/* Escapes as RFC 8259 requires, plus DEL, so the output is plain ASCII
 * punctuation around valid UTF-8; a NUL (only a length-taking call can
 * pass one) is \u0000.  Bad UTF-8 fails the writer: the engine would
 * replace it without telling anyone. */
static void jw_string(struct ab_jw *w, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	static const char raw[] = "\"\\\b\f\n\r\t", esc[] = "\"\\bfnrt";
	const unsigned char *p = (const unsigned char *)s;
	const char *sh;
	char e[6];
	size_t i, run, k;

	jw_add(w, "\"", 1);
	for (i = run = 0; i < n && !w->failed; i += k) {
		k = 1;
		if (p[i] >= 0x20 && p[i] != '"' && p[i] != '\\' &&
		    p[i] != 0x7f) {
			if ((k = utf8_len(p + i, n - i)) == 0)
				jw_fail(w);
			continue;
		}
		jw_add(w, s + run, i - run);
		run = i + 1;
		/* strchr finds a NUL too: the terminator. */
		if (p[i] != '\0' && (sh = strchr(raw, p[i])) != NULL) {
			e[0] = '\\';
			e[1] = esc[sh - raw];
			jw_add(w, e, 2);
		} else {
			memcpy(e, "\\u00", 4);
			e[4] = hex[p[i] >> 4];
			e[5] = hex[p[i] & 0xf];
			jw_add(w, e, 6);
		}
	}
	jw_add(w, s + run, n - run);
	jw_add(w, "\"", 1);
}

void ab_jw_init(struct ab_jw *w, struct ab_buf *b)
{
	memset(w, 0, sizeof *w);
	w->b = b;
}

static void jw_open(struct ab_jw *w, char c, unsigned char type)
{
	if (jw_begin(w) < 0)
		return;
	if (w->depth >= (int)sizeof w->comma) {
		jw_fail(w);
		return;
	}
	jw_add(w, &c, 1);
	/* Keep JW_TOP when reusing comma[0]. */
	w->comma[w->depth] = (w->depth == 0 ? w->comma[0] & JW_TOP : 0) |
	    type;
	w->depth++;
}

static void jw_close(struct ab_jw *w, char c, unsigned char type)
{
	if (w->failed)
		return;
	if (w->depth == 0 || w->after_key ||
	    (w->comma[w->depth - 1] & JW_OBJ) != type) {
		jw_fail(w);
		return;
	}
	jw_add(w, &c, 1);
	w->depth--;
}

void ab_jw_obj(struct ab_jw *w)
{
	jw_open(w, '{', JW_OBJ);
}

void ab_jw_obj_end(struct ab_jw *w)
{
	jw_close(w, '}', JW_OBJ);
}

void ab_jw_arr(struct ab_jw *w)
{
	jw_open(w, '[', 0);
}

void ab_jw_arr_end(struct ab_jw *w)
{
	jw_close(w, ']', 0);
}

void ab_jw_key(struct ab_jw *w, const char *k)
{
	if (k == NULL) {
		jw_fail(w);
		return;
	}
	ab_jw_keyn(w, k, strlen(k));
}

void ab_jw_keyn(struct ab_jw *w, const char *k, size_t n)
{
	unsigned char *st;

	if (w->failed)
		return;
	if ((k == NULL && n > 0) || w->depth == 0 || w->after_key ||
	    !(w->comma[w->depth - 1] & JW_OBJ)) {
		jw_fail(w);
		return;
	}
	st = &w->comma[w->depth - 1];
	if (*st & JW_WROTE)
		jw_add(w, ",", 1);
	*st |= JW_WROTE;
	jw_string(w, k == NULL ? "" : k, n);
	jw_add(w, ":", 1);
	w->after_key = 1;
}

void ab_jw_str(struct ab_jw *w, const char *s)
{
	if (s == NULL) {
		jw_fail(w);
		return;
	}
	ab_jw_strn(w, s, strlen(s));
}

void ab_jw_strn(struct ab_jw *w, const char *s, size_t n)
{
	if (s == NULL && n > 0) {
		jw_fail(w);
		return;
	}
	if (jw_begin(w) < 0)
		return;
	jw_string(w, s == NULL ? "" : s, n);
}

void ab_jw_int(struct ab_jw *w, long long v)
{
	if (jw_begin(w) < 0)
		return;
	if (ab_buf_addf(w->b, "%lld", v) < 0)
		jw_fail(w);
}

void ab_jw_bool(struct ab_jw *w, int v)
{
	if (jw_begin(w) < 0)
		return;
	if (v)
		jw_add(w, "true", 4);
	else
		jw_add(w, "false", 5);
}

void ab_jw_null(struct ab_jw *w)
{
	if (jw_begin(w) < 0)
		return;
	jw_add(w, "null", 4);
}

/* The text is checked with the reader, so that ab_jw_done() == 0 still
 * means the whole output is one valid JSON value. */
void ab_jw_raw(struct ab_jw *w, const char *json, size_t n)
{
	struct ab_json j;

	if (jw_begin(w) < 0)
		return;
	if (ab_json_parse(&j, json, n, NULL) < 0) {
		jw_fail(w);
		return;
	}
	ab_json_free(&j);
	jw_add(w, json, n);
}

void ab_jw_kstr(struct ab_jw *w, const char *k, const char *s)
{
	ab_jw_key(w, k);
	ab_jw_str(w, s);
}

void ab_jw_kstrn(struct ab_jw *w, const char *k, const char *s, size_t n)
{
	ab_jw_key(w, k);
	ab_jw_strn(w, s, n);
}

void ab_jw_kint(struct ab_jw *w, const char *k, long long v)
{
	ab_jw_key(w, k);
	ab_jw_int(w, v);
}

void ab_jw_kbool(struct ab_jw *w, const char *k, int v)
{
	ab_jw_key(w, k);
	ab_jw_bool(w, v);
}

int ab_jw_done(const struct ab_jw *w)
{
	/* Nothing written is no JSON at all. */
	if (w->failed || w->depth != 0 || w->after_key ||
	    !(w->comma[0] & JW_TOP))
		return -1;
	return 0;
}

int ab_json_utf8_ok(const char *p, size_t n)
{
	size_t i, k;

	for (i = 0; i < n; i += k)
		if ((k = utf8_len((const unsigned char *)p + i, n - i)) == 0)
			return 0;
	return 1;
}

int ab_json_text_ok(const char *p, size_t n)
{
	return n == 0 || (memchr(p, '\0', n) == NULL &&
	    ab_json_utf8_ok(p, n));
}
