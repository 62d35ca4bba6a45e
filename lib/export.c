#include <git2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cancel.h"
#include "changeout.h"
#include "export.h"
#include "file.h"
#include "git.h"
#include "json.h"
#include "pathcheck.h"
#include "seed.h"
#include "size.h"
#include "tarread.h"
#include "worklist.h"

#define CHUNK (64u * 1024)
/* Tar costs per entry: a header, a long-name header, and padding. */
#define TAR_PER_ENTRY 2048LL

struct xp {
	const struct ab_export_opts *o;
	git_repository *repo;
	git_odb *odb;
	git_index *idx;
	struct ab_tarread *tr;
	char *chunk;
	char **dirs, **refused, **links, **targets;
	size_t ndirs, nrefused, nlinks, cap_dirs, cap_refused, cap_links;
	/* Files over max_file, and the directories that hold them. */
	char **big, **split;
	size_t nbig, nsplit, cap_big, cap_split;
	/* What comes before the archive's names: NULL for all of /work. */
	const char *prefix;
	long long budget;	/* archive bytes still allowed */
	long long big_at;	/* a file over this many bytes is big */
	int left_out;
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

/* What is left out is named once; what lies under it is passed over,
 * and a directory it leaves empty is not named again. */
static void skip(struct xp *x, const char *path, const char *why)
{
	x->left_out++;
	if (x->o->skipped != NULL)
		x->o->skipped(path, why);
	push(&x->refused, &x->nrefused, &x->cap_refused, path);
}

/* A file left out: nothing lies under it. */
static void skip_file(struct xp *x, const char *path, const char *why)
{
	x->left_out++;
	if (x->o->skipped != NULL)
		x->o->skipped(path, why);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
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

/* One blob, streamed from the archive into the object store. */
static int blob(struct xp *x, long long size, git_oid *id, struct ab_err *err)
{
	git_odb_stream *st;
	long long left = size;
	long n;
	int rc = -1;

	if (git_odb_open_wstream(&st, x->odb, (git_object_size_t)size,
	    GIT_OBJECT_BLOB) < 0)
		return ab_git_fail(err, AB_EENGINE, "cannot write a blob");
	while ((n = ab_tarread_data(x->tr, x->chunk, CHUNK, err)) > 0) {
		left -= n;
		if (left < 0 || git_odb_stream_write(st, x->chunk, (size_t)n) < 0)
			break;
	}
	if (n == 0 && left == 0 && git_odb_stream_finalize_write(id, st) == 0)
		rc = 0;
	else if (n >= 0)
		ab_fail(err, AB_EENGINE, "a file's bytes did not match its size");
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

/* "work/a/b" -> "a/b"; NULL for the root, /work/.git and what lies
 * under a refused directory: those are passed over without a word. */
static const char *rel_path(struct xp *x, const char *name, char *buf,
    size_t cap)
{
	size_t i, n;

	if (strncmp(name, "work/", 5) != 0)
		return strcmp(name, "work") == 0 ? NULL : name;
	snprintf(buf, cap, "%s", name + 5);
	n = strlen(buf);
	while (n > 0 && buf[n - 1] == '/')
		buf[--n] = '\0';
	if (n == 0 || strcmp(buf, ".git") == 0 || under(buf, ".git"))
		return NULL;
	for (i = 0; i < x->nrefused; i++)
		if (under(buf, x->refused[i]))
			return NULL;
	return buf;
}

static int entry(struct xp *x, const struct ab_tarread_entry *ent,
    struct ab_err *err)
{
	char buf[AB_PATHCHECK_PATH_MAX + 8];
	const char *path;
	struct ab_err why;

	char full[2 * AB_PATHCHECK_PATH_MAX + 16];
	const char *name = ent->path;

	if (x->prefix != NULL) {
		snprintf(full, sizeof full, "work/%s%s", x->prefix, ent->path);
		name = full;
	}
	if ((path = rel_path(x, name, buf, sizeof buf)) == NULL)
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
		return skip(x, path, "a hard link"), 0;
	default:
		return skip(x, path, "not a file, directory or symlink"), 0;
	}
}

/* -- After the archive: what the tree as a whole decides. */

static int has_under(struct xp *x, const char *dir)
{
	char prefix[2 * AB_PATHCHECK_PATH_MAX + 16];

	snprintf(prefix, sizeof prefix, "%s/", dir);
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
	snprintf(path, sizeof path, "%s%s", root, git_tree_entry_name(te));
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
static void empty_dirs(struct xp *x)
{
	size_t i;

	for (i = 0; i < x->ndirs; i++)
		if (!has_under(x, x->dirs[i]) && !refused_under(x, x->dirs[i]) &&
		    git_index_get_bypath(x->idx, x->dirs[i], 0) == NULL)
			skip(x, x->dirs[i], "an empty directory");
}

/* -- The whole step. */

static int agent_running(struct ab_engine *e, const struct ab_alloc *a,
    const char *sid, struct ab_err *err)
{
	char al[80], st[80];
	const char *labels[4] = { al, st, "org.agentbox.role=agent", NULL };
	struct ab_json j;
	int list, i, n, rc = 0;

	snprintf(al, sizeof al, "org.agentbox.alloc=%s", a->id);
	snprintf(st, sizeof st, "org.agentbox.state=%s", sid);
	if (ab_engine_list(e, "containers", labels, &j, &list, err) < 0)
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

static void unarchivable(void *ctx, const char *path, const char *why);

/* One archive of REL under /work ("" for /work itself): the engine
 * names its entries from REL's last component on. */
static int read_archive(struct xp *x, struct ab_engine *e,
    const struct ab_alloc *a, const char *rel, struct ab_err *err)
{
	const struct ab_tarread_entry *ent;
	char prefix[AB_PATHCHECK_PATH_MAX + 2] = "", *slash;
	struct ab_buf url;
	int rc = -1;

	ab_buf_init(&url, 0);
	if (rel[0] != '\0' && (slash = strrchr(rel, '/')) != NULL)
		snprintf(prefix, sizeof prefix, "%.*s/", (int)(slash - rel), rel);
	x->prefix = rel[0] != '\0' ? prefix : NULL;
	if (ab_buf_addf(&url, "/containers/%s/archive?path=", a->keeper_id) < 0 ||
	    ab_url_escape(&url, "/work") < 0 || (rel[0] != '\0' &&
	    (ab_url_escape(&url, "/") < 0 || ab_url_escape(&url, rel) < 0))) {
		ab_fail(err, AB_EENGINE, "out of memory");
		goto out;
	}
	if (ab_tarread_open(&x->tr, e, url.data, x->budget, "read /work back",
	    err) < 0)
		goto out;
	while ((rc = ab_tarread_next(x->tr, &ent, err)) == 1)
		if (ab_cancel_check("ab-export finished", err) < 0 ||
		    entry(x, ent, err) < 0) {
			rc = -1;
			break;
		}
	x->budget -= ab_tarread_got(x->tr);
	ab_tarread_close(x->tr);
	x->tr = NULL;
out:
	x->prefix = NULL;
	ab_buf_free(&url);
	return rc;
}

/* The directories above a file over the size: read child by child. */
static int split_dirs(struct xp *x)
{
	char *p, *slash;
	size_t i, j, n = x->nbig;

	for (i = 0; i < n; i++)
		for (p = x->big[i]; (slash = strchr(p, '/')) != NULL;
		    p = slash + 1) {
			*slash = '\0';
			j = x->nsplit;
			if ((j == 0 || strcmp(x->split[j - 1], x->big[i]) != 0) &&
			    push(&x->split, &x->nsplit, &x->cap_split,
			    x->big[i]) < 0) {
				*slash = '/';
				return -1;
			}
			*slash = '/';
		}
	if (x->nsplit > 0)
		qsort(x->split, x->nsplit, sizeof *x->split, cmp_str);
	for (i = j = 0; i < x->nsplit; i++)
		if (j > 0 && strcmp(x->split[j - 1], x->split[i]) == 0)
			free(x->split[i]);
		else
			x->split[j++] = x->split[i];
	x->nsplit = j;
	return 0;
}

/* First pass: sockets are named, files over the size kept aside. */
static int first_pass(struct xp *x, struct ab_worklist *w, struct ab_err *err)
{
	enum ab_work_kind k;
	const char *p;
	int rc;

	while ((rc = ab_worklist_next(w, &p, &k, err)) == 1)
		if (k == AB_WORK_SOCKET)
			skip(x, p, "a socket: the engine's archive cannot carry "
			    "it");
		else if (k == AB_WORK_BIG &&
		    push(&x->big, &x->nbig, &x->cap_big, p) < 0)
			return ab_fail(err, AB_EENGINE, "out of memory");
	if (rc < 0 || split_dirs(x) < 0)
		return rc < 0 ? -1 : ab_fail(err, AB_EENGINE, "out of memory");
	if (x->nbig > 0)
		qsort(x->big, x->nbig, sizeof *x->big, cmp_str);
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
static void name_big(struct xp *x)
{
	struct ab_err why;
	char what[160], size[32];
	size_t i;

	for (i = 0; i < x->nsplit; i++)
		if (!refused_over(x, x->split[i]) &&
		    ab_path_check(x->split[i], &why) < 0)
			skip(x, x->split[i], why.msg);
	ab_human_size(x->big_at, size, sizeof size);
	if (x->big_at == x->o->max_file)
		snprintf(what, sizeof what, "larger than --max-file (%s): its "
		    "bytes were not read", size);
	else
		snprintf(what, sizeof what, "larger than /work can hold (%s): "
		    "holes, its bytes were not read", size);
	for (i = 0; i < x->nbig; i++)
		if (!refused_over(x, x->big[i]))
			skip_file(x, x->big[i], what);
}

/* Every path whose parent holds a big file, but the big files and the
 * parents themselves, is read as an archive of its own. */
static int read_around(struct xp *x, struct ab_engine *e,
    const struct ab_alloc *a, struct ab_worklist *w, struct ab_err *err)
{
	char parent[AB_PATHCHECK_PATH_MAX + 1], *slash;
	enum ab_work_kind k;
	const char *p;
	int rc;

	ab_worklist_rewind(w);
	while ((rc = ab_worklist_next(w, &p, &k, err)) == 1) {
		if (k != AB_WORK_ENTRY || has(x->split, x->nsplit, p) ||
		    refused_over(x, p))
			continue;
		snprintf(parent, sizeof parent, "%s", p);
		if ((slash = strrchr(parent, '/')) != NULL)
			*slash = '\0';
		if ((slash == NULL || has(x->split, x->nsplit, parent)) &&
		    read_archive(x, e, a, p, err) < 0)
			return -1;
	}
	return rc;
}

static int read_work(struct xp *x, struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, struct ab_err *err)
{
	struct ab_worklist w;
	int rc;

	x->budget = a->vol[AB_VOL_TASK].bytes + a->vol[AB_VOL_GIT].bytes +
	    (a->vol[AB_VOL_TASK].inodes + a->vol[AB_VOL_GIT].inodes) *
	    TAR_PER_ENTRY + (1LL << 20);
	x->big_at = big_size(x, a);
	if (ab_worklist_open(&w, s, e, a, x->big_at, unarchivable, x,
	    err) < 0)
		return -1;
	rc = first_pass(x, &w, err);
	if (rc == 0 && x->nbig == 0)
		rc = read_archive(x, e, a, "", err);
	else if (rc == 0) {
		name_big(x);
		rc = read_around(x, e, a, &w, err);
	}
	ab_worklist_close(&w);
	return rc;
}

/* What the archive could not carry is left out like the rest. */
static void unarchivable(void *ctx, const char *path, const char *why)
{
	skip(ctx, path, why);
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
	if (git_tree_walk(g.base, GIT_TREEWALK_PRE, gitlink_cb, &g) < 0 ||
	    g.failed) {
		ab_git_fail(err, AB_EENGINE, "cannot carry the gitlinks over");
		goto out;
	}
	empty_dirs(x);
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

static void xp_free(struct xp *x)
{
	ab_tarread_close(x->tr);
	git_index_free(x->idx);
	git_odb_free(x->odb);
	git_repository_free(x->repo);
	free(x->chunk);
	free_list(x->dirs, x->ndirs);
	free_list(x->refused, x->nrefused);
	free_list(x->links, x->nlinks);
	free_list(x->targets, x->nlinks);
	free_list(x->big, x->nbig);
	free_list(x->split, x->nsplit);
}

int ab_export(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_export_opts *o, char *tree,
    struct ab_err *err)
{
	char stage[4200];
	git_commit *base = NULL;
	git_oid cid;
	struct xp x;
	int rc = -1;

	memset(&x, 0, sizeof x);
	x.o = o;
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
	if (git_repository_open_bare(&x.repo, stage) < 0 ||
	    git_repository_odb(&x.odb, x.repo) < 0 ||
	    git_index_new(&x.idx) < 0 || git_oid_fromstr(&cid, a->commit) < 0 ||
	    git_commit_lookup(&base, x.repo, &cid) < 0) {
		ab_git_fail(err, AB_EENGINE, "cannot open the staging clone");
		goto out;
	}
	if (read_work(&x, s, e, a, err) == 0)
		rc = finish(&x, base, tree, err);
out:
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
	snprintf(c.kind, sizeof c.kind, "result");
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
    struct ab_err *err)
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
	ab_buf_init(&b, 0);
	ab_jw_init(&w, &b);
	ab_jw_obj(&w);
	for (i = 0; i < ab_json_count(&j, 0); i++) {
		k = ab_json_member(&j, 0, i);
		if (ab_json_str_eq(&j, k, "export_tree") ||
		    (key = ab_json_str(&j, k)) == NULL)
			continue;
		ab_jw_key(&w, key);
		free(key);
		ab_json_span(&j, k + 1, &p, &n);
		ab_jw_raw(&w, p, n);
	}
	ab_jw_kstr(&w, "export_tree", tree);
	ab_jw_obj_end(&w);
	rc = ab_jw_done(&w) < 0 ? ab_fail(err, AB_EENGINE, "out of memory") :
	    ab_record_write(s, "result", h.id, b.data, b.len, err);
	ab_json_free(&j);
	ab_buf_free(&b);
	return rc;
}
