/* pathcheck.c: which tree paths and symlinks agentbox lets into /work.
 *
 * The names come from a repository the agent may have written, so every
 * rule errs on refusing: a name no honest tree needs is refused rather
 * than argued about.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "pathcheck.h"

/* Room for one quoted name in a message: two of them, the words around
 * them and the reason must fit in ab_err.msg. */
#define QUOTE_MAX	300

/* A name for a message (ab_quote): a hostile one cannot drive the
 * terminal the message lands on. */
static void quote(char *dst, size_t size, const char *s, size_t n)
{
	ab_quote(dst, size, s, n);
}

static int refuse_path(const char *path, const char *why, struct ab_err *err)
{
	char q[QUOTE_MAX];

	quote(q, sizeof q, path, strnlen(path, QUOTE_MAX));
	return ab_fail(err, AB_EREFUSED, "unsafe path \"%s\": %s", q, why);
}

static int refuse_link(const char *path, const char *target, const char *why,
    struct ab_err *err)
{
	char qp[QUOTE_MAX], qt[QUOTE_MAX];

	quote(qp, sizeof qp, path, strnlen(path, QUOTE_MAX));
	quote(qt, sizeof qt, target, strnlen(target, QUOTE_MAX));
	return ab_fail(err, AB_EREFUSED, "unsafe symlink \"%s\" -> \"%s\": %s",
	    qp, qt, why);
}

/* The code points HFS+ ignores when comparing names (the list git's
 * is_hfs_dotgit() uses), as UTF-8 at s[0..n): U+200C-U+200F,
 * U+202A-U+202E, U+206A-U+206F and U+FEFF.  On HFS+ ".g\u200cit" is
 * .git. */
static int hfs_ignorable(const unsigned char *s, size_t n)
{
	if (n < 3)
		return 0;
	if (s[0] == 0xef)
		return s[1] == 0xbb && s[2] == 0xbf;
	if (s[0] != 0xe2)
		return 0;
	if (s[1] == 0x80)
		return (s[2] >= 0x8c && s[2] <= 0x8f) ||
		    (s[2] >= 0xaa && s[2] <= 0xae);
	return s[1] == 0x81 && s[2] >= 0xaa && s[2] <= 0xaf;
}

/* The next byte of c[0..n) from *i that HFS+ does not ignore, in ASCII
 * lower case (not tolower(): the locale must not matter); -1 at the end. */
static int next_folded(const char *c, size_t n, size_t *i)
{
	unsigned char b;

	while (*i < n && hfs_ignorable((const unsigned char *)c + *i, n - *i))
		*i += 3;
	if (*i >= n)
		return -1;
	b = (unsigned char)c[(*i)++];
	return b >= 'A' && b <= 'Z' ? b - 'A' + 'a' : b;
}

/* Whether c[0..n) from *i starts with word (lower case), advancing *i. */
static int spells(const char *c, size_t n, size_t *i, const char *word)
{
	for (; *word != '\0'; word++)
		if (next_folded(c, n, i) != (unsigned char)*word)
			return 0;
	return 1;
}

/* Whether the rest of c[0..n) from i is nothing to NTFS: it drops trailing
 * dots and spaces, and "name:stream" is a stream of name (".git::$INDEX_
 * ALLOCATION" is the directory itself), which git refuses too. */
static int ntfs_nothing(const char *c, size_t n, size_t i)
{
	int b;

	while ((b = next_folded(c, n, &i)) == '.' || b == ' ')
		continue;
	return b == -1 || b == ':';
}

int ab_is_dotgit(const char *c, size_t n)
{
	size_t i = 0, j = 0;

	if (spells(c, n, &i, ".git"))
		return ntfs_nothing(c, n, i);
	/* The 8.3 short name NTFS gives .git, the first "git" name made. */
	return spells(c, n, &j, "git~1") && ntfs_nothing(c, n, j);
}

/* Why s[0..n) has a byte no name in /work may have, or NULL.  Control
 * bytes hide in listings and logs; a backslash is a separator to some
 * filesystems and tools, which would split the name where we did not. */
static const char *bad_bytes(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return "control byte";
		if (s[i] == '\\')
			return "backslash";
	}
	return NULL;
}

static int is_dot(const char *c, size_t n)
{
	return n == 1 && c[0] == '.';
}

static int is_dotdot(const char *c, size_t n)
{
	return n == 2 && c[0] == '.' && c[1] == '.';
}

/* Why component c[0..n) of a tree path is unsafe, or NULL. */
static const char *bad_component(const char *c, size_t n)
{
	const char *why;

	if (n == 0)
		return "empty component";
	if (n > AB_PATHCHECK_NAME_MAX)
		return "component longer than 255 bytes";
	if ((why = bad_bytes(c, n)) != NULL)
		return why;
	if (is_dot(c, n))
		return "\".\" component";
	if (is_dotdot(c, n))
		return "\"..\" component";
	if (ab_is_dotgit(c, n))
		return ".git component";
	return NULL;
}

/* Why the path as a whole is unsafe, or NULL.  len is at most one past
 * the limit (strnlen), so a huge path is not scanned. */
static const char *bad_shape(const char *path, size_t len)
{
	if (len == 0)
		return "empty path";
	if (len > AB_PATHCHECK_PATH_MAX)
		return "longer than 4096 bytes";
	if (path[0] == '/')
		return "absolute path";
	if (path[len - 1] == '/')
		return "trailing slash";
	return NULL;
}

int ab_path_check(const char *path, struct ab_err *err)
{
	const char *c, *why;
	size_t n;

	/* bad_shape refuses a trailing '/', so the last component ends at
	 * the NUL and the walk stops there. */
	why = bad_shape(path, strnlen(path, AB_PATHCHECK_PATH_MAX + 1));
	for (c = path; why == NULL; c += n + 1) {
		n = strcspn(c, "/");
		if ((why = bad_component(c, n)) != NULL || c[n] == '\0')
			break;
	}
	if (why != NULL)
		return refuse_path(path, why, err);
	return 0;
}

/* Why the target string as a whole is unsafe, or NULL. */
static const char *bad_target(const char *target)
{
	size_t len = strnlen(target, AB_PATHCHECK_PATH_MAX + 1);

	if (len == 0)
		return "empty target";
	if (len > AB_PATHCHECK_PATH_MAX)
		return "target longer than 4096 bytes";
	if (target[0] == '/')
		return "absolute target";
	return bad_bytes(target, len);
}

/* Why resolving target from the directory of the link at path is unsafe,
 * or NULL.  depth counts the components below /work; it starts at the
 * link's directory, and going below zero even once is leaving /work, even
 * when later components would come back ("a/../../work/x").  A .git
 * component refuses wherever it is, even one a later ".." pops: the walk
 * passes through it. */
static const char *bad_walk(const char *path, const char *target)
{
	const char *c;
	long depth = 0;
	size_t n;

	for (c = path; *c != '\0'; c++)
		depth += *c == '/';
	for (c = target; *c != '\0'; c += n + (c[n] == '/')) {
		n = strcspn(c, "/");
		if (n == 0 || is_dot(c, n))
			continue;
		if (ab_is_dotgit(c, n))
			return ".git component in target";
		if (!is_dotdot(c, n))
			depth++;
		else if (--depth < 0)
			return "leaves /work";
	}
	return NULL;
}

int ab_symlink_check(const char *path, const char *target,
    struct ab_err *err)
{
	const char *why;

	if (ab_path_check(path, err) == -1)
		return -1;
	why = bad_target(target);
	if (why == NULL)
		why = bad_walk(path, target);
	if (why != NULL)
		return refuse_link(path, target, why, err);
	return 0;
}

int ab_path_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_link(const char *const *links, size_t n, const char *path)
{
	return n && bsearch(&path, links, n, sizeof *links, ab_path_cmp) != NULL;
}

/* Each target was checked lexically (pathcheck.h); that holds only if no
 * component before a ".." is itself a symlink of the tree, which would
 * put the walk elsewhere ("s" -> ".", "l" -> "s/../x"). */
int ab_link_chain_check(const char *path, const char *target,
    const char *const *links, size_t n, struct ab_err *err)
{
	char cur[8192], *t, *c, *save;
	size_t len;
	char *slash;

	if (ab_fmt(cur, sizeof cur, "%s", path) < 0)
		return ab_fail(err, AB_EREFUSED, "symlink \"%.200s\": too "
		    "long to check", path);
	slash = strrchr(cur, '/');
	len = slash ? (size_t)(slash - cur) : 0;
	cur[len] = '\0';
	if ((t = strdup(target)) == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	for (c = strtok_r(t, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (strcmp(c, ".") == 0)
			continue;
		if (strcmp(c, "..") == 0) {
			if (len > 0 && is_link(links, n, cur)) {
				free(t);
				return ab_fail(err, AB_EREFUSED, "unsafe symlink "
				    "\"%.200s\": \"..\" after the symlink \"%.200s\"",
				    path, cur);
			}
			slash = strrchr(cur, '/');
			len = slash ? (size_t)(slash - cur) : 0;
			cur[len] = '\0';
			continue;
		}
		/* Too long to follow is refused, never taken as safe. */
		if (ab_fmt(cur + len, sizeof cur - len, "%s%s",
		    len ? "/" : "", c) < 0) {
			free(t);
			return ab_fail(err, AB_EREFUSED, "symlink \"%.200s\": "
			    "too long to check", path);
		}
		len += strlen(cur + len);
	}
	free(t);
	return 0;
}

/* --- where a file change may write on the filesystem -------------- */

#define SHOWN_MAX 160

/* Enough of the path to find it, in printable ASCII. */
static void printable(const char *path, char q[SHOWN_MAX])
{
	ab_quote(q, SHOWN_MAX, path, strlen(path));
}

static int why_set(char *why, size_t cap, const char *fmt, const char *path)
{
	char q[SHOWN_MAX];

	printable(path, q);
	/* A reason cut short still reads. */
	(void)ab_fmt(why, cap, fmt, q);
	return -1;
}

/* Walks ROOT/REL a component at a time: every existing one a directory
 * (the last a regular file), none a symbolic link. */
static int walk_ok(const char *root, const char *rel,
    int (*lstat_fn)(const char *, struct stat *), char *why, size_t cap)
{
	char buf[AB_PATHCHECK_PATH_MAX + 64];
	const char *c, *e;
	struct stat st;
	size_t n;

	if (ab_fmt(buf, sizeof buf, "%s", root) < 0 ||
	    lstat_fn(buf, &st) < 0 || !S_ISDIR(st.st_mode))
		return why_set(why, cap, "the root %s is not a directory",
		    root);
	n = strlen(buf);
	for (c = rel; *c != '\0'; c = *e ? e + 1 : e) {
		e = strchr(c, '/');
		if (e == NULL)
			e = c + strlen(c);
		if (ab_fmt(buf + n, sizeof buf - n, "/%.*s", (int)(e - c),
		    c) < 0)
			return why_set(why, cap, "%s is too long a path", rel);
		n += strlen(buf + n);
		if (lstat_fn(buf, &st) < 0) {
			if (errno == ENOENT)
				return 0;	/* Codex creates the rest */
			return why_set(why, cap, "%s cannot be checked", buf);
		}
		if (S_ISLNK(st.st_mode))
			return why_set(why, cap, "%s is a symbolic link", buf);
		if (*e != '\0' && !S_ISDIR(st.st_mode))
			return why_set(why, cap, "%s is not a directory", buf);
		if (*e == '\0' && !S_ISREG(st.st_mode))
			return why_set(why, cap, "%s is not a regular file",
			    buf);
	}
	return 0;
}

int ab_path_write_ok(const char *root, const char *path,
    int (*lstat_fn)(const char *, struct stat *), char *why, size_t cap)
{
	size_t rl = strlen(root);
	const char *rel, *c, *e;
	struct ab_err err;
	char q[SHOWN_MAX], r[SHOWN_MAX];

	if (strlen(path) > AB_PATHCHECK_PATH_MAX || strncmp(path, root, rl) != 0 ||
	    path[rl] != '/') {
		printable(path, q);
		printable(root, r);
		/* A reason cut short still reads. */
		(void)ab_fmt(why, cap, "%s is not under %s", q, r);
		return -1;
	}
	rel = path + rl + 1;
	if (ab_path_check(rel, &err) < 0) {
		(void)ab_fmt(why, cap, "%s", err.msg);
		return -1;
	}
	for (c = rel; *c != '\0'; c = *e ? e + 1 : e) {
		e = strchr(c, '/');
		if (e == NULL)
			e = c + strlen(c);
		/* Codex's own configuration, which a later Codex reads. */
		if (e - c == 6 && strncasecmp(c, ".codex", 6) == 0)
			return why_set(why, cap, "%s is in a .codex directory",
			    path);
	}
	return walk_ok(root, rel, lstat_fn, why, cap);
}
