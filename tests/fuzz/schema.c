/* schema.c: libFuzzer harness for the JSON Schema subset (lib/format/schema.c):
 * the input is a schema, a NUL byte, and a document (an agent's answer).
 * Beyond not crashing, it checks what the caller relies on: a reason is
 * one printable line within its buffer, a checked schema is never refused
 * by validation, and every JSON value equals itself as a "const". */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"

#define INPUT_MAX (64 * 1024)

/* One line of printable ASCII: names and pointers are escaped. */
static void printable(const char *s, size_t cap)
{
	size_t i;

	for (i = 0; i < cap && s[i] != '\0'; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
			abort();
	if (i == cap)
		abort();
}

/* A valid document equals itself: {"const": DOC} accepts it, unless
 * wrapping it made the schema too deep or the literal out of range. */
static void self(const char *doc, size_t dn)
{
	static const char head[] = "{\"const\":";
	struct ab_err err;
	char *s, why[128];
	size_t n = sizeof head - 1 + dn + 1;

	if ((s = malloc(n)) == NULL)
		abort();
	memcpy(s, head, sizeof head - 1);
	memcpy(s + sizeof head - 1, doc, dn);
	s[n - 1] = '}';
	if (ab_schema_check(s, n, &err) == 0 &&
	    ab_schema_validate(s, n, doc, dn, why, sizeof why, &err) != 1)
		abort();
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *nul, *doc = "";
	struct ab_err err;
	size_t sn = size, dn = 0, cap;
	char *why;
	int r;

	if (size > INPUT_MAX)
		return 0;
	if ((nul = memchr(p, '\0', size)) != NULL) {
		sn = nul - p;
		doc = nul + 1;
		dn = size - sn - 1;
	}
	memset(&err, 0, sizeof err);
	if (ab_schema_check(p, sn, &err) < 0) {
		if (err.code != AB_EUSAGE && err.code != AB_EENGINE)
			abort();
		printable(err.msg, sizeof err.msg);
		return 0;
	}
	/* A buffer of exactly cap bytes, so a write past it is caught. */
	cap = 1 + size % 97;
	if ((why = malloc(cap)) == NULL)
		abort();
	r = ab_schema_validate(p, sn, doc, dn, why, cap, &err);
	if (r < -1 || r > 1 || (r == -1 && err.code == AB_EUSAGE))
		abort();
	printable(why, cap);
	if ((r != 0 && why[0] != '\0') || (r == 0 && cap > 1 &&
	    why[0] == '\0'))
		abort();
	if (r == -1) {
		if (err.code != AB_EREFUSED && err.code != AB_EENGINE)
			abort();
		printable(err.msg, sizeof err.msg);
	}
	if (r != -1)
		self(doc, dn);
	free(why);
	return 0;
}
