/* lines-test.c: unit tests for lib/base/lines.c (a byte stream read as lines,
 * a long line reported once and its tail discarded), TAP output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lines.h"

#include "tap.h"

/* What the reader made of CHUNKS (NULL-ended), fed one by one, then the
 * end: each line as "[text]", an over as "!head!", into OUT. */
static const char *read_all(size_t max, const char *const *chunks)
{
	static char out[4096];
	struct ab_lines l;
	const char *line;
	size_t n, o = 0;
	int rc;

	ab_lines_init(&l, max);
	out[0] = '\0';
	for (; *chunks != NULL; chunks++) {
		ab_lines_feed(&l, *chunks, strlen(*chunks));
		while ((rc = ab_lines_next(&l, &line, &n)) != AB_LINE_NONE)
			o += (size_t)snprintf(out + o, sizeof out - o, "%c%.*s%c",
			    rc == AB_LINE_OK ? '[' : '!', (int)n, line,
			    rc == AB_LINE_OK ? ']' : '!');
	}
	if (ab_lines_end(&l, &line, &n) == AB_LINE_OK)
		snprintf(out + o, sizeof out - o, "<%.*s>", (int)n, line);
	ab_lines_free(&l);
	return out;
}

static int is(size_t max, const char *const *chunks, const char *want)
{
	const char *got = read_all(max, chunks);

	if (strcmp(got, want) == 0)
		return 1;
	printf("# got  \"%s\"\n# want \"%s\"\n", got, want);
	return 0;
}

static void test_normal(void)
{
	ok(is(16, (const char *const[]){ "a\nbc\n", NULL }, "[a][bc]"),
	    "two lines in one chunk");
	ok(is(16, (const char *const[]){ "ab", "c\nd", "e", "f\n", NULL },
	    "[abc][def]"), "lines split across chunks");
	ok(is(16, (const char *const[]){ "a\n\n", "\nb\n", NULL },
	    "[a][][][b]"), "empty lines are lines");
	ok(is(16, (const char *const[]){ "a\nlast", NULL }, "[a]<last>"),
	    "the end without a newline yields the last line");
	ok(is(16, (const char *const[]){ "a\n", NULL }, "[a]"),
	    "the end after a newline yields nothing more");
	ok(is(16, (const char *const[]){ "a\r\nb\r", "\n", NULL },
	    "[a\r][b\r]"), "a CR before the newline stays in the line");
	ok(is(4, (const char *const[]){ "abcd\n", "ab", "cd\n", NULL },
	    "[abcd][abcd]"), "a line of exactly max bytes is taken");
}

static void test_over(void)
{
	ok(is(4, (const char *const[]){ "abcde\nok\n", NULL }, "!abcd![ok]"),
	    "a long line is reported once, with its head");
	ok(is(4, (const char *const[]){ "abc", "de", "fgh", "ij\nok\n", NULL },
	    "!abcd![ok]"), "a long line across chunks is reported once");
	ok(is(8, (const char *const[]){ "{\"x\":\"012345", "{\"a\":1}\nok\n",
	    NULL }, "!{\"x\":\"01![ok]"),
	    "the tail of a long line, a line itself, is not yielded");
	ok(is(8, (const char *const[]){ "0123456789{\"a\":1}\n", NULL },
	    "!01234567!"), "nor when it comes in the same chunk");
	ok(is(4, (const char *const[]){ "abcdef", NULL }, "!abcd!"),
	    "a long last line without a newline is reported, not yielded "
	    "again at the end");
	ok(is(4, (const char *const[]){ "abcdef", "gh", "\n", "", "\n", NULL },
	    "!abcd![]"), "after the tail's newline the next line is read");
}

static void test_rest(void)
{
	struct ab_lines l;
	const char *line, *p;
	size_t n;
	int rc;

	ab_lines_init(&l, 8);
	ab_lines_feed(&l, "one\ntwo\nthree", 13);
	rc = ab_lines_next(&l, &line, &n);
	ok(rc == AB_LINE_OK && n == 3 && strcmp(line, "one") == 0,
	    "the first line, NUL-terminated");
	ab_lines_rest(&l, &p, &n);
	ok(n == 9 && memcmp(p, "two\nthree", 9) == 0,
	    "the chunk's rest is handed back unread");
	ok(ab_lines_next(&l, &line, &n) == AB_LINE_NONE &&
	    ab_lines_end(&l, &line, &n) == AB_LINE_NONE,
	    "and is no longer the reader's");
	ab_lines_free(&l);
}

/* Many short lines in one big chunk: each read once, none moved. */
static void test_many(void)
{
	enum { LINES = 200000 };
	struct ab_lines l;
	const char *line;
	size_t n, i;
	char *big;
	int count = 0, right = 1;

	big = malloc(LINES * 2);
	if (big == NULL)
		exit(1);
	for (i = 0; i < LINES; i++) {
		big[2 * i] = (char)('a' + i % 26);
		big[2 * i + 1] = '\n';
	}
	ab_lines_init(&l, 4);
	ab_lines_feed(&l, big, LINES * 2);
	while (ab_lines_next(&l, &line, &n) == AB_LINE_OK) {
		right &= n == 1 && line[0] == 'a' + count % 26;
		count++;
	}
	ok(count == LINES && right && l.line.cap <= 256,
	    "a chunk of many lines: each yielded, the buffer one line's");
	ab_lines_free(&l);
	free(big);
}

int main(void)
{
	plan(17);
	test_normal();
	test_over();
	test_rest();
	test_many();
	return done_testing();
}
