/* err-test.c: unit tests for lib/base/err.c's checked formatter, TAP output. */
#include <string.h>

#include "err.h"

#include "tap.h"

int main(void)
{
	struct ab_err err = { 0, "" };
	char b[8];

	plan(8);
	ok(ab_fmt(b, sizeof b, "%s", "1234567") == 0 &&
	    strcmp(b, "1234567") == 0, "an exact fit is 0, whole");
	ok(ab_fmt(b, sizeof b, "%s", "12345678") == -1,
	    "one byte over is -1");
	ok(strcmp(b, "1234567") == 0, "a cut text stays NUL-terminated");
	ok(ab_fmt(b, sizeof b, "%d", 42) == 0 && strcmp(b, "42") == 0,
	    "a short text is 0");
	ok(ab_fmt(b, sizeof b, "%s", "") == 0 && b[0] == '\0',
	    "an empty text is 0");
	ok(ab_fmt_err(&err, b, sizeof b, "path", "/a/%s", "bcde") == 0 &&
	    err.code == 0, "ab_fmt_err: an exact fit leaves err alone");
	ok(ab_fmt_err(&err, b, sizeof b, "path", "/a/%s", "bcdef") == -1 &&
	    err.code == AB_EUSAGE, "ab_fmt_err: a cut is -1, usage");
	ok(strcmp(err.msg, "path: longer than 7 bytes") == 0,
	    "ab_fmt_err: its message names what and the bound");
	return done_testing();
}
