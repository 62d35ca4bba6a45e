#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "changeout.h"
#include "file.h"
#include "git.h"
#include "gitstream.h"
#include "pathcheck.h"

/* -- The patch. */

/* A delta's header lines: two names of a path export takes, a byte at
 * most 4 when quoted, and the modes and IDs. */
#define HEAD_MAX (2 * 4 * AB_PATHCHECK_PATH_MAX + 1024)

static int patch_line(const git_diff_delta *d, const git_diff_hunk *h,
    const git_diff_line *l, void *ctx)
{
	int fd = *(int *)ctx;
	char o = l->origin;

	(void)d;
	(void)h;
	if ((o == GIT_DIFF_LINE_CONTEXT || o == GIT_DIFF_LINE_ADDITION ||
	    o == GIT_DIFF_LINE_DELETION) && ab_write_all(fd, &o, 1) < 0)
		return -1;
	return ab_write_all(fd, l->content, l->content_len) < 0 ? -1 : 0;
}

static int blob_over(git_odb *odb, const git_diff_file *f, int *over)
{
	git_object_t type;
	size_t n;

	if (git_oid_is_zero(&f->id) || (f->mode != GIT_FILEMODE_BLOB && f->mode != GIT_FILEMODE_BLOB_EXECUTABLE))
		return 0;
	if (git_odb_read_header(&n, &type, odb, &f->id) < 0)
		return -1;
	if ((long long)n > AB_CHANGE_STREAM_AT)
		*over = 1;
	return 0;
}

/* PREFIX and PATH as git writes a name in a header: in double quotes,
 * with C escapes, when a byte needs one (export refuses control bytes
 * and backslashes, so only quotes and bytes over 0x7e come here). */
static int name(struct ab_buf *b, const char *prefix, const char *path)
{
	const unsigned char *p;
	int quote = 0;

	for (p = (const unsigned char *)path; *p != '\0'; p++)
		if (*p < 0x20 || *p >= 0x7f || *p == '"' || *p == '\\')
			quote = 1;
	if (!quote)
		return ab_buf_addf(b, "%s%s", prefix, path);
	if (ab_buf_addf(b, "\"%s", prefix) < 0)
		return -1;
	for (p = (const unsigned char *)path; *p != '\0'; p++)
		if ((*p == '"' || *p == '\\' ? ab_buf_addf(b, "\\%c", *p) :
		    *p < 0x20 || *p >= 0x7f ? ab_buf_addf(b, "\\%03o", *p) :
		    ab_buf_addc(b, (char)*p)) < 0)
			return -1;
	return ab_buf_addc(b, '"');
}

/* What git prints for a binary file with --binary --full-index: the
 * forward hunk, then the reverse one. */
static int streamed_delta(git_repository *repo, const git_diff_delta *d,
    int fd, struct ab_err *err)
{
	char o[GIT_OID_HEXSZ + 1], n[GIT_OID_HEXSZ + 1];
	struct ab_buf b;
	int rc = -1;

	ab_buf_init(&b, HEAD_MAX);
	git_oid_tostr(o, sizeof o, &d->old_file.id);
	git_oid_tostr(n, sizeof n, &d->new_file.id);
	if (ab_buf_adds(&b, "diff --git ") < 0 ||
	    name(&b, "a/", d->old_file.path) < 0 || ab_buf_addc(&b, ' ') < 0 ||
	    name(&b, "b/", d->new_file.path) < 0 || ab_buf_addc(&b, '\n') < 0)
		goto oom;
	if (d->status == GIT_DELTA_ADDED ?
	    ab_buf_addf(&b, "new file mode %06o\n", d->new_file.mode) < 0 :
	    d->status == GIT_DELTA_DELETED ?
	    ab_buf_addf(&b, "deleted file mode %06o\n", d->old_file.mode) < 0 :
	    d->old_file.mode != d->new_file.mode &&
	    ab_buf_addf(&b, "old mode %06o\nnew mode %06o\n", d->old_file.mode,
	    d->new_file.mode) < 0)
		goto oom;
	if (ab_buf_addf(&b, "index %s..%s", o, n) < 0 ||
	    (d->status == GIT_DELTA_MODIFIED &&
	    d->old_file.mode == d->new_file.mode &&
	    ab_buf_addf(&b, " %06o", d->new_file.mode) < 0) ||
	    ab_buf_adds(&b, "\nGIT binary patch\n") < 0)
		goto oom;
	if (ab_write_all(fd, b.data, b.len) < 0) {
		ab_fail_errno(err, AB_EENGINE, "cannot write the patch");
		goto out;
	}
	rc = ab_gitstream_literal(repo, &d->new_file.id, fd, err) < 0 ||
	    ab_gitstream_literal(repo, &d->old_file.id, fd, err) < 0 ? -1 : 0;
	goto out;
oom:
	ab_buf_fail(&b, AB_EREFUSED, "a change's header", err);
out:
	ab_buf_free(&b);
	return rc;
}

/* A change of mode alone, as git prints it: libgit2 adds "Binary files
 * differ" for a binary blob, with no hunk, and git apply refuses that
 * whole patch. */
static int mode_delta(const git_diff_delta *d, int fd, struct ab_err *err)
{
	struct ab_buf b;
	int rc = 0;

	ab_buf_init(&b, HEAD_MAX);
	if (ab_buf_adds(&b, "diff --git ") < 0 ||
	    name(&b, "a/", d->old_file.path) < 0 || ab_buf_addc(&b, ' ') < 0 ||
	    name(&b, "b/", d->new_file.path) < 0 ||
	    ab_buf_addf(&b, "\nold mode %06o\nnew mode %06o\n",
	    d->old_file.mode, d->new_file.mode) < 0)
		rc = ab_buf_fail(&b, AB_EREFUSED, "a change's header", err);
	else if (ab_write_all(fd, b.data, b.len) < 0)
		rc = ab_fail_errno(err, AB_EENGINE, "cannot write the patch");
	ab_buf_free(&b);
	return rc;
}

static int one_delta(git_repository *repo, git_odb *odb, git_diff *diff,
    size_t i, int fd, struct ab_err *err)
{
	const git_diff_delta *d = git_diff_get_delta(diff, i);
	git_patch *p;
	int over = 0, rc;

	if (d->status == GIT_DELTA_MODIFIED &&
	    git_oid_equal(&d->old_file.id, &d->new_file.id))
		return mode_delta(d, fd, err);
	if (blob_over(odb, &d->old_file, &over) < 0 ||
	    blob_over(odb, &d->new_file, &over) < 0)
		return ab_git_fail(err, AB_EENGINE, "cannot read a blob's size");
	if (over)
		return streamed_delta(repo, d, fd, err);
	if (git_patch_from_diff(&p, diff, i) < 0)
		return ab_git_fail(err, AB_EENGINE, "cannot diff a file");
	rc = git_patch_print(p, patch_line, &fd);
	git_patch_free(p);
	return rc < 0 ? ab_fail_errno(err, AB_EENGINE,
	    "cannot write the patch") : 0;
}

int ab_change_patch(git_repository *repo, git_tree *base, git_tree *tree,
    int fd, struct ab_err *err)
{
	git_diff_options opts;
	git_diff *diff;
	git_odb *odb;
	size_t i, n;
	int rc = 0;

	git_diff_options_init(&opts, GIT_DIFF_OPTIONS_VERSION);
	opts.flags = GIT_DIFF_SHOW_BINARY;
	if (git_repository_odb(&odb, repo) < 0)
		return ab_git_fail(err, AB_EENGINE, "cannot open the objects");
	if (git_diff_tree_to_tree(&diff, repo, base, tree, &opts) < 0) {
		git_odb_free(odb);
		return ab_git_fail(err, AB_EENGINE, "cannot diff the trees");
	}
	n = git_diff_num_deltas(diff);
	for (i = 0; i < n && rc == 0; i++)
		rc = one_delta(repo, odb, diff, i, fd, err);
	git_diff_free(diff);
	git_odb_free(odb);
	return rc;
}

/* -- The bundle. */

struct oids {
	git_oid *v;
	size_t n, cap;
	const struct oids *known;	/* what the prerequisite has */
	int failed;
};

static int oid_cmp(const void *a, const void *b)
{
	return git_oid_cmp(a, b);
}

static int oids_add(struct oids *s, const git_oid *id)
{
	git_oid *nv;

	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		if ((nv = realloc(s->v, s->cap * sizeof *nv)) == NULL) {
			s->failed = 1;
			return -1;
		}
		s->v = nv;
	}
	git_oid_cpy(&s->v[s->n++], id);
	return 0;
}

static void oids_sort(struct oids *s)
{
	size_t i, j;

	if (s->n > 0)
		qsort(s->v, s->n, sizeof *s->v, oid_cmp);
	for (i = j = 0; i < s->n; i++)
		if (j == 0 || git_oid_cmp(&s->v[j - 1], &s->v[i]) != 0)
			s->v[j++] = s->v[i];
	s->n = j;
}

static int known(const struct oids *s, const git_oid *id)
{
	return s != NULL && s->n > 0 &&
	    bsearch(id, s->v, s->n, sizeof *s->v, oid_cmp) != NULL;
}

/* Trees and blobs; a subtree the prerequisite has is passed over whole. */
static int collect(const char *root, const git_tree_entry *te, void *ctx)
{
	struct oids *s = ctx;
	git_object_t t = git_tree_entry_type(te);
	const git_oid *id = git_tree_entry_id(te);

	(void)root;
	if (t != GIT_OBJECT_TREE && t != GIT_OBJECT_BLOB)
		return 0;
	if (known(s->known, id))
		return t == GIT_OBJECT_TREE ? 1 : 0;
	return oids_add(s, id) < 0 ? -1 : 0;
}

static int new_objects(git_tree *base, git_tree *tree, const git_oid *commit,
    struct oids *out, struct ab_err *err)
{
	struct oids old;
	int rc = -1;

	memset(&old, 0, sizeof old);
	memset(out, 0, sizeof *out);
	out->known = &old;
	if (oids_add(&old, git_tree_id(base)) < 0 ||
	    git_tree_walk(base, GIT_TREEWALK_PRE, collect, &old) < 0 ||
	    old.failed) {
		ab_git_fail(err, AB_EENGINE, "cannot list the commit's objects");
		goto out;
	}
	oids_sort(&old);
	if (oids_add(out, commit) < 0 || (!known(&old, git_tree_id(tree)) &&
	    (oids_add(out, git_tree_id(tree)) < 0 ||
	    git_tree_walk(tree, GIT_TREEWALK_PRE, collect, out) < 0)) ||
	    out->failed) {
		ab_git_fail(err, AB_EENGINE, "cannot list the new objects");
		goto out;
	}
	oids_sort(out);
	rc = 0;
out:
	free(old.v);
	out->known = NULL;
	return rc;
}

int ab_change_bundle(git_repository *repo, git_commit *parent, git_tree *tree,
    const char *message, int fd, struct ab_err *err)
{
	const git_commit *parents[1] = { parent };
	char head[200], pid[GIT_OID_HEXSZ + 1], nid[GIT_OID_HEXSZ + 1];
	git_signature *sig = NULL;
	git_tree *base = NULL;
	struct oids objs;
	git_oid id;
	int rc = -1;

	memset(&objs, 0, sizeof objs);
	if (git_signature_new(&sig, "agentbox", "agentbox@localhost",
	    (git_time_t)time(NULL), 0) < 0 ||
	    git_commit_create(&id, repo, NULL, sig, sig, NULL, message, tree, 1,
	    parents) < 0 || git_commit_tree(&base, parent) < 0) {
		ab_git_fail(err, AB_EENGINE, "cannot make the bundle");
		goto out;
	}
	if (new_objects(base, tree, &id, &objs, err) < 0)
		goto out;
	git_oid_tostr(pid, sizeof pid, git_commit_id(parent));
	git_oid_tostr(nid, sizeof nid, &id);
	if (ab_fmt_err(err, head, sizeof head, "the bundle's header",
	    "# v2 git bundle\n-%s\n%s refs/heads/agentbox\n\n", pid,
	    nid) < 0)
		goto out;
	if (ab_write_all(fd, head, strlen(head)) < 0)
		ab_fail_errno(err, AB_EENGINE, "cannot write the bundle");
	else
		rc = ab_gitstream_pack(repo, objs.v, objs.n, fd, err);
out:
	free(objs.v);
	git_tree_free(base);
	git_signature_free(sig);
	return rc;
}
