#include <git2.h>
#include <git2/sys/repository.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "git.h"
#include "pathcheck.h"

/* Pack windows count as RSS: keep them small (agentbox(7), "BOUNDS"). */
#define MWINDOW_SIZE (4u << 20)
#define MWINDOW_LIMIT (32u << 20)
#define LINK_MAX_BYTES 4096

int ab_git_fail(struct ab_err *err, int code, const char *what)
{
	const git_error *g = git_error_last();

	return ab_fail(err, code, "%s: %s", what, g && g->message ?
	    g->message : "libgit2 failed");
}

int ab_git_read_fail(struct ab_err *err, int rc, const char *what)
{
	const git_error *g = git_error_last();

	/* An object that does not hash to its name, is not there, or does
	 * not inflate: the repository is damaged, which is the source's to
	 * mend, not a failure of this host. */
	if (rc == GIT_EMISMATCH || rc == GIT_ENOTFOUND ||
	    (g != NULL && g->klass == GIT_ERROR_ZLIB))
		return ab_fail(err, AB_EREFUSED, "the repository is damaged: "
		    "%s: %s", what, g && g->message ? g->message :
		    "libgit2 failed");
	return ab_git_fail(err, AB_EENGINE, what);
}

int ab_git_start(struct ab_err *err)
{
	if (git_libgit2_init() < 0 ||
	    git_libgit2_opts(GIT_OPT_SET_MWINDOW_SIZE, (size_t)MWINDOW_SIZE) <
	    0 || git_libgit2_opts(GIT_OPT_SET_MWINDOW_MAPPED_LIMIT,
	    (size_t)MWINDOW_LIMIT) < 0 ||
	    git_libgit2_opts(GIT_OPT_ENABLE_STRICT_OBJECT_CREATION, 1) < 0 ||
	    git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 1) < 0 ||
	    git_libgit2_opts(GIT_OPT_ENABLE_CACHING, 0) < 0)
		return ab_git_fail(err, AB_EENGINE, "cannot start libgit2");
	return 0;
}

int ab_git_open(git_repository **repo, const char *dir, struct ab_err *err)
{
	if (git_repository_open_ext(repo, dir, GIT_REPOSITORY_OPEN_NO_SEARCH,
	    NULL) < 0)
		return ab_git_fail(err, AB_EUSAGE, dir);
	return 0;
}

static int resolve_in(git_repository *repo, const char *rev,
    const char *expect, git_oid *oid, struct ab_err *err)
{
	git_object *obj = NULL, *commit = NULL;
	git_oid want;
	int rc;

	if (ab_is_hex(rev, AB_OID_HEX)) {
		git_oid_fromstr(oid, rev);
		if (git_object_lookup(&commit, repo, oid, GIT_OBJECT_COMMIT) < 0)
			return ab_fail(err, AB_EREFUSED,
			    "commit %s is not in the repository", rev);
		git_object_free(commit);
		if (expect != NULL && strcmp(expect, rev) != 0)
			return ab_fail(err, AB_EREFUSED,
			    "%s is not the expected %s", rev, expect);
		return 0;
	}
	if (expect == NULL || !ab_is_hex(expect, AB_OID_HEX))
		return ab_fail(err, AB_EUSAGE,
		    "--commit %s is not a full object ID: give --expect OID",
		    rev);
	if (git_revparse_single(&obj, repo, rev) < 0)
		return ab_git_fail(err, AB_EREFUSED, rev);
	rc = git_object_peel(&commit, obj, GIT_OBJECT_COMMIT);
	git_object_free(obj);
	if (rc < 0)
		return ab_git_fail(err, AB_EREFUSED, rev);
	git_oid_cpy(oid, git_object_id(commit));
	git_object_free(commit);
	git_oid_fromstr(&want, expect);
	if (!git_oid_equal(oid, &want))
		return ab_fail(err, AB_EREFUSED,
		    "%s resolves to %s, not the expected %s", rev,
		    git_oid_tostr_s(oid), expect);
	return 0;
}

int ab_git_resolve(const char *dir, const char *rev, const char *expect,
    char out[AB_OID_HEX + 1], struct ab_err *err)
{
	git_repository *repo;
	git_oid oid;
	int rc;

	if (ab_git_open(&repo, dir, err) < 0)
		return -1;
	rc = resolve_in(repo, rev, expect, &oid, err);
	if (rc == 0)
		git_oid_tostr(out, AB_OID_HEX + 1, &oid);
	git_repository_free(repo);
	return rc;
}

struct walk {
	git_repository *repo;
	git_odb *odb;
	struct ab_git_tree *t;
	size_t cap;
	struct ab_err *err;
	int failed;
};

static struct ab_git_entry *push(struct walk *w)
{
	struct ab_git_entry *v;

	if (w->t->n == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 256;
		v = realloc(w->t->e, w->cap * sizeof *v);
		if (v == NULL)
			return NULL;
		w->t->e = v;
	}
	v = &w->t->e[w->t->n++];
	memset(v, 0, sizeof *v);
	return v;
}

static int read_link(struct walk *w, struct ab_git_entry *e)
{
	git_blob *b;
	git_oid oid;
	size_t n;
	int rc;

	memcpy(oid.id, e->oid, AB_OID_RAW);
	if ((rc = git_blob_lookup(&b, w->repo, &oid)) < 0)
		return ab_git_read_fail(w->err, rc, e->path);
	n = (size_t)git_blob_rawsize(b);
	if (n == 0 || n > LINK_MAX_BYTES ||
	    memchr(git_blob_rawcontent(b), '\0', n) != NULL) {
		git_blob_free(b);
		return ab_fail(w->err, AB_EREFUSED,
		    "unsafe symlink \"%.200s\": unusable target", e->path);
	}
	e->link = strndup(git_blob_rawcontent(b), n);
	git_blob_free(b);
	if (e->link == NULL)
		return ab_fail(w->err, AB_EENGINE, "out of memory");
	e->size = (long long)n;
	return ab_symlink_check(e->path, e->link, w->err);
}

static int classify(struct walk *w, const git_tree_entry *te,
    struct ab_git_entry *e)
{
	git_object_t type;
	size_t len;
	int rc;

	switch (git_tree_entry_filemode(te)) {
	case GIT_FILEMODE_TREE:
		e->type = AB_GIT_DIR;
		e->mode = 0755;
		return 0;
	case GIT_FILEMODE_COMMIT:
		/* A submodule: an empty directory, nothing fetched. */
		e->type = AB_GIT_GITLINK;
		e->mode = 0755;
		return 0;
	case GIT_FILEMODE_LINK:
		e->type = AB_GIT_LINK;
		e->mode = 0777;
		return read_link(w, e);
	case GIT_FILEMODE_BLOB:
	case GIT_FILEMODE_BLOB_EXECUTABLE:
		e->type = AB_GIT_FILE;
		e->mode = git_tree_entry_filemode(te) ==
		    GIT_FILEMODE_BLOB_EXECUTABLE ? 0755 : 0644;
		if ((rc = git_odb_read_header(&len, &type, w->odb,
		    git_tree_entry_id(te))) < 0)
			return ab_git_read_fail(w->err, rc, e->path);
		e->size = (long long)len;
		return 0;
	default:
		return ab_fail(w->err, AB_EREFUSED,
		    "\"%.200s\" has a mode git trees should not hold", e->path);
	}
}

struct ab_git_block {
	struct ab_git_block *next;
	size_t used, cap;
	char data[];
};

#define BLOCK_BYTES (256 * 1024)

/* ROOT and NAME joined, in the tree's path blocks. */
static char *tree_path(struct ab_git_tree *t, const char *root,
    const char *name)
{
	size_t a = strlen(root), b = strlen(name), need = a + b + 1, cap;
	struct ab_git_block *k = t->paths;
	char *p;

	if (k == NULL || k->cap - k->used < need) {
		cap = need > BLOCK_BYTES ? need : BLOCK_BYTES;
		if ((k = malloc(sizeof *k + cap)) == NULL)
			return NULL;
		k->next = t->paths;
		k->used = 0;
		k->cap = cap;
		t->paths = k;
	}
	p = k->data + k->used;
	memcpy(p, root, a);
	memcpy(p + a, name, b + 1);
	k->used += need;
	return p;
}

static int walk_cb(const char *root, const git_tree_entry *te, void *arg)
{
	struct walk *w = arg;
	struct ab_git_entry *e;

	e = push(w);
	if (e == NULL || (e->path = tree_path(w->t, root,
	    git_tree_entry_name(te))) == NULL) {
		ab_fail(w->err, AB_EENGINE, "out of memory");
		w->failed = 1;
		return -1;
	}
	memcpy(e->oid, git_tree_entry_id(te)->id, AB_OID_RAW);
	if (ab_path_check(e->path, w->err) < 0 || classify(w, te, e) < 0) {
		w->failed = 1;
		return -1;
	}
	w->t->bytes += e->size;
	return 0;
}

static int commit_tree(git_repository *repo, const char *hex, git_tree **tree,
    struct ab_err *err)
{
	git_commit *c;
	git_oid oid;
	int rc;

	git_oid_fromstr(&oid, hex);
	if (git_commit_lookup(&c, repo, &oid) < 0)
		return ab_git_fail(err, AB_EREFUSED, "the commit");
	rc = git_commit_tree(tree, c);
	git_commit_free(c);
	return rc < 0 ? ab_git_read_fail(err, rc, "the commit's tree") : 0;
}

int ab_git_tree(const char *dir, const char *hex, struct ab_git_tree *t,
    struct ab_err *err)
{
	git_repository *repo;
	git_tree *tree;
	struct walk w;
	int rc;

	memset(t, 0, sizeof *t);
	if (ab_git_open(&repo, dir, err) < 0)
		return -1;
	if (commit_tree(repo, hex, &tree, err) < 0) {
		git_repository_free(repo);
		return -1;
	}
	memcpy(t->root, git_tree_id(tree)->id, AB_OID_RAW);
	memset(&w, 0, sizeof w);
	w.repo = repo;
	w.t = t;
	w.err = err;
	if (git_repository_odb(&w.odb, repo) < 0) {
		git_tree_free(tree);
		git_repository_free(repo);
		return ab_git_fail(err, AB_EENGINE, "cannot read the repository");
	}
	/* Pre-order: a directory entry precedes what is inside it. */
	rc = git_tree_walk(tree, GIT_TREEWALK_PRE, walk_cb, &w);
	if (rc < 0 && !w.failed)
		ab_git_read_fail(err, rc, "a tree of the commit");
	git_odb_free(w.odb);
	git_tree_free(tree);
	git_repository_free(repo);
	if (rc < 0) {
		ab_git_tree_free(t);
		return -1;
	}
	return 0;
}

void ab_git_tree_free(struct ab_git_tree *t)
{
	struct ab_git_block *k, *next;
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->e[i].link);
	for (k = t->paths; k != NULL; k = next) {
		next = k->next;
		free(k);
	}
	free(t->e);
	memset(t, 0, sizeof *t);
}

struct ab_git_reader {
	git_repository *repo;
	git_odb *odb;
	git_blob *blob;			/* read whole, or */
	struct ab_git_bstream bs;	/* streamed */
	size_t pos;
};

int ab_git_reader_open(struct ab_git_reader **rp, const char *dir,
    struct ab_err *err)
{
	struct ab_git_reader *r = calloc(1, sizeof *r);

	if (r == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	if (ab_git_open(&r->repo, dir, err) < 0) {
		free(r);
		return -1;
	}
	if (git_repository_odb(&r->odb, r->repo) < 0) {
		ab_git_reader_close(r);
		return ab_git_fail(err, AB_EENGINE, dir);
	}
	*rp = r;
	return 0;
}

static void unload(struct ab_git_reader *r)
{
	git_blob_free(r->blob);
	r->blob = NULL;
	ab_git_bstream_close(&r->bs);
	r->pos = 0;
}

int ab_git_reader_load(struct ab_git_reader *r,
    const unsigned char id[AB_OID_RAW], long long expect, long long *size,
    struct ab_err *err)
{
	git_oid oid;
	int rc;

	unload(r);
	if (expect > AB_GIT_BIG) {
		rc = ab_git_bstream_open(&r->bs, r->odb, id, err);
		if (rc < 0)
			return -1;
		if (rc == 1) {
			*size = (long long)r->bs.size;
			return 0;
		}
	}
	memcpy(oid.id, id, AB_OID_RAW);
	/* libgit2 inflates a packed blob whole: one blob at a time. */
	if ((rc = git_blob_lookup(&r->blob, r->repo, &oid)) < 0)
		return ab_git_read_fail(err, rc, "a blob");
	*size = (long long)git_blob_rawsize(r->blob);
	return 0;
}

int ab_git_reader_whole(const struct ab_git_reader *r, const void **p,
    size_t *n)
{
	if (r->blob == NULL)
		return 0;
	*p = git_blob_rawcontent(r->blob);
	*n = (size_t)git_blob_rawsize(r->blob);
	return 1;
}

int ab_git_reader_share(const struct ab_git_reader *r, void **ref)
{
	git_blob *dup;

	if (r->blob == NULL || git_blob_dup(&dup, r->blob) < 0)
		return 0;
	*ref = dup;
	return 1;
}

void ab_git_blob_release(void *ref)
{
	git_blob_free(ref);
}

long ab_git_reader_read(struct ab_git_reader *r, char *p, size_t n,
    struct ab_err *err)
{
	size_t left;

	if (r->bs.st != NULL)
		return ab_git_bstream_read(&r->bs, p, n, err);
	if (r->blob == NULL)
		return 0;
	left = (size_t)git_blob_rawsize(r->blob) - r->pos;
	if (n > left)
		n = left;
	memcpy(p, (const char *)git_blob_rawcontent(r->blob) + r->pos, n);
	r->pos += n;
	return (long)n;
}

void ab_git_reader_close(struct ab_git_reader *r)
{
	if (r == NULL)
		return;
	unload(r);
	git_odb_free(r->odb);
	git_repository_free(r->repo);
	free(r);
}

/* --- big blobs, as streams ------------------------------------------ */

int ab_git_bstream_open(struct ab_git_bstream *b, git_odb *odb,
    const unsigned char id[AB_OID_RAW], struct ab_err *err)
{
	char head[64];
	git_object_t type;
	git_oid oid;
	size_t len;
	int n;

	memset(b, 0, sizeof *b);
	memcpy(oid.id, id, AB_OID_RAW);
	memcpy(b->id, id, AB_OID_RAW);
	if (git_odb_open_rstream(&b->st, &len, &type, odb, &oid) < 0) {
		git_error_clear();
		b->st = NULL;
		return 0;
	}
	if (type != GIT_OBJECT_BLOB) {
		ab_git_bstream_close(b);
		return ab_fail(err, AB_EREFUSED, "a tree names a non-blob");
	}
	if (ab_sha1_init(&b->sha, err) < 0) {
		ab_git_bstream_close(b);
		return -1;
	}
	b->size = len;
	if (ab_fmt(head, sizeof head, "blob %zu", len) < 0) {
		ab_git_bstream_close(b);
		return ab_fail(err, AB_EREFUSED, "a blob too large");
	}
	n = (int)strlen(head);
	ab_sha1_add(&b->sha, head, (size_t)n + 1);
	return 1;
}

long ab_git_bstream_read(struct ab_git_bstream *b, char *p, size_t n,
    struct ab_err *err)
{
	char hex[AB_OID_HEX + 1];
	git_oid oid;
	int k;

	if (n > b->size - b->pos)
		n = b->size - b->pos;
	if (n == 0)
		return 0;
	if (n > 1 << 20)
		n = 1 << 20;
	k = git_odb_stream_read(b->st, p, n);
	if (k < 0)
		return ab_git_fail(err, AB_EENGINE, "cannot read a blob");
	if (k == 0)
		return ab_fail(err, AB_EREFUSED, "a blob is shorter than its "
		    "header says");
	ab_sha1_add(&b->sha, p, (size_t)k);
	b->pos += (size_t)k;
	if (b->pos == b->size && !ab_sha1_is(&b->sha, b->id)) {
		memcpy(oid.id, b->id, AB_OID_RAW);
		git_oid_tostr(hex, sizeof hex, &oid);
		return ab_fail(err, AB_EREFUSED, "blob %s of the source does "
		    "not match its name: the repository is damaged", hex);
	}
	return k;
}

void ab_git_bstream_close(struct ab_git_bstream *b)
{
	if (b->st != NULL)
		git_odb_stream_free(b->st);
	b->st = NULL;
	ab_sha1_free(&b->sha);
}
