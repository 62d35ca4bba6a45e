/* schema.c: checking an agent's JSON answer against a JSON Schema subset
 * (schema.h says which).
 *
 * The schema is compiled once into a tree of nodes: property names
 * unescaped and sorted, the literals of enum and const hashed and sorted.
 * Validation then walks the document once, so a hostile answer costs
 * about n log n whatever the schema: members are found by binary search,
 * and a value is compared in full only with the literals sharing its hash.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "schema.h"

#define PTR_CAP		200	/* bytes of a JSON Pointer in a message */
#define NAME_CAP	80	/* bytes of a quoted name in a message */
/* A number's exponent with more digits than this is "huge" (at least
 * 10^17); a literal in a schema must have its exponent, mantissa digits
 * included, within +-SCHEMA_EXP.  Documents are under 2^31 bytes, so a
 * huge exponent, moved by the mantissa, still lies beyond 10^17 - 2^31:
 * no literal can equal such a number, and every other exponent fits a
 * long long exactly. */
#define EXP_DIGITS	17
#define SCHEMA_EXP	10000000000000000LL

/* Type bits: bit i is types[i]. */
enum {
	T_OBJECT = 1 << 0,
	T_ARRAY = 1 << 1,
	T_STRING = 1 << 2,
	T_NUMBER = 1 << 3,
	T_INTEGER = 1 << 4,
	T_BOOLEAN = 1 << 5,
	T_NULL = 1 << 6
};

static const struct {
	const char *name;
	const char *phrase;	/* for "not PHRASE" */
} types[] = {
	{ "object", "an object" },
	{ "array", "an array" },
	{ "string", "a string" },
	{ "number", "a number" },
	{ "integer", "an integer" },
	{ "boolean", "a boolean" },
	{ "null", "null" },
};

#define NTYPES	(int)(sizeof types / sizeof types[0])

/* An unescaped JSON string: its source when it has no escape, else a
 * malloc'd copy (own). */
struct str {
	const char *p;
	size_t n;
	char *own;
};

/* A JSON value in canonical form: sign * digits * 10^exp, where digits
 * (nd of them from d, skipping a '.') have no leading or trailing zero. */
struct num {
	int neg;
	int zero;
	int huge;		/* +1 or -1: the exponent's sign (EXP_DIGITS) */
	const char *d;
	size_t nd;
	long long exp;
};

/* A literal of enum or const: its hash and its token in the schema. */
struct lit {
	uint64_t h;
	int t;
};

struct set {
	struct lit *v;		/* sorted by h; n == 0: no such keyword */
	int n;
};

struct prop {
	struct str name;
	int node;
};

struct node {
	unsigned types;		/* T_ bits; 0: any type */
	int closed;		/* additionalProperties is false */
	int items;		/* the node every element must match, or -1 */
	struct prop *props;	/* sorted by name */
	int nprops;
	struct str *req;	/* in schema order */
	int nreq;
	struct set cnst, enm;
};

/* A JSON Pointer under construction, cut (and then left alone) when it
 * would not fit. */
struct ptr {
	char b[PTR_CAP];
	size_t n;
	int cut;
};

struct mark {
	size_t n;
	int cut;
};

struct schema {
	struct ab_json j;
	struct node *node;	/* node[0] is the root */
	int n, cap;
	struct ptr at;		/* where compiling is, for messages */
	struct ab_err *err;
};

/* One member of a document object being validated. */
struct member {
	struct str key;
	int val;
};

struct run {
	const struct schema *s;
	const struct ab_json *d;
	struct ptr at;
	char *why;
	size_t cap;
	struct ab_err *err;
};

static int compile(struct schema *, int, int);
static int valid(struct run *, int, int);

static int nomem(struct ab_err *err)
{
	return ab_fail(err, AB_EENGINE, "out of memory checking a JSON Schema");
}

/* -- Strings. */

/* -1 only when memory runs out: json.c has validated the text.  The
 * value may hold a NUL (\u0000): it is read by its length throughout. */
static int str_get(const struct ab_json *j, int t, struct str *s)
{
	const char *p;
	size_t n;

	s->own = NULL;
	/* The span holds the quotes. */
	ab_json_span(j, t, &p, &n);
	if (p == NULL || n < 2)
		return -1;
	if (memchr(p + 1, '\\', n - 2) == NULL) {
		s->p = p + 1;
		s->n = n - 2;
		return 0;
	}
	if ((s->own = ab_json_strn(j, t, &s->n)) == NULL)
		return -1;
	s->p = s->own;
	return 0;
}

static void str_drop(struct str *s)
{
	free(s->own);
	s->own = NULL;
}

static int str_cmp(const struct str *a, const struct str *b)
{
	int c;

	c = memcmp(a->p, b->p, a->n < b->n ? a->n : b->n);
	if (c != 0)
		return c;
	return (a->n > b->n) - (a->n < b->n);
}

/* -- Messages: one printable line whatever the names hold. */

/* The escape of byte c into e (room for 4), or 0 when it stands as it is.
 * In a pointer, RFC 6901's ~0 and ~1; in a quoted name, the quote.
 * Anything outside printable ASCII, and '\\', as \xNN. */
static size_t esc(char *e, unsigned char c, int in_ptr)
{
	static const char hex[] = "0123456789abcdef";

	if (in_ptr && (c == '~' || c == '/')) {
		e[0] = '~';
		e[1] = c == '~' ? '0' : '1';
		return 2;
	}
	if (c >= 0x20 && c < 0x7f && c != '\\' && (in_ptr || c != '"'))
		return 0;
	e[0] = '\\';
	e[1] = 'x';
	e[2] = hex[c >> 4];
	e[3] = hex[c & 0xf];
	return 4;
}

/* Copies s[0..n) escaped into dst (cap bytes, cap > 4); a name that does
 * not fit ends in "...". */
static void quote(char *dst, size_t cap, const char *s, size_t n)
{
	size_t i, k, o = 0;
	char e[4];

	for (i = 0; i < n; i++) {
		k = esc(e, (unsigned char)s[i], 0);
		if (o + (k == 0 ? 1 : k) + sizeof "..." > cap) {
			memcpy(dst + o, "...", sizeof "...");
			return;
		}
		if (k == 0)
			dst[o++] = s[i];
		else {
			memcpy(dst + o, e, k);
			o += k;
		}
	}
	dst[o] = '\0';
}

/* The quoted value of string token t (its source should memory run
 * out: the message matters more than its spelling). */
static void quote_tok(char *dst, size_t cap, const struct ab_json *j, int t)
{
	struct str s;
	const char *p;
	size_t n;

	if (str_get(j, t, &s) == 0) {
		quote(dst, cap, s.p, s.n);
		str_drop(&s);
		return;
	}
	ab_json_span(j, t, &p, &n);
	quote(dst, cap, p == NULL ? "" : p, n);
}

static struct mark ptr_mark(const struct ptr *p)
{
	struct mark m = { p->n, p->cut };

	return m;
}

static void ptr_back(struct ptr *p, struct mark m)
{
	p->n = m.n;
	p->cut = m.cut;
	p->b[p->n] = '\0';
}

/* Appends k bytes, or cuts the pointer when they do not fit (with its
 * NUL); -1 once cut. */
static int ptr_put(struct ptr *p, const char *s, size_t k)
{
	if (p->cut || p->n + k + 1 > sizeof p->b) {
		p->cut = 1;
		return -1;
	}
	memcpy(p->b + p->n, s, k);
	p->n += k;
	p->b[p->n] = '\0';
	return 0;
}

/* Appends the segment s[0..n).  Only what fits is escaped, so a long
 * hostile key costs PTR_CAP, not its length. */
static void ptr_add(struct ptr *p, const char *s, size_t n)
{
	char e[4];
	size_t i, k;

	if (ptr_put(p, "/", 1) < 0)
		return;
	for (i = 0; i < n; i++) {
		k = esc(e, (unsigned char)s[i], 1);
		if (ptr_put(p, k == 0 ? s + i : e, k == 0 ? 1 : k) < 0)
			return;
	}
}

static void ptr_index(struct ptr *p, int i)
{
	char e[16];
	int k;

	if (ab_fmt(e, sizeof e, "/%d", i) == 0) {
		k = (int)strlen(e);
		ptr_put(p, e, k);
	}
}

/* The pointer for a message: the empty pointer (the whole value) would
 * vanish from the line, so it reads "(root)". */
static const char *ptr_text(const struct ptr *p, char *out, size_t cap)
{
	if (p->n == 0 && !p->cut)
		return "(root)";
	if (ab_fmt(out, cap, "%s%s", p->b, p->cut ? "..." : "") < 0)
		return "(a pointer too long to show)";
	return out;
}

/* -- Numbers. */

/* The canonical form of number token t: "1.50e1" is 15 * 10^0. */
static void num_get(const struct ab_json *j, int t, struct num *x)
{
	const char *p, *e, *m;
	size_t n, frac = 0, tz = 0;
	long long ev = 0;
	int dot = 0, eneg = 0, ed = 0;

	memset(x, 0, sizeof *x);
	ab_json_span(j, t, &p, &n);
	if (p == NULL || n == 0) {
		x->zero = 1;
		return;
	}
	e = p + n;
	if ((x->neg = *p == '-'))
		p++;
	for (m = p; m < e && *m != 'e' && *m != 'E'; m++) {
		if (*m == '.') {
			dot = 1;
			continue;
		}
		frac += dot;
		if (*m != '0') {
			if (x->d == NULL)
				x->d = m;
			tz = 0;
		} else
			tz++;
		if (x->d != NULL)
			x->nd++;
	}
	/* -0 and 0e5 are 0. */
	if (x->d == NULL) {
		x->zero = 1;
		return;
	}
	x->nd -= tz;
	if (m < e && ++m < e && (*m == '+' || *m == '-'))
		eneg = *m++ == '-';
	while (m < e && *m == '0')
		m++;
	for (; m < e; m++) {
		if (++ed > EXP_DIGITS) {
			x->huge = eneg ? -1 : 1;
			return;
		}
		ev = ev * 10 + (*m - '0');
	}
	x->exp = (eneg ? -ev : ev) - (long long)frac + (long long)tz;
}

/* The value has no fraction.  A huge positive exponent leaves none; a
 * huge negative one cannot be undone by trailing zeros, there are none. */
static int num_integral(const struct num *x)
{
	if (x->zero)
		return 1;
	if (x->huge)
		return x->huge > 0;
	return x->exp >= 0;
}

/* The nd digits from a equal those from b, each skipping a '.'. */
static int digits_eq(const char *a, const char *b, size_t nd)
{
	while (nd > 0) {
		if (*a == '.')
			a++;
		if (*b == '.')
			b++;
		if (*a++ != *b++)
			return 0;
		nd--;
	}
	return 1;
}

/* Exact: equal values have equal canonical forms.  A huge number equals
 * no literal (see EXP_DIGITS), and only document numbers can be huge. */
static int num_eq(const struct num *a, const struct num *b)
{
	if (a->zero || b->zero)
		return a->zero && b->zero;
	if (a->huge || b->huge)
		return 0;
	return a->neg == b->neg && a->exp == b->exp && a->nd == b->nd &&
	    digits_eq(a->d, b->d, a->nd);
}

/* -- Hashing and comparing values. */

enum { H_NULL = 1, H_TRUE, H_FALSE, H_ZERO, H_NUM, H_HUGE, H_STR, H_ARR,
    H_OBJ };

/* splitmix64's finalizer: every input bit moves every output bit. */
static uint64_t mix(uint64_t h)
{
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	return h ^ h >> 31;
}

/* FNV-1a over bytes, from h. */
static uint64_t fnv(uint64_t h, const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint64_t num_hash(const struct num *x)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	const char *p = x->d;
	size_t i;

	if (x->zero)
		return mix(H_ZERO);
	if (x->huge)
		return mix(H_HUGE);
	for (i = 0; i < x->nd; i++, p++) {
		if (*p == '.')
			p++;
		h = fnv(h, p, 1);
	}
	return mix(h ^ mix(H_NUM + (uint64_t)x->neg) ^
	    mix((uint64_t)x->exp));
}

static int hash(const struct ab_json *, int, uint64_t *, int *);

static int str_hash(const struct ab_json *j, int t, uint64_t *h)
{
	struct str s;

	if (str_get(j, t, &s) < 0)
		return -1;
	*h = mix(fnv(0xcbf29ce484222325ULL, s.p, s.n) ^ H_STR);
	str_drop(&s);
	return 0;
}

static uint64_t prim_hash(const struct ab_json *j, int t, int *wide)
{
	struct num x;

	switch (ab_json_type(j, t)) {
	case AB_JSON_NUMBER:
		num_get(j, t, &x);
		if (x.huge || x.exp > SCHEMA_EXP || x.exp < -SCHEMA_EXP)
			*wide = 1;
		return num_hash(&x);
	case AB_JSON_TRUE:
		return mix(H_TRUE);
	case AB_JSON_FALSE:
		return mix(H_FALSE);
	default:
		return mix(H_NULL);
	}
}

/* Elements in order. */
static int arr_hash(const struct ab_json *j, int t, uint64_t *h, int *wide)
{
	uint64_t eh;
	int i, k, n = ab_json_count(j, t);

	*h = mix(H_ARR ^ (uint64_t)n);
	for (i = 0, k = t + 1; i < n; i++) {
		if ((k = hash(j, k, &eh, wide)) < 0)
			return -1;
		*h = mix(*h ^ eh);
	}
	return k;
}

/* Members in any order: a sum does not care. */
static int obj_hash(const struct ab_json *j, int t, uint64_t *h, int *wide)
{
	uint64_t kh, vh, sum = 0;
	int i, k, n = ab_json_count(j, t);

	for (i = 0, k = t + 1; i < n; i++) {
		if (str_hash(j, k, &kh) < 0 ||
		    (k = hash(j, k + 1, &vh, wide)) < 0)
			return -1;
		sum += mix(kh ^ mix(vh + H_OBJ));
	}
	*h = mix(sum ^ mix(H_OBJ + (uint64_t)n));
	return k;
}

/* Hashes the value at t so that equal values (eq()) share the hash, and
 * returns the token after it, or -1 when memory runs out.  *wide is set
 * for a number a literal may not be (SCHEMA_EXP). */
static int hash(const struct ab_json *j, int t, uint64_t *h, int *wide)
{
	switch (ab_json_type(j, t)) {
	case AB_JSON_OBJECT:
		return obj_hash(j, t, h, wide);
	case AB_JSON_ARRAY:
		return arr_hash(j, t, h, wide);
	case AB_JSON_STRING:
		return str_hash(j, t, h) < 0 ? -1 : t + 1;
	case AB_JSON_ABSENT:
		return -1;
	default:
		*h = prim_hash(j, t, wide);
		return t + 1;
	}
}

static int eq(const struct ab_json *, int, const struct ab_json *, int);

/* The n members of object t in document order, keys unescaped; *out is
 * NULL when n is 0.  -1 when memory runs out. */
static int members_get(const struct ab_json *j, int t, int n,
    struct member **out)
{
	struct member *m;
	int i, k;

	*out = NULL;
	if (n <= 0)
		return 0;
	if ((m = calloc(n, sizeof *m)) == NULL)
		return -1;
	for (i = 0, k = t + 1; i < n; i++, k = ab_json_skip(j, k + 1)) {
		if (str_get(j, k, &m[i].key) < 0) {
			while (i-- > 0)
				str_drop(&m[i].key);
			free(m);
			return -1;
		}
		m[i].val = k + 1;
	}
	*out = m;
	return 0;
}

static void members_free(struct member *m, int n)
{
	int i;

	if (m == NULL)
		return;
	for (i = 0; i < n; i++)
		str_drop(&m[i].key);
	free(m);
}

static int member_cmp(const void *a, const void *b)
{
	return str_cmp(&((const struct member *)a)->key,
	    &((const struct member *)b)->key);
}

static int str_same(const struct ab_json *ja, int a, const struct ab_json *jb,
    int b)
{
	struct str x, y;
	int r;

	if (str_get(ja, a, &x) < 0)
		return -1;
	if (str_get(jb, b, &y) < 0) {
		str_drop(&x);
		return -1;
	}
	r = str_cmp(&x, &y) == 0;
	str_drop(&x);
	str_drop(&y);
	return r;
}

static int arr_eq(const struct ab_json *ja, int a, const struct ab_json *jb,
    int b)
{
	int i, x, y, r, n = ab_json_count(ja, a);

	if (n != ab_json_count(jb, b))
		return 0;
	for (i = 0, x = a + 1, y = b + 1; i < n; i++) {
		if ((r = eq(ja, x, jb, y)) != 1)
			return r;
		x = ab_json_skip(ja, x);
		y = ab_json_skip(jb, y);
	}
	return 1;
}

/* Both member lists sorted by key, then compared in step: n log n, where
 * looking each key up would cost n^2 on a large literal.  json.c refuses
 * duplicate keys, so equal sorted keys are equal key sets. */
static int obj_eq(const struct ab_json *ja, int a, const struct ab_json *jb,
    int b)
{
	struct member *x, *y;
	int i, r = 1, n = ab_json_count(ja, a);

	if (n != ab_json_count(jb, b))
		return 0;
	if (members_get(ja, a, n, &x) < 0)
		return -1;
	if (members_get(jb, b, n, &y) < 0) {
		members_free(x, n);
		return -1;
	}
	if (n > 0) {
		qsort(x, n, sizeof *x, member_cmp);
		qsort(y, n, sizeof *y, member_cmp);
	}
	for (i = 0; i < n && r == 1; i++)
		r = str_cmp(&x[i].key, &y[i].key) != 0 ? 0 :
		    eq(ja, x[i].val, jb, y[i].val);
	members_free(x, n);
	members_free(y, n);
	return r;
}

/* 1 when value a of ja equals value b of jb as JSON, 0 when not, -1 when
 * memory runs out. */
static int eq(const struct ab_json *ja, int a, const struct ab_json *jb,
    int b)
{
	enum ab_json_type t = ab_json_type(ja, a);
	struct num x, y;

	if (t != ab_json_type(jb, b))
		return 0;
	switch (t) {
	case AB_JSON_NUMBER:
		num_get(ja, a, &x);
		num_get(jb, b, &y);
		return num_eq(&x, &y);
	case AB_JSON_STRING:
		return str_same(ja, a, jb, b);
	case AB_JSON_ARRAY:
		return arr_eq(ja, a, jb, b);
	case AB_JSON_OBJECT:
		return obj_eq(ja, a, jb, b);
	default:
		return 1;
	}
}

/* -- Compiling a schema. */

/* AB_EUSAGE naming what is wrong and the schema it is in. */
static int refuse(struct schema *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int refuse(struct schema *s, const char *fmt, ...)
{
	char what[256], at[PTR_CAP + 8];
	va_list ap;

	/* A reason cut short still reads. */
	va_start(ap, fmt);
	(void)ab_vfmt(what, sizeof what, fmt, ap);
	va_end(ap);
	return ab_fail(s->err, AB_EUSAGE, "schema: %s at %s", what,
	    ptr_text(&s->at, at, sizeof at));
}

static int node_new(struct schema *s)
{
	struct node *nn;
	int cap;

	if (s->n == s->cap) {
		cap = s->cap == 0 ? 16 : s->cap * 2;
		if ((nn = realloc(s->node, cap * sizeof *nn)) == NULL)
			return nomem(s->err);
		s->node = nn;
		s->cap = cap;
	}
	memset(&s->node[s->n], 0, sizeof s->node[s->n]);
	s->node[s->n].items = -1;
	return s->n++;
}

/* The index in types[] of the name at string token t, or -1. */
static int type_of(const struct ab_json *j, int t)
{
	int i;

	for (i = 0; i < NTYPES; i++)
		if (ab_json_str_eq(j, t, types[i].name))
			return i;
	return -1;
}

static int bad_type(struct schema *s)
{
	return refuse(s, "\"type\" must be a type name or a non-empty array "
	    "of distinct ones");
}

static int kw_type_name(struct schema *s, int id, int t)
{
	char q[NAME_CAP];
	int i;

	if (ab_json_type(&s->j, t) != AB_JSON_STRING)
		return bad_type(s);
	if ((i = type_of(&s->j, t)) < 0) {
		quote_tok(q, sizeof q, &s->j, t);
		return refuse(s, "unknown type \"%s\" in \"type\"", q);
	}
	if (s->node[id].types & 1u << i)
		return refuse(s, "duplicate type \"%s\" in \"type\"",
		    types[i].name);
	s->node[id].types |= 1u << i;
	return 0;
}

static int kw_type(struct schema *s, int id, int v, int depth)
{
	int i, n;

	(void)depth;
	if (ab_json_type(&s->j, v) == AB_JSON_STRING)
		return kw_type_name(s, id, v);
	if (ab_json_type(&s->j, v) != AB_JSON_ARRAY ||
	    (n = ab_json_count(&s->j, v)) == 0)
		return bad_type(s);
	for (i = 0; i < n; i++)
		if (kw_type_name(s, id, ab_json_elem(&s->j, v, i)) < 0)
			return -1;
	return 0;
}

static int prop_cmp(const void *a, const void *b)
{
	const struct prop *x = a, *y = b;

	return str_cmp(&x->name, &y->name);
}

/* Each subschema is compiled where its pointer says it is.  The node
 * array moves as it grows, so s->node[id] is looked up again after. */
static int kw_properties(struct schema *s, int id, int v, int depth)
{
	struct prop *pp;
	struct mark m, pm;
	int i, k, c, n;

	if (ab_json_type(&s->j, v) != AB_JSON_OBJECT)
		return refuse(s, "\"properties\" must be an object of schemas");
	if ((n = ab_json_count(&s->j, v)) <= 0)
		return 0;
	if ((pp = calloc(n, sizeof *pp)) == NULL)
		return nomem(s->err);
	s->node[id].props = pp;
	m = ptr_mark(&s->at);
	ptr_add(&s->at, "properties", strlen("properties"));
	for (i = 0, k = v + 1; i < n; i++, k = ab_json_skip(&s->j, k + 1)) {
		pp = &s->node[id].props[i];
		if (str_get(&s->j, k, &pp->name) < 0)
			return nomem(s->err);
		s->node[id].nprops++;
		pm = ptr_mark(&s->at);
		ptr_add(&s->at, pp->name.p, pp->name.n);
		if ((c = compile(s, k + 1, depth + 1)) < 0)
			return -1;
		s->node[id].props[i].node = c;
		ptr_back(&s->at, pm);
	}
	ptr_back(&s->at, m);
	qsort(s->node[id].props, n, sizeof *pp, prop_cmp);
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return str_cmp(*(const struct str *const *)a,
	    *(const struct str *const *)b);
}

/* A name required twice is a mistake in the schema; sorting finds one
 * without costing n^2. */
static int req_dups(struct schema *s, struct str *req, int n)
{
	const struct str **by;
	char q[NAME_CAP];
	int i, r = 0;

	if ((by = calloc(n, sizeof *by)) == NULL)
		return nomem(s->err);
	for (i = 0; i < n; i++)
		by[i] = &req[i];
	qsort(by, n, sizeof *by, name_cmp);
	for (i = 1; i < n; i++)
		if (str_cmp(by[i - 1], by[i]) == 0) {
			quote(q, sizeof q, by[i]->p, by[i]->n);
			r = refuse(s, "duplicate \"%s\" in \"required\"", q);
			break;
		}
	free(by);
	return r;
}

static int kw_required(struct schema *s, int id, int v, int depth)
{
	struct node *nd = &s->node[id];
	int i, k, n;

	(void)depth;
	if (ab_json_type(&s->j, v) != AB_JSON_ARRAY)
		return refuse(s, "\"required\" must be an array of strings");
	if ((n = ab_json_count(&s->j, v)) <= 0)
		return 0;
	if ((nd->req = calloc(n, sizeof *nd->req)) == NULL)
		return nomem(s->err);
	for (i = 0, k = v + 1; i < n; i++, k++) {
		if (ab_json_type(&s->j, k) != AB_JSON_STRING)
			return refuse(s, "\"required\" must be an array of "
			    "strings");
		if (str_get(&s->j, k, &nd->req[i]) < 0)
			return nomem(s->err);
		nd->nreq++;
	}
	return req_dups(s, nd->req, n);
}

static int kw_additional(struct schema *s, int id, int v, int depth)
{
	(void)depth;
	switch (ab_json_type(&s->j, v)) {
	case AB_JSON_FALSE:
		s->node[id].closed = 1;
		return 0;
	case AB_JSON_TRUE:
		return 0;
	case AB_JSON_OBJECT:
		return refuse(s, "\"additionalProperties\" as a schema is not "
		    "supported");
	default:
		return refuse(s, "\"additionalProperties\" must be false or "
		    "true");
	}
}

static int kw_items(struct schema *s, int id, int v, int depth)
{
	struct mark m;
	int c;

	if (ab_json_type(&s->j, v) == AB_JSON_ARRAY)
		return refuse(s, "\"items\" as an array is not supported");
	m = ptr_mark(&s->at);
	ptr_add(&s->at, "items", strlen("items"));
	if ((c = compile(s, v, depth + 1)) < 0)
		return -1;
	ptr_back(&s->at, m);
	s->node[id].items = c;
	return 0;
}

static int lit_cmp(const void *a, const void *b)
{
	const struct lit *x = a, *y = b;

	if (x->h != y->h)
		return x->h < y->h ? -1 : 1;
	return (x->t > y->t) - (x->t < y->t);
}

/* Drops a literal equal to an earlier one with its hash (enum values
 * "SHOULD be unique", and a run of copies would cost every lookup that
 * lands on it).  Runs of one hash are short unless values repeat, and
 * those go at their first comparison. */
static int lit_dedup(struct schema *s, struct set *set)
{
	int i, k, kept = 0, run = 0, r;

	for (i = 0; i < set->n; i++) {
		if (kept > 0 && set->v[kept - 1].h != set->v[i].h)
			run = kept;
		for (k = run; k < kept; k++) {
			if ((r = eq(&s->j, set->v[k].t, &s->j,
			    set->v[i].t)) < 0)
				return nomem(s->err);
			if (r == 1)
				break;
		}
		if (k == kept)
			set->v[kept++] = set->v[i];
	}
	set->n = kept;
	return 0;
}

/* The literals of a set, from n values starting at token t. */
static int set_build(struct schema *s, struct set *set, int t, int n,
    const char *kw)
{
	int i, wide = 0;

	if ((set->v = calloc(n, sizeof *set->v)) == NULL)
		return nomem(s->err);
	for (i = 0; i < n; i++) {
		set->v[i].t = t;
		if ((t = hash(&s->j, t, &set->v[i].h, &wide)) < 0)
			return nomem(s->err);
		set->n++;
		if (wide)
			return refuse(s, "number out of range in \"%s\"", kw);
	}
	qsort(set->v, n, sizeof *set->v, lit_cmp);
	return lit_dedup(s, set);
}

static int kw_enum(struct schema *s, int id, int v, int depth)
{
	int n;

	(void)depth;
	if (ab_json_type(&s->j, v) != AB_JSON_ARRAY ||
	    (n = ab_json_count(&s->j, v)) == 0)
		return refuse(s, "\"enum\" must be a non-empty array");
	return set_build(s, &s->node[id].enm, v + 1, n, "enum");
}

static int kw_const(struct schema *s, int id, int v, int depth)
{
	(void)depth;
	return set_build(s, &s->node[id].cnst, v, 1, "const");
}

/* Annotations change no verdict: accepted and ignored, once they are
 * the strings JSON Schema says they are.  $schema names a draft; the
 * subset means the same in every draft since 6. */
static int kw_note(struct schema *s, int id, int v, int depth)
{
	char q[NAME_CAP];

	(void)id;
	(void)depth;
	if (ab_json_type(&s->j, v) == AB_JSON_STRING)
		return 0;
	/* The keyword is the token before its value. */
	quote_tok(q, sizeof q, &s->j, v - 1);
	return refuse(s, "\"%s\" must be a string", q);
}

static const struct {
	const char *name;
	int (*fn)(struct schema *, int, int, int);
} keywords[] = {
	{ "type", kw_type },
	{ "properties", kw_properties },
	{ "required", kw_required },
	{ "additionalProperties", kw_additional },
	{ "items", kw_items },
	{ "enum", kw_enum },
	{ "const", kw_const },
	{ "title", kw_note },
	{ "description", kw_note },
	{ "$schema", kw_note },
};

/* Anything else would be silently unenforced, so it is refused. */
static int keyword(struct schema *s, int id, int k, int depth)
{
	char q[NAME_CAP];
	size_t i;

	for (i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
		if (ab_json_str_eq(&s->j, k, keywords[i].name))
			return keywords[i].fn(s, id, k + 1, depth);
	quote_tok(q, sizeof q, &s->j, k);
	return refuse(s, "unsupported keyword \"%s\"", q);
}

/* Compiles the schema at token t, depth levels down, into a new node;
 * its index, or -1.  json.c already stops at 64 containers; the depth is
 * counted here too because this recursion, and validation's, rely on
 * it. */
static int compile(struct schema *s, int t, int depth)
{
	enum ab_json_type ty = ab_json_type(&s->j, t);
	int id, i, k, n;

	if (ty == AB_JSON_TRUE || ty == AB_JSON_FALSE)
		return refuse(s, "boolean schema not supported");
	if (ty != AB_JSON_OBJECT)
		return refuse(s, "not an object (a schema must be one)");
	if (depth >= AB_SCHEMA_DEPTH)
		return refuse(s, "schema nested deeper than %d",
		    AB_SCHEMA_DEPTH);
	if ((id = node_new(s)) < 0)
		return -1;
	n = ab_json_count(&s->j, t);
	for (i = 0, k = t + 1; i < n; i++, k = ab_json_skip(&s->j, k + 1))
		if (keyword(s, id, k, depth) < 0)
			return -1;
	return id;
}

static void schema_free(struct schema *s)
{
	struct node *nd;
	int i, k;

	for (i = 0; i < s->n; i++) {
		nd = &s->node[i];
		for (k = 0; k < nd->nprops; k++)
			str_drop(&nd->props[k].name);
		for (k = 0; k < nd->nreq; k++)
			str_drop(&nd->req[k]);
		free(nd->props);
		free(nd->req);
		free(nd->cnst.v);
		free(nd->enm.v);
	}
	free(s->node);
	ab_json_free(&s->j);
	memset(s, 0, sizeof *s);
}

static int schema_load(struct schema *s, const char *text, size_t n,
    struct ab_err *err)
{
	memset(s, 0, sizeof *s);
	s->err = err;
	if (ab_json_parse(&s->j, text, n, err) < 0)
		return ab_err_wrap(err, "schema");
	if (compile(s, 0, 0) < 0) {
		schema_free(s);
		return -1;
	}
	return 0;
}

int ab_schema_check(const char *schema, size_t n, struct ab_err *err)
{
	struct schema s;

	if (schema_load(&s, schema, n, err) < 0)
		return -1;
	schema_free(&s);
	return 0;
}

/* -- Validating a document. */

/* Records the violation at the current pointer; returns 0. */
static int violate(struct run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int violate(struct run *r, const char *fmt, ...)
{
	char what[256], at[PTR_CAP + 8];
	va_list ap;

	if (r->why == NULL || r->cap == 0)
		return 0;
	/* A reason cut short still reads. */
	va_start(ap, fmt);
	(void)ab_vfmt(what, sizeof what, fmt, ap);
	va_end(ap);
	(void)ab_fmt(r->why, r->cap, "%s: %s", ptr_text(&r->at, at,
	    sizeof at), what);
	return 0;
}

static int has_type(const struct ab_json *d, int t, unsigned mask)
{
	struct num x;

	switch (ab_json_type(d, t)) {
	case AB_JSON_OBJECT:
		return (mask & T_OBJECT) != 0;
	case AB_JSON_ARRAY:
		return (mask & T_ARRAY) != 0;
	case AB_JSON_STRING:
		return (mask & T_STRING) != 0;
	case AB_JSON_NUMBER:
		if (mask & T_NUMBER)
			return 1;
		if (!(mask & T_INTEGER))
			return 0;
		num_get(d, t, &x);
		return num_integral(&x);
	case AB_JSON_TRUE:
	case AB_JSON_FALSE:
		return (mask & T_BOOLEAN) != 0;
	case AB_JSON_NULL:
		return (mask & T_NULL) != 0;
	default:
		return 0;
	}
}

/* "not a string", "not a string or null", "not an object, an array or
 * null". */
static int wrong_type(struct run *r, unsigned mask)
{
	char list[160];
	size_t o = 0;
	int i, left = 0;

	for (i = 0; i < NTYPES; i++)
		left += (mask & 1u << i) != 0;
	list[0] = '\0';
	for (i = 0; i < NTYPES; i++) {
		if (!(mask & 1u << i))
			continue;
		left--;
		/* A list cut short still reads. */
		if (ab_fmt(list + o, sizeof list - o, "%s%s",
		    o == 0 ? "" : left == 0 ? " or " : ", ",
		    types[i].phrase) < 0)
			break;
		o += strlen(list + o);
	}
	return violate(r, "not %s", list);
}

/* 1 when t equals a literal of the set (or the set is empty), 0 when
 * not, -1 when memory runs out.  Only literals with t's hash are
 * compared. */
static int in_set(struct run *r, const struct set *set, int t)
{
	uint64_t h;
	int lo, hi, mid, e, wide = 0;

	if (set->n == 0)
		return 1;
	if (hash(r->d, t, &h, &wide) < 0)
		return nomem(r->err);
	lo = 0;
	hi = set->n;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (set->v[mid].h < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < set->n && set->v[lo].h == h; lo++)
		if ((e = eq(r->d, t, &r->s->j, set->v[lo].t)) != 0)
			return e < 0 ? nomem(r->err) : 1;
	return 0;
}

static int mem_cmp(const void *a, const void *b)
{
	return str_cmp(&(*(const struct member *const *)a)->key,
	    &(*(const struct member *const *)b)->key);
}

static int required(struct run *r, const struct node *nd,
    struct member *mem, int n)
{
	struct member **by = NULL, key, *kp = &key;
	char q[NAME_CAP];
	int i, rc = 1;

	if (nd->nreq == 0)
		return 1;
	/* Sorted, so each name costs log n: the object may be huge. */
	if (n > 0) {
		if ((by = calloc(n, sizeof *by)) == NULL)
			return nomem(r->err);
		for (i = 0; i < n; i++)
			by[i] = &mem[i];
		qsort(by, n, sizeof *by, mem_cmp);
	}
	for (i = 0; i < nd->nreq && rc == 1; i++) {
		key.key = nd->req[i];
		if (n > 0 && bsearch(&kp, by, n, sizeof *by, mem_cmp) != NULL)
			continue;
		quote(q, sizeof q, nd->req[i].p, nd->req[i].n);
		rc = violate(r, "missing required property \"%s\"", q);
	}
	free(by);
	return rc;
}

static const struct prop *find_prop(const struct node *nd,
    const struct str *key)
{
	struct prop k;

	if (nd->nprops == 0)
		return NULL;
	k.name = *key;
	return bsearch(&k, nd->props, nd->nprops, sizeof k, prop_cmp);
}

/* The members in document order: allowed, then valid. */
static int members(struct run *r, const struct node *nd, struct member *mem,
    int n)
{
	const struct prop *p;
	struct mark m;
	int i, rc;

	for (i = 0; i < n; i++) {
		p = find_prop(nd, &mem[i].key);
		if (p == NULL && !nd->closed)
			continue;
		m = ptr_mark(&r->at);
		ptr_add(&r->at, mem[i].key.p, mem[i].key.n);
		if (p == NULL)
			rc = violate(r, "property not allowed "
			    "(\"additionalProperties\" is false)");
		else
			rc = valid(r, p->node, mem[i].val);
		ptr_back(&r->at, m);
		if (rc != 1)
			return rc;
	}
	return 1;
}

static int valid_object(struct run *r, const struct node *nd, int t)
{
	struct member *mem;
	int n, rc;

	if (nd->nprops == 0 && nd->nreq == 0 && !nd->closed)
		return 1;
	n = ab_json_count(r->d, t);
	if (members_get(r->d, t, n, &mem) < 0)
		return nomem(r->err);
	if ((rc = required(r, nd, mem, n)) == 1)
		rc = members(r, nd, mem, n);
	members_free(mem, n);
	return rc;
}

static int valid_array(struct run *r, const struct node *nd, int t)
{
	struct mark m;
	int i, k, n, rc;

	if (nd->items < 0)
		return 1;
	n = ab_json_count(r->d, t);
	for (i = 0, k = t + 1; i < n; i++, k = ab_json_skip(r->d, k)) {
		m = ptr_mark(&r->at);
		ptr_index(&r->at, i);
		rc = valid(r, nd->items, k);
		ptr_back(&r->at, m);
		if (rc != 1)
			return rc;
	}
	return 1;
}

/* Value t of the document against node id: 1, 0 with r->why, or -1.
 * The recursion follows the schema, so it is at most AB_SCHEMA_DEPTH
 * deep. */
static int valid(struct run *r, int id, int t)
{
	const struct node *nd = &r->s->node[id];
	int rc;

	if (nd->types != 0 && !has_type(r->d, t, nd->types))
		return wrong_type(r, nd->types);
	if ((rc = in_set(r, &nd->cnst, t)) != 1)
		return rc < 0 ? -1 : violate(r, "not the \"const\" value");
	if ((rc = in_set(r, &nd->enm, t)) != 1)
		return rc < 0 ? -1 : violate(r, "not one of the \"enum\" "
		    "values");
	switch (ab_json_type(r->d, t)) {
	case AB_JSON_OBJECT:
		return valid_object(r, nd, t);
	case AB_JSON_ARRAY:
		return valid_array(r, nd, t);
	default:
		return 1;
	}
}

int ab_schema_validate(const char *schema, size_t sn, const char *doc,
    size_t dn, char *why, size_t cap, struct ab_err *err)
{
	struct schema s;
	struct ab_json d;
	struct run r;
	int rc;

	if (why != NULL && cap > 0)
		why[0] = '\0';
	if (schema_load(&s, schema, sn, err) < 0)
		return -1;
	if (ab_json_parse(&d, doc, dn, err) < 0) {
		/* The answer, not the user's input, is at fault. */
		if (err != NULL && err->code == AB_EUSAGE)
			err->code = AB_EREFUSED;
		ab_err_wrap(err, "document");
		schema_free(&s);
		return -1;
	}
	memset(&r, 0, sizeof r);
	r.s = &s;
	r.d = &d;
	r.why = why;
	r.cap = cap;
	r.err = err;
	rc = valid(&r, 0, 0);
	if (rc != 0 && why != NULL && cap > 0)
		why[0] = '\0';
	ab_json_free(&d);
	schema_free(&s);
	return rc;
}
