#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <git2.h>
#include <git2/sys/repository.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "file.h"
#include "git.h"
#include "gitfeed.h"
#include "githist.h"
#include "gitpack.h"
#include "gitstage.h"

int ab_git_threads(void)
{
	return (git_libgit2_features() & GIT_FEATURE_THREADS) != 0;
}

int ab_git_stage_init(const char *stage, struct ab_err *err)
{
	git_repository *dst;

	if (git_repository_init(&dst, stage, 1) < 0)
		return ab_git_fail(err, AB_EENGINE,
		    "cannot make the staging clone");
	git_repository_free(dst);
	return 0;
}

struct stop_cb {
	int (*stop)(void *);
	void *arg;
};

/* --- the objects to copy -------------------------------------------- */

/* A set of object IDs that the caller keeps in an array of elements
 * STRIDE bytes long (BASE: the first element's raw ID): open addressing
 * over their indices (i + 1; 0 is empty), at most half full. */
struct idset {
	uint32_t *slot;
	size_t nslot;
};

static const unsigned char *id_at(const void *base, size_t stride,
    size_t i)
{
	return (const unsigned char *)base + i * stride;
}

/* The slot holding ID, or the empty one where it goes. */
static size_t idset_slot(const struct idset *s, const void *base,
    size_t stride, const unsigned char *id)
{
	size_t h, j;

	memcpy(&h, id, sizeof h);	/* SHA-1 bytes are uniform */
	for (j = h & (s->nslot - 1); s->slot[j] != 0;
	    j = (j + 1) & (s->nslot - 1))
		if (memcmp(id_at(base, stride, s->slot[j] - 1), id,
		    AB_OID_RAW) == 0)
			break;
	return j;
}

/* ID's index in the array + 1, or 0 when the set has not got it. */
static uint32_t idset_find(const struct idset *s, const void *base,
    size_t stride, const unsigned char *id)
{
	return s->nslot == 0 ? 0 :
	    s->slot[idset_slot(s, base, stride, id)];
}

/* Twice the slots, for the first N elements. */
static int idset_grow(struct idset *s, const void *base, size_t stride,
    size_t n)
{
	size_t nslot = s->nslot ? s->nslot * 2 : 1024, i;
	uint32_t *slot = calloc(nslot, sizeof *slot);

	if (slot == NULL)
		return -1;
	free(s->slot);
	s->slot = slot;
	s->nslot = nslot;
	for (i = 0; i < n; i++)
		s->slot[idset_slot(s, base, stride, id_at(base, stride, i))] =
		    (uint32_t)(i + 1);
	return 0;
}

/* Element N, just written after the N in the set: 1 added (the caller
 * keeps it); 0 when its ID is there already; -1 out of memory. */
static int idset_add(struct idset *s, const void *base, size_t stride,
    size_t n)
{
	const unsigned char *id = id_at(base, stride, n);
	size_t j;

	if (n >= UINT32_MAX - 1 ||
	    (2 * (n + 1) > s->nslot && idset_grow(s, base, stride, n) < 0))
		return -1;
	if (s->slot[j = idset_slot(s, base, stride, id)] != 0)
		return 0;
	s->slot[j] = (uint32_t)(n + 1);
	return 1;
}

/* The tip's objects, for a pack of our own (gitpack.h): its entries, in
 * the order written, and a set of them to find one by ID. */
struct tipset {
	struct ab_pack_ent *e;
	unsigned char *type;	/* GIT_OBJECT_COMMIT, _TREE or _BLOB */
	size_t n, cap;
	struct idset set;
};

/* 1: added; 0: already there; -1: out of memory. */
static int tip_add(struct tipset *t, const git_oid *id, git_object_t type)
{
	struct ab_pack_ent *e;
	unsigned char *ty;
	int rc;

	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 1024;
		if ((e = realloc(t->e, t->cap * sizeof *e)) == NULL)
			return -1;
		t->e = e;
		if ((ty = realloc(t->type, t->cap)) == NULL)
			return -1;
		t->type = ty;
	}
	memset(&t->e[t->n], 0, sizeof *t->e);
	memcpy(t->e[t->n].id, id->id, AB_OID_RAW);
	if ((rc = idset_add(&t->set, t->e[0].id, sizeof *t->e, t->n)) > 0)
		t->type[t->n++] = (unsigned char)type;
	return rc;
}

static void tip_free(struct tipset *t)
{
	free(t->e);
	free(t->type);
	free(t->set.slot);
	memset(t, 0, sizeof *t);
}

static int tip_copy(struct tipset *to, const struct tipset *from)
{
	memset(to, 0, sizeof *to);
	to->e = malloc((from->n ? from->n : 1) * sizeof *to->e);
	to->type = malloc(from->n ? from->n : 1);
	to->set.slot = malloc((from->set.nslot ? from->set.nslot : 1) *
	    sizeof *to->set.slot);
	if (to->e == NULL || to->type == NULL || to->set.slot == NULL) {
		tip_free(to);
		return -1;
	}
	memcpy(to->e, from->e, from->n * sizeof *to->e);
	memcpy(to->type, from->type, from->n);
	memcpy(to->set.slot, from->set.slot,
	    from->set.nslot * sizeof *to->set.slot);
	to->n = to->cap = from->n;
	to->set.nslot = from->set.nslot;
	return 0;
}

struct copy {
	git_repository *src;
	git_odb *odb;
	struct stop_cb *cb;
	struct tipset tip;
	git_oid *big;		/* blobs above AB_GIT_BIG, to go loose */
	size_t nbig, capbig;
	struct idset bigs;	/* of big */
	size_t ntipbig;		/* the first of them, the tip's */
	struct ab_git_feed *feed;	/* what the upload read, or NULL */
	struct ab_err *err;
	int small;		/* listing a history against the bounds below */
	long long bytes;	/* the blobs' bytes listed */
};

static int oom(struct copy *c)
{
	return ab_fail(c->err, AB_EENGINE, "out of memory listing objects");
}

static int add_big(struct copy *c, const git_oid *id)
{
	git_oid *v;
	int rc;

	if (c->nbig == c->capbig) {
		c->capbig = c->capbig ? c->capbig * 2 : 16;
		if ((v = realloc(c->big, c->capbig * sizeof *v)) == NULL)
			return oom(c);
		c->big = v;
	}
	c->big[c->nbig] = *id;
	if ((rc = idset_add(&c->bigs, c->big[0].id, sizeof *c->big,
	    c->nbig)) < 0)
		return oom(c);
	c->nbig += (size_t)rc;
	return 0;
}

/* 1 when the blob goes loose. */
static int blob_is_big(struct copy *c, const git_oid *id)
{
	git_object_t type;
	size_t len;

	if (git_odb_read_header(&len, &type, c->odb, id) < 0)
		return ab_git_fail(c->err, AB_EENGINE, "cannot read a blob");
	c->bytes += (long long)len;
	return len > AB_GIT_BIG;
}

/* A history this small is packed here, each object whole, like the tip
 * (gitstage.h); a larger one, or one with a blob that goes loose, is
 * git's.  Starting git pack-objects and index-pack, and the second
 * upload a pack not done by the tree's end takes, cost a 100-file
 * repository's seeding half its time; whole objects cost time with
 * each byte and object, where git reuses the source's deltas.  Measured
 * (ab-seed alone, medians of 5 alternating runs, a 100-file tip): with 8
 * commits of a 230 KB file (2 MB of blobs) 0.86 of git's time; with 500
 * small commits (some 2,900 objects) 1.04.  Hence the bounds. */
#ifndef SMALL_OBJECTS
#define SMALL_OBJECTS 2000
#endif
#ifndef SMALL_BYTES
#define SMALL_BYTES (4LL << 20)
#endif

static int over_small(const struct copy *c)
{
	return c->small && (c->tip.n > SMALL_OBJECTS ||
	    c->bytes > SMALL_BYTES || c->nbig > 0);
}

/* Every tree and blob of the tip's tree, each once. */
static int list_tip_tree(struct copy *c, const git_oid *id)
{
	const git_tree_entry *e;
	const git_oid *eid;
	git_tree *t;
	size_t i, n;
	int rc = tip_add(&c->tip, id, GIT_OBJECT_TREE);

	if (rc <= 0)
		return rc < 0 ? oom(c) : 0;
	if (git_tree_lookup(&t, c->src, id) < 0)
		return ab_git_fail(c->err, AB_EENGINE, "cannot read a tree");
	n = git_tree_entrycount(t);
	for (i = 0, rc = 0; i < n && rc == 0 && !over_small(c); i++) {
		e = git_tree_entry_byindex(t, i);
		eid = git_tree_entry_id(e);
		switch (git_tree_entry_type(e)) {
		case GIT_OBJECT_TREE:
			rc = list_tip_tree(c, eid);
			break;
		case GIT_OBJECT_BLOB:
			if ((rc = blob_is_big(c, eid)) > 0)
				rc = add_big(c, eid);
			else if (rc == 0 &&
			    tip_add(&c->tip, eid, GIT_OBJECT_BLOB) < 0)
				rc = oom(c);
			break;
		default:	/* a gitlink: its commit is not here */
			break;
		}
	}
	git_tree_free(t);
	return rc;
}

/* The tip commit and its tree first, so that the history's walk knows
 * what the tip holds. */
static int list_tip(struct copy *c, const git_oid *tip)
{
	git_commit *commit;
	int rc;

	if (git_commit_lookup(&commit, c->src, tip) < 0)
		return ab_git_fail(c->err, AB_EENGINE, "cannot read a commit");
	rc = tip_add(&c->tip, tip, GIT_OBJECT_COMMIT) < 0 ? oom(c) :
	    list_tip_tree(c, git_commit_tree_id(commit));
	git_commit_free(commit);
	return rc;
}

/* The tip's objects from the upload's listing, which has read every tree
 * and sized every blob already: reading them again here, at the same
 * time, was half the CPU before the first byte, and the two threads
 * contended for libgit2's one lock on pack windows. */
static int list_tip_from(struct copy *c, const git_oid *tip,
    const struct ab_git_tree *t)
{
	const struct ab_git_entry *e;
	git_oid id;
	size_t i;
	int rc = 0;

	memcpy(id.id, t->root, AB_OID_RAW);
	if (tip_add(&c->tip, tip, GIT_OBJECT_COMMIT) < 0 ||
	    tip_add(&c->tip, &id, GIT_OBJECT_TREE) < 0)
		return oom(c);
	for (i = 0; i < t->n && rc == 0; i++) {
		e = &t->e[i];
		memcpy(id.id, e->oid, AB_OID_RAW);
		if (e->type == AB_GIT_DIR)
			rc = tip_add(&c->tip, &id, GIT_OBJECT_TREE) < 0 ? oom(c) : 0;
		else if (e->type == AB_GIT_GITLINK)
			continue;	/* its commit is not here */
		else if (e->size > AB_GIT_BIG)
			rc = add_big(c, &id);
		else if (tip_add(&c->tip, &id, GIT_OBJECT_BLOB) < 0)
			rc = oom(c);
	}
	return rc;
}

/* From the upload's listing when there is one, else read here. */
static int tip_objects(struct copy *c, const git_oid *tip,
    const struct ab_git_stage_io *io)
{
	const struct ab_git_tree *t;

	if (io->tree == NULL)
		return list_tip(c, tip);
	if ((t = io->tree(io->arg)) == NULL)
		return ab_fail(c->err, AB_EENGINE, "packing stopped");
	if (list_tip_from(c, tip, t) < 0)
		return -1;
	/* The upload goes through the listing: it hands these over. */
	c->ntipbig = c->nbig;
	c->feed = io->feed;
	return 0;
}

/* A commit and its generation: 1 for the tip, as git counts --depth. */
struct gen {
	git_oid id;
	long d;
};

struct shallow {
	git_oid *v;
	size_t n, cap;
};

static int oid_cmp(const void *a, const void *b)
{
	return git_oid_cmp(a, b);
}

/* The shallow file: the commits kept whose parents are not, sorted. */
static int write_shallow(struct copy *c, struct shallow *sh,
    const char *stage)
{
	char hex[GIT_OID_HEXSZ + 2];
	struct ab_buf b;
	size_t i;
	int rc = 0, dfd;

	if (sh->n == 0)
		return 0;
	qsort(sh->v, sh->n, sizeof *sh->v, oid_cmp);
	ab_buf_init(&b, sh->n * (GIT_OID_HEXSZ + 1));	/* an ID a line */
	for (i = 0; i < sh->n && rc == 0; i++) {
		git_oid_tostr(hex, sizeof hex, &sh->v[i]);
		rc = ab_buf_addf(&b, "%s\n", hex);
	}
	if (rc < 0)
		rc = oom(c);
	else if ((dfd = open(stage, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		rc = ab_fail_errno(c->err, AB_EENGINE, "cannot open %s", stage);
	else {
		rc = ab_file_write_at(dfd, "shallow", b.data, b.len, 0444, NULL,
		    c->err);
		close(dfd);
	}
	ab_buf_free(&b);
	return rc;
}

static int push_shallow(struct shallow *sh, const git_oid *id)
{
	git_oid *v;

	if (sh->n == sh->cap) {
		sh->cap = sh->cap ? 2 * sh->cap : 64;
		if ((v = realloc(sh->v, sh->cap * sizeof *v)) == NULL)
			return -1;
		sh->v = v;
	}
	sh->v[sh->n++] = *id;
	return 0;
}

/* Commit ID of generation D onto Q, unless IN (Q's set) has it. */
static int push_gen(struct idset *in, struct gen **q, size_t *n,
    size_t *cap, const git_oid *id, long d)
{
	struct gen *v;
	int add;

	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 64;
		if ((v = realloc(*q, *cap * sizeof *v)) == NULL)
			return -1;
		*q = v;
	}
	(*q)[*n].id = *id;
	(*q)[*n].d = d;
	if ((add = idset_add(in, (*q)[0].id.id, sizeof **q, *n)) < 0)
		return -1;
	*n += (size_t)add;
	return 0;
}

/* The parents of generation-D commit C not met yet, as generation D+1. */
static int push_parents(struct idset *in, const git_commit *commit, long d,
    struct gen **q, size_t *nq, size_t *cap)
{
	unsigned k, np = git_commit_parentcount(commit);

	for (k = 0; k < np; k++)
		if (push_gen(in, q, nq, cap, git_commit_parent_id(commit, k),
		    d + 1) < 0)
			return -1;
	return 0;
}

/* Breadth first from the tip, so each commit is met at its least
 * generation; one of generation DEPTH keeps no parent and, when it has
 * one, goes into the shallow file.  With MAX, it stops once more than
 * MAX commits are met. */
static int walk_depth(struct copy *c, const git_oid *tip, long depth,
    struct gen **q, size_t *nq, struct shallow *sh, size_t max)
{
	struct idset in = { NULL, 0 };
	git_commit *commit;
	size_t cap = 0, i;
	int rc = 0;

	if (push_gen(&in, q, nq, &cap, tip, 1) < 0)
		rc = oom(c);
	for (i = 0; rc == 0 && i < *nq && (max == 0 || *nq <= max); i++) {
		if (git_commit_lookup(&commit, c->src, &(*q)[i].id) < 0) {
			rc = ab_git_fail(c->err, AB_EENGINE,
			    "cannot read a commit");
			break;
		}
		if ((*q)[i].d < depth)
			rc = push_parents(&in, commit, (*q)[i].d, q, nq, &cap);
		else if (git_commit_parentcount(commit) > 0)
			rc = push_shallow(sh, &(*q)[i].id);
		git_commit_free(commit);
		if (rc < 0)
			rc = oom(c);
	}
	free(in.slot);
	return rc;
}

/* The shallow file for --depth: where the tip's DEPTH generations end. */
static int shallow_file(struct copy *c, const git_oid *tip, long depth,
    const char *stage)
{
	struct shallow sh = { NULL, 0, 0 };
	struct gen *q = NULL;
	size_t nq = 0;
	int rc;

	rc = walk_depth(c, tip, depth, &q, &nq, &sh, 0);
	if (rc == 0)
		rc = write_shallow(c, &sh, stage);
	free(q);
	free(sh.v);
	return rc;
}

/* --- the tip's pack ------------------------------------------------- */

/* Writes the tip's pack: the commit and the trees first, then the blobs
 * as the upload offers them (gitfeed.h), each read by the upload already
 * and hashed there.  When no offer comes within a moment (the upload is
 * busy, or gone on to the git directory), it reads a blob itself, from
 * the end of the listing, where the upload will come last; then polls
 * again.  Whatever it reads, libgit2 hashes against its name. */
struct tipwriter {
	pthread_t th;
	git_repository *repo;
	git_odb *odb;
	const char *pack;
	struct tipset tip;
	struct ab_git_feed *feed;
	const struct stop_cb *cb;
	atomic_int abort;
	int rc;
	struct ab_err *err, own;
};

static int tw_stopped(struct tipwriter *w)
{
	return atomic_load(&w->abort) ||
	    (w->cb->stop != NULL && w->cb->stop(w->cb->arg));
}

static int tw_read(struct tipwriter *w, struct ab_pack *p, size_t i)
{
	git_odb_object *o;
	git_oid id;
	int rc;

	memcpy(id.id, w->tip.e[i].id, AB_OID_RAW);
	if (git_odb_read(&o, w->odb, &id) < 0)
		return ab_git_fail(w->err, AB_EENGINE, "cannot read an object");
	rc = ab_pack_add(p, &w->tip.e[i], (int)git_odb_object_type(o),
	    git_odb_object_data(o), git_odb_object_size(o), w->err);
	git_odb_object_free(o);
	return rc;
}

/* A fed blob: 1 when it was one of the tip's still to write. */
static int tw_fed(struct tipwriter *w, struct ab_pack *p,
    const struct ab_git_fed *d, unsigned char *done)
{
	uint32_t k = idset_find(&w->tip.set, w->tip.e[0].id,
	    sizeof *w->tip.e, d->id);

	if (k == 0 || done[k - 1] || w->tip.type[k - 1] != GIT_OBJECT_BLOB)
		return 0;
	done[k - 1] = 1;
	return ab_pack_add(p, &w->tip.e[k - 1], GIT_OBJECT_BLOB, d->data, d->n,
	    w->err) < 0 ? -1 : 1;
}

static int tw_blobs(struct tipwriter *w, struct ab_pack *p,
    unsigned char *done, size_t left)
{
	struct ab_git_fed *d;
	size_t back = w->tip.n, k;
	int rc = 0, wait = 20;

	for (k = 0; rc == 0 && left > 0; k++) {
		d = w->feed != NULL ? ab_git_feed_take(w->feed, wait) : NULL;
		/* Asked after every wait, and every 256 objects. */
		if ((d == NULL || (k & 255) == 0) && tw_stopped(w)) {
			free(d);
			return ab_fail(w->err, AB_EENGINE, "packing stopped");
		}
		if (d != NULL) {
			rc = tw_fed(w, p, d, done);
			free(d);
			left -= rc > 0;
			rc = rc < 0 ? -1 : 0;
			wait = 20;
			continue;
		}
		wait = 0;
		while (done[back - 1])
			back--;
		done[--back] = 1;
		left--;
		rc = tw_read(w, p, back);
	}
	return rc;
}

static int write_tip(struct tipwriter *w)
{
	struct ab_pack *p;
	unsigned char *done = calloc(w->tip.n ? w->tip.n : 1, 1);
	size_t i, left = 0;
	int rc = 0;

	if (done == NULL)
		return ab_fail(w->err, AB_EENGINE, "out of memory packing");
	if (ab_pack_start(&p, w->pack, w->tip.n, w->err) < 0) {
		free(done);
		return -1;
	}
	for (i = 0; i < w->tip.n && rc == 0; i++) {
		if (w->tip.type[i] != GIT_OBJECT_BLOB) {
			done[i] = 1;
			rc = tw_read(w, p, i);
		} else
			left++;
	}
	if (rc == 0)
		rc = tw_blobs(w, p, done, left);
	free(done);
	if (rc < 0) {
		ab_pack_abort(p);
		return -1;
	}
	return ab_pack_end(p, w->tip.e, w->tip.n, w->err);
}

static void *tw_main(void *arg)
{
	struct tipwriter *w = arg;

	/* Per thread on Linux; failing to set it only costs time. */
	(void)setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
	w->rc = write_tip(w);
	return NULL;
}

static void tw_free(struct tipwriter *w)
{
	git_odb_free(w->odb);
	git_repository_free(w->repo);
	tip_free(&w->tip);
	w->odb = NULL;
	w->repo = NULL;
}

/* The tip's pack in a thread of its own, with its own copy of the tip's
 * objects (the history's walk reads the set meanwhile, and the pack's
 * end sorts it) and its own repository handle: 1 started, 0 not (write
 * it here, later), -1. */
static int tw_start(struct tipwriter *w, struct copy *c, const char *dir,
    const char *pack, struct ab_git_feed *feed)
{

	memset(w, 0, sizeof *w);
	w->pack = pack;
	w->cb = c->cb;
	w->err = &w->own;
	atomic_init(&w->abort, 0);
	if (feed == NULL || !ab_git_threads())
		return 0;
	if (tip_copy(&w->tip, &c->tip) < 0)
		return oom(c);
	if (ab_git_open(&w->repo, dir, c->err) < 0) {
		tip_free(&w->tip);
		return -1;
	}
	if (git_repository_odb(&w->odb, w->repo) < 0) {
		tw_free(w);
		return ab_git_fail(c->err, AB_EENGINE, "cannot read the "
		    "repository");
	}
	w->feed = feed;
	if ((errno = pthread_create(&w->th, NULL, tw_main, w)) != 0) {
		/* Written later, here: only slower. */
		tw_free(w);
		return 0;
	}
	return 1;
}

/* Joins a started writer, told to stop when C failed (RC < 0); its
 * failure is C's unless C failed first. */
static int tw_join(struct tipwriter *w, struct copy *c, int rc)
{
	atomic_store(&w->abort, rc < 0);
	pthread_join(w->th, NULL);
	tw_free(w);
	if (rc < 0)
		return -1;
	if (w->rc < 0) {
		*c->err = w->own;
		return -1;
	}
	return 0;
}

/* --- big blobs, loose ------------------------------------------------ */

#define ZCHUNK (1024 * 1024)

/* A loose object being written: its header, then the blob whole or a
 * stream, deflated into fd. */
struct zsrc {
	const char *head;		/* headlen bytes, first */
	size_t headlen;
	const unsigned char *data;	/* the blob whole, size bytes, or */
	size_t size, off;
	struct ab_git_bstream *bs;	/* a stream */
	unsigned char *buf;		/* for the stream */
	int fd;
};

/* Points *p at the next piece; its length, 0 at the end, -1. */
static long zsrc_next(void *arg, const unsigned char **p, struct ab_err *err)
{
	struct zsrc *z = arg;
	size_t left;
	long k;

	if (z->head != NULL) {
		*p = (const unsigned char *)z->head;
		z->head = NULL;
		return (long)z->headlen;
	}
	if (z->bs != NULL) {
		k = ab_git_bstream_read(z->bs, (char *)z->buf, ZCHUNK, err);
		*p = z->buf;
		return k;
	}
	left = z->size - z->off;
	if (left > ZCHUNK)
		left = ZCHUNK;
	*p = z->data + z->off;
	z->off += left;
	return (long)left;
}

static int zsrc_out(void *arg, const unsigned char *p, size_t n,
    struct ab_err *err)
{
	if (ab_write_all(((struct zsrc *)arg)->fd, p, n) < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot write a loose "
		    "object");
	return 0;
}

/* A blob that does not shrink in its first mebibyte is stored from
 * there on (gitpack.h). */
static int deflate_to(struct zsrc *in, struct ab_err *err)
{
	struct ab_deflate_io io = { .read = zsrc_next, .write = zsrc_out,
	    .arg = in, .outcap = ZCHUNK, .probe = ZCHUNK };
	z_stream z;
	int rc;

	memset(&z, 0, sizeof z);
	if ((io.out = malloc(ZCHUNK)) == NULL ||
	    deflateInit(&z, Z_BEST_SPEED) != Z_OK) {
		free(io.out);
		return ab_fail(err, AB_EENGINE, "cannot start zlib");
	}
	rc = ab_deflate(&z, &io, err);
	deflateEnd(&z);
	free(io.out);
	return rc;
}

/* objects/XX/YYYY..., written under a temporary name and renamed: a
 * loose object is whole, and matches its name, or is absent. */
static int write_loose(const char *stage, const git_oid *id, size_t size,
    struct zsrc *in, struct ab_err *err)
{
	char hex[AB_OID_HEX + 1], dir[4200], tmp[4300], path[4300], head[64];
	size_t headlen;
	int fd, rc;

	git_oid_tostr(hex, sizeof hex, id);
	if (ab_fmt_err(err, dir, sizeof dir, "the staging clone's path",
	    "%s/objects/%.2s", stage, hex) < 0 ||
	    ab_fmt_err(err, path, sizeof path, "the staging clone's path",
	    "%s/%s", dir, hex + 2) < 0 ||
	    ab_fmt_err(err, tmp, sizeof tmp, "the staging clone's path",
	    "%s/tmp_obj_XXXXXX", dir) < 0 ||
	    ab_fmt_err(err, head, sizeof head, "a blob's header",
	    "blob %zu", size) < 0)
		return -1;
	headlen = strlen(head) + 1;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return ab_fail_errno(err, AB_EENGINE, "cannot create %s", dir);
	if ((fd = mkstemp(tmp)) < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot create %s", tmp);
	in->head = head;
	in->headlen = headlen;
	in->fd = fd;
	rc = deflate_to(in, err);
	if (rc == 0 && fchmod(fd, 0444) < 0)
		rc = ab_fail_errno(err, AB_EENGINE, "cannot write %s", tmp);
	if (close(fd) < 0 && rc == 0)
		rc = ab_fail_errno(err, AB_EENGINE, "cannot write %s", tmp);
	if (rc == 0 && rename(tmp, path) < 0)
		rc = ab_fail_errno(err, AB_EENGINE, "cannot rename %s", tmp);
	if (rc < 0)
		unlink(tmp);
	return rc;
}

/* A loose blob of the source streams through, hashed; a packed one is
 * inflated whole by libgit2 (and hashed by it): one blob at a time. */
static int copy_one(struct copy *c, const char *stage, const git_oid *id)
{
	struct ab_git_bstream bs;
	git_odb_object *obj;
	struct zsrc in;
	int rc;

	memset(&in, 0, sizeof in);
	rc = ab_git_bstream_open(&bs, c->odb, id->id, c->err);
	if (rc < 0)
		return -1;
	if (rc == 1) {
		in.bs = &bs;
		if ((in.buf = malloc(ZCHUNK)) == NULL)
			rc = ab_fail(c->err, AB_EENGINE, "out of memory");
		else
			rc = write_loose(stage, id, bs.size, &in, c->err);
		free(in.buf);
		ab_git_bstream_close(&bs);
		return rc;
	}
	if (git_odb_read(&obj, c->odb, id) < 0)
		return ab_git_fail(c->err, AB_EENGINE, "cannot read a blob");
	in.data = git_odb_object_data(obj);
	in.size = git_odb_object_size(obj);
	rc = write_loose(stage, id, in.size, &in, c->err);
	git_odb_object_free(obj);
	return rc;
}

/* A big blob of the tip, as the upload hands it over (gitfeed.h): in the
 * listing's order, so what does not match is a repeat of one done; when
 * the upload shares it, it is written from the upload's copy, which was
 * hashed on reading.  A packed blob was read and hashed twice before, on
 * four 50 MiB blobs a second of CPU. */
static int copy_fed(struct copy *c, const char *stage, const git_oid *id)
{
	struct ab_git_big *b;
	struct zsrc in;
	int rc;

	for (;;) {
		if ((b = ab_git_feed_take_big(c->feed, 100)) == NULL) {
			if (c->cb->stop != NULL && c->cb->stop(c->cb->arg))
				return ab_fail(c->err, AB_EENGINE,
				    "copying stopped");
			if (ab_git_feed_closed(c->feed))
				return copy_one(c, stage, id);
			continue;
		}
		if (memcmp(b->id, id->id, AB_OID_RAW) == 0)
			break;
		ab_git_feed_big_done(c->feed, b);
	}
	if (b->data == NULL) {
		ab_git_feed_big_done(c->feed, b);
		return copy_one(c, stage, id);
	}
	memset(&in, 0, sizeof in);
	in.data = b->data;
	in.size = b->n;
	rc = write_loose(stage, id, b->n, &in, c->err);
	ab_git_feed_big_done(c->feed, b);
	return rc;
}

static int copy_big(struct copy *c, const char *stage,
    const struct stop_cb *cb)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < c->nbig && rc == 0; i++) {
		if (cb->stop != NULL && cb->stop(cb->arg))
			return ab_fail(c->err, AB_EENGINE, "copying stopped");
		rc = c->feed != NULL && i < c->ntipbig ?
		    copy_fed(c, stage, &c->big[i]) :
		    copy_one(c, stage, &c->big[i]);
	}
	return rc;
}

/* Without a writer thread, the tip's pack is written here, last, from
 * reads of its own. */
static int write_tip_here(struct copy *c, const char *pack)
{
	struct tipwriter w;

	memset(&w, 0, sizeof w);
	w.odb = c->odb;
	w.pack = pack;
	w.tip = c->tip;
	w.cb = c->cb;
	w.err = c->err;
	atomic_init(&w.abort, 0);
	return write_tip(&w);
}

/* --depth 1: the tip alone, in a pack of our own and loose blobs, with a
 * shallow file when the commit has parents. */
static int stage_tip(struct copy *c, const char *dir, const git_oid *tip,
    const char *stage, const struct ab_git_stage_io *io)
{
	struct tipwriter w;
	char pack[4200];
	int rc, tw;

	if (ab_fmt_err(c->err, pack, sizeof pack, "the staging clone's path",
	    "%s/objects/pack", stage) < 0 || tip_objects(c, tip, io) < 0 ||
	    (tw = tw_start(&w, c, dir, pack, io->feed)) < 0)
		return -1;
	rc = shallow_file(c, tip, 1, stage);
	if (rc == 0)
		rc = copy_big(c, stage, c->cb);
	if (tw == 1)
		return tw_join(&w, c, rc);
	return rc == 0 ? write_tip_here(c, pack) : -1;
}

/* The history by git's own pack-objects (githist.h), down to the shallow
 * file's commits with --depth. */
static int stage_history(struct copy *c, const git_oid *tip,
    const char *hex, const char *stage, const struct ab_git_stage_io *io)
{
	struct ab_git_hist h;
	git_buf objects = GIT_BUF_INIT;
	int rc;

	if (io->depth > 1 && shallow_file(c, tip, io->depth, stage) < 0)
		return -1;
	if (git_repository_item_path(&objects, c->src,
	    GIT_REPOSITORY_ITEM_OBJECTS) < 0)
		return ab_git_fail(c->err, AB_EENGINE, "cannot find the "
		    "repository's objects");
	memset(&h, 0, sizeof h);
	h.objects = objects.ptr;
	h.stage = stage;
	h.tip = hex;
	h.max_bytes = io->max_bytes;
	h.stop = io->stop;
	h.arg = io->arg;
	h.progress = io->progress;
	rc = ab_git_history(&h, c->err);
	git_buf_dispose(&objects);
	return rc;
}

/* Lists the commits of Q and their trees into the tip's set, while the
 * history stays small. */
static int list_small(struct copy *c, const struct gen *q, size_t nq)
{
	size_t i;
	int rc = 0;

	c->small = 1;
	if (nq > SMALL_OBJECTS)
		return 0;
	for (i = 0; rc == 0 && i < nq && !over_small(c); i++)
		rc = list_tip(c, &q[i].id);
	return rc;
}

/* A small history in a pack of our own, with the shallow file --depth
 * asks for: 1 done; 0 when it is not small, or an object of it does not
 * read (git then names it, githist.h), nothing of ours left; -1 when
 * stopped. */
static int small_history(struct copy *c, const git_oid *tip, long depth,
    const char *stage)
{
	struct shallow sh = { NULL, 0, 0 };
	struct gen *q = NULL;
	char pack[4200];
	size_t nq = 0;
	int rc;

	rc = walk_depth(c, tip, depth > 0 ? depth : LONG_MAX, &q, &nq, &sh,
	    SMALL_OBJECTS);
	if (rc == 0)
		rc = list_small(c, q, nq);
	if (rc == 0 && (over_small(c) || nq > SMALL_OBJECTS))
		rc = 1;		/* git's */
	else if (rc == 0) {
		if (ab_fmt_err(c->err, pack, sizeof pack,
		    "the staging clone's path", "%s/objects/pack", stage) < 0 ||
		    write_shallow(c, &sh, stage) < 0 ||
		    write_tip_here(c, pack) < 0)
			rc = -1;
	}
	free(q);
	free(sh.v);
	if (rc >= 0)
		return !rc;
	if (c->cb->stop != NULL && c->cb->stop(c->cb->arg))
		return -1;
	memset(c->err, 0, sizeof *c->err);
	return 0;
}

int ab_git_stage(const char *dir, const char *hex, const char *stage,
    const struct ab_git_stage_io *io, struct ab_err *err)
{
	struct stop_cb cb = { io->stop, io->arg };
	struct copy c;
	git_oid tip;
	int rc = -1;

	memset(&c, 0, sizeof c);
	c.err = err;
	c.cb = &cb;
	git_oid_fromstr(&tip, hex);
	if (ab_git_open(&c.src, dir, err) < 0)
		return -1;
	if (git_repository_odb(&c.odb, c.src) < 0)
		ab_git_fail(err, AB_EENGINE, "cannot read the repository");
	else if (io->depth == 1)
		rc = stage_tip(&c, dir, &tip, stage, io);
	else if ((rc = small_history(&c, &tip, io->depth, stage)) == 0) {
		tip_free(&c.tip);
		c.small = 0;
		rc = stage_history(&c, &tip, hex, stage, io);
	} else
		rc = rc > 0 ? 0 : -1;
	tip_free(&c.tip);
	free(c.bigs.slot);
	free(c.big);
	git_odb_free(c.odb);
	git_repository_free(c.src);
	return rc;
}
