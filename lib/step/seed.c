#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "archive.h"
#include "file.h"
#include "git.h"
#include "gitfeed.h"
#include "gitindex.h"
#include "gitstage.h"
#include "keeper.h"
#include "lockdown.h"
#include "pathcheck.h"
#include "seed.h"
#include "size.h"
#include "tarstream.h"
#include "testhook.h"

#define PAGE 4096LL
/* Inodes every seeded task filesystem uses besides the tree: its root
 * and the /work/.git mount point. */
#define TASK_BASE_INODES 2

static long long pages(long long n)
{
	return (n + PAGE - 1) / PAGE * PAGE;
}

/* Said before the upload, with the option that raises the ceiling. */
static int ceiling(const char *fs, long long bytes, long long inodes,
    const struct ab_volume *v, struct ab_err *err)
{
	char need[32], have[32];

	if (bytes > v->bytes) {
		ab_human_size(bytes, need, sizeof need);
		ab_human_size(v->bytes, have, sizeof have);
		return ab_fail(err, AB_EREFUSED, "%s filesystem: %s needed, %s "
		    "ceiling (ab-alloc --%s-bytes)", fs, need, have, fs);
	}
	if (inodes > v->inodes)
		return ab_fail(err, AB_EREFUSED, "%s filesystem: %lld files "
		    "needed, %lld-inode ceiling (ab-alloc --%s-inodes)", fs,
		    inodes, v->inodes, fs);
	return 0;
}

static int links_check(const struct ab_git_tree *t, struct ab_err *err)
{
	char **links;
	size_t i, n = 0;
	int rc = 0;

	links = calloc(t->n + 1, sizeof *links);
	if (links == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	for (i = 0; i < t->n; i++)
		if (t->e[i].type == AB_GIT_LINK)
			links[n++] = t->e[i].path;
	qsort(links, n, sizeof *links, ab_path_cmp);
	for (i = 0; rc == 0 && i < t->n; i++)
		if (t->e[i].type == AB_GIT_LINK)
			rc = ab_link_chain_check(t->e[i].path, t->e[i].link,
			    (const char *const *)links, n, err);
	free(links);
	return rc;
}

static int task_ceiling(const struct ab_git_tree *t, const struct ab_alloc *a,
    struct ab_err *err)
{
	long long bytes = 0;
	size_t i;

	/* tmpfs charges whole pages; a symlink may take one too. */
	for (i = 0; i < t->n; i++)
		if (t->e[i].type == AB_GIT_FILE || t->e[i].type == AB_GIT_LINK)
			bytes += pages(t->e[i].size);
	return ceiling("task", bytes, (long long)t->n + TASK_BASE_INODES,
	    &a->vol[AB_VOL_TASK], err);
}

/* --- the work tree as a tar ---------------------------------------- */

struct tree_src {
	const struct ab_git_tree *t;
	struct ab_git_reader *r;
	struct ab_git_feed *feed;	/* the tip's packer, or NULL */
	size_t next;
	long long files, bytes;
};

/* The blob just loaded, to the packer (gitfeed.h): a small one copied, a
 * big one shared when it was read whole, else named as streamed. */
static void offer(struct tree_src *ts, const struct ab_git_entry *e)
{
	const void *blob;
	size_t blen;
	void *ref;

	if (!ab_git_reader_whole(ts->r, &blob, &blen)) {
		ab_git_feed_big(ts->feed, e->oid, NULL, 0, NULL, NULL);
		return;
	}
	if (blen <= AB_GIT_BIG)
		ab_git_feed_offer(ts->feed, e->oid, blob, blen);
	else if (ab_git_reader_share(ts->r, &ref))
		ab_git_feed_big(ts->feed, e->oid, blob, blen, ref,
		    ab_git_blob_release);
	else
		ab_git_feed_big(ts->feed, e->oid, NULL, 0, NULL, NULL);
}

static int tree_next(void *arg, struct ab_tar_entry *te, struct ab_err *err)
{
	struct tree_src *ts = arg;
	const struct ab_git_entry *e;
	long long size;

	if (ts->next == ts->t->n)
		return 0;
	e = &ts->t->e[ts->next++];
	te->path = e->path;
	te->mode = e->mode;
	te->uid = te->gid = AB_AGENT_UID;
	switch (e->type) {
	case AB_GIT_DIR:
	case AB_GIT_GITLINK:
		te->type = AB_TAR_DIR;
		return 1;
	case AB_GIT_LINK:
		te->type = AB_TAR_SYMLINK;
		te->link = e->link;
		return 1;
	case AB_GIT_FILE:
		break;
	}
	te->type = AB_TAR_FILE;
	if (ab_git_reader_load(ts->r, e->oid, e->size, &size, err) < 0)
		return -1;
	if (size != e->size)
		return ab_fail(err, AB_EREFUSED, "%s changed size while seeding",
		    e->path);
	if (ts->feed != NULL)
		offer(ts, e);
	te->size = size;
	ts->files++;
	ts->bytes += size;
	return 1;
}

static long tree_data(void *arg, char *p, size_t n, struct ab_err *err)
{
	struct tree_src *ts = arg;

	return ab_git_reader_read(ts->r, p, n, err);
}

/* --- the git directory as a tar ------------------------------------ */

struct gitdir_file {
	char path[300];		/* in /work/.git */
	char src[4400];		/* on the host, in the staging clone */
	const char *text;	/* generated, instead of src */
	int dir;
};

struct gitdir_src {
	struct gitdir_file *f;
	int n, cap, next, fd;
	long long left;
	const char *prefix;	/* of every path in the archive */
};

static const char git_config[] =
    "[core]\n"
    "\trepositoryformatversion = 0\n"
    "\tfilemode = true\n"
    "\tbare = false\n"
    "\tlogallrefupdates = false\n";

static int gd_add(struct gitdir_src *g, const char *path, const char *src,
    const char *text, int dir, struct ab_err *err)
{
	struct gitdir_file *f;

	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 32;
		if ((f = realloc(g->f, (size_t)g->cap * sizeof *f)) == NULL)
			return ab_fail(err, AB_EENGINE, "out of memory");
		g->f = f;
	}
	f = &g->f[g->n];
	if (ab_fmt_err(err, f->path, sizeof f->path, "a path in .git",
	    "%s%s", g->prefix, path) < 0 || ab_fmt_err(err, f->src,
	    sizeof f->src, "the staging clone's path", "%s",
	    src != NULL ? src : "") < 0)
		return -1;
	g->n++;
	f->text = text;
	f->dir = dir;
	return 0;
}

static void gd_free(struct gitdir_src *g)
{
	if (g->fd >= 0)
		close(g->fd);
	free(g->f);
}

/* Adds every file of stage/SUB that passes keep(name), in SUB. */
static int gd_add_dir(struct gitdir_src *g, const char *stage,
    const char *sub, int (*keep)(const char *), struct ab_err *err)
{
	char src[4400], name[300];
	struct dirent *d;
	DIR *dir;
	int rc = 0;

	if (ab_fmt_err(err, src, sizeof src, "the staging clone's path",
	    "%s/%s", stage, sub) < 0)
		return -1;
	if ((dir = opendir(src)) == NULL)
		return ab_fail_errno(err, AB_EENGINE, "cannot list %s", src);
	while ((d = readdir(dir)) != NULL && rc == 0) {
		if (!keep(d->d_name))
			continue;
		if (ab_fmt_err(err, name, sizeof name, "a path in .git",
		    "%s/%s", sub, d->d_name) < 0 || ab_fmt_err(err, src,
		    sizeof src, "the staging clone's path", "%s/%s/%s", stage,
		    sub, d->d_name) < 0 || gd_add(g, name, src, NULL, 0,
		    err) < 0)
			rc = -1;
	}
	closedir(dir);
	return rc;
}

static int pack_file(const char *n)
{
	size_t k = strlen(n);

	return strncmp(n, "pack-", 5) == 0 && k >= 10 &&
	    (strcmp(n + k - 5, ".pack") == 0 || strcmp(n + k - 4, ".idx") == 0);
}

static int loose_file(const char *n)
{
	return ab_is_hex(n, AB_OID_HEX - 2);
}

/* The loose objects (blobs above AB_GIT_BIG): objects/XX/ and its files. */
static int gd_add_loose(struct gitdir_src *g, const char *stage,
    struct ab_err *err)
{
	char src[4400], name[300];
	struct dirent *d;
	DIR *dir;
	int rc = 0;

	if (ab_fmt_err(err, src, sizeof src, "the staging clone's path",
	    "%s/objects", stage) < 0)
		return -1;
	if ((dir = opendir(src)) == NULL)
		return ab_fail_errno(err, AB_EENGINE, "cannot list %s", src);
	while ((d = readdir(dir)) != NULL && rc == 0) {
		if (!ab_is_hex(d->d_name, 2))
			continue;
		if (ab_fmt_err(err, name, sizeof name, "a path in .git",
		    "objects/%s", d->d_name) < 0 ||
		    gd_add(g, name, NULL, NULL, 1, err) < 0)
			rc = -1;
		else
			rc = gd_add_dir(g, stage, name, loose_file, err);
	}
	closedir(dir);
	return rc;
}

/* HEAD detached at the commit, a config of our own (no hooks path, no
 * fsmonitor, no filters, no includes, no remotes), the index, and the
 * staging clone's objects; no hooks directory at all. */
static int gitdir_list(struct gitdir_src *g, const char *stage,
    const char *head, struct ab_err *err)
{
	static const char *const dirs[] = { "objects", "objects/info",
	    "objects/pack", "refs", "refs/heads", "refs/tags", NULL };
	char src[4400];
	int i, rc = 0;

	memset(g, 0, sizeof *g);
	g->fd = -1;
	g->prefix = ".git/";
	for (i = 0; dirs[i] != NULL && rc == 0; i++)
		rc = gd_add(g, dirs[i], NULL, NULL, 1, err);
	if (rc == 0)
		rc = ab_fmt_err(err, src, sizeof src,
		    "the staging clone's path", "%s/index", stage);
	if (rc < 0 || gd_add(g, "HEAD", NULL, head, 0, err) < 0 ||
	    gd_add(g, "config", NULL, git_config, 0, err) < 0 ||
	    gd_add(g, "index", src, NULL, 0, err) < 0)
		return -1;
	if (gd_add_dir(g, stage, "objects/pack", pack_file, err) < 0 ||
	    gd_add_loose(g, stage, err) < 0)
		return -1;
	/* With --depth, where the history stops, as git records it. */
	if (ab_fmt_err(err, src, sizeof src, "the staging clone's path",
	    "%s/shallow", stage) < 0)
		return -1;
	if (access(src, F_OK) == 0 &&
	    gd_add(g, "shallow", src, NULL, 0, err) < 0)
		return -1;
	return 0;
}

static int gd_next(void *arg, struct ab_tar_entry *te, struct ab_err *err)
{
	struct gitdir_src *g = arg;
	struct gitdir_file *f;
	struct stat st;

	if (g->fd >= 0)
		close(g->fd);
	g->fd = -1;
	if (g->next == g->n)
		return 0;
	f = &g->f[g->next++];
	te->path = f->path;
	te->uid = te->gid = AB_AGENT_UID;
	te->mode = f->dir ? 0755 : 0444;
	te->type = f->dir ? AB_TAR_DIR : AB_TAR_FILE;
	if (f->dir)
		return 1;
	if (f->text != NULL) {
		te->size = g->left = (long long)strlen(f->text);
		return 1;
	}
	g->fd = open(f->src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (g->fd < 0 || fstat(g->fd, &st) < 0 || !S_ISREG(st.st_mode))
		return ab_fail(err, AB_EREFUSED,
		    "staging clone: %s is not a regular file", f->src);
	te->size = g->left = (long long)st.st_size;
	return 1;
}

static long gd_data(void *arg, char *p, size_t n, struct ab_err *err)
{
	struct gitdir_src *g = arg;
	struct gitdir_file *f = &g->f[g->next - 1];
	ssize_t got;

	if ((long long)n > g->left)
		n = (size_t)g->left;
	if (f->text != NULL) {
		memcpy(p, f->text + strlen(f->text) - g->left, n);
		got = (ssize_t)n;
	} else {
		got = read(g->fd, p, n);
		if (got < 0)
			return ab_fail_errno(err, AB_EENGINE, "read %s", f->src);
	}
	g->left -= got;
	return (long)got;
}

static int git_ceiling(const struct gitdir_src *g, const struct ab_alloc *a,
    struct ab_err *err)
{
	long long bytes = 0;
	struct stat st;
	int i;

	for (i = 0; i < g->n; i++) {
		if (g->f[i].text != NULL)
			bytes += pages((long long)strlen(g->f[i].text));
		else if (!g->f[i].dir && stat(g->f[i].src, &st) == 0)
			bytes += pages((long long)st.st_size);
	}
	/* And the seed's mark: its folder and its file, a page. */
	return ceiling("git", bytes + pages(1), g->n + 3, &a->vol[AB_VOL_GIT],
	    err);
}

/* --- the whole step ------------------------------------------------ */

static int keeper_ready(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, struct ab_err *err)
{
	if (strcmp(a->status, "ready") != 0)
		return ab_fail(err, AB_EREFUSED, "alloc:%s is %s, not ready "
		    "to seed", a->id, a->status);
	return ab_keeper_ready(s, e, a, err);
}

static void say(const struct ab_seed_opts *o, const char *fmt, long long x,
    long long y)
{
	char line[256];

	if (o->progress == NULL)
		return;
	/* A cut line still shows progress. */
	(void)ab_fmt(line, sizeof line, fmt, x, y);
	o->progress(line);
}

static int make_stage(struct ab_state *s, struct ab_alloc *a,
    const char *stage, struct ab_err *err)
{
	char dir[4200];

	if (ab_fmt_err(err, dir, sizeof dir, "the state directory's path",
	    "%s/stage", s->path) < 0)
		return -1;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return ab_fail_errno(err, AB_EENGINE, "cannot create %s", dir);
	if (mkdir(stage, 0700) < 0)
		return ab_fail_errno(err, errno == EEXIST ? AB_EREFUSED :
		    AB_EENGINE, "cannot create the staging clone %s", stage);
	if (ab_git_stage_init(stage, err) < 0 ||
	    ab_stage_identity(stage, &a->stage_dev, &a->stage_ino,
	    &a->objects_ino, err) < 0)
		return -1;
	if (ab_fmt_err(err, a->status, sizeof a->status, "a status",
	    "seeding") < 0)
		return -1;
	return ab_alloc_save(s, a, err);
}

/* --- the pack, built while the tree uploads ------------------------- */

/* What the upload may hold for the tip's packer: 8 MiB, some 40,000
 * small files, a second of the upload. */
#define FEED_BYTES (8 * 1024 * 1024)

/* The tree's upload is bound by the engine unpacking it (one process,
 * under the container's lock), the pack by this host's CPU: the two run
 * at once.  Measured on 100,000 files: 2.8 s packing, 5.3 s uploading. */

struct packer {
	pthread_t th;
	const char *repo, *hex, *stage;
	long depth;
	long long max_bytes;
	void (*progress)(const char *line);
	const struct ab_deadline *dl;
	struct ab_git_feed *feed;	/* blobs the upload read (gitfeed.h) */
	atomic_int stop, done;
	int started, rc;
	struct ab_err err;
	/* The tree's listing, handed over once checked: the tip's objects
	 * and the index come from it. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	const struct ab_git_tree *tree;
	int indexed;
};

static int packer_stop(void *arg)
{
	struct packer *p = arg;

	return atomic_load(&p->stop) || ab_deadline_passed(p->dl);
}

/* Waits for the checked listing (packer_give_tree); NULL once told to
 * stop. */
static const struct ab_git_tree *packer_tree(void *arg)
{
	struct packer *p = arg;
	const struct ab_git_tree *t;
	struct timespec until;

	pthread_mutex_lock(&p->mu);
	while ((t = p->tree) == NULL && !packer_stop(p)) {
		ab_abstime_in(&until, 100);
		pthread_cond_timedwait(&p->cv, &p->mu, &until);
	}
	pthread_mutex_unlock(&p->mu);
	return t;
}

/* The tip's objects (gitstage.h) and the index (gitindex.h) come from
 * the tree's listing, here while the tree uploads: the index on 100,000
 * files took 10 to 25 ms, which at the switch to the git directory would
 * be the engine's to wait.  The index carries no stat data, so git status
 * inside rehashes every file and, with .git read-only, cannot save the
 * refreshed index.  Measured on 10,000 files (2 MB): 0.05 s a call.  Kept
 * so; a refresh while .git is still writable waits for a tree where the
 * rehash matters. */
static int packer_run(struct packer *p)
{
	struct ab_git_stage_io io = { p->feed, packer_tree, packer_stop, p,
	    p->depth, p->max_bytes, p->progress };
	const struct ab_git_tree *t;

	/* Without a thread, the packer runs before the listing. */
	if (!p->started) {
		io.tree = NULL;
		return ab_git_stage(p->repo, p->hex, p->stage, &io, &p->err);
	}
	/* A history needs no listing: git starts at once, and the index
	 * waits for it instead. */
	if (p->depth != 1 &&
	    ab_git_stage(p->repo, p->hex, p->stage, &io, &p->err) < 0)
		return -1;
	/* The index first: the big blobs wait for the upload to reach them. */
	if ((t = packer_tree(p)) == NULL)
		return ab_fail(&p->err, AB_EENGINE, "packing stopped");
	if (ab_git_index_write(t, p->stage, &p->err) < 0)
		return -1;
	p->indexed = 1;
	return p->depth != 1 ? 0 :
	    ab_git_stage(p->repo, p->hex, p->stage, &io, &p->err);
}

/* The checked listing, for the packer; it outlives the packer, which
 * send_all joins before freeing it. */
static void packer_give_tree(struct packer *p, const struct ab_git_tree *t)
{
	pthread_mutex_lock(&p->mu);
	p->tree = t;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

static void *packer_main(void *arg)
{
	struct packer *p = arg;

	/* With the tip alone, the engine unpacking the tree is the long
	 * pole: the packer takes the CPU it leaves.  On Linux a nice value
	 * is per thread (and git, started here, would inherit it); failing
	 * to set it only costs time.  A history is the long pole itself. */
	if (p->depth == 1)
		(void)setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
	p->rc = packer_run(p);
	pthread_mutex_lock(&p->mu);
	atomic_store(&p->done, 1);
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* 1 when the packer is done within MS. */
static int packer_done_within(struct packer *p, long ms)
{
	struct timespec until;
	int done;

	ab_abstime_in(&until, ms);
	pthread_mutex_lock(&p->mu);
	while (!(done = atomic_load(&p->done)) &&
	    pthread_cond_timedwait(&p->cv, &p->mu, &until) == 0)
		;
	pthread_mutex_unlock(&p->mu);
	return done;
}

static int packer_start(struct packer *p, const struct ab_seed_opts *o,
    const struct ab_alloc *a, const char *stage, const struct ab_engine *e,
    struct ab_err *err)
{
	memset(p, 0, sizeof *p);
	p->repo = o->repo;
	p->depth = o->depth;
	p->max_bytes = a->vol[AB_VOL_GIT].bytes;
	p->progress = o->progress;
	p->hex = a->commit;
	p->stage = stage;
	p->dl = &e->dl;
	atomic_init(&p->stop, 0);
	atomic_init(&p->done, 0);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	/* Without threads in libgit2, pack first, then upload. */
	if (!ab_git_threads()) {
		p->rc = packer_run(p);
		return 0;
	}
	p->started = 1;
	/* Without a feed the tip's packer reads every blob itself; a
	 * history is git's to read. */
	p->feed = p->depth == 1 ? ab_git_feed_new(FEED_BYTES) : NULL;
	if ((errno = pthread_create(&p->th, NULL, packer_main, p)) != 0) {
		ab_git_feed_free(p->feed);
		p->feed = NULL;
		p->started = 0;
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->cv);
		return ab_fail_errno(err, AB_EENGINE, "cannot start packing");
	}
	return 0;
}

/* Waits for the pack; with abandon set, tells it to stop first.  The
 * packer's own failure is reported unless one is reported already. */
static int packer_join(struct packer *p, int abandon, struct ab_err *err)
{
	if (p->feed != NULL)
		ab_git_feed_close(p->feed);
	if (abandon) {
		atomic_store(&p->stop, 1);
		pthread_mutex_lock(&p->mu);
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	if (p->started)
		pthread_join(p->th, NULL);
	p->started = 0;
	if (abandon)
		return -1;
	if (p->rc == 0)
		return 0;
	if (ab_deadline_check(p->dl, "the commit was packed", err) == 0)
		*err = p->err;
	return -1;
}

/* One upload: the tree, then the git directory under .git/ (the git
 * filesystem is mounted there).  The engine takes the keeper's lock,
 * mounts its volumes and starts an unpacking process for each upload:
 * on 10,000 files a second upload was a tenth of a seeding.  The git
 * directory's entries are listed once the pack is done, when the tree's
 * last byte has gone.  When the pack is not done by then (a history:
 * git.git's took 25 s), the tree's upload ends there and the git
 * directory is a second upload once the pack is done: an upload left
 * open and idle would hold the keeper's lock, and every engine call on
 * the keeper, meanwhile. */
/* A second upload costs some 45 ms (the lock, the mounts, the unpacking
 * process); a small tip's pack is done within a few ms of its tree's last
 * byte, so the upload waits that long for it, holding the lock no
 * longer than a second upload would take. */
#define SPLIT_WAIT_MS 40

struct seed_src {
	struct tree_src ts;
	struct gitdir_src g;
	struct packer *p;
	const struct ab_alloc *a;
	const char *stage;
	char head[48];
	int git;		/* the tree is sent */
	int split;		/* the git directory goes on its own */
};

/* Without a packer thread, the index is written here. */
static int seed_gitdir(struct seed_src *ss, struct ab_err *err)
{
	if (packer_join(ss->p, 0, err) < 0 || (!ss->p->indexed &&
	    ab_git_index_write(ss->ts.t, ss->stage, err) < 0) ||
	    ab_stage_check(ss->stage, ss->a, err) < 0 ||
	    ab_fmt_err(err, ss->head, sizeof ss->head, "the commit",
	    "%s\n", ss->a->commit) < 0 ||
	    gitdir_list(&ss->g, ss->stage, ss->head, err) < 0)
		return -1;
	return git_ceiling(&ss->g, ss->a, err);
}

static int seed_next(void *arg, struct ab_tar_entry *te, struct ab_err *err)
{
	struct seed_src *ss = arg;
	int rc;

	if (!ss->git) {
		if ((rc = tree_next(&ss->ts, te, err)) != 0)
			return rc;
		ss->git = 1;
		if (ss->p->started && !packer_done_within(ss->p,
		    SPLIT_WAIT_MS)) {
			ss->split = 1;
			return 0;
		}
		if (seed_gitdir(ss, err) < 0)
			return -1;
	}
	return gd_next(&ss->g, te, err);
}

/* The git directory's own upload, once the pack is done. */
static int send_gitdir(struct ab_engine *e, struct seed_src *ss,
    struct ab_err *err)
{
	struct ab_tar_source src;

	ab_test_pause("seed-split");
	if (seed_gitdir(ss, err) < 0)
		return -1;
	src.next = gd_next;
	src.data = gd_data;
	src.ctx = &ss->g;
	return ab_keeper_upload(e, ss->a, "/work", &src, err);
}

static long seed_data(void *arg, char *p, size_t n, struct ab_err *err)
{
	struct seed_src *ss = arg;

	return ss->git ? gd_data(&ss->g, p, n, err) :
	    tree_data(&ss->ts, p, n, err);
}

/* The tree is read from the source, as the packer reads it: by object ID,
 * every object hashed on reading (git.h). */
static int send_all(struct ab_engine *e, const struct ab_alloc *a,
    const struct ab_seed_opts *o, struct packer *p, const char *stage,
    struct ab_err *err)
{
	struct ab_tar_source src;
	struct ab_git_tree t;
	struct seed_src ss;
	int rc;

	memset(&ss, 0, sizeof ss);
	ss.g.fd = -1;
	if (ab_git_tree(o->repo, a->commit, &t, err) < 0)
		return -1;
	rc = links_check(&t, err);
	if (rc == 0)
		rc = ab_git_index_check(&t, err);
	if (rc == 0)
		rc = task_ceiling(&t, a, err);
	ss.ts.t = &t;
	ss.ts.feed = p->feed;
	ss.p = p;
	ss.a = a;
	ss.stage = stage;
	if (rc == 0)
		rc = ab_git_reader_open(&ss.ts.r, o->repo, err);
	if (rc == 0) {
		packer_give_tree(p, &t);
		say(o, "sending the tree: %lld entries, %lld bytes",
		    (long long)t.n, t.bytes);
		src.next = seed_next;
		src.data = seed_data;
		src.ctx = &ss;
		rc = ab_keeper_upload(e, a, "/work", &src, err);
	}
	if (rc == 0 && ss.split)
		rc = send_gitdir(e, &ss, err);
	if (rc < 0)
		(void)packer_join(p, 1, err);
	ab_git_reader_close(ss.ts.r);
	ab_git_tree_free(&t);
	gd_free(&ss.g);
	return rc;
}

/* Last: every byte of /work was written before it (the upload's reply),
 * so a file whose change time is strictly older than the mark's holds
 * what the seed wrote (ab-export). */
static int put_mark(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, struct ab_err *err)
{
	static const char text[] = "the seed ended here\n";
	struct ab_keeper_file f;

	memset(&f, 0, sizeof f);
	f.dir = AB_SEED_MARK_DIR;
	if (ab_fmt_err(err, f.sub, sizeof f.sub, "the seed's mark", "%s",
	    AB_SEED_MARK_SUB) < 0 || ab_fmt_err(err, f.name, sizeof f.name,
	    "the seed's mark", "%s", AB_SEED_MARK_NAME) < 0)
		return -1;
	f.sub_mode = 0555;
	f.mode = 0444;
	return ab_keeper_put(s, e, a, &f, text, sizeof text - 1, err) < 0 ?
	    ab_err_wrap(err, "the seed's mark") : 0;
}

int ab_seed(struct ab_state *s, struct ab_engine *e, struct ab_alloc *a,
    const struct ab_seed_opts *o, struct ab_err *err)
{
	struct packer p;
	char stage[4200];
	int rc;

	if (ab_stage_path(s, a, stage, sizeof stage) < 0)
		return ab_fail(err, AB_EUSAGE, "state directory path too long");
	if (keeper_ready(s, e, a, err) < 0 || ab_git_start(err) < 0 ||
	    ab_git_resolve(o->repo, o->rev, o->expect, a->commit, err) < 0 ||
	    make_stage(s, a, stage, err) < 0)
		return -1;
	ab_test_pause("seed-staged");
	/* The deadline first: past it, a sweep may take the allocation, its
	 * staging clone with it, and the deadline is the reason. */
	if (ab_deadline_check(&e->dl, "the clone was staged", err) < 0 ||
	    ab_stage_check(stage, a, err) < 0 ||
	    packer_start(&p, o, a, stage, e, err) < 0)
		return -1;
	/* With a history, git is the long pole and takes both cores: the
	 * tree's upload, which git clone does not have, takes what it
	 * leaves.  Per thread on Linux; failing only costs time. */
	if (o->depth != 1)
		(void)setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
	rc = send_all(e, a, o, &p, stage, err);
	/* Joined already unless the listing failed. */
	if (packer_join(&p, rc < 0, err) < 0)
		rc = -1;
	pthread_mutex_destroy(&p.mu);
	pthread_cond_destroy(&p.cv);
	ab_git_feed_free(p.feed);
	if (rc < 0 || ab_stage_check(stage, a, err) < 0 ||
	    put_mark(s, e, a, err) < 0)
		return -1;
	if (ab_fmt_err(err, a->status, sizeof a->status, "a status",
	    "seeded") < 0)
		return -1;
	return ab_alloc_save(s, a, err);
}
