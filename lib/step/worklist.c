#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockdown.h"
#include "oneshot.h"
#include "seed.h"
#include "worklist.h"

/* agentbox's busybox find and stat, which every image has wherever its
 * root came from, and which have no
 * -printf: the kind is told by repetition, a regular file printed once,
 * a socket twice, a directory three times, anything else four times;
 * find visits a path once, so a run of equal names is one path's.  An
 * empty name ends the names; then stat gives each regular file's and
 * directory's size, links, inode, permissions and change time, in the
 * order find visits them again (/work itself left out, as in the
 * names); then the seed's mark's change time, where there is one (an
 * allocation seeded before there were marks has none).
 * From inside /work, by relative paths, and with the time zone given:
 * on an engine whose image storage is FUSE (fuse-overlayfs), each
 * absolute path's walk from / and each stat's look for /etc/localtime
 * is a round trip to its daemon, which made 10,000 files cost 1.9 s
 * where this costs 0.1 s.  The root is named "././.", as long as
 * "/work": find's "File name too long" comes where the engine's archive
 * of /work stops. */
#define LIST_SCRIPT \
    "cd /work || exit 3; " \
    "find ././. -path ./././.git -prune -o -type f -print0 -o -type s " \
    "-print0 -print0 -o -type d -print0 -print0 -print0 -o -print0 " \
    "-print0 -print0 -print0; s=$?; printf '\\000'; " \
    "find ././. -mindepth 1 -path ./././.git -prune -o \\( -type f -o " \
    "-type d \\) -exec stat -c '%s %h %i %a %Z %z' {} + 2>/dev/null || " \
    "s=1; " \
    "stat -c 'mark %Z %z' " AB_SEED_MARK " 2>/dev/null; exit $s"
static const char *const entry[] = { "/usr/lib/agentbox/busybox", "sh", "-c",
    LIST_SCRIPT, NULL };
static const char *const env[] = { "PATH=/usr/bin:/bin", "TZ=UTC0", NULL };

#define TOO_LONG "File name too long"

/* One complaint of find's: "find: ./././PATH: WHY" (GNU find quotes
 * PATH).  One that names no path under /work is not understood. */
static int complaint(char *line, ab_worklist_found found, void *ctx)
{
	char *p = line, *why = NULL, *q;
	size_t n;

	if (strncmp(p, "find: ", 6) != 0)
		return -1;
	p += 6;
	for (q = strstr(p, ": "); q != NULL; q = strstr(q + 1, ": "))
		why = q;
	if (why == NULL)
		return -1;
	*why = '\0';
	why += 2;
	n = strlen(p);
	if (n >= 2 && (p[0] == '\'' || p[0] == '"') && p[n - 1] == p[0]) {
		p[n - 1] = '\0';
		p++;
	} else if (n >= 6 && strncmp(p, "\xe2\x80\x98", 3) == 0 &&
	    strcmp(p + n - 3, "\xe2\x80\x99") == 0) {
		p[n - 3] = '\0';
		p += 3;
	}
	if (strncmp(p, AB_LISTING_ROOT "/", AB_LISTING_ROOT_LEN + 1) != 0 ||
	    p[AB_LISTING_ROOT_LEN + 1] == '\0')
		return -1;
	p += AB_LISTING_ROOT_LEN + 1;
	if (strcmp(why, TOO_LONG) == 0)
		found(ctx, p, "its path is longer than the engine's archive "
		    "can carry (PATH_MAX)");
	else if (strcmp(why, "Permission denied") == 0)
		found(ctx, p, "the agent made it unreadable: it could not "
		    "be listed");
	else
		found(ctx, p, "it could not be listed");
	return 0;
}

static int complaints(const struct ab_buf *b, ab_worklist_found found,
    void *ctx, struct ab_err *err)
{
	const char *p = b->data, *end, *nl;
	char *line;
	int rc;

	if (b->len == 0)
		return 0;
	for (end = p + b->len; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		if (nl == p)
			continue;
		if ((line = strndup(p, (size_t)(nl - p))) == NULL)
			return ab_fail(err, AB_EENGINE, "out of memory");
		rc = complaint(line, found, ctx);
		free(line);
		if (rc < 0)
			return ab_fail(err, AB_EREFUSED, "listing /work: find "
			    "said what names no path under /work");
	}
	return 0;
}

int ab_worklist_open(struct ab_worklist *w, struct ab_state *s,
    struct ab_engine *e, const struct ab_alloc *a, ab_worklist_found found,
    void *ctx, struct ab_err *err)
{
	const char *labels[] = { "org.agentbox.alloc", a->id,
	    "org.agentbox.state", s->sid, "org.agentbox.role", "work-listing",
	    NULL };
	/* The git volume for the seed's mark alone. */
	struct ab_mount m[2] = { { a->vol[AB_VOL_TASK].name, "/work", 1 },
	    { a->vol[AB_VOL_GIT].name, "/work/.git", 1 } };
	char name[96], rnd[AB_ID_LEN + 1];
	struct ab_oneshot o;
	struct ab_lock l;
	int rc;

	memset(w, 0, sizeof *w);
	if (ab_new_id(rnd, err) < 0)
		return -1;
	memset(&l, 0, sizeof l);
	l.image = a->digest;
	l.entrypoint = entry;
	l.env = env;
	l.labels = labels;
	ab_oneshot_limits(&l);
	l.seccomp_keyword = ab_engine_seccomp_keyword(e);
	l.mounts = m;
	l.nmounts = 2;
	if (ab_fmt_err(err, name, sizeof name, "the listing's name",
	    "agentbox-%s-listing-%.8s", a->id, rnd) < 0)
		return -1;
	rc = ab_oneshot_run_max(e, &l, name, (size_t)AB_WORKLIST_MAX, &o, err);
	if (rc < 0) {
		ab_oneshot_free(&o);
		return ab_err_wrap(err, "listing /work");
	}
	if (o.out.over || o.err.over)
		rc = ab_fail(err, AB_EREFUSED, "listing /work: more than %lld "
		    "MiB of names, so not every entry could be accounted for",
		    AB_WORKLIST_MAX >> 20);
	else if (o.status != 0 && o.err.len == 0)
		rc = ab_fail(err, AB_EREFUSED, "listing /work: find ended %lld "
		    "without saying why", o.status);
	else if ((rc = complaints(&o.err, found, ctx, err)) == 0)
		rc = ab_listing_parse(&w->l, o.out.data, o.out.len, err);
	if (rc < 0) {
		ab_oneshot_free(&o);
		ab_listing_free(&w->l);
		return -1;
	}
	w->o = o;
	return 0;
}

void ab_worklist_close(struct ab_worklist *w)
{
	ab_oneshot_free(&w->o);
	ab_listing_free(&w->l);
}
