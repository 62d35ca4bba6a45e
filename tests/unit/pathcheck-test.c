/* pathcheck-test.c: unit tests for lib/base/pathcheck.c, TAP output.
 *
 * cc -std=c17 -D_GNU_SOURCE -Ilib -o pathcheck-test \
 *     tests/unit/pathcheck-test.c lib/base/pathcheck.c lib/base/err.c && ./pathcheck-test
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pathcheck.h"

/* want is NULL for an accepted path, else a part of the refusal message. */
struct pcase {
	const char *path;
	const char *want;
};

struct lcase {
	const char *path;
	const char *target;
	const char *want;
};

struct dcase {
	const char *c;
	size_t n;
	int want;
};

static const struct pcase pcases[] = {
	{ "a", NULL },
	{ "a/b/c", NULL },
	{ ".gitignore", NULL },
	{ ".github/x", NULL },
	{ "git", NULL },
	{ "x.git", NULL },
	{ ".gitx", NULL },
	{ "a/.gitattributes", NULL },
	{ ".gitmodules", NULL },
	{ "git~2", NULL },
	{ "...", NULL },
	{ "a b/c d.txt", NULL },
	{ "caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac.md", NULL },
	{ "a:b/c", NULL },
	{ ".git", "unsafe path \".git\": .git component" },
	{ "a/.git/config", "unsafe path \"a/.git/config\": .git component" },
	{ "a/.git", ".git component" },
	{ ".GIT", ".git component" },
	{ ".Git/x", ".git component" },
	{ "a/.GIT/x", "unsafe path \"a/.GIT/x\": .git component" },
	{ ".git.", ".git component" },
	{ ".git ", ".git component" },
	{ ".git. .", ".git component" },
	{ ".git. . ", ".git component" },
	{ "GIT~1", ".git component" },
	{ "a/git~1/HEAD", ".git component" },
	{ "Git~1. ", ".git component" },
	{ ".git::$INDEX_ALLOCATION/config", ".git component" },
	{ ".g\xe2\x80\x8cit", ".git component" },
	{ "\xef\xbb\xbf.git/x", ".git component" },
	{ "a/../b", "unsafe path \"a/../b\": \"..\" component" },
	{ "..", "\"..\" component" },
	{ "a/..", "\"..\" component" },
	{ ".", "\".\" component" },
	{ "a/./b", "\".\" component" },
	{ "./a", "\".\" component" },
	{ "/abs", "unsafe path \"/abs\": absolute path" },
	{ "/", "absolute path" },
	{ "a//b", "empty component" },
	{ "a/", "trailing slash" },
	{ "", "unsafe path \"\": empty path" },
	{ "a\x01/b", "unsafe path \"a\\x01/b\": control byte" },
	{ "a\nb", "unsafe path \"a\\x0ab\": control byte" },
	{ "x\x1b[31m", "unsafe path \"x\\x1b[31m\": control byte" },
	{ "del\x7f", "control byte" },
	{ "a\\b", "unsafe path \"a\\x5cb\": backslash" },
	{ "..\\x", "backslash" },
};

static const struct lcase lcases[] = {
	{ "l", "b", NULL },
	{ "a/l", "../b", NULL },
	{ "l", "./x", NULL },
	{ "l", "a/b/../c", NULL },
	{ "a/b/l", "../../c", NULL },
	{ "a/l", "..", NULL },
	{ "l", ".", NULL },
	{ "l", "a//b/", NULL },
	{ "l", ".gitignore", NULL },
	{ "a/l", "../.github/x", NULL },
	{ "l", "/etc/passwd",
	    "unsafe symlink \"l\" -> \"/etc/passwd\": absolute target" },
	{ "l", "../x", "unsafe symlink \"l\" -> \"../x\": leaves /work" },
	{ "l", "..", "leaves /work" },
	{ "a/l", "../../x", "leaves /work" },
	{ "a/l", "../../etc",
	    "unsafe symlink \"a/l\" -> \"../../etc\": leaves /work" },
	{ "l", "a/../../x", "leaves /work" },
	{ "l", "../work/x", "leaves /work" },
	{ "l", "", "empty target" },
	{ "l", ".git", ".git component in target" },
	{ "l", "a/.GIT/x", ".git component in target" },
	{ "a/l", "../.git", ".git component in target" },
	{ "a/l", "../.git/config", ".git component in target" },
	{ "l", ".git/../x", ".git component in target" },
	{ "l", "GIT~1.", ".git component in target" },
	{ "l", "a\x01", "unsafe symlink \"l\" -> \"a\\x01\": control byte" },
	{ "l", "a\\..\\..\\x", "backslash" },
	{ "a/../l", "x", "unsafe path \"a/../l\": \"..\" component" },
	{ ".git/l", "x", ".git component" },
};

static const struct dcase dcases[] = {
	{ ".git", 4, 1 },
	{ ".gitx", 4, 1 },	/* n, not the NUL, ends the component */
	{ ".git", 3, 0 },
	{ ".gitignore", 10, 0 },
	{ "git~1", 5, 1 },
	{ "GiT~1 . ", 8, 1 },
	{ "git~10", 6, 0 },
	{ ". git", 5, 0 },
	{ "", 0, 0 },
	{ ".git:x", 6, 1 },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
/* The checks in test_limits, test_misc. */
#define NEXTRA 9

#include "tap.h"

/* A printable version of s for a test description. */
static const char *show(const char *s, char *buf, size_t size)
{
	size_t o = 0;

	for (; *s != '\0' && o + 5 < size; s++) {
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			o += snprintf(buf + o, size - o, "\\x%02x",
			    (unsigned char)*s);
		else
			buf[o++] = *s;
	}
	buf[o] = '\0';
	return buf;
}

/* r and err match want: accepted when NULL, else refused with it in the
 * message. */
static int matches(int r, const struct ab_err *err, const char *want)
{
	if (want == NULL)
		return r == 0;
	if (r != -1 || err->code != AB_EREFUSED)
		return 0;
	if (strstr(err->msg, want) != NULL)
		return 1;
	printf("# got \"%s\", wanted \"%s\"\n", err->msg, want);
	return 0;
}

static void test_paths(void)
{
	char desc[128], p[64];
	struct ab_err err;
	size_t i;
	int r;

	for (i = 0; i < NELEM(pcases); i++) {
		memset(&err, 0, sizeof err);
		r = ab_path_check(pcases[i].path, &err);
		snprintf(desc, sizeof desc, "path \"%s\" %s",
		    show(pcases[i].path, p, sizeof p),
		    pcases[i].want ? "refused" : "accepted");
		ok(matches(r, &err, pcases[i].want), desc);
	}
}

static void test_links(void)
{
	char desc[160], p[48], t[48];
	struct ab_err err;
	size_t i;
	int r;

	for (i = 0; i < NELEM(lcases); i++) {
		memset(&err, 0, sizeof err);
		r = ab_symlink_check(lcases[i].path, lcases[i].target, &err);
		snprintf(desc, sizeof desc, "symlink \"%s\" -> \"%s\" %s",
		    show(lcases[i].path, p, sizeof p),
		    show(lcases[i].target, t, sizeof t),
		    lcases[i].want ? "refused" : "accepted");
		ok(matches(r, &err, lcases[i].want), desc);
	}
}

static void test_dotgit(void)
{
	char desc[96], c[32];
	size_t i;

	for (i = 0; i < NELEM(dcases); i++) {
		snprintf(desc, sizeof desc, "ab_is_dotgit(\"%s\", %zu) is %d",
		    show(dcases[i].c, c, sizeof c), dcases[i].n,
		    dcases[i].want);
		ok(ab_is_dotgit(dcases[i].c, dcases[i].n) == dcases[i].want,
		    desc);
	}
}

/* A path of len bytes: components of up to comp bytes of 'a'. */
static char *long_path(size_t len, size_t comp)
{
	char *s;
	size_t i;

	if ((s = malloc(len + 1)) == NULL)
		abort();
	memset(s, 'a', len);
	for (i = comp; i + 1 < len; i += comp + 1)
		s[i] = '/';
	s[len] = '\0';
	return s;
}

static int path_refused(const char *path, const char *want)
{
	struct ab_err err;

	memset(&err, 0, sizeof err);
	return matches(ab_path_check(path, &err), &err, want);
}

static void test_limits(void)
{
	struct ab_err err;
	char *s;

	s = long_path(4096, 200);
	ok(path_refused(s, NULL), "a 4096-byte path is accepted");
	free(s);
	s = long_path(4097, 200);
	ok(path_refused(s, "longer than 4096 bytes"),
	    "a 4097-byte path is refused");
	ok(ab_path_check(s, &err) == -1 && strlen(err.msg) < 400 &&
	    strstr(err.msg, "...\": longer than 4096 bytes") != NULL,
	    "a long path's message is cut short");
	ok(ab_symlink_check("l", s, &err) == -1 &&
	    strstr(err.msg, "target longer than 4096 bytes") != NULL,
	    "a 4097-byte target is refused");
	free(s);
	s = long_path(257, 255);
	ok(path_refused(s, NULL), "a 255-byte component is accepted");
	free(s);
	s = long_path(258, 256);
	ok(path_refused(s, "component longer than 255 bytes"),
	    "a 256-byte component is refused");
	free(s);
}

static void test_misc(void)
{
	struct ab_err err;

	ok(ab_path_check(".git", NULL) == -1 &&
	    ab_symlink_check("l", "../x", NULL) == -1 &&
	    ab_symlink_check("l", "x", NULL) == 0,
	    "a NULL err is allowed");
	ok(ab_path_check("a\x01\xff\"", &err) == -1 &&
	    strcmp(err.msg, "unsafe path \"a\\x01\\xff\\x22\": control byte")
	    == 0, "messages escape high bytes and quotes");
	ok(ab_symlink_check("a/l", "../b", &err) == 0 &&
	    ab_symlink_check("a/b/l", "../../../x", &err) == -1,
	    "a link's depth is its directory's");
}

int main(void)
{
	plan((int)(NELEM(pcases) + NELEM(lcases) + NELEM(dcases)) + NEXTRA);
	test_paths();
	test_links();
	test_dotgit();
	test_limits();
	test_misc();
	return done_testing();
}
