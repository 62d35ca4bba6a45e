/* json.c: libFuzzer harness for the JSON reader and writer (lib/base/json.c),
 * which read engine replies, the CLIs' events and the scripted vendor's
 * answers.  Beyond not crashing: every parsed document can be written
 * back through the writer token by token (a NUL, \u0000, included), it
 * parses again, and writing that gives the same bytes (so the reader and
 * the writer agree on every string, escape and number); a refusal is one
 * printable line.  Of every string, key or value: the C-string accessor
 * refuses it exactly when it holds a NUL and otherwise gives the same
 * bytes as the length accessor, and equality with a C string sees the
 * whole value; a key holding no NUL is found by ab_json_key, one that
 * holds a NUL is not found by what precedes it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "json.h"

#define INPUT_MAX (64 * 1024)

/* String token T, NULs and all (its length in *n), checked against the
 * C-string accessor and equality; NULL only without memory. */
static char *text(const struct ab_json *j, int t, size_t *n)
{
	char *v = ab_json_strn(j, t, n), *c;
	int nul;

	if (v == NULL)
		return NULL;
	if (v[*n] != '\0')
		abort();
	nul = memchr(v, '\0', *n) != NULL;
	c = ab_json_str(j, t);
	if (nul ? c != NULL : c == NULL || strlen(c) != *n ||
	    memcmp(c, v, *n) != 0)
		abort();
	free(c);
	/* As a C string v is its part before the first NUL. */
	if (ab_json_str_eq(j, t, v) != !nul)
		abort();
	return v;
}

/* Key token K of object OBJ (its value is K + 1), as ab_json_key sees
 * it: the document has no duplicate keys.  Only in small objects: each
 * lookup walks the members. */
static void key_found(const struct ab_json *j, int obj, int k,
    const char *v, size_t n)
{
	int got;

	if (ab_json_count(j, obj) > 64)
		return;
	got = ab_json_key(j, obj, v);
	if (memchr(v, '\0', n) == NULL ? got != k + 1 : got == k + 1)
		abort();
}

/* Writes token T and what it holds; the token after it. */
static int put(const struct ab_json *j, int t, struct ab_jw *w)
{
	const char *p;
	char *s;
	size_t n;
	int i, k, c;

	switch (ab_json_type(j, t)) {
	case AB_JSON_OBJECT:
	case AB_JSON_ARRAY:
		c = ab_json_count(j, t);
		if (ab_json_type(j, t) == AB_JSON_OBJECT)
			ab_jw_obj(w);
		else
			ab_jw_arr(w);
		for (i = 0, k = t + 1; i < c; i++) {
			if (ab_json_type(j, t) == AB_JSON_OBJECT) {
				if ((s = text(j, k, &n)) == NULL) {
					w->failed = 1;
					return ab_json_skip(j, t);
				}
				key_found(j, t, k, s, n);
				ab_jw_keyn(w, s, n);
				free(s);
				k++;
			}
			k = put(j, k, w);
		}
		if (ab_json_type(j, t) == AB_JSON_OBJECT)
			ab_jw_obj_end(w);
		else
			ab_jw_arr_end(w);
		if (k != ab_json_skip(j, t))
			abort();
		return k;
	case AB_JSON_STRING:
		if ((s = text(j, t, &n)) == NULL)
			w->failed = 1;
		else
			ab_jw_strn(w, s, n);
		free(s);
		break;
	case AB_JSON_NUMBER:
		ab_json_span(j, t, &p, &n);
		ab_jw_raw(w, p, n);
		break;
	case AB_JSON_TRUE:
	case AB_JSON_FALSE:
		ab_jw_bool(w, ab_json_type(j, t) == AB_JSON_TRUE);
		break;
	case AB_JSON_NULL:
		ab_jw_null(w);
		break;
	default:
		abort();
	}
	return t + 1;
}

/* The document written back; -1 when the writer refused it, which it
 * must not: it holds whatever the reader takes (UTF-8, \u0000, 64
 * deep). */
static int rewrite(const struct ab_json *j, struct ab_buf *out)
{
	struct ab_jw w;

	/* The text, each byte at most 6 as written (\u00XX), and less. */
	ab_buf_init(out, 8 * j->len + 64);
	ab_jw_init(&w, out);
	if (put(j, 0, &w) != j->ntok)
		abort();
	return ab_jw_done(&w) == 0 ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ab_json j, again;
	struct ab_buf a, b;
	struct ab_err err;

	if (size > INPUT_MAX)
		return 0;
	memset(&err, 0, sizeof err);
	if (ab_json_parse(&j, (const char *)data, size, &err) < 0) {
		fuzz_err(&err);
		return 0;
	}
	if (rewrite(&j, &a) < 0)
		abort();
	if (ab_json_parse(&again, a.data, a.len, &err) < 0)
		abort();
	if (rewrite(&again, &b) < 0 || b.len != a.len ||
	    memcmp(a.data, b.data, a.len) != 0)
		abort();
	ab_buf_free(&b);
	ab_json_free(&again);
	ab_buf_free(&a);
	ab_json_free(&j);
	return 0;
}
