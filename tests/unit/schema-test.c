/* schema-test.c: unit tests for lib/format/schema.c (checking an agent's JSON
 * answer against a JSON Schema subset), TAP output.
 *
 * cc -std=c17 -Ilib -o schema-test tests/unit/schema-test.c lib/format/schema.c \
 *     lib/base/json.c lib/base/buf.c lib/base/err.c && ./schema-test
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"
#include "tap.h"

/* The schema passes ab_schema_check. */
static void accepted(const char *schema)
{
	struct ab_err err;
	char desc[200];
	int r;

	memset(&err, 0, sizeof err);
	r = ab_schema_check(schema, strlen(schema), &err);
	snprintf(desc, sizeof desc, "schema %.120s accepted", schema);
	if (r != 0)
		printf("# got \"%s\"\n", err.msg);
	ok(r == 0, desc);
}

/* The schema is refused with AB_EUSAGE and a message holding want. */
static void refused(const char *schema, size_t n, const char *want)
{
	struct ab_err err;
	char desc[200];
	int r, good;

	memset(&err, 0, sizeof err);
	r = ab_schema_check(schema, n, &err);
	good = r == -1 && err.code == AB_EUSAGE &&
	    strstr(err.msg, want) != NULL && strchr(err.msg, '\n') == NULL;
	snprintf(desc, sizeof desc, "schema %.100s refused: %s", schema, want);
	if (!good)
		printf("# got %d \"%s\"\n", r, err.msg);
	ok(good, desc);
}

static void refuses(const char *schema, const char *want)
{
	refused(schema, strlen(schema), want);
}

/* Validating doc against schema gives want (1 or 0); when 0 and why is
 * not NULL, the reason is exactly why. */
static void check(const char *schema, const char *doc, int want,
    const char *why)
{
	struct ab_err err;
	char got[256], desc[200];
	int r, good;

	memset(&err, 0, sizeof err);
	memset(got, 'X', sizeof got);
	r = ab_schema_validate(schema, strlen(schema), doc, strlen(doc), got,
	    sizeof got, &err);
	good = r == want && (r == 1 ? got[0] == '\0' : got[0] != '\0') &&
	    (why == NULL || strcmp(got, why) == 0);
	snprintf(desc, sizeof desc, "%.80s against %.80s: %s", doc, schema,
	    want == 1 ? "valid" : why != NULL ? why : "invalid");
	if (!good)
		printf("# got %d \"%s\" (%s)\n", r, r == -1 ? err.msg : got,
		    r == -1 ? "error" : "why");
	ok(good, desc);
}

static void valid(const char *schema, const char *doc)
{
	check(schema, doc, 1, NULL);
}

static void invalid(const char *schema, const char *doc, const char *why)
{
	check(schema, doc, 0, why);
}

/* ab_schema_validate fails (-1) with code and a message holding want. */
static void fails(const char *schema, const char *doc, size_t dn, int code,
    const char *want, const char *desc)
{
	struct ab_err err;
	char why[64];
	int r, good;

	memset(&err, 0, sizeof err);
	r = ab_schema_validate(schema, strlen(schema), doc, dn, why,
	    sizeof why, &err);
	good = r == -1 && err.code == code && why[0] == '\0' &&
	    strstr(err.msg, want) != NULL;
	if (!good)
		printf("# got %d %d \"%s\"\n", r, err.code, err.msg);
	ok(good, desc);
}

/* A schema of n levels of "items", or a document of n nested arrays. */
static char *nest(int n, int schema)
{
	static const char open[] = "{\"items\":";
	size_t k = schema ? sizeof open - 1 : 1, len = n * (k + 1) + 3, o = 0;
	char *s;
	int i;

	if ((s = malloc(len)) == NULL)
		abort();
	for (i = 0; i < n; i++, o += k)
		memcpy(s + o, schema ? open : "[", k);
	if (schema) {
		memcpy(s + o, "{}", 2);
		o += 2;
	}
	memset(s + o, schema ? '}' : ']', n);
	s[o + n] = '\0';
	return s;
}

static void test_types(void)
{
	valid("{\"type\":\"string\"}", "\"x\"");
	invalid("{\"type\":\"string\"}", "3", "(root): not a string");
	valid("{\"type\":\"number\"}", "-3.5e2");
	invalid("{\"type\":\"number\"}", "\"3\"", "(root): not a number");
	valid("{\"type\":\"integer\"}", "42");
	valid("{\"type\":\"integer\"}", "42.0");
	valid("{\"type\":\"integer\"}", "1e2");
	valid("{\"type\":\"integer\"}", "10e-1");
	valid("{\"type\":\"integer\"}", "1.5e1");
	valid("{\"type\":\"integer\"}", "-0.0");
	valid("{\"type\":\"integer\"}", "123456789012345678901234567890");
	invalid("{\"type\":\"integer\"}", "3.5", "(root): not an integer");
	invalid("{\"type\":\"integer\"}", "1e-1", "(root): not an integer");
	invalid("{\"type\":\"integer\"}", "1.05e1", "(root): not an integer");
	valid("{\"type\":\"integer\"}", "1e999999999999999999999");
	invalid("{\"type\":\"integer\"}", "1e-999999999999999999999",
	    "(root): not an integer");
	valid("{\"type\":\"number\"}", "7");
	valid("{\"type\":\"boolean\"}", "false");
	invalid("{\"type\":\"boolean\"}", "null", "(root): not a boolean");
	valid("{\"type\":\"null\"}", "null");
	invalid("{\"type\":\"null\"}", "0", "(root): not null");
	valid("{\"type\":\"object\"}", "{}");
	invalid("{\"type\":\"object\"}", "[]", "(root): not an object");
	valid("{\"type\":\"array\"}", "[]");
	invalid("{\"type\":\"array\"}", "{}", "(root): not an array");
	valid("{\"type\":[\"string\",\"null\"]}", "null");
	invalid("{\"type\":[\"string\",\"null\"]}", "1",
	    "(root): not a string or null");
	invalid("{\"type\":[\"null\",\"array\",\"object\"]}", "true",
	    "(root): not an object, an array or null");
	valid("{\"type\":[\"integer\",\"string\"]}", "2.0");
	valid("{}", "[1,{\"a\":null}]");
}

static const char person[] =
    "{\"type\":\"object\",\"required\":[\"name\",\"age\"],"
    "\"properties\":{\"name\":{\"type\":\"string\"},"
    "\"age\":{\"type\":\"integer\"},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}}";

static const char closed[] =
    "{\"properties\":{\"a\":{},\"b\":{}},\"additionalProperties\":false}";

static void test_objects(void)
{
	valid(person, "{\"name\":\"x\",\"age\":3}");
	valid(person, "{\"age\":3,\"name\":\"x\",\"tags\":[],\"more\":1}");
	invalid(person, "{\"name\":\"x\"}",
	    "(root): missing required property \"age\"");
	invalid(person, "{\"age\":1.5,\"name\":\"x\"}", "/age: not an integer");
	invalid(person, "{\"name\":\"x\",\"age\":3,\"tags\":[\"a\",\"b\",3]}",
	    "/tags/2: not a string");
	invalid(person, "[]", "(root): not an object");
	valid("{\"properties\":{\"a\":{\"type\":\"null\"}}}", "[1]");
	valid("{\"properties\":{\"a\":{\"type\":\"null\"}}}", "{\"b\":1}");
	invalid("{\"properties\":{\"a\":{\"type\":\"null\"}}}",
	    "{\"b\":1,\"\\u0061\":1}", "/a: not null");
	valid("{\"required\":[\"a\"]}", "[]");
	invalid("{\"required\":[\"a\",\"b\\\"c\"]}", "{\"a\":1}",
	    "(root): missing required property \"b\\x22c\"");
	valid("{\"required\":[]}", "{}");
	valid(closed, "{\"b\":1,\"a\":2}");
	valid(closed, "{}");
	invalid(closed, "{\"a\":1,\"c\":2,\"d\":3}",
	    "/c: property not allowed (\"additionalProperties\" is false)");
	valid("{\"additionalProperties\":true}", "{\"x\":1}");
	/* required names a property additionalProperties forbids: the
	 * document can be missing it or carry a forbidden one, nothing
	 * else. */
	invalid("{\"required\":[\"a\"],\"additionalProperties\":false}",
	    "{\"a\":1}",
	    "/a: property not allowed (\"additionalProperties\" is false)");
	invalid("{\"required\":[\"a\"],\"additionalProperties\":false}", "{}",
	    "(root): missing required property \"a\"");
	invalid("{\"properties\":{\"items\":{\"items\":{\"type\":\"string\"}}}}",
	    "{\"items\":[\"a\",\"b\",1]}", "/items/2: not a string");
	invalid("{\"items\":{\"items\":{\"items\":{\"type\":\"null\"}}}}",
	    "[[],[[null],[null,null,1]]]", "/1/1/2: not null");
	valid("{\"items\":{\"type\":\"number\"}}", "[]");
	valid("{\"items\":{\"type\":\"number\"}}", "{\"a\":\"b\"}");
}

static void test_pointers(void)
{
	char schema[2200], doc[2200], why[64];
	struct ab_err err;
	int r;

	invalid("{\"properties\":{\"a/b\":{\"properties\":{\"c~d\":"
	    "{\"type\":\"null\"}}}}}", "{\"a\\/b\":{\"c~d\":1}}",
	    "/a~1b/c~0d: not null");
	invalid("{\"properties\":{\"\":{\"type\":\"null\"}}}", "{\"\":1}",
	    "/: not null");
	invalid("{\"properties\":{\"a\\nb\\\\\":{\"type\":\"null\"}}}",
	    "{\"a\\nb\\\\\":1}", "/a\\x0ab\\x5c: not null");
	invalid("{\"additionalProperties\":false}",
	    "{\"\\u00e9\\u202e\":1}",
	    "/\\xc3\\xa9\\xe2\\x80\\xae: property not allowed "
	    "(\"additionalProperties\" is false)");

	/* A 2000-byte key is cut, the message stays one bounded line. */
	snprintf(schema, sizeof schema,
	    "{\"properties\":{\"%0*d\":{\"type\":\"null\"}}}", 2000, 0);
	snprintf(doc, sizeof doc, "{\"%0*d\":1}", 2000, 0);
	check(schema, doc, 0, NULL);
	memset(why, 0, sizeof why);
	ab_schema_validate(schema, strlen(schema), doc, strlen(doc), why,
	    sizeof why, &err);
	ok(strlen(why) == sizeof why - 1 && strncmp(why, "/000", 4) == 0,
	    "a long pointer fills why exactly, NUL-terminated");
	{
		char big[400];

		r = ab_schema_validate(schema, strlen(schema), doc,
		    strlen(doc), big, sizeof big, &err);
		ok(r == 0 && strstr(big, "...: not null") != NULL &&
		    strlen(big) < 260, "a long pointer is cut with \"...\"");
	}
	memset(why, '#', sizeof why);
	r = ab_schema_validate("{\"type\":\"null\"}", 15, "1", 1, why, 8,
	    &err);
	ok(r == 0 && strcmp(why, "(root):") == 0 && why[8] == '#',
	    "a small why is cut to its cap");
	r = ab_schema_validate("{\"type\":\"null\"}", 15, "1", 1, NULL, 0,
	    &err);
	ok(r == 0, "why may be NULL");
	snprintf(schema, sizeof schema, "{\"required\":[\"%0*d\"]}", 500, 0);
	{
		char big[400];

		r = ab_schema_validate(schema, strlen(schema), "{}", 2, big,
		    sizeof big, &err);
		ok(r == 0 && strstr(big, "property \"0000") != NULL &&
		    strstr(big, "...\"") != NULL && strlen(big) < 120,
		    "a long required name is cut with \"...\"");
	}
}

static void test_literals(void)
{
	valid("{\"enum\":[\"a\",\"b\"]}", "\"b\"");
	valid("{\"enum\":[\"a\",\"b\"]}", "\"\\u0062\"");
	/* A NUL is a character: values holding one are whole values. */
	valid("{\"type\":\"string\"}", "\"a\\u0000b\"");
	valid("{\"enum\":[\"a\\u0000b\"]}", "\"a\\u0000b\"");
	invalid("{\"enum\":[\"a\"]}", "\"a\\u0000b\"",
	    "(root): not one of the \"enum\" values");
	invalid("{\"enum\":[\"a\\u0000b\"]}", "\"a\\u0000c\"", NULL);
	invalid("{\"properties\":{\"k\\u0000\":{\"type\":\"null\"}}}",
	    "{\"k\\u0000\":1}", "/k\\x00: not null");
	valid("{\"properties\":{\"k\":{\"type\":\"null\"}}}",
	    "{\"k\\u0000\":1}");
	invalid("{\"enum\":[\"a\",\"b\"]}", "\"c\"",
	    "(root): not one of the \"enum\" values");
	invalid("{\"enum\":[1]}", "\"1\"", NULL);
	valid("{\"enum\":[1]}", "1.0");
	valid("{\"enum\":[1]}", "1e0");
	valid("{\"enum\":[1]}", "10e-1");
	valid("{\"enum\":[1]}", "0.01e2");
	valid("{\"enum\":[100]}", "1E+2");
	invalid("{\"enum\":[1]}", "-1", NULL);
	invalid("{\"enum\":[1]}", "1.0000000000000000000001", NULL);
	valid("{\"const\":1.25}", "12.5e-1");
	valid("{\"const\":1.25}", "0.0125E+2");
	invalid("{\"const\":1.25}", "1.35", NULL);
	invalid("{\"const\":1.25}", "-1.25", NULL);
	valid("{\"const\":0}", "-0.0e7");
	valid("{\"const\":12345678901234567890}", "12345678901234567890.0");
	invalid("{\"const\":12345678901234567890}", "12345678901234567891",
	    "(root): not the \"const\" value");
	invalid("{\"const\":1}", "1e999999999999999999999", NULL);
	valid("{\"const\":{\"a\":1,\"b\":[1,2,{\"c\":null}]}}",
	    "{\"b\":[1.0,2,{\"c\":null}],\"\\u0061\":1e0}");
	invalid("{\"const\":{\"a\":1,\"b\":[1,2]}}", "{\"a\":1,\"b\":[2,1]}",
	    NULL);
	invalid("{\"const\":{\"a\":1,\"b\":[1,2]}}", "{\"a\":1}", NULL);
	invalid("{\"const\":{\"a\":1,\"b\":[1,2]}}",
	    "{\"a\":1,\"b\":[1,2],\"c\":3}", NULL);
	invalid("{\"const\":{\"a\":1}}", "{\"b\":1}", NULL);
	invalid("{\"const\":[1,2]}", "[1,2,3]", NULL);
	valid("{\"const\":null}", "null");
	invalid("{\"const\":null}", "false", NULL);
	invalid("{\"const\":true}", "1", NULL);
	valid("{\"enum\":[null,true,{\"x\":\"y\"},[]]}", "{\"x\":\"y\"}");
	valid("{\"enum\":[null,true,{\"x\":\"y\"},[]]}", "[]");
	invalid("{\"enum\":[null,true,{\"x\":\"y\"},[]]}", "{}", NULL);
	valid("{\"enum\":[1,1.0,\"a\",\"\\u0061\"]}", "1");
	invalid("{\"properties\":{\"s\":{\"enum\":[\"on\",\"off\"]}}}",
	    "{\"s\":\"auto\"}", "/s: not one of the \"enum\" values");
	/* type comes first, then const, then enum. */
	invalid("{\"type\":\"string\",\"const\":\"a\",\"enum\":[\"b\"]}", "1",
	    "(root): not a string");
	invalid("{\"type\":\"string\",\"const\":\"a\",\"enum\":[\"b\"]}",
	    "\"b\"", "(root): not the \"const\" value");
}

static void test_refusals(void)
{
	char *s;

	refuses("{\"properties\":{\"name\":{\"type\":\"string\","
	    "\"pattern\":\"^a\"}}}",
	    "schema: unsupported keyword \"pattern\" at /properties/name");
	refuses("{\"minimum\":1}",
	    "schema: unsupported keyword \"minimum\" at (root)");
	refuses("{\"items\":{\"$ref\":\"#\"}}",
	    "unsupported keyword \"$ref\" at /items");
	refuses("{\"oneOf\":[{},{}]}", "unsupported keyword \"oneOf\"");
	refuses("{\"anyOf\":[{}]}", "unsupported keyword \"anyOf\"");
	refuses("{\"format\":\"date\"}", "unsupported keyword \"format\"");
	refuses("{\"a\\u0001\\\"\":1}", "unsupported keyword \"a\\x01\\x22\"");
	refuses("{\"items\":[{}]}", "\"items\" as an array is not supported");
	refuses("{\"additionalProperties\":{\"type\":\"string\"}}",
	    "\"additionalProperties\" as a schema is not supported at (root)");
	refuses("{\"additionalProperties\":0}",
	    "\"additionalProperties\" must be false or true");
	refuses("true", "boolean schema not supported at (root)");
	refuses("{\"properties\":{\"a\":false}}",
	    "boolean schema not supported at /properties/a");
	refuses("{\"items\":true}", "boolean schema not supported at /items");
	refuses("[]", "not an object (a schema must be one) at (root)");
	refuses("{\"properties\":{\"a\":\"string\"}}",
	    "not an object (a schema must be one) at /properties/a");
	refuses("{\"properties\":[]}", "\"properties\" must be an object");
	refuses("{\"type\":\"float\"}", "unknown type \"float\" in \"type\"");
	refuses("{\"type\":[\"string\",\"float\"]}", "unknown type \"float\"");
	refuses("{\"type\":[]}", "\"type\" must be a type name");
	refuses("{\"type\":3}", "\"type\" must be a type name");
	refuses("{\"type\":[\"string\",1]}", "\"type\" must be a type name");
	refuses("{\"type\":[\"null\",\"null\"]}",
	    "duplicate type \"null\" in \"type\"");
	refuses("{\"required\":[\"a\",\"b\",\"a\"]}",
	    "duplicate \"a\" in \"required\" at (root)");
	refuses("{\"required\":[\"a\",\"\\u0061\"]}", "duplicate \"a\"");
	refuses("{\"required\":\"a\"}",
	    "\"required\" must be an array of strings");
	refuses("{\"required\":[\"a\",1]}",
	    "\"required\" must be an array of strings");
	refuses("{\"enum\":[]}", "\"enum\" must be a non-empty array");
	refuses("{\"enum\":\"a\"}", "\"enum\" must be a non-empty array");
	refuses("{\"const\":[1e99999999999999999]}",
	    "number out of range in \"const\"");
	refuses("{\"enum\":[1e-20000000000000000]}",
	    "number out of range in \"enum\"");
	refuses("{\"title\":1}", "\"title\" must be a string");
	refuses("{\"description\":null}", "\"description\" must be a string");
	refuses("{\"items\":{\"$schema\":{}}}",
	    "\"$schema\" must be a string at /items");
	refuses("{\"type\":\"string\",\"type\":\"null\"}", "duplicate key");
	refuses("{\"items\":", "schema: ");
	refuses("", "schema: empty JSON document");
	refused("{}\0", 3, "schema: NUL byte");
	accepted("{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\","
	    "\"title\":\"t\",\"description\":\"d\",\"type\":\"object\"}");
	accepted("{\"enum\":[1,1.0,1e0]}");
	accepted("{\"properties\":{},\"required\":[],"
	    "\"items\":{\"title\":\"x\"}}");
	accepted("{\"const\":1e9999}");
	accepted(person);

	s = nest(AB_SCHEMA_DEPTH - 1, 1);
	ok(ab_schema_check(s, strlen(s), NULL) == 0,
	    "a schema 64 levels deep is accepted");
	free(s);
	s = nest(AB_SCHEMA_DEPTH, 1);
	refuses(s, "nested deeper than 64");
	free(s);
	s = nest(1000, 1);
	refuses(s, "nested deeper than 64");
	free(s);
}

static void test_errors(void)
{
	char *s;

	fails("{}", "{", 1, AB_EREFUSED, "document: JSON text ends early",
	    "a truncated document is not JSON");
	fails("{}", "[1,]", 4, AB_EREFUSED, "document: ",
	    "a trailing comma is not JSON");
	fails("{}", "", 0, AB_EREFUSED, "document: empty",
	    "an empty document is not JSON");
	fails("{}", "{\"a\":1,\"a\":2}", 13, AB_EREFUSED,
	    "document: duplicate key \"a\"", "a duplicate key is refused");
	fails("{}", "1\0", 2, AB_EREFUSED, "document: NUL byte",
	    "a NUL byte is refused");
	fails("{}", "\"\\ud800\"", 8, AB_EREFUSED, "document: ",
	    "a lone surrogate is refused");
	s = nest(65, 0);
	fails("{}", s, strlen(s), AB_EREFUSED, "nested deeper than 64",
	    "a document nested deeper than 64 is refused");
	free(s);
	fails("{\"pattern\":\"x\"}", "1", 1, AB_EUSAGE,
	    "unsupported keyword \"pattern\"",
	    "validate refuses an unsupported schema");
	fails("{\"type\":", "1", 1, AB_EUSAGE, "schema: ",
	    "validate refuses a schema that is not JSON");
	s = nest(64, 0);
	valid("{\"items\":{\"items\":{}}}", s);
	free(s);
}

/* A large document costs no more than its size. */
static void test_big(void)
{
	const char *schema = "{\"items\":{\"type\":\"object\","
	    "\"required\":[\"k\"],\"additionalProperties\":false,"
	    "\"properties\":{\"k\":{\"enum\":[0,1,2,3]}}}}";
	size_t cap = 1 << 20, o = 0;
	char *d, why[128];
	struct ab_err err;
	int r;

	if ((d = malloc(cap)) == NULL)
		abort();
	d[o++] = '[';
	while (o + 20 < cap)
		o += snprintf(d + o, cap - o, "{\"k\":%d},", (int)(o % 4));
	memcpy(d + o, "{\"k\":4}]", 8);
	o += 8;
	r = ab_schema_validate(schema, strlen(schema), d, o, why, sizeof why,
	    &err);
	ok(r == 0 && strstr(why, ": not one of the \"enum\" values") != NULL,
	    "a 1 MiB array is validated to its last element");
	free(d);
}

int main(void)
{
	plan(159);
	test_types();
	test_objects();
	test_pointers();
	test_literals();
	test_refusals();
	test_errors();
	test_big();
	return done_testing();
}
