#include <git2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive.h"
#include "cancel.h"
#include "changeout.h"
#include "export.h"
#include "file.h"
#include "git.h"
#include "json.h"
#include "keeper.h"
#include "pathcheck.h"
#include "secret.h"
#include "size.h"
#include "tarread.h"
#include "worklist.h"
#include "worktar.h"

#define CHUNK (64u * 1024)
/* Tar costs per entry: a header, a long-name header, and padding. */
#define TAR_PER_ENTRY 2048LL

struct seedfile {
	char *path;
	git_oid id;
	git_filemode_t mode;
};

struct xp {
	const struct ab_export_opts *o;
	git_repository *repo;
	git_odb *odb;
	git_index *idx;
	struct ab_tarread *tr;
	char *chunk;
	char **dirs, **refused, **links, **targets;
	size_t ndirs, nrefused, nlinks, cap_dirs, cap_refused, cap_links;
	/* What is named left out; files not read for their own size (big)
	 * or for the sum of sizes (crowd); the directories read entry by
	 * entry around them; the entries whose names only their folder's
	 * archive carries whole. */
	char **named, **big, **crowd, **split, **defer;
	size_t nnamed, nbig, ncrowd, nsplit, ndefer, cap_named, cap_big,
	    cap_crowd, cap_split, cap_defer;
	/* Hard links whose first name was left out, read again alone, and
	 * those first names. */
	char **relink, **relinked;
	size_t nrelink, nrelinked, cap_relink, cap_relinked;
	/* Hard links met in a folder's archive read for them alone, whose
	 * first name that read passed over, and those first names: read
	 * again from that archive as the link's own name (read_alias). */
	char **alias, **aliased;
	size_t nalias, naliased, cap_alias, cap_aliased;
	/* The files the seed wrote that the agent never touched (kept, not
	 * read: keep_unchanged), and the commit's files, by path. */
	char **keep;
	size_t nkeep, cap_keep;
	struct seedfile *seed;
	size_t nseed, cap_seed;
	long long archives;	/* requests made */
	long long inside;	/* archives made inside (worktar.h) */
	int inside_read;	/* reading one now */
	int late;		/* reading again: a hard link is named */
	struct ab_worklist w;
	/* What comes before the archive's names, the last component of the
	 * path asked for, the names wanted of it (NULL: all), and the
	 * name the one wanted is kept as (NULL: its own). */
	const char *prefix, *top, *want, *as;
	long long budget;	/* archive bytes still allowed */
	long long big_at;	/* a file over this many bytes is big */
	int left_out;
	int oom;		/* a name could not be kept */
	/* The credentials looked for (o->creds), and the blobs that hold
	 * one. */
	struct ab_find find[AB_EXPORT_CREDS];
	git_oid *hits;
	size_t nhits, cap_hits;
	int held;
};

/* -- Small lists of paths. */

static int push(char ***v, size_t *n, size_t *cap, const char *s)
{
	char **nv;

	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 64;
		nv = realloc(*v, *cap * sizeof **v);
		if (nv == NULL)
			return -1;
		*v = nv;
	}
	if (((*v)[*n] = strdup(s)) == NULL)
		return -1;
	(*n)++;
	return 0;
}

static void free_list(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 && path[n] == '/';
}

/* A path told with its credentials masked: a tar's name (tarread keeps
 * 64 KiB) with, at worst, each byte a credential's, told "[redacted]".
 * Past it, the path is told as "[redacted]" whole. */
#define TOLD_MAX (10 * 65536 + 1)

/* PATH told through FN, each credential an agent held that it holds
 * masked: a line of ours never carries one. */
static void tell(const struct xp *x, ab_export_skip fn, const char *path,
    const char *why)
{
	struct ab_buf b;
	const char *p = path, *q, *best;
	size_t n = 0;
	int i;

	ab_buf_init(&b, TOLD_MAX);
	for (;;) {
		for (best = NULL, i = 0; i < x->o->ncreds; i++)
			if ((q = memmem(p, strlen(p), x->o->creds[i].p,
			    x->o->creds[i].n)) != NULL && (best == NULL ||
			    q < best)) {
				best = q;
				n = x->o->creds[i].n;
			}
		if (best == NULL)
			break;
		ab_buf_add(&b, p, (size_t)(best - p));
		ab_buf_add(&b, "[redacted]", 10);
		p = best + n;
	}
	if (p != path && ab_buf_add(&b, p, strlen(p) + 1) == 0)
		fn(b.data, why);
	else if (p != path)
		fn("[redacted]", why);
	else
		fn(path, why);
	ab_buf_free(&b);
}

/* What is left out is named once; what lies under it is passed over,
 * and a directory it leaves empty is not named again. */
static void skip_file(struct xp *x, const char *path, const char *why)
{
	x->left_out++;
	if (x->o->skipped != NULL)
		tell(x, x->o->skipped, path, why);
	if (push(&x->named, &x->nnamed, &x->cap_named, path) < 0)
		x->oom = 1;
}

static void skip(struct xp *x, const char *path, const char *why)
{
	skip_file(x, path, why);
	if (push(&x->refused, &x->nrefused, &x->cap_refused, path) < 0)
		x->oom = 1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int sort_uniq(char **v, size_t *n)
{
	size_t i, j;

	if (*n > 0)
		qsort(v, *n, sizeof *v, cmp_str);
	for (i = j = 0; i < *n; i++)
		if (j > 0 && strcmp(v[j - 1], v[i]) == 0)
			free(v[i]);
		else
			v[j++] = v[i];
	*n = j;
	return 0;
}

static int has(char **v, size_t n, const char *s)
{
	return n > 0 && bsearch(&s, v, n, sizeof *v, cmp_str) != NULL;
}

static int refused_over(const struct xp *x, const char *path)
{
	size_t i;

	for (i = 0; i < x->nrefused; i++)
		if (under(path, x->refused[i]))
			return 1;
	return 0;
}

static int in_list(char *const *v, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(s, v[i]) == 0)
			return 1;
	return 0;
}

/* -- Objects. */

static int add_entry(struct xp *x, const char *path, unsigned mode,
    const git_oid *id, long long size, struct ab_err *err)
{
	git_index_entry ie;

	memset(&ie, 0, sizeof ie);
	ie.path = path;
	ie.mode = mode;
	ie.file_size = (uint32_t)size;
	git_oid_cpy(&ie.id, id);
	if (git_index_add(x->idx, &ie) < 0)
		return ab_git_fail(err, AB_EREFUSED, path);
	return 0;
}

/* Blob ID holds a credential an agent held. */
static int hit(struct xp *x, const git_oid *id, struct ab_err *err)
{
	git_oid *v;

	if (x->nhits == x->cap_hits) {
		x->cap_hits = x->cap_hits ? 2 * x->cap_hits : 16;
		if ((v = realloc(x->hits, x->cap_hits * sizeof *v)) == NULL)
			return ab_fail(err, AB_EENGINE, "out of memory");
		x->hits = v;
	}
	git_oid_cpy(&x->hits[x->nhits++], id);
	return 0;
}

static int holds(const struct xp *x, const char *p, size_t n)
{
	int i;

	for (i = 0; i < x->o->ncreds; i++)
		if (memmem(p, n, x->o->creds[i].p, x->o->creds[i].n) != NULL)
			return 1;
	return 0;
}

/* Bytes of the blob being written, looked through for the credentials. */
static int scan(struct xp *x, const char *p, size_t n)
{
	int i, found = 0;

	for (i = 0; i < x->o->ncreds; i++)
		found |= ab_find_feed(&x->find[i], p, n);
	return found;
}

/* One blob, streamed from the archive into the object store. */
static int blob(struct xp *x, long long size, git_oid *id, struct ab_err *err)
{
	git_odb_stream *st;
	long long left = size;
	long n;
	int rc = -1, i, found = 0;

	for (i = 0; i < x->o->ncreds; i++)
		ab_find_reset(&x->find[i]);

	if (git_odb_open_wstream(&st, x->odb, (git_object_size_t)size,
	    GIT_OBJECT_BLOB) < 0)
		return ab_git_fail(err, AB_EENGINE, "cannot write a blob");
	while ((n = ab_tarread_data(x->tr, x->chunk, CHUNK, err)) > 0) {
		left -= n;
		if (left < 0)
			break;
		if (git_odb_stream_write(st, x->chunk, (size_t)n) < 0) {
			git_odb_stream_free(st);
			return ab_git_fail(err, AB_EENGINE, "cannot write a blob");
		}
		found |= scan(x, x->chunk, (size_t)n);
	}
	/* Each failure said apart: the archive's bytes, or git's store. */
	if (n == 0 && left == 0) {
		if (git_odb_stream_finalize_write(id, st) == 0)
			rc = found ? hit(x, id, err) : 0;
		else
			ab_git_fail(err, AB_EENGINE, "cannot write a blob");
	} else if (n >= 0)
		ab_fail(err, AB_EENGINE, "a file's bytes did not match its "
		    "size: %lld bytes %s", left < 0 ? -left : left, left < 0 ?
		    "more" : "fewer");
	git_odb_stream_free(st);
	return rc;
}

static int file_entry(struct xp *x, const char *path,
    const struct ab_tarread_entry *ent, struct ab_err *err)
{
	git_oid id;
	long long size = ent->size;
	unsigned mode = ent->mode & 0100 ? 0100755 : 0100644;

	if (blob(x, size, &id, err) < 0)
		return -1;
	return add_entry(x, path, mode, &id, size, err);
}

static int link_entry(struct xp *x, const char *path, const char *target,
    struct ab_err *err)
{
	git_oid id;
	char **nt;

	if (git_odb_write(&id, x->odb, target, strlen(target),
	    GIT_OBJECT_BLOB) < 0)
		return ab_git_fail(err, AB_EENGINE, "cannot write a link");
	if (holds(x, target, strlen(target)) && hit(x, &id, err) < 0)
		return -1;
	/* targets[i] is the target of links[i]; both grow together. */
	if (push(&x->links, &x->nlinks, &x->cap_links, path) < 0)
		return ab_fail(err, AB_EENGINE, "out of memory");
	if ((nt = realloc(x->targets, x->cap_links * sizeof *nt)) == NULL) {
		free(x->links[--x->nlinks]);
		return ab_fail(err, AB_EENGINE, "out of memory");
	}
	x->targets = nt;
	if ((nt[x->nlinks - 1] = strdup(target)) == NULL) {
		free(x->links[--x->nlinks]);
		return ab_fail(err, AB_EENGINE, "out of memory");
	}
	return add_entry(x, path, 0120000, &id, (long long)strlen(target), err);
}

/* -- One archive entry. */

/* "work/a/b" -> "a/b"; NULL for the root and /work/.git: those are
 * passed over without a word. */
static const char *rel_path(const char *name, char *buf, size_t cap)
{
	size_t n;

	if (strncmp(name, "work/", 5) != 0)
		return strcmp(name, "work") == 0 ? NULL : name;
	/* Fits: BUF is as large as the archive name it comes from. */
	if (ab_fmt(buf, cap, "%s", name + 5) < 0)
		return NULL;
	n = strlen(buf);
	while (n > 0 && buf[n - 1] == '/')
		buf[--n] = '\0';
	if (n == 0 || strcmp(buf, ".git") == 0 || under(buf, ".git"))
		return NULL;
	return buf;
}

/* Go's JSON makes each byte that is not part of valid UTF-8 into
 * U+FFFD: the engine names an archive's top entry so. */
static void as_engine_names(const char *in, char *out, size_t cap)
{
	size_t i = 0, o = 0, n, len = strlen(in);

	while (i < len && o + 4 < cap) {
		for (n = len - i < 4 ? len - i : 4; n > 0 &&
		    !ab_json_text_ok(in + i, n); n--)
			;
		if (n > 0) {
			memcpy(out + o, in + i, n);
			o += n;
			i += n;
		} else {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	out[o] = '\0';
}

/* The archive of one path names its entries from that path's last
 * component on, as the engine's stat names it: put back as listed. */
static int archive_name(struct xp *x, const char *name, char *full,
    size_t cap, struct ab_err *err)
{
	char seen[4 * AB_PATHCHECK_NAME_MAX + 8];
	size_t n = strcspn(name, "/");

	if (x->prefix == NULL) {
		if (ab_fmt(full, cap, "%s", name) < 0)
			return ab_fail(err, AB_EREFUSED, "the engine's archive "
			    "named an entry longer than a path");
		return 0;
	}
	as_engine_names(x->top, seen, sizeof seen);
	if ((strlen(x->top) != n || strncmp(name, x->top, n) != 0) &&
	    (strlen(seen) != n || strncmp(name, seen, n) != 0))
		return ab_fail(err, AB_EREFUSED, "the engine's archive of one "
		    "entry of /work named another");
	if (ab_fmt(full, cap, "work/%s%s%s", x->prefix, x->top, name + n) < 0)
		return ab_fail(err, AB_EREFUSED, "the engine's archive named "
		    "an entry longer than a path");
	return 0;
}

/* The target of the symlink kept at PATH, or NULL. */
static const char *link_of(const struct xp *x, const char *path)
{
	size_t i;

	for (i = 0; i < x->nlinks; i++)
		if (strcmp(x->links[i], path) == 0)
			return x->targets[i];
	return NULL;
}

/* Another name than PATH of those hard-linked to TARGET is read again
 * alone. */
static int relinked_other(const struct xp *x, const char *target,
    const char *path)
{
	size_t i;

	for (i = 0; i < x->nrelinked; i++)
		if (strcmp(x->relinked[i], target) == 0 &&
		    strcmp(x->relink[i], path) != 0)
			return 1;
	return 0;
}

/* Of names hard-linked together the archive carries the first as a
 * file and the rest as links to it.  When that first one was left out,
 * one other name is read again alone, as a file (relink()); the rest
 * are named. */
static int hard_link(struct xp *x, const char *path,
    const struct ab_tarread_entry *ent, struct ab_err *err)
{
	char full[2 * AB_PATHCHECK_PATH_MAX + 16];
	const git_index_entry *ie;
	const char *target, *link;
	struct ab_err why;

	if (archive_name(x, ent->link, full, sizeof full, err) < 0)
		return -1;
	/* Left out or not, the target's path under /work. */
	target = strncmp(full, "work/", 5) == 0 ? full + 5 : full;
	/* A hard link to a symlink is that symlink again under another
	 * name: judged, and kept, as one where it is (a symlink refused only
	 * later, for going through another, must not leave this name
	 * named "a hard link" with none of its names exported). */
	if ((link = link_of(x, target)) != NULL) {
		if (ab_symlink_check(path, link, &why) < 0)
			return skip(x, path, why.msg), 0;
		return link_entry(x, path, link, err);
	}
	/* In an archive made inside, of chosen paths, a name is read as
	 * it would be alone: the first name's bytes, as a file of its own. */
	if (x->inside_read && (ie = git_index_get_bypath(x->idx, target, 0)) !=
	    NULL)
		return add_entry(x, path, ie->mode, &ie->id, ie->file_size, err);
	if (git_index_get_bypath(x->idx, target, 0) != NULL ||
	    relinked_other(x, target, path) ||
	    (x->late && (x->want == NULL || x->as != NULL)))
		return skip(x, path, "a hard link"), 0;
	if (x->late) {
		if (push(&x->alias, &x->nalias, &x->cap_alias, path) < 0 ||
		    push(&x->aliased, &x->naliased, &x->cap_aliased,
		    target) < 0)
			return ab_fail(err, AB_EENGINE, "out of memory");
		return 0;
	}
	if (push(&x->relink, &x->nrelink, &x->cap_relink, path) < 0 ||
	    push(&x->relinked, &x->nrelinked, &x->cap_relinked, target) < 0)
		return ab_fail(err, AB_EENGINE, "out of memory");
	return 0;
}

static int entry(struct xp *x, const struct ab_tarread_entry *ent,
    struct ab_err *err)
{
	char buf[2 * AB_PATHCHECK_PATH_MAX + 16];
	char full[2 * AB_PATHCHECK_PATH_MAX + 16];
	const char *path;
	struct ab_err why;

	if (archive_name(x, ent->path, full, sizeof full, err) < 0)
		return -1;
	if ((path = rel_path(full, buf, sizeof buf)) == NULL)
		return 0;
	/* Read again as another name (read_aliases): where the first name
	 * lies, even under a refused folder, does not matter. */
	if (x->as != NULL) {
		if (strcmp(path, x->want) != 0)
			return 0;
		path = x->as;
	} else if ((x->want != NULL && strcmp(path, x->want) != 0 &&
	    !under(path, x->want)) || refused_over(x, path))
		return 0;
	if (ab_path_check(path, &why) < 0)
		return skip(x, path, why.msg), 0;
	switch (ent->type) {
	case AB_TR_FILE:
		/* The listing showed none over the size here: the tree moved
		 * under the read, and what it holds now is not known. */
		if (ent->size > x->big_at)
			return ab_fail(err, AB_EREFUSED, "a file over --max-file "
			    "that the listing of /work did not show: /work "
			    "changed while it was read");
		return file_entry(x, path, ent, err);
	case AB_TR_DIR:
		if (push(&x->dirs, &x->ndirs, &x->cap_dirs, path) < 0)
			return ab_fail(err, AB_EENGINE, "out of memory");
		return 0;
	case AB_TR_SYMLINK:
		if (ab_symlink_check(path, ent->link, &why) < 0)
			return skip(x, path, why.msg), 0;
		return link_entry(x, path, ent->link, err);
	case AB_TR_HARDLINK:
		return hard_link(x, path, ent, err);
	default:
		return skip(x, path, "not a file, directory or symlink"), 0;
	}
}

/* -- After the archive: what the tree as a whole decides. */

static int has_under(struct xp *x, const char *dir)
{
	char prefix[2 * AB_PATHCHECK_PATH_MAX + 16];

	/* No index entry is longer than PREFIX holds. */
	if (ab_fmt(prefix, sizeof prefix, "%s/", dir) < 0)
		return 0;
	return git_index_find_prefix(NULL, x->idx, prefix) == 0;
}

/* Symlinks that climb out through another symlink of the tree. */
static void chained_links(struct xp *x)
{
	char **sorted;
	struct ab_err why;
	size_t i;

	if (x->nlinks == 0 ||
	    (sorted = malloc(x->nlinks * sizeof *sorted)) == NULL)
		return;
	memcpy(sorted, x->links, x->nlinks * sizeof *sorted);
	qsort(sorted, x->nlinks, sizeof *sorted, ab_path_cmp);
	for (i = 0; i < x->nlinks; i++)
		if (ab_link_chain_check(x->links[i], x->targets[i],
		    (const char *const *)sorted, x->nlinks, &why) < 0) {
			git_index_remove_bypath(x->idx, x->links[i]);
			skip(x, x->links[i], why.msg);
		}
	free(sorted);
}

/* The commit's gitlinks were seeded as empty directories: carried over
 * unchanged unless the agent put something at or under their path. */
struct gitlinks {
	struct xp *x;
	git_tree *base;
	int failed;
};

static int gitlink_cb(const char *root, const git_tree_entry *te, void *ctx)
{
	struct gitlinks *g = ctx;
	char path[2 * AB_PATHCHECK_PATH_MAX + 8];
	struct ab_err err;

	if (git_tree_entry_filemode(te) != GIT_FILEMODE_COMMIT)
		return 0;
	if (ab_fmt(path, sizeof path, "%s%s", root,
	    git_tree_entry_name(te)) < 0) {
		g->failed = 1;
		return 0;
	}
	if (git_index_get_bypath(g->x->idx, path, 0) != NULL ||
	    has_under(g->x, path))
		return 0;
	if (add_entry(g->x, path, 0160000, git_tree_entry_id(te), 0, &err) < 0)
		g->failed = 1;
	return 0;
}

static int refused_under(const struct xp *x, const char *dir)
{
	size_t i;

	for (i = 0; i < x->nrefused; i++)
		if (under(x->refused[i], dir))
			return 1;
	return 0;
}

/* Git cannot carry an empty directory; one emptied by a refusal was
 * named already. */
/* 1 when something under DIR is among the first N names, which are
 * sorted (account()): DIR is not empty, its entries were told of.  A
 * prefix's names are one run of a sorted list. */
static int named_under(const struct xp *x, size_t n, const char *dir)
{
	char key[2 * AB_PATHCHECK_PATH_MAX + 16];
	size_t lo = 0, hi = n, mid;

	/* No name is longer than KEY holds. */
	if (ab_fmt(key, sizeof key, "%s/", dir) < 0)
		return 0;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (strcmp(x->named[mid], key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && under(x->named[lo], dir);
}

static void empty_dirs(struct xp *x)
{
	const struct ab_work_entry *we;
	size_t i, n, named;

	/* The listing's, not only the archives': a directory read entry by
	 * entry comes in no archive.  Names added below are of directories
	 * already passed, so the sorted part is all a later one looks up. */
	sort_uniq(x->refused, &x->nrefused);
	n = x->nrefused;
	named = x->nnamed;
	for (i = 0; i < x->w.l.n; i++) {
		we = &x->w.l.v[i];
		if (we->kind == AB_WORK_DIR && !has(x->refused, n, we->path) &&
		    !refused_over(x, we->path) && !has_under(x, we->path) &&
		    !refused_under(x, we->path) && !named_under(x, named, we->path) &&
		    git_index_get_bypath(x->idx, we->path, 0) == NULL)
			skip(x, we->path, "an empty directory");
	}
}

/* -- The whole step. */

static int agent_running(struct ab_engine *e, const struct ab_alloc *a,
    const char *sid, struct ab_err *err)
{
	char al[80], st[80];
	const char *labels[4] = { al, st, "org.agentbox.role=agent", NULL };
	struct ab_json j;
	int list, i, n, rc = 0;

	if (ab_fmt_err(err, al, sizeof al, "the allocation's ID",
	    "org.agentbox.alloc=%s", a->id) < 0 || ab_fmt_err(err, st,
	    sizeof st, "the state's ID", "org.agentbox.state=%s", sid) < 0 ||
	    ab_engine_list(e, "containers", labels, &j, &list, err) < 0)
		return -1;
	n = ab_json_count(&j, list);
	for (i = 0; i < n && rc == 0; i++)
		if (!ab_json_str_eq(&j, ab_json_key(&j, ab_json_elem(&j, list,
		    i), "State"), "exited") &&
		    !ab_json_str_eq(&j, ab_json_key(&j, ab_json_elem(&j, list,
		    i), "State"), "created"))
			rc = ab_fail(err, AB_EREFUSED, "an agent container of "
			    "alloc:%s is still running: its tree is not settled",
			    a->id);
	ab_json_free(&j);
	return rc;
}

/* The engine would not give the archive of REL.  An entry it does not
 * have (404) is not carried, and the listing's account names it; one it
 * fails on alone (a symlink whose target is too long for a path: 500)
 * is read from its folder's archive (read_deferred). */
static int not_read(struct xp *x, const char *rel, long status,
    struct ab_err *err)
{
	char why[120];

	if (status == 404 && rel[0] != '\0')
		return 0;
	if (rel[0] != '\0' && x->want == NULL) {
		if (push(&x->defer, &x->ndefer, &x->cap_defer, rel) < 0)
			return ab_fail(err, AB_EENGINE, "out of memory");
		return 0;
	}
	/* Its folder's archive was the last way to read it. */
	if (x->want != NULL && status != 404) {
		/* A reason cut short still reads. */
		(void)ab_fmt(why, sizeof why, "the engine could not archive "
		    "it, alone or with its folder (it said %ld)", status);
		skip(x, x->want, why);
		return 0;
	}
	return ab_fail(err, status == 404 ? AB_EREFUSED : AB_EENGINE,
	    "read /work back: engine said %ld", status);
}

/* One archive of REL under /work ("" for /work itself), all of it or
 * only the entry WANT and what lies under it. */
/* Every entry of the archive open in x->tr, its bytes counted against
 * what is left to read. */
static int read_entries(struct xp *x, struct ab_err *err)
{
	const struct ab_tarread_entry *ent;
	int rc;

	while ((rc = ab_tarread_next(x->tr, &ent, err)) == 1)
		if (ab_cancel_check("ab-export finished", err) < 0 ||
		    entry(x, ent, err) < 0) {
			rc = -1;
			break;
		}
	x->budget -= ab_tarread_got(x->tr);
	return rc;
}

static int read_archive(struct xp *x, struct ab_engine *e,
    const struct ab_alloc *a, const char *rel, const char *want,
    struct ab_err *err)
{
	char prefix[AB_PATHCHECK_PATH_MAX + 2] = "";
	const char *slash = strrchr(rel, '/');
	struct ab_buf url;
	long refused;
	int rc = -1;

	if (slash != NULL && ab_fmt_err(err, prefix, sizeof prefix, "a path "
	    "in /work", "%.*s/", (int)(slash - rel), rel) < 0)
		return -1;
	ab_buf_init(&url, AB_URL_MAX);
	x->prefix = rel[0] != '\0' ? prefix : NULL;
	x->top = slash != NULL ? slash + 1 : rel;
	x->want = want;
	if (ab_buf_addf(&url, "/containers/%s/archive?path=", a->keeper_id) < 0 ||
	    ab_url_escape(&url, "/work") < 0 || (rel[0] != '\0' &&
	    (ab_url_escape(&url, "/") < 0 || ab_url_escape(&url, rel) < 0))) {
		ab_buf_fail(&url, AB_EREFUSED, "the path's URL", err);
		goto out;
	}
	x->archives++;
	if (ab_archive_open_if(&x->tr, e, url.data, x->budget,
	    "read /work back", &refused, err) < 0)
		goto out;
	if (x->tr == NULL) {
		rc = not_read(x, rel, refused, err);
		goto out;
	}
	rc = read_entries(x, err);
	ab_tarread_close(x->tr);
	x->tr = NULL;
out:
	x->prefix = x->top = x->want = x->as = NULL;
	ab_buf_free(&url);
	return rc;
}

/* The directories above a file not read (too big, or kept): read child
 * by child. */
static int split_dirs(struct xp *x)
{
	char *p, *slash;
	char **v;
	size_t i, k;

	for (k = 0; k < 3; k++)
		for (i = 0; i < (k == 2 ? x->nkeep : k ? x->ncrowd : x->nbig);
		    i++) {
			v = k == 2 ? x->keep : k ? x->crowd : x->big;
			for (p = v[i]; (slash = strchr(p, '/')) != NULL;
			    p = slash + 1) {
				*slash = '\0';
				if (push(&x->split, &x->nsplit, &x->cap_split,
				    v[i]) < 0) {
					*slash = '/';
					return -1;
				}
				*slash = '/';
			}
		}
	sort_uniq(x->big, &x->nbig);
	sort_uniq(x->crowd, &x->ncrowd);
	return sort_uniq(x->split, &x->nsplit);
}

/* 1 when PATH is read by an archive of its own, its parent being split
 * ("" is split as soon as anything is not read). */
static int around(const struct xp *x, const char *path)
{
	char parent[AB_PATHCHECK_PATH_MAX + 1];
	const char *slash = strrchr(path, '/');

	if (slash == NULL)
		return x->nbig + x->ncrowd + x->nkeep > 0;
	/* No split folder is longer than PARENT holds. */
	if (ab_fmt(parent, sizeof parent, "%.*s", (int)(slash - path),
	    path) < 0)
		return 0;
	return has(x->split, x->nsplit, parent);
}

static const char *last(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash != NULL ? slash + 1 : path;
}

/* A directory read around whose name the engine cannot carry in a
 * request of its own is split too: its entries are asked for by a path
 * the engine resolves byte for byte.  find lists a directory before
 * what it holds, so one pass sees each parent split first. */
static int split_unnamed(struct xp *x)
{
	const struct ab_work_entry *we;
	size_t i;

	for (i = 0; i < x->w.l.n; i++) {
		we = &x->w.l.v[i];
		if (we->kind != AB_WORK_DIR || !around(x, we->path) ||
		    ab_json_text_ok(last(we->path), strlen(last(we->path))) ||
		    has(x->split, x->nsplit, we->path))
			continue;
		if (push(&x->split, &x->nsplit, &x->cap_split, we->path) < 0)
			return -1;
		sort_uniq(x->split, &x->nsplit);
	}
	return 0;
}

static int cmp_size_desc(const void *a, const void *b)
{
	const struct ab_work_entry *const *p = a, *const *q = b;

	return (*p)->size < (*q)->size ? 1 : (*p)->size > (*q)->size ? -1 : 0;
}

static int cmp_ino(const void *a, const void *b)
{
	const struct ab_work_entry *const *p = a, *const *q = b;

	return (*p)->ino < (*q)->ino ? -1 : (*p)->ino > (*q)->ino;
}

/* The bytes of files not read for their own size, a file of several
 * links counted once: the archive carries its bytes once. */
static long long sum_sizes(const struct ab_work_entry **v, size_t n)
{
	const struct ab_work_entry **l;
	long long sum = 0;
	size_t i, k = 0;

	if ((l = malloc((n + 1) * sizeof *l)) == NULL)
		return -1;
	for (i = 0; i < n; i++)
		if (v[i]->ino != 0)
			l[k++] = v[i];
		else
			sum += v[i]->size;
	if (k > 0)
		qsort(l, k, sizeof *l, cmp_ino);
	for (i = 0; i < k; i++)
		if (i == 0 || l[i]->ino != l[i - 1]->ino)
			sum += l[i]->size;
	free(l);
	return sum;
}

/* Files under the size whose bytes together pass what /work can hold
 * are holes too: the largest are left out, a size at a time, until the
 * rest fits. */
static int crowd_out(struct xp *x, const struct ab_alloc *a)
{
	const struct ab_work_entry **v;
	long long fs = a->vol[AB_VOL_TASK].bytes, sum;
	size_t i, n = 0, j;
	int rc = -1;

	if ((v = malloc((x->w.l.n + 1) * sizeof *v)) == NULL)
		return -1;
	for (i = 0; i < x->w.l.n; i++)
		if (x->w.l.v[i].kind == AB_WORK_FILE && x->w.l.v[i].size <= x->big_at)
			v[n++] = &x->w.l.v[i];
	qsort(v, n, sizeof *v, cmp_size_desc);
	for (i = 0; i < n; i = j) {
		if ((sum = sum_sizes(v + i, n - i)) < 0)
			goto out;
		if (sum <= fs)
			break;
		for (j = i; j < n && v[j]->size == v[i]->size; j++)
			if (push(&x->crowd, &x->ncrowd, &x->cap_crowd,
			    v[j]->path) < 0)
				goto out;
	}
	rc = 0;
out:
	free(v);
	return rc;
}

/* Whether an entry is read as an archive of its own: its parent holds a
 * file not read, and it is neither such a file nor such a parent. */
static int read_alone(const struct xp *x, const struct ab_work_entry *we)
{
	return we->kind != AB_WORK_SOCKET && around(x, we->path) &&
	    !has(x->split, x->nsplit, we->path) &&
	    !has(x->big, x->nbig, we->path) &&
	    !has(x->crowd, x->ncrowd, we->path) &&
	    !has(x->keep, x->nkeep, we->path) &&
	    !refused_over(x, we->path) &&
	    !in_list(x->refused, x->nrefused, we->path);
}

/* -- What the seed wrote and the agent never touched. */

/* Costs counted in files of the whole archive, each some 0.05 ms on an
 * engine of fuse-overlayfs (bench/export-change.sh, bench/RESULTS.md):
 * an archive request alone some 43 ms, ALONE_COST; an archive made
 * inside (worktar.h: a container made, started and removed, as the
 * listing's) some 200-300 ms, INSIDE_COST; and the whole archive one a
 * file and one for each KEPT_BYTES of the files it would read that are
 * kept otherwise.  Up to ALONE_MIN entries are asked for alone; more are
 * archived inside; either only when the whole archive costs more. */
#define ALONE_MIN 4
#define ALONE_COST 512
#define INSIDE_COST 4096
#define KEPT_BYTES (16 * 1024)

static int cmp_seed(const void *a, const void *b)
{
	const struct seedfile *p = a, *q = b;

	return strcmp(p->path, q->path);
}

static int seed_cb(const char *root, const git_tree_entry *te, void *ctx)
{
	struct xp *x = ctx;
	git_filemode_t m = git_tree_entry_filemode(te);
	const char *name = git_tree_entry_name(te);
	struct seedfile *v;
	size_t n;

	if (m != GIT_FILEMODE_BLOB && m != GIT_FILEMODE_BLOB_EXECUTABLE)
		return 0;
	if (x->nseed == x->cap_seed) {
		x->cap_seed = x->cap_seed ? 2 * x->cap_seed : 1024;
		if ((v = realloc(x->seed, x->cap_seed * sizeof *v)) == NULL)
			return GIT_EUSER;
		x->seed = v;
	}
	n = strlen(root) + strlen(name) + 1;
	if ((x->seed[x->nseed].path = malloc(n)) == NULL)
		return GIT_EUSER;
	if (ab_fmt(x->seed[x->nseed].path, n, "%s%s", root, name) < 0) {
		free(x->seed[x->nseed].path);
		return GIT_EUSER;
	}
	git_oid_cpy(&x->seed[x->nseed].id, git_tree_entry_id(te));
	x->seed[x->nseed++].mode = m;
	return 0;
}

static const struct seedfile *seed_file(const struct xp *x, const char *path)
{
	struct seedfile key = { (char *)path, { { 0 } }, 0 };

	return bsearch(&key, x->seed, x->nseed, sizeof key, cmp_seed);
}

/* The listing's directories by path, each with whether it and every
 * directory above it up to /work are older than the mark. */
struct olddirs {
	const struct ab_work_entry **v;
	char *old;
	size_t n;
};

static int cmp_path(const void *a, const void *b)
{
	const struct ab_work_entry *const *p = a, *const *q = b;

	return strcmp((*p)->path, (*q)->path);
}

/* Where the directory named by the first LEN bytes of PATH is, or -1. */
static long find_dir(const struct olddirs *d, const char *path, size_t len)
{
	size_t lo = 0, hi = d->n, mid;
	int c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = strncmp(d->v[mid]->path, path, len);
		if (c == 0 && d->v[mid]->path[len] != '\0')
			c = 1;
		if (c == 0)
			return (long)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* /work itself is the volume's root, which nothing can move. */
static int parent_old(const struct olddirs *d, const char *path)
{
	const char *slash = strrchr(path, '/');
	long i;

	if (slash == NULL)
		return 1;
	i = find_dir(d, path, (size_t)(slash - path));
	return i >= 0 && d->old[i];
}

static int old_dirs(const struct ab_listing *l, struct olddirs *d)
{
	const struct ab_work_entry *we;
	size_t i;
	long k;

	memset(d, 0, sizeof *d);
	d->v = malloc((l->n + 1) * sizeof *d->v);
	d->old = calloc(l->n + 1, 1);
	if (d->v == NULL || d->old == NULL)
		return -1;
	for (i = 0; i < l->n; i++)
		if (l->v[i].kind == AB_WORK_DIR)
			d->v[d->n++] = &l->v[i];
	qsort(d->v, d->n, sizeof *d->v, cmp_path);
	/* find names a directory before what it holds. */
	for (i = 0; i < l->n; i++) {
		we = &l->v[i];
		if (we->kind == AB_WORK_DIR &&
		    (k = find_dir(d, we->path, strlen(we->path))) >= 0)
			d->old[k] = ab_ctime_cmp(we->ctime, l->mark) < 0 &&
			    parent_old(d, we->path);
	}
	return 0;
}

/* A file is the seed's, untouched, when it, and every directory above
 * it, changed last before the mark: its bytes, its mode and its name
 * are then as the seed left them, for each of those is a change of
 * some inode on its path (a write, chmod, rename, link, new file), and
 * the kernel sets that inode's change time then, to the clock, which
 * the agent can set neither.  Same-tick changes share the mark's time
 * and are read (git's rule for racily clean entries).  Its size and
 * mode are checked against the commit's besides, and a file of more
 * than one link is read. */
static int unchanged(const struct xp *x, const struct olddirs *d,
    const struct ab_work_entry *we)
{
	const struct seedfile *f;
	git_object_t type;
	size_t len;

	if (we->kind != AB_WORK_FILE || we->ino != 0 || we->size > x->big_at ||
	    ab_ctime_cmp(we->ctime, x->w.l.mark) >= 0 ||
	    !parent_old(d, we->path) || (f = seed_file(x, we->path)) == NULL ||
	    f->mode != ((we->perm & 0100) ? GIT_FILEMODE_BLOB_EXECUTABLE :
	    GIT_FILEMODE_BLOB))
		return 0;
	return git_odb_read_header(&len, &type, x->odb, &f->id) == 0 &&
	    type == GIT_OBJECT_BLOB && (long long)len == we->size;
}

static int keep_unchanged(struct xp *x, git_tree *base, struct ab_err *err)
{
	struct olddirs d;
	size_t i;
	int rc;

	/* Seeded before marks: every file is read. */
	if (!x->w.l.marked || x->o->read == AB_READ_ALL)
		return 0;
	/* seed_cb fails only for memory; anything else is libgit2's. */
	if ((rc = git_tree_walk(base, GIT_TREEWALK_PRE, seed_cb, x)) < 0)
		return rc == GIT_EUSER ? ab_fail(err, AB_EENGINE, "out of memory") :
		    ab_git_read_fail(err, rc, "read the commit's tree");
	rc = -1;
	qsort(x->seed, x->nseed, sizeof *x->seed, cmp_seed);
	if (old_dirs(&x->w.l, &d) < 0)
		goto out;
	for (i = 0; i < x->w.l.n; i++)
		if (!has(x->crowd, x->ncrowd, x->w.l.v[i].path) &&
		    unchanged(x, &d, &x->w.l.v[i]) &&
		    push(&x->keep, &x->nkeep, &x->cap_keep,
		    x->w.l.v[i].path) < 0)
			goto out;
	rc = sort_uniq(x->keep, &x->nkeep);
out:
	free(d.v);
	free(d.old);
	return rc < 0 ? ab_fail(err, AB_EENGINE, "out of memory") : 0;
}

/* The whole archive costs less than reading what changed alone. */
static int whole_cheaper(const struct xp *x)
{
	const struct ab_work_entry *we;
	long long whole = 0, alone = 0;
	size_t i;

	for (i = 0; i < x->w.l.n; i++) {
		we = &x->w.l.v[i];
		if (we->kind == AB_WORK_FILE) {
			whole++;
			if (has(x->keep, x->nkeep, we->path))
				whole += we->size / KEPT_BYTES;
		}
		alone += read_alone(x, we);
	}
	return (alone > ALONE_MIN ? INSIDE_COST : alone * ALONE_COST) > whole;
}

/* The kept files' entries, as the commit has them. */
static int add_kept(struct xp *x, struct ab_err *err)
{
	const struct seedfile *f;
	size_t i;

	for (i = 0; i < x->nkeep; i++)
		if ((f = seed_file(x, x->keep[i])) == NULL ||
		    add_entry(x, f->path, f->mode, &f->id, 0, err) < 0)
			return f == NULL ? ab_fail(err, AB_EENGINE, "a kept "
			    "file is not the commit's: %s", x->keep[i]) : -1;
	return 0;
}

/* Sockets are named, files over the size kept aside, then those too
 * many bytes of holes together, then the seed's untouched files. */
static int first_pass(struct xp *x, const struct ab_alloc *a, git_tree *base,
    struct ab_err *err)
{
	const struct ab_work_entry *we;
	size_t i;

	for (i = 0; i < x->w.l.n; i++) {
		we = &x->w.l.v[i];
		if (we->kind == AB_WORK_SOCKET)
			skip(x, we->path, "a socket: the engine's archive cannot "
			    "carry it");
		else if (we->kind == AB_WORK_FILE && we->size > x->big_at &&
		    push(&x->big, &x->nbig, &x->cap_big, we->path) < 0)
			return ab_fail(err, AB_EENGINE, "out of memory");
	}
	if (crowd_out(x, a) < 0)
		return ab_fail(err, AB_EENGINE, "out of memory");
	if (keep_unchanged(x, base, err) < 0)
		return -1;
	if (split_dirs(x) < 0 || split_unnamed(x) < 0)
		return ab_fail(err, AB_EENGINE, "out of memory");
	/* Around a file not read, /work is read entry by entry anyway. */
	if (x->nkeep == 0 || x->nbig + x->ncrowd > 0 ||
	    x->o->read == AB_READ_CHANGED || !whole_cheaper(x))
		return 0;
	free_list(x->keep, x->nkeep);
	free_list(x->split, x->nsplit);
	x->keep = x->split = NULL;
	x->nkeep = x->cap_keep = x->nsplit = x->cap_split = 0;
	if (split_dirs(x) < 0 || split_unnamed(x) < 0)
		return ab_fail(err, AB_EENGINE, "out of memory");
	return 0;
}

/* Files over the task filesystem's byte ceiling cannot hold that many
 * bytes: they are holes, whatever --max-file says. */
static long long big_size(const struct xp *x, const struct ab_alloc *a)
{
	long long fs = a->vol[AB_VOL_TASK].bytes;

	return x->o->max_file < fs ? x->o->max_file : fs;
}

/* A directory above a big file that fails the path checks is refused
 * whole, as the archive of /work would have it. */
static void name_big(struct xp *x, const struct ab_alloc *a)
{
	struct ab_err why;
	char what[160], crowd[200], size[32];
	size_t i;

	for (i = 0; i < x->nsplit; i++)
		if (!refused_over(x, x->split[i]) &&
		    ab_path_check(x->split[i], &why) < 0)
			skip(x, x->split[i], why.msg);
	ab_human_size(x->big_at, size, sizeof size);
	/* Reasons: one cut short still reads. */
	if (x->big_at == x->o->max_file)
		(void)ab_fmt(what, sizeof what, "larger than --max-file (%s): "
		    "its bytes were not read", size);
	else
		(void)ab_fmt(what, sizeof what, "larger than /work can hold "
		    "(%s): holes, its bytes were not read", size);
	ab_human_size(a->vol[AB_VOL_TASK].bytes, size, sizeof size);
	(void)ab_fmt(crowd, sizeof crowd, "among the largest files, which "
	    "together pass what /work can hold (%s): holes, its bytes were "
	    "not read", size);
	for (i = 0; i < x->nbig; i++)
		if (!refused_over(x, x->big[i]))
			skip_file(x, x->big[i], what);
	for (i = 0; i < x->ncrowd; i++)
		if (!refused_over(x, x->crowd[i]))
			skip_file(x, x->crowd[i], crowd);
}

static int accounted(struct xp *x, const struct ab_work_entry *we);

/* PATH or a folder above it is in V (sorted). */
static int at_or_under(char **v, size_t n, const char *path)
{
	char buf[AB_PATHCHECK_PATH_MAX + 1];
	char *slash;

	if (has(v, n, path))
		return 1;
	/* Too long to look at: read around, as if under. */
	if (ab_fmt(buf, sizeof buf, "%s", path) < 0)
		return 1;
	while ((slash = strrchr(buf, '/')) != NULL) {
		*slash = '\0';
		if (has(v, n, buf))
			return 1;
	}
	return 0;
}

/* One archive made inside of the N paths at V (worktar.h), read as the
 * engine's archive of /work would be. */
static int read_inside(struct xp *x, struct ab_state *s,
    struct ab_engine *e, const struct ab_alloc *a, char *const *v, size_t n,
    struct ab_err *err)
{
	struct ab_worktar w;
	struct ab_err cerr;
	int rc;

	if (ab_worktar_open(&w, s, e, a, v, n, x->budget, err) < 0)
		return -1;
	x->inside++;
	x->tr = w.tr;
	x->inside_read = 1;
	rc = read_entries(x, err);
	x->inside_read = 0;
	x->tr = NULL;
	if (ab_worktar_close(&w, &cerr) < 0 && rc == 0) {
		*err = cerr;
		rc = -1;
	}
	return rc;
}

/* The N paths at V (sorted), in archives made inside of at most
 * AB_WORKTAR_ARGS bytes of paths each; then what those did not carry
 * (a file the agent made unreadable to the container's uid, say), an
 * entry at a time from the engine, which reads as root. */
static int read_batch(struct xp *x, struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, char **v, size_t n, struct ab_err *err)
{
	const struct ab_work_entry *we;
	size_t i, j, bytes;

	for (i = 0; i < n; i = j) {
		for (j = i, bytes = 0; j < n && (j == i || bytes +
		    strlen(v[j]) + 6 <= AB_WORKTAR_ARGS); j++)
			bytes += strlen(v[j]) + 6;
		if (read_inside(x, s, e, a, v + i, j - i, err) < 0)
			return -1;
	}
	sort_uniq(x->named, &x->nnamed);
	sort_uniq(x->dirs, &x->ndirs);
	/* As read_around() would have asked for each; a hard link already
	 * waiting to be read again (relink()) is left to that. */
	for (i = 0; i < x->w.l.n; i++) {
		we = &x->w.l.v[i];
		if (we->kind == AB_WORK_SOCKET || !at_or_under(v, n, we->path) ||
		    accounted(x, we) || in_list(x->relink, x->nrelink, we->path))
			continue;
		if (!ab_json_text_ok(last(we->path), strlen(last(we->path)))) {
			if (push(&x->defer, &x->ndefer, &x->cap_defer,
			    we->path) < 0)
				return ab_fail(err, AB_EENGINE, "out of memory");
		} else if (read_archive(x, e, a, we->path, NULL, err) < 0)
			return -1;
	}
	return 0;
}

/* Every path whose parent holds a file not read, but those files and
 * the parents themselves, is read on its own: more than ALONE_MIN of
 * them by archives made inside, fewer by a request each.  One whose
 * name the engine would rename waits for its folder's archive; one
 * whose path the container's command could not carry (not UTF-8 above
 * its last name) is asked for alone. */
static int read_around(struct xp *x, struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, struct ab_err *err)
{
	const struct ab_work_entry *we;
	char **v = NULL;
	size_t i, n = 0, cap = 0;
	int rc = 0;

	for (i = 0; rc == 0 && i < x->w.l.n; i++) {
		we = &x->w.l.v[i];
		if (!read_alone(x, we))
			continue;
		if (!ab_json_text_ok(last(we->path), strlen(last(we->path))))
			rc = push(&x->defer, &x->ndefer, &x->cap_defer,
			    we->path);
		else if (ab_json_text_ok(we->path, strlen(we->path)))
			rc = push(&v, &n, &cap, we->path);
		else
			rc = read_archive(x, e, a, we->path, NULL, err) < 0 ?
			    -2 : 0;
	}
	if (rc == -1)
		rc = ab_fail(err, AB_EENGINE, "out of memory");
	sort_uniq(v, &n);
	if (rc == 0 && n > ALONE_MIN)
		rc = read_batch(x, s, e, a, v, n, err);
	else
		for (i = 0; rc == 0 && i < n; i++)
			rc = read_archive(x, e, a, v[i], NULL, err);
	free_list(v, n);
	return rc < 0 ? -1 : 0;
}

/* What the archive of DIR costs: every file's bytes under it, and
 * a header each entry. */
static long long cost_of(const struct xp *x, const struct ab_alloc *a,
    const char *dir)
{
	/* The archive of /work carries /work/.git too. */
	long long sum = dir[0] == '\0' ? a->vol[AB_VOL_GIT].bytes : 0;
	size_t i;

	for (i = 0; i < x->w.l.n; i++)
		if (dir[0] == '\0' || under(x->w.l.v[i].path, dir))
			sum += x->w.l.v[i].size + TAR_PER_ENTRY;
	return sum;
}

/* PATH is not read: its folder's archive costs more than is left. */
static void too_costly(struct xp *x, const char *path)
{
	char size[32], why[200];
	const char *name = last(path);

	ab_human_size(x->budget, size, sizeof size);
	/* A reason cut short still reads. */
	(void)ab_fmt(why, sizeof why, "%s, and that folder holds more than "
	    "is left to read (%s)", ab_json_text_ok(name, strlen(name)) ?
	    "the engine could not archive it alone" : "its name is not "
	    "UTF-8, which the engine's archive carries only with its folder",
	    size);
	skip(x, path, why);
}

/* The hard links that the archive of DIR carried as links to names it
 * was not read for (hard_link()): each first name read again from that
 * archive, kept as the link's name. */
static int read_aliases(struct xp *x, struct ab_engine *e,
    const struct ab_alloc *a, const char *dir, struct ab_err *err)
{
	size_t i;
	int rc = 0;

	for (i = 0; rc == 0 && i < x->nalias; i++) {
		if (cost_of(x, a, dir) > x->budget) {
			too_costly(x, x->alias[i]);
			continue;
		}
		x->as = x->alias[i];
		rc = read_archive(x, e, a, dir, x->aliased[i], err);
	}
	free_list(x->alias, x->nalias);
	free_list(x->aliased, x->naliased);
	x->alias = x->aliased = NULL;
	x->nalias = x->naliased = x->cap_alias = x->cap_aliased = 0;
	return rc;
}

/* The entries whose names only their folder's archive carries whole:
 * that archive, read for them alone, when it fits what is left to
 * read; named otherwise. */
static int read_deferred(struct xp *x, struct ab_engine *e,
    const struct ab_alloc *a, struct ab_err *err)
{
	char dir[AB_PATHCHECK_PATH_MAX + 1];
	const char *slash;
	size_t i;

	sort_uniq(x->defer, &x->ndefer);
	for (i = 0; i < x->ndefer; i++) {
		slash = strrchr(x->defer[i], '/');
		if (ab_fmt_err(err, dir, sizeof dir, "a path in /work", "%.*s",
		    slash != NULL ? (int)(slash - x->defer[i]) : 0,
		    x->defer[i]) < 0)
			return -1;
		if (cost_of(x, a, dir) > x->budget)
			too_costly(x, x->defer[i]);
		else if (read_archive(x, e, a, dir, x->defer[i], err) < 0 ||
		    read_aliases(x, e, a, dir, err) < 0)
			return -1;
	}
	return 0;
}

static void unarchivable(void *ctx, const char *path, const char *why)
{
	skip(ctx, path, why);
}

/* Each hard link hard_link() kept for it, read alone as a file. */
static int relink(struct xp *x, struct ab_engine *e, const struct ab_alloc *a,
    struct ab_err *err)
{
	const char *p;
	size_t i;

	x->late = 1;
	for (i = 0; i < x->nrelink; i++) {
		p = x->relink[i];
		if (!ab_json_text_ok(last(p), strlen(last(p)))) {
			if (push(&x->defer, &x->ndefer, &x->cap_defer, p) < 0)
				return ab_fail(err, AB_EENGINE, "out of memory");
		} else if (read_archive(x, e, a, p, NULL, err) < 0)
			return -1;
	}
	return 0;
}

static int read_work(struct xp *x, struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, git_tree *base, struct ab_err *err)
{
	x->budget = a->vol[AB_VOL_TASK].bytes + a->vol[AB_VOL_GIT].bytes +
	    (a->vol[AB_VOL_TASK].inodes + a->vol[AB_VOL_GIT].inodes) *
	    TAR_PER_ENTRY + (1LL << 20);
	x->big_at = big_size(x, a);
	if (ab_worklist_open(&x->w, s, e, a, unarchivable, x, err) < 0 ||
	    first_pass(x, a, base, err) < 0)
		return -1;
	if (x->nbig + x->ncrowd + x->nkeep == 0) {
		if (read_archive(x, e, a, "", NULL, err) < 0)
			return -1;
	} else {
		name_big(x, a);
		if (read_around(x, s, e, a, err) < 0)
			return -1;
	}
	if (relink(x, e, a, err) < 0 || read_deferred(x, e, a, err) < 0)
		return -1;
	return add_kept(x, err);
}

/* -- Every entry of the listing accounted for. */

static int accounted(struct xp *x, const struct ab_work_entry *we)
{
	if (refused_over(x, we->path) || has(x->named, x->nnamed, we->path))
		return 1;
	if (we->kind == AB_WORK_DIR)
		return has(x->split, x->nsplit, we->path) ||
		    has(x->dirs, x->ndirs, we->path);
	return git_index_get_bypath(x->idx, we->path, 0) != NULL;
}

/* An entry listed that no archive carried is named, never taken for a
 * deletion: the commit's version stands (restore_named). */
static int account(struct xp *x, struct ab_err *err)
{
	const char **lost;
	size_t i, n = 0;

	sort_uniq(x->named, &x->nnamed);
	sort_uniq(x->dirs, &x->ndirs);
	if ((lost = malloc((x->w.l.n + 1) * sizeof *lost)) == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	for (i = 0; i < x->w.l.n; i++)
		if (!accounted(x, &x->w.l.v[i]))
			lost[n++] = x->w.l.v[i].path;
	for (i = 0; i < n; i++)
		skip(x, lost[i], "listed in /work, but the engine's archive did "
		    "not carry it");
	free(lost);
	sort_uniq(x->named, &x->nnamed);
	return x->oom ? ab_fail(err, AB_EENGINE, "out of memory") : 0;
}

struct restore {
	struct xp *x;
	const char *at;
	int failed;
};

static int restore_one(struct xp *x, const char *path,
    const git_tree_entry *te)
{
	git_filemode_t m = git_tree_entry_filemode(te);
	struct ab_err err;

	if (m == GIT_FILEMODE_TREE ||
	    git_index_get_bypath(x->idx, path, 0) != NULL || has_under(x, path))
		return 0;
	return add_entry(x, path, m, git_tree_entry_id(te), 0, &err);
}

static int restore_cb(const char *root, const git_tree_entry *te, void *ctx)
{
	struct restore *r = ctx;
	char path[3 * AB_PATHCHECK_PATH_MAX + 8];

	if (ab_fmt(path, sizeof path, "%s/%s%s", r->at, root,
	    git_tree_entry_name(te)) < 0 || restore_one(r->x, path, te) < 0)
		r->failed = 1;
	return 0;
}

/* What is named left out stays as the commit has it: the patch and the
 * bundle change nothing at or under its path. */
static int restore_named(struct xp *x, git_tree *base, struct ab_err *err)
{
	struct restore r = { x, NULL, 0 };
	git_tree_entry *te;
	git_tree *sub;
	size_t i;

	for (i = 0; i < x->nnamed && !r.failed; i++) {
		if (git_tree_entry_bypath(&te, base, x->named[i]) < 0)
			continue;
		r.at = x->named[i];
		if (git_tree_entry_type(te) != GIT_OBJECT_TREE) {
			if (restore_one(x, x->named[i], te) < 0)
				r.failed = 1;
		} else if (git_tree_lookup(&sub, x->repo,
		    git_tree_entry_id(te)) < 0) {
			r.failed = 1;
		} else {
			if (git_tree_walk(sub, GIT_TREEWALK_PRE, restore_cb,
			    &r) < 0)
				r.failed = 1;
			git_tree_free(sub);
		}
		git_tree_entry_free(te);
	}
	return r.failed ? ab_git_fail(err, AB_EENGINE, "cannot keep the "
	    "commit's version of what was left out") : 0;
}

static int is_hit(const struct xp *x, const git_oid *id)
{
	size_t i;

	for (i = 0; i < x->nhits; i++)
		if (git_oid_equal(&x->hits[i], id))
			return 1;
	return 0;
}

/* Each entry exported whose name or bytes hold a credential an agent
 * held: told, since a patch cannot be masked without changing the work. */
static void told_held(struct xp *x)
{
	const git_index_entry *ie;
	size_t i, n = git_index_entrycount(x->idx);

	for (i = 0; i < n && x->o->ncreds > 0; i++) {
		ie = git_index_get_byindex(x->idx, i);
		if (holds(x, ie->path, strlen(ie->path))) {
			tell(x, x->o->held, ie->path, "its name");
			x->held++;
		} else if (is_hit(x, &ie->id)) {
			tell(x, x->o->held, ie->path, ie->mode == 0120000 ?
			    "its target" : "its bytes");
			x->held++;
		}
	}
}

static int finish(struct xp *x, git_commit *base, char *tree_hex,
    struct ab_err *err)
{
	struct gitlinks g = { x, NULL, 0 };
	git_tree *tree = NULL;
	git_oid tid;
	int rc = -1;

	chained_links(x);
	if (git_commit_tree(&g.base, base) < 0)
		return ab_git_fail(err, AB_EENGINE, "cannot read the commit");
	if (account(x, err) < 0 || restore_named(x, g.base, err) < 0)
		goto out;
	if (git_tree_walk(g.base, GIT_TREEWALK_PRE, gitlink_cb, &g) < 0 ||
	    g.failed) {
		ab_git_fail(err, AB_EENGINE, "cannot carry the gitlinks over");
		goto out;
	}
	empty_dirs(x);
	told_held(x);
	if (x->o->strict && x->held > 0) {
		ab_fail(err, AB_EREFUSED, "--strict: %d entr%s the credential "
		    "an agent held", x->held, x->held == 1 ? "y holds" :
		    "ies hold");
		goto out;
	}
	if (x->o->strict && x->left_out > 0) {
		ab_fail(err, AB_EREFUSED, "--strict: %d entr%s left out",
		    x->left_out, x->left_out == 1 ? "y was" : "ies were");
		goto out;
	}
	if (git_index_write_tree_to(&tid, x->idx, x->repo) < 0 ||
	    git_tree_lookup(&tree, x->repo, &tid) < 0) {
		ab_git_fail(err, AB_EENGINE, "cannot build the tree");
		goto out;
	}
	git_oid_tostr(tree_hex, GIT_OID_HEXSZ + 1, &tid);
	rc = x->o->bundle ? ab_change_bundle(x->repo, base, tree,
	    x->o->message, x->o->fd, err) :
	    ab_change_patch(x->repo, g.base, tree, x->o->fd, err);
out:
	git_tree_free(tree);
	git_tree_free(g.base);
	return rc;
}

static void stats(const struct xp *x, struct ab_export_stats *st)
{
	size_t i;

	memset(st, 0, sizeof *st);
	for (i = 0; i < x->w.l.n; i++)
		st->files += x->w.l.v[i].kind == AB_WORK_FILE;
	st->unchanged = (long long)x->nkeep;
	st->archives = x->archives;
	st->inside = x->inside;
	st->marked = x->w.l.marked;
}

static void xp_free(struct xp *x)
{
	int i;

	for (i = 0; i < x->o->ncreds; i++)
		ab_find_free(&x->find[i]);
	free(x->hits);
	ab_tarread_close(x->tr);
	git_index_free(x->idx);
	git_odb_free(x->odb);
	git_repository_free(x->repo);
	free(x->chunk);
	free_list(x->dirs, x->ndirs);
	free_list(x->refused, x->nrefused);
	free_list(x->links, x->nlinks);
	free_list(x->targets, x->nlinks);
	free_list(x->named, x->nnamed);
	free_list(x->big, x->nbig);
	free_list(x->crowd, x->ncrowd);
	free_list(x->split, x->nsplit);
	free_list(x->defer, x->ndefer);
	free_list(x->relink, x->nrelink);
	free_list(x->relinked, x->nrelinked);
	free_list(x->alias, x->nalias);
	free_list(x->aliased, x->naliased);
	free_list(x->keep, x->nkeep);
	while (x->nseed > 0)
		free(x->seed[--x->nseed].path);
	free(x->seed);
	ab_worklist_close(&x->w);
}

int ab_export(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_export_opts *o, char *tree,
    struct ab_err *err)
{
	char stage[4200];
	git_commit *base = NULL;
	git_tree *btree = NULL;
	git_oid cid;
	struct xp x;
	int rc = -1, i;

	memset(&x, 0, sizeof x);
	x.o = o;
	if (o->ncreds > AB_EXPORT_CREDS)
		return ab_fail(err, AB_EUSAGE, "more than %d credentials to "
		    "look for", AB_EXPORT_CREDS);
	if (strcmp(a->status, "seeded") != 0)
		return ab_fail(err, AB_EREFUSED, "alloc:%s was never seeded",
		    a->id);
	if (ab_stage_path(s, a, stage, sizeof stage) < 0 ||
	    ab_stage_check(stage, a, err) < 0 ||
	    agent_running(e, a, s->sid, err) < 0 ||
	    ab_keeper_ready(s, e, a, err) < 0 || ab_git_start(err) < 0)
		return -1;
	if ((x.chunk = malloc(CHUNK)) == NULL) {
		ab_fail(err, AB_EENGINE, "out of memory");
		goto out;
	}
	for (i = 0; i < o->ncreds && i < AB_EXPORT_CREDS; i++)
		if (ab_find_init(&x.find[i], o->creds[i].p,
		    o->creds[i].n) < 0) {
			ab_fail(err, AB_EENGINE, "out of memory");
			goto out;
		}
	if (git_repository_open_bare(&x.repo, stage) < 0 ||
	    git_repository_odb(&x.odb, x.repo) < 0 ||
	    git_index_new(&x.idx) < 0 || git_oid_fromstr(&cid, a->commit) < 0 ||
	    git_commit_lookup(&base, x.repo, &cid) < 0) {
		ab_git_fail(err, AB_EENGINE, "cannot open the staging clone");
		goto out;
	}
	if (git_commit_tree(&btree, base) < 0) {
		ab_git_fail(err, AB_EENGINE, "cannot read the commit");
		goto out;
	}
	if (read_work(&x, s, e, a, btree, err) == 0)
		rc = finish(&x, base, tree, err);
	if (rc == 0 && o->stats != NULL)
		stats(&x, o->stats);
out:
	git_tree_free(btree);
	git_commit_free(base);
	xp_free(&x);
	return rc;
}

/* -- The result record gains the tree. */

static int latest_result(struct ab_state *s, const char *alloc,
    struct ab_handle *h, struct ab_err *err)
{
	char (*ids)[AB_ID_LEN + 1];
	long long best = -1, end;
	struct ab_handle c;
	struct ab_json j;
	size_t i, n;

	if (ab_record_list(s, "result", &ids, &n, err) < 0)
		return -1;
	if (ab_fmt_err(err, c.kind, sizeof c.kind, "a kind", "result") < 0) {
		free(ids);
		return -1;
	}
	for (i = 0; i < n; i++) {
		memcpy(c.id, ids[i], sizeof c.id);
		if (ab_record_read(s, &c, &j, err) < 0)
			continue;
		if (ab_json_str_eq(&j, ab_json_key(&j, 0, "alloc"), alloc) &&
		    ab_json_int(&j, ab_json_key(&j, 0, "ended_ms"), &end) == 0 &&
		    end > best) {
			best = end;
			*h = c;
		}
		ab_json_free(&j);
	}
	free(ids);
	return best >= 0 ? 1 : 0;
}

int ab_export_note(struct ab_state *s, const char *alloc, const char *tree,
    const struct ab_export_stats *st, struct ab_err *err)
{
	struct ab_handle h;
	struct ab_json j;
	struct ab_buf b;
	struct ab_jw w;
	const char *p;
	char *key;
	size_t n;
	int i, k, rc;

	if ((rc = latest_result(s, alloc, &h, err)) <= 0)
		return rc;
	if (ab_record_read(s, &h, &j, err) < 0)
		return -1;
	ab_buf_init(&b, AB_RECORD_MAX);	/* what a record may be read back */
	ab_jw_init(&w, &b);
	ab_jw_obj(&w);
	for (i = 0; i < ab_json_count(&j, 0); i++) {
		k = ab_json_member(&j, 0, i);
		if (ab_json_str_eq(&j, k, "export_tree") ||
		    ab_json_str_eq(&j, k, "export_read") ||
		    (key = ab_json_str(&j, k)) == NULL)
			continue;
		ab_jw_key(&w, key);
		free(key);
		ab_json_span(&j, k + 1, &p, &n);
		ab_jw_raw(&w, p, n);
	}
	ab_jw_kstr(&w, "export_tree", tree);
	ab_jw_key(&w, "export_read");
	ab_jw_obj(&w);
	ab_jw_kint(&w, "files", st->files);
	ab_jw_kint(&w, "unchanged", st->unchanged);
	ab_jw_kint(&w, "archives", st->archives);
	ab_jw_kint(&w, "archives_inside", st->inside);
	ab_jw_kbool(&w, "since_seed", st->marked);
	ab_jw_obj_end(&w);
	ab_jw_obj_end(&w);
	rc = ab_jw_done(&w) < 0 ? ab_buf_fail(&b, AB_EENGINE, "the result "
	    "record", err) : ab_record_write(s, "result", h.id, b.data, b.len,
	    err);
	ab_json_free(&j);
	ab_buf_free(&b);
	return rc;
}
