/* progress-test.c: unit tests for lib/format/progress.c (the agent lines: what
 * the model wrote made safe to show, the credential masked, the cut and
 * the rate), TAP output. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "progress.h"

#include "tap.h"

/* IN (a C string) as it would be shown, with the secrets given so far. */
static const char *clean(const struct ab_progress *p, const char *in)
{
	static char out[AB_PROGRESS_TEXT_MAX];

	ab_progress_clean(p, in, strlen(in), out);
	return out;
}

static int is(const struct ab_progress *p, const char *in, const char *want)
{
	const char *got = clean(p, in);

	if (strcmp(got, want) == 0)
		return 1;
	printf("# got  \"%s\"\n# want \"%s\"\n", got, want);
	return 0;
}

static void test_escapes(void)
{
	struct ab_progress p;

	ab_progress_init(&p, -1, "");
	ok(is(&p, "a\x1b[31mb\x1b[0mc\x1b[?25l", "abc"), "CSI sequences go whole");
	ok(is(&p, "x\x1b]0;title\ay", "xy") &&
	    is(&p, "x\x1b]8;;http://e.test/\x1b\\link\x1b]8;;\x1b\\y", "xlinky"),
	    "OSC strings go whole, ended by BEL or ST");
	ok(is(&p, "a\x1bPq#0\x1b\\b\x1b_apc\ac", "abc"),
	    "DCS and APC strings go whole");
	ok(is(&p, "a\x1b" "cb\x1b(Bc\x1b" "7d", "abcd"),
	    "two- and three-byte escapes go whole");
	ok(is(&p, "a\x1b[12", "a[12") && is(&p, "a\x1b]0;rest shown", "a]0;rest shown") &&
	    is(&p, "a\x1b", "a"), "an incomplete sequence loses its ESC only: "
	    "nothing after it is hidden");
	ok(is(&p, "a\x01\x02\x7f" "b\x00" "c", "ab"), "control bytes and DEL go "
	    "(a NUL ends a C string)");
	ok(is(&p, "a\tb\nc\rd\ve\ff", "a b c d e f"), "tab and line breaks are a "
	    "space: one line, always");
	ok(is(&p, "a\xc2\x9b" "31mb\xc2\x85" "c", "a31mbc"), "C1 controls go");
	ok(is(&p, "a\xe2\x80\xae" "b\xe2\x81\xa6" "c\xe2\x80\x8f" "d", "abcd"),
	    "bidirectional overrides, isolates and marks go");
	ok(is(&p, "a\xe2\x80\xa8" "b", "a b"), "U+2028 is a space");
	ok(is(&p, "a\xff" "b\xc3" "c", "a\\xffb\\xc3c"), "a byte that is no "
	    "character is \\xNN");
	ok(is(&p, "\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80",
	    "\\xc0\\xaf\\xed\\xa0\\x80\\xf4\\x90\\x80\\x80"),
	    "overlong forms, surrogates and code points past U+10FFFF are "
	    "\\xNN");
	ok(is(&p, "caf\xc3\xa9 \xe2\x82\xac", "caf\\xc3\\xa9 "
	    "\\xe2\\x82\\xac"), "UTF-8 text is \\xNN: printable ASCII "
	    "alone reaches a terminal");
}

static void test_cut(void)
{
	struct ab_progress p;
	char in[600], want[300];

	ab_progress_init(&p, -1, "");
	memset(in, 'x', 300);
	in[300] = '\0';
	memset(want, 'x', AB_PROGRESS_WIDTH);
	snprintf(want + AB_PROGRESS_WIDTH, sizeof want - AB_PROGRESS_WIDTH,
	    " [cut]");
	ok(is(&p, in, want) && strlen(clean(&p, in)) == AB_PROGRESS_WIDTH + 6,
	    "300 bytes: the first 200 and \" [cut]\"");
	in[AB_PROGRESS_WIDTH] = '\0';
	want[AB_PROGRESS_WIDTH] = '\0';
	ok(is(&p, in, want), "200 bytes: whole, no marker");
	/* 199 bytes, then a two-byte character that would end past 200. */
	memset(in, 'x', 199);
	snprintf(in + 199, sizeof in - 199, "\xc3\xa9y");
	memset(want, 'x', 199);
	snprintf(want + 199, sizeof want - 199, " [cut]");
	ok(is(&p, in, want), "the cut never splits a character");
	/* 197 bytes, then a byte shown as \xNN that would end past 200. */
	memset(in, 'x', 197);
	snprintf(in + 197, sizeof in - 197, "\xffy");
	memset(want, 'x', 197);
	snprintf(want + 197, sizeof want - 197, " [cut]");
	ok(is(&p, in, want), "nor a byte shown as \\xNN");
	/* Escapes before the text do not count against the width. */
	memset(in, 0, sizeof in);
	for (int i = 0; i < 100; i++)
		memcpy(in + 5 * i, "\x1b[0m", 4), in[5 * i + 4] = 'y';
	ok(strlen(clean(&p, in)) == 100, "only what is shown counts");
}

static int holds(const char *s, const char *needle, size_t n)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (strncmp(s + i, needle, n) == 0)
			return 1;
	return 0;
}

/* No run of AB_PROGRESS_MASK bytes of SECRET anywhere in OUT. */
static int nothing_of(const char *out, const char *secret)
{
	size_t i, n = strlen(secret);

	for (i = 0; i + AB_PROGRESS_MASK <= n; i++)
		if (holds(out, secret + i, AB_PROGRESS_MASK))
			return 0;
	return 1;
}

static void test_secret(void)
{
	static const char key[] = "sk-ant-api03-Zq7Xk9LmP2vR8tYw4NcB";
	struct ab_progress p;
	char in[400];
	const char *got;

	ab_progress_init(&p, -1, "");
	ok(ab_progress_secret(&p, "sk-ant-api03-Zq7Xk9LmP2vR8tYw4NcB\n",
	    sizeof key) == 0, "a key file's value, its newline not part of it");
	ok(is(&p, "echo sk-ant-api03-Zq7Xk9LmP2vR8tYw4NcB; ls",
	    "echo [redacted]; ls"), "the exact value is masked");
	ok(is(&p, "curl -H 'x-api-key: Xk9LmP2vR8' e.test",
	    "curl -H 'x-api-key: [redacted]' e.test"), "so is any run of 8 "
	    "bytes or more of it");
	ok(is(&p, "a Zq7Xk9L b", "a Zq7Xk9L b"), "7 bytes of it are not");
	ok(is(&p, "echo sk-ant-api03-Zq7X\x1b[0mk9LmP2vR8tYw4NcB",
	    "echo [redacted]"), "an escape inside it does not hide it: "
	    "masked as it would be shown");
	ok(is(&p, "sk-ant-api03-Zq7Xk9LmP2vR8tYw4NcBsk-ant-api03-Zq7Xk9LmP2vR8"
	    "tYw4NcB!", "[redacted]!"), "twice in a row: one mask");
	/* Straddling the cut: masked whole before the text is cut. */
	memset(in, 'x', 195);
	snprintf(in + 195, sizeof in - 195, "%s", key);
	got = clean(&p, in);
	ok(nothing_of(got, key) && strstr(got, " [cut]") != NULL,
	    "a key across the cut shows none of itself");
	ok(ab_progress_secret(&p, "abc", 3) == 0 &&
	    is(&p, "xabcx abd", "x[redacted]x abd"), "a credential shorter "
	    "than 8 bytes is masked whole");
	ok(ab_progress_secret(&p, "\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87-"
	    "\xd1\x81\xd0\xb5\xd0\xba", 15) == 0 &&
	    is(&p, "x \xd1\x8e\xd1\x87-\xd1\x81\xd0\xb5\xd0\xba y",
	    "x [redacted] y"), "a UTF-8 credential is masked on whole "
	    "characters");
	ab_progress_free(&p);
	ok(p.nsecrets == 0 && is(&p, "abc", "abc"), "freed: nothing kept");
	ab_progress_init(&p, -1, "");
	ok(ab_progress_secret(&p, "93ABCDEF", 8) == 0 &&
	    is(&p, "a \x93" "ABCDEF b", "a [redacted] b"), "a credential "
	    "an escape's digits complete is masked, the escape whole");
	ab_progress_free(&p);
}

/* A clock of the test's own. */
static long long now;

static long long test_clock(void)
{
	return now;
}

/* Reads what the lines wrote so far into buf; their count. */
static int lines(int fd, char *buf, size_t cap)
{
	ssize_t r;
	size_t n = 0;
	int count = 0;

	while (n + 1 < cap && (r = read(fd, buf + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	for (size_t i = 0; i < n; i++)
		count += buf[i] == '\n';
	return count;
}

static void say(struct ab_progress *p, const char *s)
{
	ab_progress_say(p, s, strlen(s));
}

static void test_rate(void)
{
	struct ab_progress p;
	char buf[16384], text[32];
	long long times[4000];
	int fd[2], i, k, n, shown = 0, counted = 0, worst = 0, nlines = 0;
	unsigned seed = 7;
	char *l, *end;

	if (pipe2(fd, O_NONBLOCK) < 0)
		abort();
	ab_progress_init(&p, fd[1], "ab-run: agent: ");
	p.clock = test_clock;
	now = 1000000;
	for (i = 0; i < 25; i++) {
		snprintf(text, sizeof text, "Bash(step %d)", i);
		say(&p, text);
	}
	n = lines(fd[0], buf, sizeof buf);
	ok(n == 10 && strncmp(buf, "ab-run: agent: Bash(step 0)\n", 28) == 0 &&
	    strstr(buf, "Bash(step 9)\n") != NULL, "25 at once: 10 shown");
	now += 999;
	say(&p, "Bash(step 25)");
	ok(lines(fd[0], buf, sizeof buf) == 0, "still within the second: "
	    "held back");
	now += 1;
	say(&p, "Bash(step 26)");
	ok(strcmp(buf, "") == 0 && lines(fd[0], buf, sizeof buf) == 2 &&
	    strcmp(buf, "ab-run: agent: 16 lines not shown\n"
	    "ab-run: agent: Bash(step 26)\n") == 0,
	    "a second later: the count, then the line");
	now += 10;
	say(&p, "Bash(step 27)");
	now += 10;
	say(&p, "Bash(step 28)");
	ab_progress_end(&p, "finished (ok)", 13);
	ok(lines(fd[0], buf, sizeof buf) == 3 && strstr(buf, "not shown") ==
	    NULL && strstr(buf, "finished (ok)\n") != NULL,
	    "room left in the second: shown; the end always is");

	/* Random arrivals: no second ever holds more than the rate, count
	 * lines included, and every line is shown or counted. */
	ab_progress_init(&p, fd[1], "");
	p.clock = test_clock;
	for (i = 0; i < 2000; i++) {
		seed = seed * 1103515245 + 12345;
		now += (seed >> 16) % 250;
		say(&p, "x");
		lines(fd[0], buf, sizeof buf);
		for (l = strtok_r(buf, "\n", &end); l != NULL;
		    l = strtok_r(NULL, "\n", &end)) {
			if (nlines < 4000)
				times[nlines++] = now;
			if (strcmp(l, "x") == 0)
				shown++;
			else
				counted += atoi(l);
		}
	}
	ab_progress_end(&p, NULL, 0);
	lines(fd[0], buf, sizeof buf);
	counted += atoi(buf);
	for (i = 0; i < nlines; i++) {
		for (k = i; k < nlines && times[k] - times[i] < 1000; k++)
			;
		if (k - i > worst)
			worst = k - i;
	}
	ok(shown + counted == 2000, "every line shown or counted");
	printf("# %d lines, worst %d, counted %d\n", nlines, worst, counted);
	ok(worst <= AB_PROGRESS_RATE && nlines < 4000 && counted > 0,
	    "at most 10 lines in any one second");
	close(fd[0]);
	close(fd[1]);
}

/* A pipe nobody reads: its lines are counted, never waited for. */
static void test_full_pipe(void)
{
	struct ab_progress p;
	char fill[4096], buf[16384];
	int fd[2], fl;

	memset(fill, 'f', sizeof fill);
	if (pipe(fd) < 0)
		abort();
	fl = fcntl(fd[1], F_GETFL);
	fcntl(fd[1], F_SETFL, fl | O_NONBLOCK);
	while (write(fd[1], fill, sizeof fill) > 0)
		;
	/* Blocking again, as standard error usually is. */
	fcntl(fd[1], F_SETFL, fl);
	ab_progress_init(&p, fd[1], "");
	p.clock = test_clock;
	now = 5000000;
	say(&p, "Bash(one)");
	say(&p, "Bash(two)");
	ok(p.hidden == 2, "a full pipe takes no line, and nothing waits");
	fcntl(fd[0], F_SETFL, O_NONBLOCK);
	while (read(fd[0], buf, sizeof buf) > 0)
		;
	now += 1000;
	say(&p, "Bash(three)");
	lines(fd[0], buf, sizeof buf);
	ok(strcmp(buf, "2 lines not shown\nBash(three)\n") == 0,
	    "once read again: the count, then the line");
	close(fd[0]);
	close(fd[1]);
}

static void test_off(void)
{
	struct ab_progress p;

	ab_progress_init(&p, -1, "");
	say(&p, "Bash(x)");
	ab_progress_end(&p, "finished (ok)", 13);
	ok(p.hidden == 0, "no descriptor: no line, nothing counted");
	ok(ab_progress_secret(&p, "", 0) == 0 && p.nsecrets == 0 &&
	    ab_progress_secret(&p, "\n", 1) == 0 && p.nsecrets == 0,
	    "an empty credential masks nothing");
}

/* The result record: the credential masked inside strings, escapes
 * whole, nothing outside a string touched. */
static void test_json(void)
{
	static const char in[] = "{\"a\":\"key sk-12345678xyz end\","
	    "\"n\":12345678,\"k\":\"sk-12345678xyz\\n\",\"q\":\"\\\"x\"}";
	static const char want[] = "{\"a\":\"key [redacted] end\","
	    "\"n\":12345678,\"k\":\"[redacted]\\n\",\"q\":\"\\\"x\"}";
	struct ab_progress p;
	struct ab_buf b;

	ab_progress_init(&p, -1, "");
	ok(ab_progress_secret(&p, "sk-12345678xyz", 14) == 0 &&
	    ab_progress_secret(&p, "345678", 6) == 0, "two credentials kept");
	ab_buf_init(&b, 4096);	/* the short document masked */
	ok(ab_progress_mask_json(&p, in, strlen(in), &b) == 0 &&
	    b.len == strlen(want) && memcmp(b.data, want, b.len) == 0,
	    "JSON: runs of a credential masked in strings, a number alike "
	    "left as it is");
	if (b.data != NULL && (b.len != strlen(want) ||
	    memcmp(b.data, want, b.len) != 0))
		printf("# %.*s\n", (int)b.len, b.data);
	ab_buf_free(&b);
	ab_progress_free(&p);
}

int main(void)
{
	plan(41);
	test_escapes();
	test_cut();
	test_secret();
	test_rate();
	test_full_pipe();
	test_off();
	test_json();
	return done_testing();
}
