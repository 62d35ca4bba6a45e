/* pathcheck.c: libFuzzer harness for the path and symlink checks
 * (lib/base/pathcheck.c), which decide what of a tree enters /work and what of
 * /work leaves it.  The input is a path, a NUL byte and a symlink target.
 * Beyond not crashing, what is accepted is checked here by code of its
 * own: a path is relative, within its bounds, with no empty, "." or ".."
 * component, no ".git" in any case, no control byte or backslash; a
 * target resolved lexically from the link's directory never climbs above
 * /work and never passes through ".git".  A refusal is one printable
 * line. */
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "common.h"
#include "pathcheck.h"

#define INPUT_MAX 16384

static int is_git(const char *c, size_t n)
{
	return n == 4 && strncasecmp(c, ".git", 4) == 0;
}

static void path_holds(const char *p)
{
	const char *c = p, *e;
	size_t n = strlen(p);

	if (n == 0 || n > AB_PATHCHECK_PATH_MAX || p[0] == '/' ||
	    p[n - 1] == '/')
		abort();
	for (; *c != '\0'; c = *e ? e + 1 : e) {
		e = strchrnul(c, '/');
		if (e == c || (e - c == 1 && c[0] == '.') ||
		    (e - c == 2 && c[0] == '.' && c[1] == '.') ||
		    is_git(c, (size_t)(e - c)) || e - c > AB_PATHCHECK_NAME_MAX)
			abort();
	}
	for (c = p; *c != '\0'; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f || *c == '\\')
			abort();
}

/* The link's directory's depth, then each target component: ".." pops,
 * "." and "" stay, anything else pushes. */
static void target_holds(const char *path, const char *t)
{
	const char *c, *e;
	long depth = 0;

	if (t[0] == '\0' || t[0] == '/')
		abort();
	for (c = path; (c = strchr(c, '/')) != NULL; c++)
		depth++;
	for (c = t; *c != '\0'; c = *e ? e + 1 : e) {
		e = strchrnul(c, '/');
		if (is_git(c, (size_t)(e - c)))
			abort();
		if (e - c == 2 && c[0] == '.' && c[1] == '.') {
			if (--depth < 0)
				abort();
		} else if (!(e - c == 0 || (e - c == 1 && c[0] == '.')))
			depth++;
	}
	for (c = t; *c != '\0'; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f || *c == '\\')
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *path, *target;
	struct ab_err err;
	const char *links[1];

	if (size > INPUT_MAX || (path = malloc(size + 1)) == NULL)
		return 0;
	memcpy(path, data, size);
	path[size] = '\0';
	target = path + strlen(path);
	if (target < path + size)
		target++;
	memset(&err, 0, sizeof err);
	if (ab_path_check(path, &err) == 0)
		path_holds(path);
	else
		fuzz_err(&err);
	if (ab_symlink_check(path, target, &err) == 0) {
		path_holds(path);
		target_holds(path, target);
		/* With the link itself as the tree's only symlink. */
		links[0] = path;
		if (ab_link_chain_check(path, target, links, 1, &err) < 0)
			fuzz_err(&err);
	} else
		fuzz_err(&err);
	free(path);
	return 0;
}
