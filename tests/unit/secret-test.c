/* secret-test.c: unit tests for lib/base/secret.c (placeholders for a
 * credential, and the stream's substitution), TAP output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "secret.h"

#include "tap.h"

/* --- placeholders ------------------------------------------------------ */

static int class_ok(char c, char p)
{
	if (c >= '0' && c <= '9')
		return p >= '0' && p <= '9';
	if (c >= 'a' && c <= 'z')
		return p >= 'a' && p <= 'z';
	if (c >= 'A' && c <= 'Z')
		return p >= 'A' && p <= 'Z';
	return p == c;
}

/* One placeholder of CRED: its length, PRE bytes kept, every other byte
 * of its class, not CRED. */
static int shaped(const char *cred, size_t pre)
{
	size_t n = strlen(cred), i;
	char out[AB_SECRET_LEN_MAX + 1];
	struct ab_err err;

	memset(out, 0, sizeof out);
	if (ab_placeholder(cred, n, out, &err) < 0 || out[n] != '\0' ||
	    memcmp(out, cred, pre) != 0 || memcmp(out, cred, n) == 0)
		return 0;
	for (i = pre; i < n; i++)
		if (!class_ok(cred[i], out[i]))
			return 0;
	return 1;
}

static void shapes(void)
{
	ok(shaped("sk-ant-api03-Ab3_x9-QzR7pLmN0vW2yT5uK8sJ1hG4fD6cB-aZ_Y", 13),
	    "sk-ant-api03- kept, every other byte of its class");
	ok(shaped("sk-ant-oat01-Qw3rTy-Ui0pAs_Df9gHj", 13),
	    "sk-ant-oat01- kept");
	ok(shaped("sk-proj-Xy12_ab-CD34.ef", 8), "sk-proj- kept");
	ok(shaped("sk-abcDEF0123456789", 3), "sk- kept");
	ok(shaped("AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", 0),
	    "no known prefix: nothing kept but punctuation");
	ok(shaped("0", 0) && shaped("z", 0) && shaped("Q", 0),
	    "a one-byte credential of each class");
	ok(shaped("sk-ant-api03-x", 13), "the prefix and one byte");
}

/* "sk-projX...": "sk-proj-" is not its prefix, so "projX" is drawn. */
static void near_prefix(void)
{
	const char *cred = "sk-projXabcdefgh";
	char out[32];
	struct ab_err err;
	int i, moved = 0, kept = 1;

	for (i = 0; i < 20; i++) {
		if (ab_placeholder(cred, strlen(cred), out, &err) < 0)
			kept = 0;
		kept &= memcmp(out, "sk-", 3) == 0;
		moved |= memcmp(out + 3, "projX", 5) != 0;
	}
	ok(kept && moved, "a prefix is kept only when whole: sk-projX keeps "
	    "sk- alone");
	ok(shaped("sk-ant-api03", 3), "sk-ant-api03 without its dash keeps "
	    "sk- alone");
}

static void draws(void)
{
	char cred[101], a[100], b[100];
	struct ab_err err;
	int i, seen[10] = { 0 }, equal = 0, all = 1;

	for (i = 0; i < 100; i++)
		cred[i] = "aB3-_x"[i % 6];
	cred[100] = '\0';
	ok(ab_placeholder(cred, 100, a, &err) == 0 &&
	    ab_placeholder(cred, 100, b, &err) == 0 && memcmp(a, b, 100) != 0,
	    "two draws for one credential differ");
	/* One digit to draw: a tenth of the draws equal it and are drawn
	 * again. */
	for (i = 0; i < 2000; i++) {
		if (ab_placeholder("sk-7", 4, a, &err) < 0)
			equal = 1;
		equal |= a[3] == '7';
		if (a[3] >= '0' && a[3] <= '9')
			seen[a[3] - '0']++;
	}
	for (i = 0; i < 10; i++)
		if (i != 7 && seen[i] == 0)
			all = 0;
	ok(!equal && all, "never the credential itself, every other digit "
	    "drawn");
}

/* Letters drawn are uniform: each within 15% of its share (some eight
 * standard deviations: a failure is a bias, not bad luck). */
static void uniform(void)
{
	char cred[41], out[40];
	long count[26] = { 0 };
	struct ab_err err;
	int i, j, fair = 1;
	double want = 2000.0 * 40 / 26;

	memset(cred, 'q', 40);
	cred[40] = '\0';
	for (i = 0; i < 2000; i++) {
		if (ab_placeholder(cred, 40, out, &err) < 0)
			fair = 0;
		for (j = 0; j < 40; j++)
			if (out[j] >= 'a' && out[j] <= 'z')
				count[out[j] - 'a']++;
	}
	for (i = 0; i < 26; i++)
		if (count[i] < want * 0.85 || count[i] > want * 1.15)
			fair = 0;
	ok(fair, "lower-case letters are drawn uniformly");
}

/* CRED (N bytes) refused with AB_EUSAGE, a message holding WORDS and no
 * four bytes in a row of CRED. */
static int refused(const char *cred, size_t n, const char *words)
{
	char out[AB_SECRET_LEN_MAX + 8];
	struct ab_err err;
	char run[5];
	size_t i;

	memset(&err, 0, sizeof err);
	if (ab_placeholder(cred, n, out, &err) == 0 || err.code != AB_EUSAGE ||
	    strstr(err.msg, words) == NULL)
		return 0;
	for (i = 0; i + 4 <= n; i++) {
		memcpy(run, cred + i, 4);
		run[4] = '\0';
		if (strstr(err.msg, run) != NULL)
			return 0;
	}
	return 1;
}

static void refusals(void)
{
	static char big[AB_SECRET_LEN_MAX + 2];
	char out[AB_SECRET_LEN_MAX];
	struct ab_err err;

	ok(refused("", 0, "empty"), "an empty credential is refused");
	memset(big, 'k', sizeof big - 1);
	ok(refused(big, AB_SECRET_LEN_MAX + 1, "more than 4096"),
	    "a credential past AB_SECRET_LEN_MAX is refused");
	ok(ab_placeholder(big, AB_SECRET_LEN_MAX, out, &err) == 0,
	    "a credential of AB_SECRET_LEN_MAX bytes is taken");
	ok(refused("sk-ant-api03-Zq9XvW7kP\n", 23, "byte 23 of 23"),
	    "a trailing newline is refused, by its place");
	ok(refused("sk-ZQ9xvw7 kPLM", 15, "byte 11"),
	    "a space is refused");
	ok(refused("sk-ZQ9xvw7\x7fkPLM", 15, "not ASCII") &&
	    refused("sk-ZQ9xvw7\x80kPLM", 15, "not ASCII") &&
	    refused("\x01sk-ZQ9xvw7kPLM", 15, "byte 1 "),
	    "DEL, a high byte and a control byte are refused");
	ok(refused("sk-", 3, "no letter or digit") &&
	    refused("sk-ant-api03-", 13, "no letter or digit") &&
	    refused("sk-proj-_-.-", 12, "no letter or digit") &&
	    refused("--..__", 6, "no letter or digit"),
	    "a credential with nothing to draw is refused");
}

/* --- substitution ------------------------------------------------------ */

/* A plain replace-all of the whole stream: the leftmost occurrence, then
 * on after it. */
static size_t replace(const char *in, size_t len, const char *from,
    const char *to, size_t n, char *out)
{
	size_t i = 0, o = 0;

	while (i < len) {
		if (len - i >= n && memcmp(in + i, from, n) == 0) {
			memcpy(out + o, to, n);
			o += n;
			i += n;
		} else
			out[o++] = in[i++];
	}
	return o;
}

static int bounded;	/* every feed within LEN + N - 1, held within N - 1 */

/* IN (LEN bytes) fed in the pieces that end at CUTS (NCUTS, ascending,
 * each at most LEN), the rest, then flushed, into OUT.  Each feed's
 * output buffer is its exact bound, so the sanitizers see an overflow. */
static size_t pieces(const char *in, size_t len, const size_t *cuts,
    int ncuts, const char *from, const char *to, size_t n, char *out)
{
	struct ab_subst s;
	size_t at = 0, o = 0, end, got;
	char *buf;
	int i;

	if (ab_subst_init(&s, from, to, n) < 0)
		abort();
	for (i = 0; i <= ncuts; i++) {
		end = i < ncuts ? cuts[i] : len;
		if ((buf = malloc(end - at + n - 1 + 1)) == NULL)
			abort();
		got = ab_subst_feed(&s, in + at, end - at, buf);
		if (got > end - at + n - 1 || s.nheld > n - 1)
			bounded = 0;
		memcpy(out + o, buf, got);
		o += got;
		free(buf);
		at = end;
	}
	if ((buf = malloc(n)) == NULL)
		abort();
	got = ab_subst_flush(&s, buf);
	if (got > n - 1)
		bounded = 0;
	memcpy(out + o, buf, got);
	free(buf);
	ab_subst_free(&s);
	return o + got;
}

/* IN cut in two and in three at every pair of places, each as the whole
 * replace. */
static int every_cut(const char *in, const char *from, const char *to)
{
	size_t len = strlen(in), n = strlen(from), a, b, cuts[2];
	char want[256], got[256];
	size_t nw = replace(in, len, from, to, n, want);

	for (a = 0; a <= len; a++)
		for (b = a; b <= len; b++) {
			cuts[0] = a;
			cuts[1] = b;
			if (pieces(in, len, cuts, 1, from, to, n, got) != nw ||
			    memcmp(got, want, nw) != 0 ||
			    pieces(in, len, cuts, 2, from, to, n, got) != nw ||
			    memcmp(got, want, nw) != 0)
				return 0;
		}
	return 1;
}

/* IN as one piece gives WANT. */
static int gives(const char *in, const char *from, const char *to,
    const char *want)
{
	char got[256];
	size_t n = pieces(in, strlen(in), NULL, 0, from, to, strlen(from),
	    got);

	return n == strlen(want) && memcmp(got, want, n) == 0;
}

static void cases(void)
{
	ok(gives("key: SECRET.", "SECRET", "PLACEH", "key: PLACEH."),
	    "one occurrence is replaced");
	ok(every_cut("xxSECRETyySECRETz", "SECRET", "PLACEH"),
	    "an occurrence split at every point, in two and three pieces");
	ok(gives("SECRET", "SECRET", "PLACEH", "PLACEH") &&
	    every_cut("SECRET", "SECRET", "PLACEH"),
	    "the stream is one occurrence");
	ok(every_cut("SECRETabc", "SECRET", "PLACEH") &&
	    every_cut("abcSECRET", "SECRET", "PLACEH"),
	    "an occurrence at the very start and at the very end");
	ok(gives("SECRETSECRETSECRET", "SECRET", "PLACEH",
	    "PLACEHPLACEHPLACEH") &&
	    every_cut("SECRETSECRETSECRET", "SECRET", "PLACEH"),
	    "occurrences back to back");
	ok(every_cut("SECRSECRETSESECRE", "SECRET", "PLACEH") &&
	    every_cut("SSSECRETSECRESSECRET", "SECRET", "PLACEH"),
	    "a false start just before an occurrence, a cut-off one at the "
	    "end");
	ok(gives("abcdef", "SECRET", "PLACEH", "abcdef") &&
	    gives("", "SECRET", "PLACEH", ""), "no occurrence, no bytes");
}

static void overlapping(void)
{
	ok(gives("aaa", "aa", "XY", "XYa") && gives("aaaa", "aa", "XY",
	    "XYXY") && gives("aaaaa", "aa", "XY", "XYXYa"),
	    "\"aa\" in runs of a: leftmost, not overlapping");
	ok(gives("ababa", "aba", "XYZ", "XYZba") &&
	    gives("abababa", "aba", "XYZ", "XYZbXYZ"),
	    "\"aba\" in \"ababa\": the first, then \"ba\"");
	ok(every_cut("aaaaa", "aa", "XY") && every_cut("ababababa", "aba",
	    "XYZ") && every_cut("aaabaaab", "aab", "XYZ") &&
	    every_cut("abaabaabaab", "abaab", "VWXYZ"),
	    "self-overlapping patterns, at every cut");
	ok(gives("aaab", "aab", "XYZ", "aXYZ") &&
	    every_cut("aaaab", "aaab", "WXYZ"),
	    "an occurrence that begins later in the held bytes");
	ok(gives("aa", "aa", "aa", "aa") && every_cut("aaaa", "aa", "ab"),
	    "TO overlapping FROM does not feed back into the search");
}

static void one_byte(void)
{
	struct ab_subst s;
	char out[8];
	const char *in = "banana";
	size_t i, o = 0;
	int each = 1;

	ok(gives("banana", "a", "o", "bonono") &&
	    every_cut("aaxa", "a", "b"), "N = 1: every byte on its own");
	if (ab_subst_init(&s, "a", "o", 1) < 0)
		abort();
	for (i = 0; i < 6; i++) {
		if (ab_subst_feed(&s, in + i, 1, out + o) != 1)
			each = 0;
		o++;
	}
	ok(each && s.nheld == 0 && ab_subst_flush(&s, out) == 0,
	    "N = 1 holds nothing back");
	ab_subst_free(&s);
}

static void empty_feeds(void)
{
	struct ab_subst s;
	char out[32];
	size_t o = 0;

	if (ab_subst_init(&s, "SECRET", "PLACEH", 6) < 0)
		abort();
	o += ab_subst_feed(&s, NULL, 0, out + o);
	o += ab_subst_feed(&s, "xSEC", 4, out + o);
	o += ab_subst_feed(&s, "", 0, out + o);
	o += ab_subst_feed(&s, NULL, 0, out + o);
	o += ab_subst_feed(&s, "RE", 2, out + o);
	o += ab_subst_feed(&s, "", 0, out + o);
	o += ab_subst_feed(&s, "Ty", 2, out + o);
	o += ab_subst_flush(&s, out + o);
	ok(o == 8 && memcmp(out, "xPLACEHy", 8) == 0,
	    "empty feeds change nothing, before and within an occurrence");
	ab_subst_free(&s);
}

static void held(void)
{
	struct ab_subst s;
	char out[32];
	size_t o, i;
	int wiped = 1;

	if (ab_subst_init(&s, "SECRET", "PLACEH", 6) < 0)
		abort();
	o = ab_subst_feed(&s, "xxSEC", 5, out);
	ok(o == 2 && s.nheld == 3 && memcmp(out, "xx", 2) == 0,
	    "only what could begin an occurrence is held back");
	o = ab_subst_feed(&s, "RExSECRE", 8, out);
	ok(o == 6 && s.nheld == 5 && memcmp(out, "SECREx", 6) == 0,
	    "a false start is let go as soon as it is one");
	o = ab_subst_flush(&s, out);
	for (i = 0; i < 5; i++)
		wiped &= s.held[i] == '\0';
	ok(o == 5 && memcmp(out, "SECRE", 5) == 0 && s.nheld == 0 && wiped,
	    "the flush gives the held bytes as they were, and wipes them");
	o = ab_subst_feed(&s, "SECRET", 6, out);
	ok(o == 6 && memcmp(out, "PLACEH", 6) == 0,
	    "after a flush, it takes another stream");
	ab_subst_free(&s);
	ok(ab_subst_init(&s, "", "", 0) < 0 &&
	    ab_subst_init(&s, "x", "y", AB_SECRET_LEN_MAX + 1) < 0,
	    "a pattern of no bytes, or past AB_SECRET_LEN_MAX, is refused");
}

/* Random streams over two letters, random patterns and cuts, against the
 * plain replace. */
static void random_streams(void)
{
	char in[200], from[8], to[8], want[200], got[200];
	size_t len, n, nw, cuts[12];
	int t, i, ncuts, same = 1;

	srand(7);
	bounded = 1;
	for (t = 0; t < 20000; t++) {
		n = 1 + (size_t)rand() % 7;
		len = (size_t)rand() % sizeof in;
		for (i = 0; i < (int)n; i++) {
			from[i] = "ab"[rand() % 2];
			to[i] = "abXY"[rand() % 4];
		}
		for (i = 0; i < (int)len; i++)
			in[i] = "ab"[rand() % 2];
		ncuts = rand() % 12;
		for (i = 0; i < ncuts; i++)
			cuts[i] = len ? (size_t)rand() % (len + 1) : 0;
		for (i = 1; i < ncuts; i++)	/* sorted: a few passes */
			if (cuts[i] < cuts[i - 1]) {
				size_t c = cuts[i];

				cuts[i] = cuts[i - 1];
				cuts[i - 1] = c;
				i = 0;
			}
		nw = replace(in, len, from, to, n, want);
		if (pieces(in, len, cuts, ncuts, from, to, n, got) != nw ||
		    memcmp(got, want, nw) != 0)
			same = 0;
	}
	ok(same, "20000 random streams, patterns and cuts agree with a "
	    "plain replace");
	ok(bounded, "no feed writes more than LEN + N - 1, nothing holds "
	    "back more than N - 1");
}

/* ab_find against memmem of the whole stream: needles of 1 to 12 bytes
 * over a small alphabet, streams fed in pieces of random sizes. */
static void finds(void)
{
	char stream[300], needle[12];
	struct ab_find f;
	size_t n, len, i, k;
	int t, bad = 0, got, want;

	srand(7);
	for (t = 0; t < 20000; t++) {
		n = 1 + (size_t)rand() % sizeof needle;
		len = (size_t)rand() % sizeof stream;
		for (i = 0; i < n; i++)
			needle[i] = "ab"[rand() % 2];
		for (i = 0; i < len; i++)
			stream[i] = "abc"[rand() % 3];
		want = len >= n && memmem(stream, len, needle, n) != NULL;
		if (ab_find_init(&f, needle, n) < 0) {
			bad++;
			continue;
		}
		for (i = got = 0; i < len; i += k) {
			k = 1 + (size_t)rand() % 9;
			if (k > len - i)
				k = len - i;
			got = ab_find_feed(&f, stream + i, k);
		}
		if (got != want)
			bad++;
		ab_find_reset(&f);
		if (ab_find_feed(&f, "c", 1) != 0)
			bad++;
		ab_find_free(&f);
	}
	ok(bad == 0, "ab_find finds what memmem of the whole stream finds, "
	    "across pieces, and forgets it once reset");
	ok(ab_find_init(&f, "x", 0) < 0 && ab_find_init(&f, needle,
	    AB_SECRET_LEN_MAX + 1) < 0, "ab_find refuses an empty or too "
	    "long needle");
}

int main(void)
{
	plan(43);
	shapes();
	near_prefix();
	draws();
	uniform();
	refusals();
	cases();
	overlapping();
	one_byte();
	empty_feeds();
	held();
	random_streams();
	finds();
	return done_testing();
}
