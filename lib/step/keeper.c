#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "archive.h"
#include "ctr.h"
#include "keeper.h"
#include "proxy.h"
#include "size.h"
#include "tarread.h"

/* --- upload -------------------------------------------------------- */

/* The kernel enforces the ceilings during the upload too: say so in the
 * same words, never as a generic failure. */
/* Which filesystem filled up, from the engine's words: the path it
 * failed to write. */
static int upload_fail(const struct ab_resp *r, const struct ab_alloc *a,
    const char *dest, struct ab_err *err)
{
	const struct ab_volume *v = &a->vol[AB_VOL_TASK];
	const char *fs = "task";
	char have[32];

	if (r->body.data == NULL ||
	    (strstr(r->body.data, "no space left on device") == NULL &&
	    strstr(r->body.data, "No space left on device") == NULL))
		return ab_engine_fail(r, AB_EENGINE, "upload into the keeper",
		    err);
	if (strcmp(dest, a->vol[AB_VOL_INPUTS].target) == 0) {
		v = &a->vol[AB_VOL_INPUTS];
		fs = "inputs";
	} else if (strcmp(dest, a->auth.target) == 0) {
		v = &a->auth;
		fs = "auth";
	} else if (strstr(r->body.data, "/work/.git/") != NULL) {
		v = &a->vol[AB_VOL_GIT];
		fs = "git";
	}
	ab_human_size(v->bytes, have, sizeof have);
	return ab_fail(err, AB_EREFUSED, "%s filesystem full: %s, "
	    "%lld-inode ceiling", fs, have, v->inodes);
}

static int upload_to(struct ab_engine *e, const struct ab_alloc *a,
    const char *id, const char *dest, const struct ab_tar_source *src,
    struct ab_err *err)
{
	struct ab_tar *t;
	struct ab_req q;
	struct ab_resp r;
	char path[300];
	int rc;

	if (ab_tar_open(&t, src, err) < 0)
		return -1;
	/* The engine keeps the tar's owners (10001; root and an invocation's
	 * group) as long as copyUIDGID is not set; with it, Engine 20.10 looks
	 * the keeper's "10001:10001" up as a user name and fails.  The tests
	 * check every owner. */
	if (ab_fmt_err(err, path, sizeof path, dest, "/containers/%s/archive"
	    "?path=%s&noOverwriteDirNonDir=1", id, dest) < 0) {
		ab_tar_close(t);
		return -1;
	}
	memset(&q, 0, sizeof q);
	q.method = "PUT";
	q.path = path;
	q.content_type = "application/x-tar";
	q.reader = ab_tar_read;
	q.reader_ctx = t;
	q.what = "upload into the keeper";
	rc = ab_engine_call(e, &q, &r, err);
	if (rc == 0 && r.status != 200)
		rc = upload_fail(&r, a, dest, err);
	ab_resp_free(&r);
	ab_tar_close(t);
	return rc;
}

int ab_keeper_upload(struct ab_engine *e, const struct ab_alloc *a,
    const char *dest, const struct ab_tar_source *src, struct ab_err *err)
{
	return upload_to(e, a, a->keeper_id, dest, src, err);
}

/* --- the staging clone's identity ---------------------------------- */

int ab_stage_path(const struct ab_state *s, const struct ab_alloc *a,
    char *out, size_t cap)
{
	return ab_fmt(out, cap, "%s/stage/%s", s->path, a->id);
}

int ab_stage_identity(const char *stage, long long *dev, long long *ino,
    long long *objects, struct ab_err *err)
{
	char obj[4200];
	struct stat st;

	if (ab_fmt_err(err, obj, sizeof obj, "the staging clone's path",
	    "%s/objects", stage) < 0)
		return -1;
	if (lstat(stage, &st) < 0 || !S_ISDIR(st.st_mode))
		return ab_fail(err, AB_EREFUSED, "staging clone %s is gone",
		    stage);
	*dev = (long long)st.st_dev;
	*ino = (long long)st.st_ino;
	if (lstat(obj, &st) < 0 || !S_ISDIR(st.st_mode))
		return ab_fail(err, AB_EREFUSED, "staging clone %s is broken",
		    stage);
	*objects = (long long)st.st_ino;
	return 0;
}

int ab_stage_check(const char *stage, const struct ab_alloc *a,
    struct ab_err *err)
{
	long long dev, ino, obj;

	if (ab_stage_identity(stage, &dev, &ino, &obj, err) < 0)
		return -1;
	if (dev != a->stage_dev || ino != a->stage_ino ||
	    obj != a->objects_ino)
		return ab_fail(err, AB_EREFUSED,
		    "staging clone %s was replaced", stage);
	return 0;
}

int ab_keeper_ready(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, struct ab_err *err)
{
	struct ab_keeper_lock k;

	/* The keeper's lockdown needs only the API version, not /info: a
	 * host description takes the daemon 5 ms. */
	ab_alloc_keeper_lock(a, s->sid, ab_engine_seccomp_keyword(e), &k);
	/* A stopped keeper has its tmpfs unmounted: an upload would land on
	 * the host's disk under the volume, and a read back would find an
	 * empty tree.  It must be running. */
	k.l.running = 1;
	if (ab_ctr_check(e, &k.l, a->keeper_id, err) < 0)
		return ab_err_wrap(err, "keeper of alloc:%s", a->id);
	return 0;
}

/* --- one small file of one invocation ------------------------------ */

struct many_src {
	const struct ab_keeper_item *f;
	int n, next;
	char path[AB_ID_LEN + 1 + 128];	/* SUB/NAME */
	size_t off;
};

/* The invocation's directory, then its files.  The engine extracts with
 * the tar's owners (upload) and modes, and sets both again on a
 * directory that is already there. */
static int many_next(void *arg, struct ab_tar_entry *te, struct ab_err *err)
{
	struct many_src *o = arg;
	const struct ab_keeper_item *f;

	(void)err;
	if (o->next > o->n)
		return 0;
	if (o->next++ == 0) {
		f = &o->f[0];
		te->path = f->f.sub;
		te->type = AB_TAR_DIR;
		te->mode = f->f.sub_mode;
	} else {
		f = &o->f[o->next - 2];
		if (ab_fmt_err(err, o->path, sizeof o->path, "a file's path",
		    "%s/%s", f->f.sub, f->f.name) < 0)
			return -1;
		te->path = o->path;
		te->type = AB_TAR_FILE;
		te->mode = f->f.mode;
		te->size = (long long)f->len;
		o->off = 0;
	}
	te->uid = f->f.uid;
	te->gid = f->f.gid;
	return 1;
}

static long many_data(void *arg, char *p, size_t n, struct ab_err *err)
{
	struct many_src *o = arg;
	const struct ab_keeper_item *f = &o->f[o->next - 2];

	(void)err;
	if (n > f->len - o->off)
		n = f->len - o->off;
	memcpy(p, f->data + o->off, n);
	o->off += n;
	return (long)n;
}

/* N files of one directory, in one upload, into container ID (the
 * keeper, or the proxy), which the caller checked. */
static int put_items(struct ab_engine *e, const struct ab_alloc *a,
    const char *id, const struct ab_keeper_item *f, int n,
    struct ab_err *err)
{
	struct ab_tar_source src;
	struct many_src o;

	memset(&o, 0, sizeof o);
	o.f = f;
	o.n = n;
	src.next = many_next;
	src.data = many_data;
	src.ctx = &o;
	return upload_to(e, a, id, f[0].f.dir, &src, err);
}

static int one_dir(const struct ab_keeper_item *f, int n, struct ab_err *err)
{
	int i;

	for (i = 1; i < n; i++)
		if (strcmp(f[i].f.dir, f[0].f.dir) != 0 ||
		    strcmp(f[i].f.sub, f[0].f.sub) != 0)
			return ab_fail(err, AB_EENGINE, "files of one upload "
			    "must share a directory");
	return 0;
}

int ab_keeper_put_all(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_keeper_item *f, int n,
    struct ab_err *err)
{
	if (one_dir(f, n, err) < 0 || n == 0)
		return n == 0 ? 0 : -1;
	if (ab_keeper_ready(s, e, a, err) < 0)
		return -1;
	return put_items(e, a, a->keeper_id, f, n, err);
}

int ab_proxy_put_all(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_keeper_item *f, int n,
    struct ab_err *err)
{
	struct ab_proxy_of px;

	if (one_dir(f, n, err) < 0 || n == 0)
		return n == 0 ? 0 : -1;
	ab_alloc_proxy(a, &px);
	if (ab_proxy_check(s, e, &px, ab_engine_seccomp_keyword(e), err) < 0)
		return -1;
	return put_items(e, a, a->eg.proxy_id, f, n, err);
}

static struct ab_keeper_item item(const struct ab_keeper_file *f,
    const char *data, size_t len)
{
	struct ab_keeper_item one;

	one.f = *f;
	one.data = data;
	one.len = len;
	return one;
}

int ab_proxy_put(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_keeper_file *f,
    const char *data, size_t len, struct ab_err *err)
{
	struct ab_keeper_item one = item(f, data, len);

	return ab_proxy_put_all(s, e, a, &one, 1, err);
}

int ab_keeper_put(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_keeper_file *f,
    const char *data, size_t len, struct ab_err *err)
{
	struct ab_keeper_item one = item(f, data, len);

	return ab_keeper_put_all(s, e, a, &one, 1, err);
}

/* FILE of container ID's volumes into b. */
static int get_from(struct ab_engine *e, const char *id, const char *file,
    struct ab_buf *b, struct ab_err *err)
{
	struct ab_tarread *t;
	char path[300];
	int rc;

	if (ab_fmt_err(err, path, sizeof path, file,
	    "/containers/%s/archive?path=%s", id, file) < 0 ||
	    ab_archive_open(&t, e, path, (long long)b->max + 8192,
	    "read a file back", err) < 0)
		return -1;
	rc = ab_tarread_one(t, b, err);
	ab_tarread_close(t);
	return rc < 0 ? ab_err_wrap(err, "%s", file) : 0;
}

int ab_keeper_get(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const char *file, struct ab_buf *b,
    struct ab_err *err)
{
	if (ab_keeper_ready(s, e, a, err) < 0)
		return -1;
	return get_from(e, a->keeper_id, file, b, err);
}

int ab_proxy_get(struct ab_engine *e, const struct ab_alloc *a,
    const char *file, struct ab_buf *b, struct ab_err *err)
{
	if (!a->eg.on || a->eg.proxy_id[0] == '\0')
		return ab_fail(err, AB_EREFUSED, "alloc:%s has no proxy", a->id);
	return get_from(e, a->eg.proxy_id, file, b, err);
}
