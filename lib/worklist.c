#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockdown.h"
#include "oneshot.h"
#include "worklist.h"

/* agentbox's busybox find, which every image has wherever its root came
 * from, and which has no -printf: the kind is told by repetition.  A
 * path is printed once, a socket twice, a regular file over the size
 * three times; find visits a path once, so a run of equal names is one
 * path's. */
#define FIND_ARGS(size) { "/usr/lib/agentbox/busybox", "find", "/work", \
    "-path", "/work/.git", \
    "-prune", "-o", "-type", "s", "-print0", "-print0", "-o", "-type", "f", \
    "-size", (size), "-print0", "-print0", "-print0", "-o", "-print0", NULL }
static const char *const env[] = { "PATH=/usr/bin:/bin", NULL };

#define TOO_LONG ": File name too long"

static const char *rel(const char *p)
{
	return strncmp(p, "/work/", 6) == 0 && p[6] != '\0' ? p + 6 : ".";
}

/* One complaint of find's: "find: PATH: File name too long" (GNU find
 * quotes PATH).  Anything else it could not list is named as it said. */
static void complaint(char *line, ab_worklist_found found, void *ctx)
{
	char *p = line, *end, *last = NULL;
	size_t n;

	if (strncmp(p, "find: ", 6) == 0)
		p += 6;
	for (end = strstr(p, TOO_LONG); end != NULL;
	    end = strstr(end + 1, TOO_LONG))
		last = end;
	if (last == NULL || last[strlen(TOO_LONG)] != '\0') {
		found(ctx, ".", line);
		return;
	}
	*last = '\0';
	n = strlen(p);
	if (n >= 2 && (p[0] == '\'' || p[0] == '"') && p[n - 1] == p[0]) {
		p[n - 1] = '\0';
		p++;
	} else if (n >= 6 && strncmp(p, "\xe2\x80\x98", 3) == 0 &&
	    strcmp(p + n - 3, "\xe2\x80\x99") == 0) {
		p[n - 3] = '\0';
		p += 3;
	}
	found(ctx, rel(p), "its path is longer than the engine's archive can "
	    "carry (PATH_MAX)");
}

static void complaints(const struct ab_buf *err, ab_worklist_found found,
    void *ctx)
{
	const char *p = err->data, *end, *nl;
	char *line;

	if (err->len == 0)
		return;
	for (end = p + err->len; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		if (nl == p)
			continue;
		if ((line = strndup(p, (size_t)(nl - p))) == NULL) {
			found(ctx, ".", "could not be listed");
			return;
		}
		complaint(line, found, ctx);
		free(line);
	}
}

int ab_worklist_open(struct ab_worklist *w, struct ab_state *s,
    struct ab_engine *e, const struct ab_alloc *a, long long max_file,
    ab_worklist_found found, void *ctx, struct ab_err *err)
{
	const char *labels[] = { "org.agentbox.alloc", a->id,
	    "org.agentbox.state", s->sid, "org.agentbox.role", "work-listing",
	    NULL };
	struct ab_mount m = { a->vol[AB_VOL_TASK].name, "/work", 1 };
	char name[96], rnd[AB_ID_LEN + 1], size[32];
	const char *const entry[] = FIND_ARGS(size);
	struct ab_lock l;
	int rc;

	memset(w, 0, sizeof *w);
	if (ab_new_id(rnd, err) < 0)
		return -1;
	snprintf(size, sizeof size, "+%lldc", max_file);
	memset(&l, 0, sizeof l);
	l.image = a->digest;
	l.entrypoint = entry;
	l.env = env;
	l.labels = labels;
	ab_oneshot_limits(&l);
	l.seccomp_keyword = ab_engine_seccomp_keyword(e);
	l.mounts = &m;
	l.nmounts = 1;
	snprintf(name, sizeof name, "agentbox-%s-listing-%.8s", a->id, rnd);
	rc = ab_oneshot_run_max(e, &l, name, (size_t)AB_WORKLIST_MAX, &w->o,
	    err);
	if (rc < 0) {
		ab_oneshot_free(&w->o);
		return ab_err_wrap(err, "listing /work");
	}
	complaints(&w->o.err, found, ctx);
	if (w->o.status != 0 && w->o.err.len == 0)
		found(ctx, ".", "could not be listed whole");
	/* What came past the bound, and a last name without its NUL, are
	 * not known: said once, and the archive's own checks stand. */
	w->cut = w->o.out.over || (w->o.out.len > 0 &&
	    w->o.out.data[w->o.out.len - 1] != '\0');
	if (w->cut)
		found(ctx, ".", "more names than could be listed");
	return 0;
}

/* The name at pos, or NULL past the last whole one. */
static const char *name_at(const struct ab_worklist *w, size_t pos)
{
	const struct ab_buf *b = &w->o.out;

	if (pos >= b->len || memchr(b->data + pos, '\0', b->len - pos) == NULL)
		return NULL;
	return b->data + pos;
}

int ab_worklist_next(struct ab_worklist *w, const char **path,
    enum ab_work_kind *kind, struct ab_err *err)
{
	const char *p, *q;
	int n;

	for (;;) {
		if ((p = name_at(w, w->pos)) == NULL)
			return 0;
		w->pos += strlen(p) + 1;
		for (n = 1; (q = name_at(w, w->pos)) != NULL &&
		    strcmp(p, q) == 0; n++)
			w->pos += strlen(q) + 1;
		if (n > 3 || strncmp(p, "/work", 5) != 0 ||
		    (p[5] != '\0' && p[5] != '/'))
			return ab_fail(err, AB_EENGINE, "listing /work: find "
			    "printed what it cannot have");
		if (strcmp(rel(p), ".") != 0)
			break;
	}
	*path = rel(p);
	*kind = n == 3 ? AB_WORK_BIG : n == 2 ? AB_WORK_SOCKET : AB_WORK_ENTRY;
	return 1;
}

void ab_worklist_rewind(struct ab_worklist *w)
{
	w->pos = 0;
}

void ab_worklist_close(struct ab_worklist *w)
{
	ab_oneshot_free(&w->o);
	memset(w, 0, sizeof *w);
}
