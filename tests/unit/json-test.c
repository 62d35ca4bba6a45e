/* json-test.c: unit tests for lib/base/json.c, TAP output.
 *
 * cc -std=c17 -Ilib -o json-test tests/unit/json-test.c lib/base/json.c \
 *     lib/base/buf.c lib/base/err.c && ./json-test
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

#include "tap.h"

/* The writer's buffers here: a test writes under 1 MiB. */
#define WRITTEN_MAX (16u << 20)

static int parses(const char *text, size_t len)
{
	struct ab_json j;
	struct ab_err err;
	int r;

	r = ab_json_parse(&j, text, len, &err);
	ab_json_free(&j);
	return r == 0;
}

/* The text is refused, with a message containing want (when not NULL). */
static void refuse(const char *text, size_t len, const char *want,
    const char *desc)
{
	struct ab_json j;
	struct ab_err err;
	int r;

	memset(&err, 0, sizeof err);
	r = ab_json_parse(&j, text, len, &err);
	ok(r == -1 && err.code == AB_EUSAGE && j.tok == NULL &&
	    j.text == NULL && (want == NULL || strstr(err.msg, want) != NULL),
	    desc);
	if (r == -1 && want != NULL && strstr(err.msg, want) == NULL)
		printf("# got \"%s\", wanted \"%s\"\n", err.msg, want);
	ab_json_free(&j);
}

static void refuses(const char *text, const char *want, const char *desc)
{
	refuse(text, strlen(text), want, desc);
}

static void accepts(const char *text, const char *desc)
{
	ok(parses(text, strlen(text)), desc);
}

/* A string of n nested arrays. */
static char *nest(int n)
{
	char *s;

	if ((s = malloc(2 * n + 1)) == NULL)
		abort();
	memset(s, '[', n);
	memset(s + n, ']', n);
	s[2 * n] = '\0';
	return s;
}

static const char doc[] =
    "{\"Id\":\"abc\",\"HostConfig\":{\"CapDrop\":[\"ALL\"],"
    "\"Privileged\":false,\"Memory\":null,\"ReadonlyRootfs\":true},"
    "\"Config\":{\"Labels\":{\"org.agentbox.state\":\"running\","
    "\"org\":{\"agentbox\":{\"state\":\"decoy\"}}}},"
    "\"Arr\":[1,[2,3],{\"x\":4},\"five\"]}";

static void test_lookup(void)
{
	struct ab_json j;
	struct ab_err err;
	const char *p;
	size_t n;
	long long v;
	int t, u, b;

	ok(ab_json_parse(&j, doc, strlen(doc), &err) == 0, "parse a record");
	ok(ab_json_type(&j, 0) == AB_JSON_OBJECT, "root is an object");
	ok(ab_json_count(&j, 0) == 4, "root has 4 keys");
	t = ab_json_get(&j, 0, "HostConfig.CapDrop");
	ok(ab_json_type(&j, t) == AB_JSON_ARRAY && ab_json_count(&j, t) == 1,
	    "HostConfig.CapDrop is a one-element array");
	ok(ab_json_str_eq(&j, ab_json_elem(&j, t, 0), "ALL"),
	    "HostConfig.CapDrop[0] is \"ALL\"");
	ok(ab_json_elem(&j, t, 1) == -1 && ab_json_elem(&j, t, -1) == -1,
	    "elements outside the array are absent");
	t = ab_json_get(&j, 0, "HostConfig.Memory");
	ok(t >= 0 && ab_json_type(&j, t) == AB_JSON_NULL,
	    "a key holding null is present, of type null");
	t = ab_json_get(&j, 0, "HostConfig.Missing");
	ok(t == -1 && ab_json_type(&j, t) == AB_JSON_ABSENT,
	    "a missing key is absent");
	ok(ab_json_bool(&j, ab_json_get(&j, 0, "HostConfig.Privileged"),
	    &b) == 0 && b == 0, "false reads as 0");
	ok(ab_json_bool(&j, ab_json_get(&j, 0, "HostConfig.ReadonlyRootfs"),
	    &b) == 0 && b == 1, "true reads as 1");
	ok(ab_json_bool(&j, ab_json_get(&j, 0, "HostConfig.Memory"),
	    &b) == -1, "null is not a bool");
	t = ab_json_get(&j, 0, "Config.Labels");
	ok(ab_json_str_eq(&j, ab_json_key(&j, t, "org.agentbox.state"),
	    "running"), "ab_json_key takes a dotted label literally");
	ok(ab_json_str_eq(&j, ab_json_get(&j, 0,
	    "Config.Labels.org.agentbox.state"), "decoy"),
	    "ab_json_get splits a dotted label");
	ok(ab_json_get(&j, 0, "Id.x") == -1 &&
	    ab_json_get(&j, 0, "HostConfig..CapDrop") == -1 &&
	    ab_json_get(&j, 0, "") == -1 && ab_json_get(&j, 0, "Id.") == -1,
	    "paths through a string or with empty parts are absent");
	ok(ab_json_key(&j, ab_json_get(&j, 0, "Arr"), "x") == -1,
	    "ab_json_key on an array is absent");
	t = ab_json_key(&j, 0, "Arr");
	u = ab_json_elem(&j, t, 1);
	ok(ab_json_count(&j, u) == 2 &&
	    ab_json_int(&j, ab_json_elem(&j, u, 1), &v) == 0 && v == 3,
	    "nested array element");
	ok(ab_json_int(&j, ab_json_key(&j, ab_json_elem(&j, t, 2), "x"),
	    &v) == 0 && v == 4, "object inside an array");
	ok(ab_json_str_eq(&j, ab_json_elem(&j, t, 3), "five"),
	    "element after nested containers");
	u = ab_json_member(&j, 0, 1);
	ok(ab_json_str_eq(&j, u, "HostConfig") &&
	    ab_json_type(&j, u + 1) == AB_JSON_OBJECT &&
	    ab_json_member(&j, 0, 4) == -1 && ab_json_member(&j, t, 0) == -1,
	    "ab_json_member gives key tokens");
	ok(ab_json_skip(&j, 0) == j.ntok && ab_json_skip(&j, 1) == 2 &&
	    ab_json_skip(&j, -1) == -1 && ab_json_skip(&j, j.ntok) == -1,
	    "ab_json_skip");
	ab_json_span(&j, ab_json_key(&j, 0, "Id"), &p, &n);
	ok(n == 5 && memcmp(p, "\"abc\"", 5) == 0,
	    "a string's span has its quotes");
	ab_json_span(&j, ab_json_elem(&j, t, 1), &p, &n);
	ok(n == 5 && memcmp(p, "[2,3]", 5) == 0, "an array's span");
	ab_json_span(&j, -1, &p, &n);
	ok(p == NULL && n == 0, "an absent token's span is empty");
	ok(ab_json_type(&j, -1) == AB_JSON_ABSENT &&
	    ab_json_type(&j, j.ntok) == AB_JSON_ABSENT &&
	    ab_json_count(&j, j.ntok) == -1 &&
	    ab_json_count(&j, 1) == -1 && ab_json_str(&j, 9999) == NULL &&
	    ab_json_str(&j, 0) == NULL && ab_json_int(&j, 1, &v) == -1 &&
	    ab_json_key(&j, -1, "Id") == -1 && ab_json_key(&j, 0, NULL) == -1,
	    "out-of-range and wrong-type tokens are refused");
	ab_json_free(&j);
	ab_json_free(&j);
	ok(j.text == NULL && j.tok == NULL && j.ntok == 0 &&
	    ab_json_type(&j, 0) == AB_JSON_ABSENT &&
	    ab_json_get(&j, 0, "Id") == -1, "a freed struct is empty");
	memset(&j, 0, sizeof j);
	ab_json_free(&j);
	ok(1, "ab_json_free on a zeroed struct");
}

static int str_is(const struct ab_json *j, int t, const char *want)
{
	char *s;
	int r;

	if ((s = ab_json_str(j, t)) == NULL)
		return 0;
	r = strcmp(s, want) == 0;
	free(s);
	return r;
}

static void test_strings(void)
{
	static const char text[] =
	    "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\", \"\\u00e9\", \"\\ud83d\\ude00\","
	    " \"caf\\u00E9 \\u20ac\\u0041\", \"raw caf\xc3\xa9 \xf0\x9f\x98\x80\","
	    " \"\", \"\x7f\", \"\\uDBFF\\uDFFF\"]";
	struct ab_json j;
	struct ab_err err;

	ok(ab_json_parse(&j, text, strlen(text), &err) == 0,
	    "parse escaped strings");
	ok(str_is(&j, 1, "\"\\/\b\f\n\r\t"), "every short escape");
	ok(str_is(&j, 2, "\xc3\xa9"), "\\u00e9 is 2-byte UTF-8");
	ok(str_is(&j, 3, "\xf0\x9f\x98\x80"),
	    "a surrogate pair is 4-byte UTF-8");
	ok(str_is(&j, 4, "caf\xc3\xa9 \xe2\x82\xac" "A"),
	    "upper-case hex, 3-byte UTF-8, ASCII");
	ok(str_is(&j, 5, "raw caf\xc3\xa9 \xf0\x9f\x98\x80"),
	    "raw UTF-8 passes through");
	ok(str_is(&j, 6, ""), "empty string");
	ok(str_is(&j, 7, "\x7f"), "raw DEL is allowed");
	ok(str_is(&j, 8, "\xf4\x8f\xbf\xbf"), "U+10FFFF by escape");
	ok(ab_json_str_eq(&j, 2, "\xc3\xa9") && !ab_json_str_eq(&j, 2, "e") &&
	    !ab_json_str_eq(&j, 2, "\xc3\xa9x"), "ab_json_str_eq unescapes");
	ab_json_free(&j);

	refuses("[\"\\ud800\"]", NULL, "lone high surrogate refused");
	refuses("[\"\\ud800x\"]", NULL, "high surrogate then text refused");
	refuses("[\"\\ud800\\u0041\"]", NULL,
	    "high surrogate then non-surrogate refused");
	refuses("[\"\\udc00\"]", NULL, "lone low surrogate refused");
	refuses("[\"\\udc00\\ud800\"]", NULL, "mis-ordered surrogates refused");
	refuses("[\"a\x01" "b\"]", NULL, "raw control byte refused");
	refuses("[\"a\nb\"]", NULL, "raw newline refused");
	refuses("[\"\xff\"]", NULL, "byte 0xff refused");
	refuses("[\"\x80\"]", NULL, "lone continuation byte refused");
	refuses("[\"\xc0\xaf\"]", NULL, "overlong 2-byte refused");
	refuses("[\"\xe0\x80\xaf\"]", NULL, "overlong 3-byte refused");
	refuses("[\"\xf0\x80\x80\xaf\"]", NULL, "overlong 4-byte refused");
	refuses("[\"\xed\xa0\x80\"]", NULL, "UTF-8 encoded surrogate refused");
	refuses("[\"\xf4\x90\x80\x80\"]", NULL, "above U+10FFFF refused");
	refuses("[\"\xe2\x82\"]", NULL, "truncated sequence refused");
	refuses("[\"\\x\"]", NULL, "unknown escape refused");
	refuses("[\"\\u12\"]", NULL, "short \\u escape refused");
	refuses("[\"\\u12g4\"]", NULL, "non-hex \\u escape refused");
	refuses("{\"\xff\":1}", NULL, "invalid UTF-8 in a key refused");
}

/* \u0000 is a character like any other; only the C-string accessor
 * refuses a value that holds one. */
static void test_nul(void)
{
	static const char text[] =
	    "{\"s\":\"a\\u0000b\",\"z\":\"\\u0000\",\"k\\u0000\":1,\"k\":2,"
	    "\"p\":\"plain\",\"o\":{\"x\\u0000\":{\"y\":1}}}";
	struct ab_json j;
	struct ab_err err;
	struct ab_buf b;
	struct ab_jw w;
	const char *p;
	char *v;
	size_t n = 99;

	ok(ab_json_parse(&j, text, strlen(text), &err) == 0,
	    "a document with \\u0000 in values and keys parses");
	ok(ab_json_str(&j, ab_json_key(&j, 0, "s")) == NULL &&
	    ab_json_str(&j, ab_json_key(&j, 0, "z")) == NULL,
	    "the C-string accessor refuses a value holding a NUL");
	v = ab_json_strn(&j, ab_json_key(&j, 0, "s"), &n);
	ok(v != NULL && n == 3 && memcmp(v, "a\0b", 4) == 0,
	    "the length accessor returns every byte, and a NUL after them");
	free(v);
	v = ab_json_strn(&j, ab_json_key(&j, 0, "z"), &n);
	ok(v != NULL && n == 1 && v[0] == '\0', "a value that is one NUL");
	free(v);
	v = ab_json_strn(&j, ab_json_key(&j, 0, "p"), NULL);
	ok(v != NULL && strcmp(v, "plain") == 0,
	    "the length accessor takes no length pointer");
	free(v);
	v = ab_json_str(&j, ab_json_key(&j, 0, "p"));
	ok(v != NULL && strcmp(v, "plain") == 0,
	    "the C-string accessor still reads a value without one");
	free(v);
	ok(ab_json_strn(&j, ab_json_key(&j, 0, "k"), &n) == NULL,
	    "the length accessor refuses a number");
	ok(!ab_json_str_eq(&j, ab_json_key(&j, 0, "s"), "a") &&
	    !ab_json_str_eq(&j, ab_json_key(&j, 0, "z"), ""),
	    "a value holding a NUL never equals what precedes it");
	ok(ab_json_int(&j, ab_json_key(&j, 0, "k"), (long long *)&n) == 0 &&
	    n == 2, "the key k is not the key k\\u0000");
	ok(ab_json_get(&j, 0, "o.x.y") == -1 &&
	    ab_json_key(&j, ab_json_key(&j, 0, "o"), "x") == -1,
	    "a path does not reach through a key holding a NUL");
	ab_json_span(&j, ab_json_key(&j, 0, "s"), &p, &n);
	ok(n == 10 && memcmp(p, "\"a\\u0000b\"", 10) == 0,
	    "the span is the escaped source");
	ab_json_free(&j);

	refuses("{\"k\\u0000\":1,\"k\\u0000\":2}", "duplicate key \"k\\x00\"",
	    "two keys holding the same NUL are duplicates, named printable");
	refuses("{\"\\u001b[2J\\\"\xc3\xa9\":1,\"\\u001b[2J\\\"\xc3\xa9\":2}",
	    "duplicate key \"\\x1b[2J\\x22\\xc3\\xa9\"",
	    "a duplicate key's escape, quote and UTF-8 shown as \\xNN");
	accepts("{\"a\\u0000b\":1,\"a\\u0000c\":2,\"a\":3}",
	    "keys differing after a NUL are not duplicates");
	refuses("[\"\\u000\"]", NULL, "a short \\u000 is still refused");

	ab_buf_init(&b, WRITTEN_MAX);
	ab_jw_init(&w, &b);
	ab_jw_obj(&w);
	ab_jw_keyn(&w, "k\0", 2);
	ab_jw_strn(&w, "a\0b\0c\n", 6);
	ab_jw_kstrn(&w, "z", "\0", 1);
	ab_jw_obj_end(&w);
	p = "{\"k\\u0000\":\"a\\u0000b\\u0000c\\n\",\"z\":\"\\u0000\"}";
	ok(ab_jw_done(&w) == 0 && b.len == strlen(p) &&
	    memcmp(b.data, p, b.len) == 0,
	    "the writer writes a NUL as \\u0000, in a key and a value");
	ok(parses(b.data, b.len), "and the reader takes it back");
	ab_buf_free(&b);

	ok(!ab_json_text_ok("a\0b", 3) && ab_json_utf8_ok("a\0b", 3) &&
	    !ab_json_utf8_ok("a\0\xff", 3) && ab_json_text_ok("ab", 2) &&
	    ab_json_text_ok(NULL, 0),
	    "text_ok refuses a NUL, utf8_ok takes it, both refuse bad UTF-8");
}

static void test_ints(void)
{
	static const char text[] =
	    "[0, -1, 9223372036854775807, -9223372036854775808,"
	    " 9223372036854775808, -9223372036854775809, 1.0, 1e3, -0, \"\","
	    " \"5\", true, 12, 99999999999999999999, 0.5]";
	struct ab_json j;
	struct ab_err err;
	long long v;

	ok(ab_json_parse(&j, text, strlen(text), &err) == 0,
	    "parse integers");
	ok(ab_json_int(&j, 1, &v) == 0 && v == 0, "0");
	ok(ab_json_int(&j, 2, &v) == 0 && v == -1, "-1");
	ok(ab_json_int(&j, 3, &v) == 0 && v == LLONG_MAX,
	    "9223372036854775807");
	ok(ab_json_int(&j, 4, &v) == 0 && v == LLONG_MIN,
	    "-9223372036854775808");
	v = 42;
	ok(ab_json_int(&j, 5, &v) == -1 && v == 42,
	    "9223372036854775808 refused, out untouched");
	ok(ab_json_int(&j, 6, &v) == -1, "-9223372036854775809 refused");
	ok(ab_json_int(&j, 7, &v) == -1, "1.0 refused");
	ok(ab_json_int(&j, 8, &v) == -1, "1e3 refused");
	ok(ab_json_int(&j, 9, &v) == 0 && v == 0, "-0 is 0");
	ok(ab_json_int(&j, 10, &v) == -1, "the string \"\" refused");
	ok(ab_json_int(&j, 11, &v) == -1, "the string \"5\" refused");
	ok(ab_json_int(&j, 12, &v) == -1, "true refused");
	ok(ab_json_int(&j, 13, &v) == 0 && v == 12, "12");
	ok(ab_json_int(&j, 14, &v) == -1, "20 digits refused");
	ok(ab_json_int(&j, 15, &v) == -1, "0.5 refused");
	ok(ab_json_type(&j, 7) == AB_JSON_NUMBER, "1.0 is still a number");
	ab_json_free(&j);
	refuses("01", NULL, "01 is not JSON");
	refuses("[-01]", NULL, "-01 is not JSON");
	refuses("-", NULL, "- is not JSON");
	refuses("[-]", NULL, "[-] is not JSON");
	refuses("", "empty", "the empty document is refused");
}

static void test_parse(void)
{
	char *deep;

	accepts("1", "a bare top-level number");
	accepts("-0.5e+3", "a bare number with fraction and exponent");
	accepts("true", "a bare true");
	accepts("\"s\"", "a bare string");
	accepts(" \t\r\n[ 1 , { \"a\" : [ ] } ]\n ", "whitespace everywhere");
	accepts("{}", "an empty object");
	accepts("[]", "an empty array");
	refuses("{} x", "trailing data", "trailing garbage refused");
	refuses("{}}", "trailing data", "a stray close refused");
	refuses("1 2", "trailing data", "two top-level values refused");
	refuses("{} {}", "trailing data", "two top-level objects refused");
	refuses("\"a\" \"b\"", "trailing data", "two top-level strings refused");
	refuses("{\"a\":1,\"a\":2}", "duplicate key \"a\"",
	    "duplicate key refused");
	refuses("{\"a\":1,\"\\u0061\":2}", "duplicate key",
	    "duplicate key by escape refused");
	refuses("{\"o\":{\"k\":1,\"b\":[],\"k\":{}}}", "duplicate key \"k\"",
	    "nested duplicate key refused");
	refuses("[{\"k\":1},{\"k\":1,\"j\":2,\"k\":3}]", "duplicate",
	    "duplicate key in a later object refused");
	accepts("[{\"k\":1},{\"k\":1}]", "one key in two objects is fine");
	accepts("{\"a\":1,\"A\":2,\"a \":3,\"\":4}", "similar keys are fine");
	refuses("tru", NULL, "tru refused");
	refuses("nul", NULL, "nul refused");
	refuses("[truex]", NULL, "truex refused");
	refuses("[nulll]", NULL, "nulll refused");
	refuses("[True]", NULL, "True refused");
	refuses("{a:1}", NULL, "unquoted key refused");
	refuses("{1:1}", NULL, "number as key refused");
	refuses("{{}:1}", NULL, "object as key refused");
	refuses("{\"a\"}", NULL, "key without value refused");
	refuses("{\"a\":}", NULL, "key and colon without value refused");
	refuses("{\"a\" 1}", NULL, "missing colon refused");
	refuses("{\"a\":1 \"b\":2}", NULL, "missing comma in object refused");
	refuses("[1 2]", NULL, "missing comma in array refused");
	refuses("[1,]", NULL, "trailing comma in array refused");
	refuses("{\"a\":1,}", NULL, "trailing comma in object refused");
	refuses("[,1]", NULL, "leading comma refused");
	refuses("[1,,2]", NULL, "double comma refused");
	refuses("[\"a\":1]", NULL, "colon in array refused");
	refuses("{\"a\"::1}", NULL, "double colon refused");
	refuses("[1:2]", NULL, "colon in a number refused");
	refuses("[", "ends early", "unclosed array refused");
	refuses("{\"a\":[1}", NULL, "mismatched brackets refused");
	refuses("]", NULL, "lone close refused");
	refuses("\"abc", NULL, "unterminated string refused");
	refuses("   ", "empty", "whitespace only refused");
	refuses("+1", NULL, "+1 refused");
	refuses("[.5]", NULL, ".5 refused");
	refuses("[1.]", NULL, "1. refused");
	refuses("[1e]", NULL, "1e refused");
	refuses("[1e+]", NULL, "1e+ refused");
	refuses("[0x10]", NULL, "hex refused");
	refuses("[NaN]", NULL, "NaN refused");
	refuses("[1]\x0b", NULL, "vertical tab is not whitespace");
	refuse("[1]\0", 4, "NUL", "a NUL after the value refused");
	refuse("[\"a\0b\"]", 7, "NUL", "a NUL in a string refused");
	deep = nest(64);
	accepts(deep, "depth 64 accepted");
	free(deep);
	deep = nest(65);
	refuses(deep, "deeper than 64", "depth 65 refused");
	free(deep);
	/* jsmn is quadratic in depth: these must be refused before it. */
	deep = nest(1000000);
	refuses(deep, "deeper", "depth 1000000 refused");
	memcpy(deep, "[0\" ", 4);
	refuses(deep, NULL, "depth behind a primitive holding a quote refused");
	memcpy(deep, "[\"]\",", 5);
	refuses(deep, "deeper", "depth behind a string holding ] refused");
	memcpy(deep, "[\"\\\"", 5);
	refuses(deep, NULL, "depth behind an escaped quote refused");
	free(deep);
	refuse(NULL, 0, "empty", "NULL text refused");
}

/* An array of n zeros: n + 1 tokens. */
static void big_array(int n, int good, const char *desc)
{
	struct ab_json j;
	struct ab_err err;
	char *s;
	int i, r;

	if ((s = malloc(2 * (size_t)n + 2)) == NULL)
		abort();
	s[0] = '[';
	for (i = 0; i < n; i++) {
		s[1 + 2 * i] = '0';
		s[2 + 2 * i] = ',';
	}
	s[2 * n] = ']';
	s[2 * n + 1] = '\0';
	r = ab_json_parse(&j, s, 2 * (size_t)n + 1, &err);
	if (good)
		ok(r == 0 && j.ntok == n + 1 && ab_json_count(&j, 0) == n,
		    desc);
	else
		ok(r == -1 && strstr(err.msg, "tokens") != NULL, desc);
	ab_json_free(&j);
	free(s);
}

/* Many tokens, to grow the token array several times. */
static void test_big(void)
{
	struct ab_json j;
	struct ab_err err;
	struct ab_buf b;
	struct ab_jw w;
	long long v;
	int i, ok1;

	ab_buf_init(&b, WRITTEN_MAX);
	ab_jw_init(&w, &b);
	ab_jw_obj(&w);
	ab_jw_key(&w, "list");
	ab_jw_arr(&w);
	for (i = 0; i < 20000; i++)
		ab_jw_int(&w, i);
	ab_jw_arr_end(&w);
	for (i = 0; i < 2000; i++) {
		char k[16];

		snprintf(k, sizeof k, "k%d", i);
		ab_jw_kint(&w, k, i);
	}
	ab_jw_obj_end(&w);
	ok(ab_jw_done(&w) == 0, "write a large document");
	ok1 = ab_json_parse(&j, b.data, b.len, &err) == 0;
	ok(ok1 && ab_json_count(&j, ab_json_key(&j, 0, "list")) == 20000,
	    "parse it back: 20000 elements");
	ok(ok1 && ab_json_int(&j, ab_json_elem(&j, ab_json_key(&j, 0,
	    "list"), 19999), &v) == 0 && v == 19999, "the last element");
	ok(ok1 && ab_json_int(&j, ab_json_key(&j, 0, "k1999"), &v) == 0 &&
	    v == 1999, "the last of 2001 keys");
	ab_json_free(&j);
	/* The same key again at the end. */
	b.len -= 1;
	ab_buf_adds(&b, ",\"k7\":0}");
	refuse(b.data, b.len, "duplicate key \"k7\"",
	    "a duplicate among 2002 keys refused");
	ab_buf_free(&b);
	big_array(3999999, 1, "4000000 tokens accepted");
	big_array(4000000, 0, "4000001 tokens refused");
}

static void test_writer(void)
{
	static const char *val[] = {
		"say \"hi\"", "back\\slash", "\x01\n\t\r\b\f\x1f end",
		"x\x7fy", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "",
		"</script>"
	};
	static const char *key[] = {
		"q", "bs", "ctl", "del", "utf", "empty", "slash"
	};
	struct ab_json j;
	struct ab_err err;
	struct ab_buf b;
	struct ab_jw w;
	long long v;
	size_t i;
	int t, all, b1;

	ab_buf_init(&b, WRITTEN_MAX);
	ab_jw_init(&w, &b);
	ab_jw_obj(&w);
	for (i = 0; i < sizeof val / sizeof val[0]; i++)
		ab_jw_kstr(&w, key[i], val[i]);
	ab_jw_kint(&w, "min", LLONG_MIN);
	ab_jw_kbool(&w, "t", 1);
	ab_jw_key(&w, "key \"with\" \\ and \x02");
	ab_jw_null(&w);
	ab_jw_key(&w, "arr");
	ab_jw_arr(&w);
	ab_jw_int(&w, 1);
	ab_jw_null(&w);
	ab_jw_bool(&w, 0);
	ab_jw_str(&w, "s");
	ab_jw_raw(&w, " {\"r\":[1]} ", 11);
	ab_jw_arr(&w);
	ab_jw_arr_end(&w);
	ab_jw_obj(&w);
	ab_jw_obj_end(&w);
	ab_jw_arr_end(&w);
	ab_jw_obj_end(&w);
	ok(ab_jw_done(&w) == 0, "writer: an object with awkward strings");
	ok(strstr(b.data, "\"q\":\"say \\\"hi\\\"\"") != NULL &&
	    strstr(b.data, "\"back\\\\slash\"") != NULL,
	    "quotes and backslashes escaped");
	ok(strstr(b.data, "\"\\u0001\\n\\t\\r\\b\\f\\u001f end\"") != NULL,
	    "control bytes escaped, short forms where they exist");
	ok(strstr(b.data, "\"x\\u007fy\"") != NULL, "DEL escaped");
	ok(strstr(b.data, "caf\xc3\xa9") != NULL, "UTF-8 written as is");
	ok(strstr(b.data, "\"min\":-9223372036854775808,\"t\":true") != NULL,
	    "int and bool");
	ok(strstr(b.data, ",\"arr\":[1,null,false,\"s\", {\"r\":[1]} ,[],{}]}")
	    != NULL, "commas in a nested array");
	for (i = 0; b.data[i] != '\0'; i++)
		if ((unsigned char)b.data[i] < 0x20 || b.data[i] == 0x7f)
			break;
	ok(b.data[i] == '\0', "no raw control byte in the output");

	ok(ab_json_parse(&j, b.data, b.len, &err) == 0,
	    "writer output parses");
	for (all = 1, i = 0; i < sizeof val / sizeof val[0]; i++)
		if (!str_is(&j, ab_json_key(&j, 0, key[i]), val[i])) {
			printf("# key %s differs\n", key[i]);
			all = 0;
		}
	ok(all, "every string round-trips");
	ok(ab_json_int(&j, ab_json_key(&j, 0, "min"), &v) == 0 &&
	    v == LLONG_MIN, "LLONG_MIN round-trips");
	ok(ab_json_bool(&j, ab_json_key(&j, 0, "t"), &b1) == 0 && b1 == 1,
	    "bool round-trips");
	ok(ab_json_type(&j, ab_json_key(&j, 0,
	    "key \"with\" \\ and \x02")) == AB_JSON_NULL,
	    "an escaped key round-trips");
	t = ab_json_key(&j, 0, "arr");
	ok(ab_json_count(&j, t) == 7 &&
	    ab_json_type(&j, ab_json_get(&j, ab_json_elem(&j, t, 4), "r")) ==
	    AB_JSON_ARRAY, "raw JSON inside an array");
	ab_json_free(&j);

	ab_buf_reset(&b);
	ab_jw_init(&w, &b);
	ab_jw_obj(&w);
	ab_jw_key(&w, "a");
	ab_jw_arr(&w);
	ab_jw_int(&w, 1);
	ab_jw_int(&w, 2);
	ab_jw_arr_end(&w);
	ab_jw_kstr(&w, "b", "x");
	ab_jw_obj_end(&w);
	ok(ab_jw_done(&w) == 0 &&
	    strcmp(b.data, "{\"a\":[1,2],\"b\":\"x\"}") == 0,
	    "exact output of a small object");
	ab_buf_free(&b);
}

/* Writes one bad sequence into a fresh writer; 1 when it is refused. */
static int jw_refused(int which)
{
	struct ab_buf b;
	struct ab_jw w;
	int i, r;

	ab_buf_init(&b, which == 17 ? 8 : WRITTEN_MAX);
	ab_jw_init(&w, &b);
	switch (which) {
	case 0:
		ab_jw_arr(&w);
		ab_jw_str(&w, "\xff");
		ab_jw_arr_end(&w);
		break;
	case 1:
		ab_jw_strn(&w, NULL, 3);
		break;
	case 2:
		ab_jw_obj(&w);
		break;
	case 3:
		ab_jw_arr_end(&w);
		break;
	case 4:
		ab_jw_obj(&w);
		ab_jw_arr_end(&w);
		break;
	case 5:
		ab_jw_obj(&w);
		ab_jw_key(&w, "k");
		ab_jw_obj_end(&w);
		break;
	case 6:
		ab_jw_obj(&w);
		ab_jw_int(&w, 1);
		ab_jw_obj_end(&w);
		break;
	case 7:
		ab_jw_arr(&w);
		ab_jw_key(&w, "k");
		ab_jw_int(&w, 1);
		ab_jw_arr_end(&w);
		break;
	case 8:
		for (i = 0; i < 65; i++)
			ab_jw_arr(&w);
		for (i = 0; i < 65; i++)
			ab_jw_arr_end(&w);
		break;
	case 9:
		ab_jw_int(&w, 1);
		ab_jw_int(&w, 2);
		break;
	case 10:
		ab_jw_str(&w, "\xc0\x80");
		break;
	case 11:
		ab_jw_str(&w, "\xed\xa0\x80");
		break;
	case 12:
		ab_jw_str(&w, "\xf4\x90\x80\x80");
		break;
	case 13:
		ab_jw_str(&w, "ok \xe2\x82");
		break;
	case 14:
		ab_jw_arr(&w);
		ab_jw_raw(&w, "[1,", 3);
		ab_jw_arr_end(&w);
		break;
	case 15:
		ab_jw_obj(&w);
		ab_jw_key(&w, "k");
		ab_jw_key(&w, "j");
		ab_jw_int(&w, 1);
		ab_jw_obj_end(&w);
		break;
	case 16:
		break;
	case 17:
		ab_jw_str(&w, "longer than eight");
		break;
	case 18:
		ab_jw_obj(&w);
		ab_jw_key(&w, "\xff");
		ab_jw_int(&w, 1);
		ab_jw_obj_end(&w);
		break;
	}
	r = ab_jw_done(&w) == -1;
	ab_buf_free(&b);
	return r;
}

static void test_writer_refusals(void)
{
	static const char *desc[] = {
		"writer refuses \\xff",
		"writer refuses no text of three bytes",
		"writer refuses an unclosed object",
		"writer refuses a close without an open",
		"writer refuses ] for {",
		"writer refuses a key without a value",
		"writer refuses a member value without a key",
		"writer refuses a key in an array",
		"writer refuses depth 65",
		"writer refuses two top-level values",
		"writer refuses overlong UTF-8",
		"writer refuses a UTF-8 encoded surrogate",
		"writer refuses above U+10FFFF",
		"writer refuses a truncated sequence",
		"writer refuses invalid raw JSON",
		"writer refuses two keys in a row",
		"writer refuses an empty output",
		"writer fails when the buffer is full",
		"writer refuses a key with invalid UTF-8",
	};
	struct ab_buf b;
	struct ab_jw w;
	int i;

	for (i = 0; i < (int)(sizeof desc / sizeof desc[0]); i++)
		ok(jw_refused(i), desc[i]);

	ab_buf_init(&b, WRITTEN_MAX);
	ab_jw_init(&w, &b);
	for (i = 0; i < 64; i++)
		ab_jw_arr(&w);
	for (i = 0; i < 64; i++)
		ab_jw_arr_end(&w);
	ok(ab_jw_done(&w) == 0 && parses(b.data, b.len),
	    "writer allows depth 64, and the reader takes it");
	ab_buf_free(&b);
}

int main(void)
{
	plan(197);
	test_lookup();
	test_strings();
	test_nul();
	test_ints();
	test_parse();
	test_big();
	test_writer();
	test_writer_refusals();
	return done_testing();
}
