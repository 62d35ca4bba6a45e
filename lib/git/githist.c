#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "file.h"
#include "githist.h"
#include "packcheck.h"
#include "size.h"

/* What a child said on stderr: the newest progress line, and the first
 * fatal (else error) line, which is what failed. */
struct said {
	char part[512];
	size_t n;
	char progress[160];
	char fatal[384], error[384];
	int fresh;		/* a progress line not shown yet */
};

struct child {
	pid_t pid;
	int err;		/* its stderr, or -1 */
	int status;
	struct said s;
};

/* pack-objects reads no config but these and GIT_DIR's (ours); they are
 * pinned so that neither a source's files nor a git release's defaults
 * decide what is read or how much memory it takes (git's defaults of
 * today, but the window, which is unbounded there). */
static const char *const po_argv[] = { "git",
	"-c", "core.commitGraph=false", "-c", "core.multiPackIndex=false",
	"-c", "pack.useBitmaps=false", "-c", "pack.useSparse=false",
	"-c", "pack.windowMemory=256m", "-c", "pack.deltaCacheSize=256m",
	"-c", "pack.deltaCacheLimit=1000", "-c", "core.bigFileThreshold=512m",
	"-c", "core.deltaBaseCacheLimit=96m", "-c", "pack.window=10",
	"-c", "pack.depth=50", "-c", "pack.threads=0",
	"pack-objects", "--revs", "--stdout", "--delta-base-offset",
	"--progress", NULL };

static char *const base_env[] = { "GIT_CONFIG_NOSYSTEM=1",
	"GIT_CONFIG_GLOBAL=/dev/null", "GIT_NO_REPLACE_OBJECTS=1",
	"GIT_TERMINAL_PROMPT=0", "GIT_PROGRESS_DELAY=0", "HOME=/nonexistent",
	"XDG_CONFIG_HOME=/nonexistent", "LC_ALL=C", NULL };

/* git, from PATH: the host's, never the repository's. */
static int find_git(char *out, size_t cap, struct ab_err *err)
{
	const char *path = getenv("PATH"), *p, *e;
	struct stat st;

	for (p = path != NULL ? path : "/usr/bin:/bin"; *p != '\0'; p = e) {
		e = strchr(p, ':');
		if (e == NULL)
			e = p + strlen(p);
		if (e > p && ab_fmt(out, cap, "%.*s/git", (int)(e - p), p) ==
		    0 && *p == '/' && stat(out, &st) == 0 &&
		    S_ISREG(st.st_mode) && access(out, X_OK) == 0)
			return 0;
		if (*e == ':')
			e++;
	}
	return ab_fail(err, AB_EENGINE, "git is not installed: ab-seed packs "
	    "history with the host's git (apt-get install git; or --depth 1)");
}

/* The child's side: only async-signal-safe calls between fork and exec.
 * It dies with the thread that started it, so a killed seeding leaves
 * no git running. */
static void child_exec(const char *git, char *const argv[],
    char *const envp[], int in, int out, int errfd, pid_t parent)
{
	struct sigaction dfl;
	sigset_t none;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(127);
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigaction(SIGPIPE, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(errfd, 2) < 0)
		_exit(127);
	close_range(3, ~0U, 0);
	execve(git, argv, envp);
	_exit(127);
}

static int spawn(struct child *c, const char *git, char *const argv[],
    char *const envp[], int in, int out, struct ab_err *err)
{
	int ep[2];
	pid_t parent = getpid();

	c->pid = -1;
	c->err = -1;
	if (pipe2(ep, O_CLOEXEC) < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot start git");
	if ((c->pid = fork()) < 0) {
		close(ep[0]);
		close(ep[1]);
		return ab_fail_errno(err, AB_EENGINE, "cannot start git");
	}
	if (c->pid == 0)
		child_exec(git, argv, envp, in, out, ep[1], parent);
	close(ep[1]);
	c->err = ep[0];
	return 0;
}

/* A line cut to fit: git's words, not ours, may run long. */
static void keep(char *dst, size_t cap, const char *l)
{
	size_t n = strnlen(l, cap - 1);

	memcpy(dst, l, n);
	dst[n] = '\0';
}

static void keep_line(struct said *s, const char *l)
{
	static const char *const phase[] = { "Enumerating objects",
	    "Counting objects", "Compressing objects", "Writing objects",
	    "Receiving objects", "Resolving deltas", NULL };
	int i;

	for (i = 0; phase[i] != NULL; i++)
		if (strncmp(l, phase[i], strlen(phase[i])) == 0) {
			keep(s->progress, sizeof s->progress, l);
			s->fresh = 1;
			return;
		}
	if (strncmp(l, "fatal: ", 7) == 0 && s->fatal[0] == '\0')
		keep(s->fatal, sizeof s->fatal, l + 7);
	else if (strncmp(l, "error: ", 7) == 0 && s->error[0] == '\0')
		keep(s->error, sizeof s->error, l + 7);
}

/* git ends a progress update with \r, a line with \n; a line longer than
 * the buffer is cut. */
static void take(struct said *s, const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i] == '\r' || p[i] == '\n') {
			s->part[s->n] = '\0';
			if (s->n > 0)
				keep_line(s, s->part);
			s->n = 0;
		} else if (s->n + 1 < sizeof s->part)
			s->part[s->n++] = p[i];
	}
}

/* Reads what is there of C's stderr; closes it at its end. */
static void read_err(struct child *c)
{
	char b[4096];
	ssize_t got = read(c->err, b, sizeof b);

	if (got > 0)
		take(&c->s, b, (size_t)got);
	else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
		take(&c->s, "\n", 1);
		close(c->err);
		c->err = -1;
	}
}

/* The bytes between the two: pack-objects' stdout into index-pack's
 * stdin, while both stderrs are read, so neither git ever waits on a
 * full pipe of ours. */
struct relay {
	int from, to;
	char buf[65536];
	size_t len, off;
	struct child *po, *ip;
	const struct ab_git_hist *h;
	long long start, shown;	/* ms */
};

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* A line a second at most, none in the first: a small history says
 * nothing. */
static void progress(struct relay *r)
{
	struct child *c = r->ip->s.fresh ? r->ip : r->po;
	char line[200];
	long long now = now_ms();

	if (r->h->progress == NULL || !c->s.fresh || now - r->start < 1000 ||
	    now - r->shown < 1000)
		return;
	r->shown = now;
	c->s.fresh = 0;
	/* A cut line still shows progress. */
	(void)ab_fmt(line, sizeof line, "history: %s", c->s.progress);
	r->h->progress(line);
}

static void pump(struct relay *r)
{
	ssize_t got;

	if (r->len == r->off) {
		r->len = r->off = 0;
		got = read(r->from, r->buf, sizeof r->buf);
		if (got > 0)
			r->len = (size_t)got;
		else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
			close(r->from);
			r->from = -1;
		}
		return;
	}
	got = write(r->to, r->buf + r->off, r->len - r->off);
	if (got > 0)
		r->off += (size_t)got;
	else if (errno != EINTR && errno != EAGAIN) {
		/* index-pack is gone: what it said is the reason. */
		close(r->from);
		r->from = -1;
		r->len = r->off = 0;
	}
}

static int relay_run(struct relay *r)
{
	struct pollfd f[4];
	int n, i;

	while (r->from >= 0 || r->po->err >= 0 || r->ip->err >= 0) {
		if (r->from < 0 && r->to >= 0) {
			close(r->to);	/* index-pack's end of input */
			r->to = -1;
		}
		n = 0;
		if (r->from >= 0) {
			f[n].fd = r->len > r->off ? r->to : r->from;
			f[n++].events = r->len > r->off ? POLLOUT : POLLIN;
		}
		if (r->po->err >= 0) {
			f[n].fd = r->po->err;
			f[n++].events = POLLIN;
		}
		if (r->ip->err >= 0) {
			f[n].fd = r->ip->err;
			f[n++].events = POLLIN;
		}
		if (r->h->stop != NULL && r->h->stop(r->h->arg))
			return -1;
		if (poll(f, (nfds_t)n, 200) < 0 && errno != EINTR)
			return -1;
		for (i = 0; i < n; i++) {
			if (f[i].revents == 0)
				continue;
			if (f[i].fd == r->po->err)
				read_err(r->po);
			else if (f[i].fd == r->ip->err)
				read_err(r->ip);
			else
				pump(r);
		}
		progress(r);
	}
	if (r->to >= 0)
		close(r->to);
	r->to = -1;
	return 0;
}

static void reap(struct child *c, int kill_it)
{
	if (c->pid <= 0)
		return;
	if (kill_it)
		kill(c->pid, SIGKILL);
	while (waitpid(c->pid, &c->status, 0) < 0 && errno == EINTR)
		;
	c->pid = 0;
	if (c->err >= 0)
		close(c->err);
	c->err = -1;
}

static int failed(const struct child *c)
{
	return !WIFEXITED(c->status) || WEXITSTATUS(c->status) != 0;
}

static const char *what(const struct child *c)
{
	if (c->s.fatal[0] != '\0')
		return c->s.fatal;
	if (c->s.error[0] != '\0')
		return c->s.error;
	return WIFSIGNALED(c->status) ? "killed by a signal" :
	    "failed without a word";
}

/* The source pack entry whose stored bytes changed, if one did. */
static int damaged_entry(const char *objects, char hex[AB_OID_HEX + 1],
    char *pack, size_t cap)
{
	char dir[4200], idx[4500];
	struct ab_err ignored;
	struct dirent *d;
	size_t k;
	DIR *dp;
	int rc = 0;

	if (ab_fmt(dir, sizeof dir, "%s/pack", objects) < 0 ||
	    (dp = opendir(dir)) == NULL)
		return 0;
	while (rc == 0 && (d = readdir(dp)) != NULL) {
		k = strlen(d->d_name);
		if (k < 5 || strcmp(d->d_name + k - 4, ".idx") != 0 ||
		    ab_fmt(idx, sizeof idx, "%s/%s", dir, d->d_name) < 0)
			continue;
		if ((rc = ab_pack_damaged(idx, hex, &ignored)) != 1 ||
		    ab_fmt(pack, cap, "%.*s.pack", (int)(k - 4), d->d_name) < 0)
			rc = 0;
	}
	closedir(dp);
	return rc;
}

static int ip_failure(const struct ab_git_hist *h, const struct child *ip,
    struct ab_err *err)
{
	const char *m = what(ip);
	char hex[AB_OID_HEX + 1], pack[300], have[32];

	if (strncmp(m, "did not receive expected object ", 32) == 0)
		return ab_fail(err, AB_EREFUSED, "object %.40s of the commit's "
		    "history is damaged or missing in the repository", m + 32);
	if (strstr(m, "exceeds maximum allowed size") != NULL) {
		ab_human_size(h->max_bytes, have, sizeof have);
		return ab_fail(err, AB_EREFUSED, "git filesystem: more than %s "
		    "needed, %s ceiling (ab-alloc --git-bytes)", have, have);
	}
	if (damaged_entry(h->objects, hex, pack, sizeof pack) == 1)
		return ab_fail(err, AB_EREFUSED, "object %s is damaged in the "
		    "repository: its bytes in %s do not match the pack's index",
		    hex, pack);
	return ab_fail(err, AB_EREFUSED, "the commit's history is damaged in "
	    "the repository: git index-pack: %s", m);
}

/* Writes "--shallow ID" for every line of the staging clone's shallow
 * file, then the commit, to pack-objects' stdin. */
static int revs(int fd, const struct ab_git_hist *h, struct ab_err *err)
{
	char path[4200];
	struct ab_buf sh, out;
	const char *p, *e;
	int rc = 0;

	ab_buf_init(&sh, (size_t)1 << 30);
	/* "--shallow " before each ID (40 bytes or more) of sh: under
	 * twice its size, with the tip. */
	ab_buf_init(&out, (size_t)2 << 30);
	if (ab_fmt_err(err, path, sizeof path, "the staging clone's path",
	    "%s/shallow", h->stage) < 0)
		rc = -1;
	else if (access(path, F_OK) == 0 &&
	    ab_file_read_at(AT_FDCWD, path, &sh, NULL, err) < 0)
		rc = -1;
	for (p = sh.data; rc == 0 && p != NULL && *p != '\0'; p = e + 1) {
		if ((e = strchr(p, '\n')) == NULL)
			break;
		rc = ab_buf_addf(&out, "--shallow %.*s\n", (int)(e - p), p);
	}
	if (rc == 0 && ab_buf_addf(&out, "%s\n", h->tip) < 0)
		rc = -1;
	if (rc == 0 && ab_write_all(fd, out.data, out.len) < 0)
		rc = ab_fail_errno(err, AB_EENGINE, "cannot start git "
		    "pack-objects");
	else if (rc < 0 && err->msg[0] == '\0')
		rc = ab_buf_fail(&out, AB_EREFUSED, "pack-objects' input", err);
	ab_buf_free(&sh);
	ab_buf_free(&out);
	return rc;
}

/* index-pack leaves its temporary files when it fails. */
static void remove_tmp(const char *stage)
{
	char dir[4200];
	struct dirent *d;
	DIR *dp;
	int fd;

	if (ab_fmt(dir, sizeof dir, "%s/objects/pack", stage) < 0 ||
	    (dp = opendir(dir)) == NULL)
		return;
	fd = dirfd(dp);
	while ((d = readdir(dp)) != NULL)
		if (strncmp(d->d_name, "tmp_", 4) == 0)
			(void)unlinkat(fd, d->d_name, 0);
	closedir(dp);
}

struct spawned {
	struct child po, ip;
	int po_in, from, to;
};

static int start(struct spawned *s, const struct ab_git_hist *h,
    const char *git, char *const *po_env, char *const *ip_env,
    char *const *ip_argv, struct ab_err *err)
{
	int in[2], mid[2], to[2], null;

	s->po_in = s->from = s->to = -1;
	if ((null = open("/dev/null", O_WRONLY | O_CLOEXEC)) < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot open /dev/null");
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(mid, O_CLOEXEC) < 0 ||
	    pipe2(to, O_CLOEXEC) < 0) {
		close(null);
		return ab_fail_errno(err, AB_EENGINE, "cannot start git");
	}
	if (spawn(&s->po, git, (char *const *)po_argv, po_env, in[0], mid[1],
	    err) == 0)
		(void)spawn(&s->ip, git, ip_argv, ip_env, to[0], null, err);
	close(null);
	close(in[0]);
	close(mid[1]);
	close(to[0]);
	s->po_in = in[1];
	s->from = mid[0];
	s->to = to[1];
	if (s->po.pid <= 0 || s->ip.pid <= 0)
		return -1;
	(void)fcntl(s->from, F_SETFL, O_NONBLOCK);
	(void)fcntl(s->to, F_SETFL, O_NONBLOCK);
	return revs(s->po_in, h, err);
}

static int run(const struct ab_git_hist *h, const char *git,
    char *const *po_env, char *const *ip_env, char *const *ip_argv,
    struct ab_err *err)
{
	struct spawned s;
	struct relay *r;
	int rc;

	memset(&s, 0, sizeof s);
	if ((r = calloc(1, sizeof *r)) == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	rc = start(&s, h, git, po_env, ip_env, ip_argv, err);
	if (s.po_in >= 0)
		close(s.po_in);
	r->from = s.from;
	r->to = s.to;
	r->po = &s.po;
	r->ip = &s.ip;
	r->h = h;
	r->start = r->shown = now_ms();
	if (rc == 0 && relay_run(r) < 0)
		rc = ab_fail(err, AB_EENGINE, "packing stopped");
	if (r->from >= 0)
		close(r->from);
	if (r->to >= 0)
		close(r->to);
	reap(&s.po, rc < 0);
	reap(&s.ip, rc < 0);
	free(r);
	/* pack-objects killed by SIGPIPE lost index-pack, which says why;
	 * index-pack fed nothing says only that its input ended. */
	if (rc == 0 && failed(&s.po) && !(WIFSIGNALED(s.po.status) &&
	    WTERMSIG(s.po.status) == SIGPIPE))
		rc = ab_fail(err, AB_EREFUSED, "the commit's history cannot be "
		    "read from the repository: git pack-objects: %s",
		    what(&s.po));
	else if (rc == 0 && failed(&s.ip))
		rc = ip_failure(h, &s.ip, err);
	return rc;
}

int ab_git_history(const struct ab_git_hist *h, struct ab_err *err)
{
	char git[4200], dir[4300], objs[4300], path[4300], max[64];
	char *po_env[16], *ip_env[16];
	char *ip_argv[] = { "git", "-c", "pack.writeReverseIndex=false",
	    "-c", "pack.indexVersion=2", "-c", "pack.threads=0",
	    "-c", "core.fsync=none", "index-pack", "-v", "--stdin",
	    "--check-self-contained-and-connected", max, NULL };
	const char *p = getenv("PATH");
	int i, rc;

	if (find_git(git, sizeof git, err) < 0)
		return -1;
	if (ab_fmt_err(err, dir, sizeof dir, "the staging clone's path",
	    "GIT_DIR=%s", h->stage) < 0 ||
	    ab_fmt_err(err, objs, sizeof objs, "the objects' path",
	    "GIT_OBJECT_DIRECTORY=%s", h->objects) < 0 ||
	    ab_fmt_err(err, path, sizeof path, "PATH", "PATH=%s",
	    p != NULL ? p : "/usr/bin:/bin") < 0 ||
	    ab_fmt_err(err, max, sizeof max, "git's input ceiling",
	    "--max-input-size=%lld", h->max_bytes) < 0)
		return -1;
	if (h->max_bytes <= 0)
		ip_argv[13] = NULL;
	for (i = 0; base_env[i] != NULL; i++)
		po_env[i] = ip_env[i] = base_env[i];
	po_env[i] = ip_env[i] = dir;
	i++;
	po_env[i] = ip_env[i] = path;
	i++;
	ip_env[i] = NULL;
	po_env[i++] = objs;
	po_env[i] = NULL;
	rc = run(h, git, po_env, ip_env, ip_argv, err);
	if (rc < 0)
		remove_tmp(h->stage);
	return rc;
}
