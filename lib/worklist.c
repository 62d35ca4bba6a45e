#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockdown.h"
#include "oneshot.h"
#include "worklist.h"

/* The image's find (busybox's, or GNU's in a Debian-based image): every
 * socket under /work but .git, each name ended by a NUL. */
static const char *const entry[] = { "/bin/find", "/work", "-path",
    "/work/.git", "-prune", "-o", "-type", "s", "-print0", NULL };
static const char *const env[] = { "PATH=/usr/bin:/bin", NULL };

#define TOO_LONG ": File name too long"

static const char *rel(const char *p)
{
	return strncmp(p, "/work/", 6) == 0 && p[6] != '\0' ? p + 6 : ".";
}

static void sockets(const struct ab_buf *out, ab_worklist_found found,
    void *ctx)
{
	size_t i = 0, n;

	while (i < out->len) {
		n = strnlen(out->data + i, out->len - i);
		if (i + n == out->len)
			break;		/* cut short: said below */
		found(ctx, rel(out->data + i), "a socket: the engine's archive "
		    "cannot carry it");
		i += n + 1;
	}
	if (out->over || i < out->len)
		found(ctx, ".", "more sockets than could be listed");
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

int ab_worklist_unarchivable(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, ab_worklist_found found, void *ctx,
    struct ab_err *err)
{
	const char *labels[] = { "org.agentbox.alloc", a->id,
	    "org.agentbox.state", s->sid, "org.agentbox.role", "work-listing",
	    NULL };
	struct ab_mount m = { a->vol[AB_VOL_TASK].name, "/work", 1 };
	char name[96], rnd[AB_ID_LEN + 1];
	struct ab_oneshot o;
	struct ab_lock l;
	int rc;

	if (ab_new_id(rnd, err) < 0)
		return -1;
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
	rc = ab_oneshot_run(e, &l, name, &o, err);
	if (rc == 0) {
		sockets(&o.out, found, ctx);
		complaints(&o.err, found, ctx);
		if (o.status != 0 && o.err.len == 0)
			found(ctx, ".", "could not be listed whole");
	}
	ab_oneshot_free(&o);
	return rc < 0 ? ab_err_wrap(err, "listing /work") : 0;
}
