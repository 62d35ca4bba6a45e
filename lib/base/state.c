#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deadline.h"
#include "file.h"
#include "state.h"

static const char *kinds[] = { "image", "alloc", "profile", "ctr", "result",
    NULL };

static int known_kind(const char *k)
{
	int i;

	for (i = 0; kinds[i] != NULL; i++)
		if (strcmp(kinds[i], k) == 0)
			return 1;
	return 0;
}

int ab_is_id(const char *s)
{
	int i;

	for (i = 0; i < AB_ID_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[AB_ID_LEN] == '\0';
}

int ab_new_id(char id[AB_ID_LEN + 1], struct ab_err *err)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char r[AB_ID_LEN / 2];
	size_t i;

	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
		return ab_fail_errno(err, AB_EENGINE, "getrandom");
	for (i = 0; i < sizeof r; i++) {
		id[2 * i] = hex[r[i] >> 4];
		id[2 * i + 1] = hex[r[i] & 15];
	}
	id[AB_ID_LEN] = '\0';
	return 0;
}

int ab_handle_parse(struct ab_handle *h, const char *text, const char *want,
    struct ab_err *err)
{
	const char *colon = strchr(text, ':');
	size_t k;

	memset(h, 0, sizeof *h);
	if (colon == NULL || (k = (size_t)(colon - text)) == 0 ||
	    k >= sizeof h->kind)
		return ab_fail(err, AB_EREFUSED, "not a handle: %.80s", text);
	memcpy(h->kind, text, k);
	if (!known_kind(h->kind) || !ab_is_id(colon + 1))
		return ab_fail(err, AB_EREFUSED, "not a handle: %.80s", text);
	if (want != NULL && strcmp(want, h->kind) != 0)
		return ab_fail(err, AB_EREFUSED, "%.80s: the handle must be %s:ID",
		    text, want);
	memcpy(h->id, colon + 1, AB_ID_LEN + 1);
	return 0;
}

/* mkdir -p for the parents of the default location; 0700 each. */
static int make_parents(char *path)
{
	char *p;

	for (p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST) {
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	return 0;
}

static int default_path(char *out, size_t cap, struct ab_err *err)
{
	const char *v = getenv("AB_STATE_DIR"), *home;
	int n;

	if (v != NULL && *v != '\0')
		n = ab_fmt(out, cap, "%s", v);
	else if ((v = getenv("XDG_STATE_HOME")) != NULL && *v == '/')
		n = ab_fmt(out, cap, "%s/agentbox", v);
	else if ((home = getenv("HOME")) != NULL && *home == '/')
		n = ab_fmt(out, cap, "%s/.local/state/agentbox", home);
	else
		return ab_fail(err, AB_EUSAGE,
		    "no state directory: set AB_STATE_DIR or HOME");
	if (n < 0 || out[0] != '/')
		return ab_fail(err, AB_EUSAGE,
		    "state directory must be an absolute path: %.200s", out);
	return 0;
}

/* The directory is trusted only if nobody else could have written it. */
static int check_dir(int fd, const char *path, struct ab_err *err)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot stat %s", path);
	if (st.st_uid != geteuid())
		return ab_fail(err, AB_EREFUSED,
		    "state directory %s is owned by uid %u, not by uid %u",
		    path, (unsigned)st.st_uid, (unsigned)geteuid());
	if (st.st_mode & 022)
		return ab_fail(err, AB_EREFUSED,
		    "state directory %s is group or world writable (mode %04o)",
		    path, (unsigned)(st.st_mode & 07777));
	return 0;
}

static int open_dir(int at, const char *name, const char *shown, int create,
    struct ab_err *err)
{
	int fd;

	if (create && mkdirat(at, name, 0700) < 0 && errno != EEXIST)
		return ab_fail_errno(err, AB_EENGINE, "cannot create %s",
		    shown);
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP || errno == ENOTDIR)
			return ab_fail(err, AB_EREFUSED,
			    "%s is not a directory (or is a symbolic link)",
			    shown);
		return ab_fail_errno(err, AB_EENGINE, "cannot open %s", shown);
	}
	if (check_dir(fd, shown, err) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int read_sid(struct ab_state *s, struct ab_err *err)
{
	char text[AB_ID_LEN + 4];
	struct ab_buf b;
	int rc;

	ab_buf_init(&b, AB_ID_LEN + 1);
	rc = ab_file_read_at(s->dirfd, "sid", &b, NULL, err);
	if (rc == 0 && b.len >= AB_ID_LEN) {
		memcpy(text, b.data, AB_ID_LEN);
		text[AB_ID_LEN] = '\0';
		if (!ab_is_id(text) || (b.len == AB_ID_LEN + 1 &&
		    b.data[AB_ID_LEN] != '\n'))
			rc = ab_fail(err, AB_EREFUSED,
			    "state directory %s: sid file is corrupt", s->path);
		else
			memcpy(s->sid, text, sizeof s->sid);
	} else if (rc == 0) {
		rc = ab_fail(err, AB_EREFUSED,
		    "state directory %s: sid file is corrupt", s->path);
	}
	ab_buf_free(&b);
	return rc;
}

/* Two tools may start in a fresh directory at once: link(2) lets exactly
 * one SID win, and the loser reads the winner's. */
static int make_sid(struct ab_state *s, struct ab_err *err)
{
	char id[AB_ID_LEN + 2], tmp[64];
	int fd, rc;

	if (ab_new_id(id, err) < 0)
		return -1;
	if (ab_fmt_err(err, tmp, sizeof tmp, "the state's ID", ".sid-%s",
	    id) < 0)
		return -1;
	id[AB_ID_LEN] = '\n';
	id[AB_ID_LEN + 1] = '\0';
	fd = openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0600);
	if (fd < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot create the sid");
	rc = ab_write_all(fd, id, AB_ID_LEN + 1) < 0 || fsync(fd) < 0 ? -1 : 0;
	close(fd);
	if (rc == 0 && linkat(s->dirfd, tmp, s->dirfd, "sid", 0) < 0 &&
	    errno != EEXIST)
		rc = -1;
	unlinkat(s->dirfd, tmp, 0);
	if (rc < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot write the sid");
	fsync(s->dirfd);
	return 0;
}

int ab_state_open(struct ab_state *s, struct ab_err *err)
{
	memset(s, 0, sizeof *s);
	s->dirfd = -1;
	if (default_path(s->path, sizeof s->path, err) < 0)
		return -1;
	if (make_parents(s->path) < 0)
		return ab_fail_errno(err, AB_EENGINE,
		    "cannot create the parents of %s", s->path);
	s->dirfd = open_dir(AT_FDCWD, s->path, s->path, 1, err);
	if (s->dirfd < 0)
		return -1;
	if (faccessat(s->dirfd, "sid", F_OK, AT_SYMLINK_NOFOLLOW) < 0 &&
	    make_sid(s, err) < 0)
		goto fail;
	if (read_sid(s, err) < 0)
		goto fail;
	return 0;
fail:
	ab_state_close(s);
	return -1;
}

int ab_state_find(struct ab_state *s, struct ab_err *err)
{
	struct stat st;

	memset(s, 0, sizeof *s);
	s->dirfd = -1;
	if (default_path(s->path, sizeof s->path, err) < 0)
		return -1;
	if (lstat(s->path, &st) < 0 && errno == ENOENT)
		return 1;
	return ab_state_open(s, err);
}

void ab_state_close(struct ab_state *s)
{
	if (s->dirfd >= 0)
		close(s->dirfd);
	s->dirfd = -1;
}

void ab_record_begin(struct ab_jw *w, const struct ab_state *s,
    const char *kind, const char *id)
{
	ab_jw_obj(w);
	ab_jw_kstr(w, "kind", kind);
	ab_jw_kstr(w, "id", id);
	ab_jw_kstr(w, "sid", s->sid);
}

int ab_record_write(struct ab_state *s, const char *kind, const char *id,
    const char *json, size_t len, struct ab_err *err)
{
	int fd, rc;

	fd = open_dir(s->dirfd, kind, kind, 1, err);
	if (fd < 0)
		return -1;
	rc = ab_file_write_at(fd, id, json, len, 0600, "record-written", err);
	close(fd);
	return rc;
}

static int bound_to(const struct ab_json *j, const struct ab_state *s,
    const struct ab_handle *h)
{
	return ab_json_type(j, 0) == AB_JSON_OBJECT &&
	    ab_json_str_eq(j, ab_json_key(j, 0, "kind"), h->kind) &&
	    ab_json_str_eq(j, ab_json_key(j, 0, "id"), h->id) &&
	    ab_json_str_eq(j, ab_json_key(j, 0, "sid"), s->sid);
}

int ab_record_read(struct ab_state *s, const struct ab_handle *h,
    struct ab_json *j, struct ab_err *err)
{
	struct ab_buf b;
	int fd, rc;

	memset(j, 0, sizeof *j);
	fd = openat(s->dirfd, h->kind, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return ab_fail(err, AB_EREFUSED, "unknown handle %s:%s",
		    h->kind, h->id);
	if (fd < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot open %s/%s",
		    s->path, h->kind);
	if (faccessat(fd, h->id, F_OK, AT_SYMLINK_NOFOLLOW) < 0 &&
	    errno == ENOENT) {
		close(fd);
		return ab_fail(err, AB_EREFUSED, "unknown handle %s:%s",
		    h->kind, h->id);
	}
	ab_buf_init(&b, AB_RECORD_MAX);
	rc = ab_file_read_at(fd, h->id, &b, NULL, err);
	close(fd);
	if (rc == 0 && ab_json_parse(j, b.data, b.len, err) < 0)
		rc = ab_fail(err, AB_EREFUSED, "record of %s:%s is corrupt",
		    h->kind, h->id);
	ab_buf_free(&b);
	if (rc == 0 && !bound_to(j, s, h)) {
		ab_json_free(j);
		rc = ab_fail(err, AB_EREFUSED,
		    "record of %s:%s was not issued by state directory %s",
		    h->kind, h->id, s->path);
	}
	return rc;
}

int ab_record_exists(struct ab_state *s, const struct ab_handle *h)
{
	char name[64];

	/* None is written under a name that long. */
	if (ab_fmt(name, sizeof name, "%s/%s", h->kind, h->id) < 0)
		return 0;
	return faccessat(s->dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

int ab_record_remove(struct ab_state *s, const struct ab_handle *h,
    struct ab_err *err)
{
	int fd;

	fd = openat(s->dirfd, h->kind, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : ab_fail_errno(err, AB_EENGINE,
		    "cannot open %s/%s", s->path, h->kind);
	if (unlinkat(fd, h->id, 0) < 0 && errno != ENOENT) {
		ab_fail_errno(err, AB_EENGINE, "cannot remove record %s:%s",
		    h->kind, h->id);
		close(fd);
		return -1;
	}
	fsync(fd);
	close(fd);
	return 0;
}

#define TOMBS "cleaned"

int ab_tombstone_set(struct ab_state *s, const char *kind, const char *id,
    struct ab_err *err)
{
	char name[64];
	int dfd, fd;

	if (ab_fmt_err(err, name, sizeof name, "a tombstone's name", "%s-%s",
	    kind, id) < 0 ||
	    (dfd = open_dir(s->dirfd, TOMBS, TOMBS, 1, err)) < 0)
		return -1;
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd < 0) {
		close(dfd);
		return ab_fail_errno(err, AB_EENGINE, "cannot write %s/%s/%s",
		    s->path, TOMBS, name);
	}
	close(fd);
	fsync(dfd);
	close(dfd);
	return 0;
}

int ab_tombstone_has(struct ab_state *s, const char *kind, const char *id)
{
	char name[80];

	/* None is written under a name that long. */
	if (ab_fmt(name, sizeof name, "%s/%s-%s", TOMBS, kind, id) < 0)
		return 0;
	return faccessat(s->dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

int ab_record_list(struct ab_state *s, const char *kind,
    char (**ids)[AB_ID_LEN + 1], size_t *n, struct ab_err *err)
{
	char (*v)[AB_ID_LEN + 1] = NULL, (*nv)[AB_ID_LEN + 1];
	struct dirent *d;
	size_t cap = 0;
	DIR *dir;
	int fd;

	*ids = NULL;
	*n = 0;
	fd = openat(s->dirfd, kind, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : ab_fail_errno(err, AB_EENGINE,
		    "cannot open %s/%s", s->path, kind);
	dir = fdopendir(fd);
	if (dir == NULL) {
		close(fd);
		return ab_fail_errno(err, AB_EENGINE, "cannot list %s", kind);
	}
	while ((d = readdir(dir)) != NULL) {
		if (!ab_is_id(d->d_name))
			continue;	/* temporaries and strays */
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof *v);
			if (nv == NULL) {
				free(v);
				closedir(dir);
				return ab_fail(err, AB_EENGINE, "out of memory");
			}
			v = nv;
		}
		memcpy(v[(*n)++], d->d_name, AB_ID_LEN + 1);
	}
	closedir(dir);
	*ids = v;
	return 0;
}

/* The PID in NAME when it is PREFIX, a PID, then SEP; else 0. */
static long name_pid(const char *name, const char *prefix, char sep)
{
	size_t k = strlen(prefix);
	char *end;
	long pid;

	if (strncmp(name, prefix, k) != 0)
		return 0;
	pid = strtol(name + k, &end, 10);
	return end != name + k && *end == sep && pid > 0 ? pid : 0;
}

/* NAME is PREFIX, a PID, then SEP, and that PID no longer exists; a
 * reused PID only keeps a leftover until a later sweep. */
static int pid_gone(const char *name, const char *prefix, char sep)
{
	long pid = name_pid(name, prefix, sep);

	return pid != 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

/* ".tmp-PID-...": a record its writer was killed before renaming. */
static int stale_tmp(const char *name)
{
	return pid_gone(name, ".tmp-", '-');
}

int ab_state_sweep_tmp(struct ab_state *s, int *n, struct ab_err *err)
{
	struct dirent *d;
	DIR *dir;
	int i, fd;

	for (i = 0; kinds[i] != NULL; i++) {
		fd = openat(s->dirfd, kinds[i], O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT)
			continue;
		if (fd < 0 || (dir = fdopendir(fd)) == NULL) {
			if (fd >= 0)
				close(fd);
			return ab_fail_errno(err, AB_EENGINE, "cannot list "
			    "%s/%s", s->path, kinds[i]);
		}
		while ((d = readdir(dir)) != NULL)
			if (stale_tmp(d->d_name) &&
			    unlinkat(dirfd(dir), d->d_name, 0) == 0)
				(*n)++;
		closedir(dir);
	}
	return 0;
}

/* How long a run-task may hold its directory, counted from the
 * directory's last change, when no deadline can be read in it (it was
 * killed before it wrote one): its longest timeout, then the longest
 * cleanup budget. */
#define RUN_HOLD_MS ((86400LL + 3600) * 1000)

/* The lease of run-task directory NAME ("run-task.PID.XXXXXX"): the
 * deadline its file holds (the end of its cleanup budget once it cleans
 * up), or the latest one it could have had.  -1 when NAME is not such a
 * directory. */
static long long run_lease_ms(int dirfd, const char *name)
{
	struct ab_deadline d;
	struct ab_err err;
	struct ab_buf b;
	struct stat st;
	long long at;
	int fd;

	if (strncmp(name, "run-task.", 9) != 0)
		return -1;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -1;
	}
	at = ab_ns(&st.st_mtim) / 1000000 + RUN_HOLD_MS;
	ab_buf_init(&b, 64);	/* one number and a newline */
	if (ab_file_read_at(fd, "deadline", &b, NULL, &err) == 0 &&
	    b.data != NULL && strlen(b.data) == b.len &&
	    ab_deadline_parse(&d, b.data, &err) == 0)
		at = d.at_ms;
	ab_buf_free(&b);
	close(fd);
	return at;
}

int ab_state_sweep_runs(struct ab_state *s, long long grace_ms, int *n,
    struct ab_err *err)
{
	long long now = ab_now_ms(), at;
	struct dirent *d;
	DIR *dir;
	int fd;

	fd = openat(s->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || (dir = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return ab_fail_errno(err, AB_EENGINE, "cannot list %s",
		    s->path);
	}
	while ((d = readdir(dir)) != NULL)
		if ((at = run_lease_ms(s->dirfd, d->d_name)) >= 0 &&
		    at + grace_ms < now &&
		    ab_remove_tree(s->dirfd, d->d_name) == 0)
			(*n)++;
	closedir(dir);
	return 0;
}

static int inflight_name(char *b, size_t cap, const char *kind,
    const char *id, long pid)
{
	return ab_fmt(b, cap, "%s/.inflight-%s-%ld", kind, id, pid);
}

int ab_inflight_begin(struct ab_state *s, const char *kind, const char *id,
    struct ab_err *err)
{
	char name[128];
	int fd;

	if (mkdirat(s->dirfd, kind, 0700) < 0 && errno != EEXIST)
		return ab_fail_errno(err, AB_EENGINE, "cannot make %s/%s",
		    s->path, kind);
	if (inflight_name(name, sizeof name, kind, id, (long)getpid()) < 0)
		return ab_fail(err, AB_EUSAGE, "%s:%.80s: too long a name",
		    kind, id);
	fd = openat(s->dirfd, name, O_WRONLY | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (fd < 0 || fsync(fd) < 0) {
		if (fd >= 0)
			close(fd);
		return ab_fail_errno(err, AB_EENGINE, "cannot write %s", name);
	}
	close(fd);
	return 0;
}

void ab_inflight_end(struct ab_state *s, const char *kind, const char *id)
{
	char name[128];

	if (inflight_name(name, sizeof name, kind, id, (long)getpid()) == 0)
		unlinkat(s->dirfd, name, 0);
}

/* When PID started, in epoch milliseconds (to the second of the boot
 * time), or -1 when /proc does not say; *dead when it is a zombie. */
static long long started_ms(long pid, int *dead)
{
	unsigned long long ticks, btime = 0;
	char path[64], line[1024], *p;
	long hz = sysconf(_SC_CLK_TCK);
	int i, ok = 0;
	FILE *f;

	if (hz <= 0 || ab_fmt(path, sizeof path, "/proc/%ld/stat", pid) < 0 ||
	    (f = fopen(path, "re")) == NULL)
		return -1;
	p = fgets(line, sizeof line, f) ? strrchr(line, ')') : NULL;
	fclose(f);
	*dead = p != NULL && (p[1] == '\0' || p[2] == 'Z' || p[2] == 'X');
	/* starttime is the 20th field after the command's ")". */
	for (i = 0; p != NULL && i < 19; i++)
		p = strchr(p + 1, ' ');
	if (p == NULL || sscanf(p, " %llu", &ticks) != 1 ||
	    (f = fopen("/proc/stat", "re")) == NULL)
		return -1;
	while (!ok && fgets(line, sizeof line, f) != NULL)
		ok = sscanf(line, "btime %llu", &btime) == 1;
	fclose(f);
	if (!ok)
		return -1;
	return (long long)(btime * 1000 + ticks * 1000 /
	    (unsigned long long)hz);
}

/* Whether the marker's writer still runs: its PID lives, is no zombie
 * (killed, not yet reaped), and was not taken by a process started after
 * the marker was written (the second of slack is the boot time's
 * granularity). */
static int writer_runs(int dfd, const char *name, long pid)
{
	struct stat st;
	long long born;
	int dead = 0;

	if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
		return 0;
	born = started_ms(pid, &dead);
	if (dead)
		return 0;
	if (born < 0 || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 1;
	return born <= ab_ns(&st.st_mtim) / 1000000 + 1000;
}

int ab_inflight_any(struct ab_state *s, const char *kind, const char *id,
    int clear)
{
	char prefix[64];
	struct dirent *d;
	DIR *dir;
	int fd, found = 0;
	long pid;

	/* No marker is made under a name that long. */
	if (ab_fmt(prefix, sizeof prefix, ".inflight-%s-", id) < 0)
		return 0;
	fd = openat(s->dirfd, kind, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0 || (dir = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((d = readdir(dir)) != NULL) {
		if ((pid = name_pid(d->d_name, prefix, '\0')) == 0)
			continue;
		if (clear == AB_INFLIGHT_LIVE) {
			found |= writer_runs(dirfd(dir), d->d_name, pid);
			continue;
		}
		found = 1;
		if (clear)
			unlinkat(dirfd(dir), d->d_name, 0);
	}
	closedir(dir);
	return found;
}
