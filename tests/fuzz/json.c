/* json.c: libFuzzer harness for the JSON reader and writer (lib/json.c),
 * which read engine replies, the CLIs' events and the scripted vendor's
 * answers.  Beyond not crashing: a parsed document, written back through
 * the writer token by token, parses again, and writing that gives the
 * same bytes (so the reader and the writer agree on every string,
 * escape and number); a refusal is one printable line. */
#include <stdint.h>
#include <string.h>

#include "common.h"
#include "json.h"

#define INPUT_MAX (64 * 1024)

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
				if ((s = ab_json_str(j, k)) == NULL) {
					w->failed = 1;
					return ab_json_skip(j, t);
				}
				ab_jw_key(w, s);
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
		if ((s = ab_json_str(j, t)) == NULL)
			w->failed = 1;
		else
			ab_jw_str(w, s);
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

/* The document written back, or -1 when the writer cannot hold it (a
 * string that is not UTF-8 or holds \u0000, or too deep). */
static int rewrite(const struct ab_json *j, struct ab_buf *out)
{
	struct ab_jw w;

	ab_buf_init(out, 0);
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
	if (rewrite(&j, &a) == 0) {
		if (ab_json_parse(&again, a.data, a.len, &err) < 0)
			abort();
		if (rewrite(&again, &b) < 0 || b.len != a.len ||
		    memcmp(a.data, b.data, a.len) != 0)
			abort();
		ab_buf_free(&b);
		ab_json_free(&again);
	}
	ab_buf_free(&a);
	ab_json_free(&j);
	return 0;
}
