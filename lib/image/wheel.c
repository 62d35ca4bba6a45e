#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "file.h"
#include "git.h"
#include "hash.h"
#include "wheel.h"
#include "zip.h"

#define LOCK_MAX (64 * 1024)
#define RECORD_MAX (4u << 20)

/* --- the lock --------------------------------------------------------- */

static int plain_word(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n == 0 || n >= max)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || strchr("._+-", *s)))
			return 0;
	return 1;
}

static int lock_line(struct ab_wheels *w, char *line, const char *lock,
    int no, struct ab_err *err)
{
	struct ab_wheel_pin *p = &w->pin[w->n];
	char *f[6], *save, *t;
	int nf = 0;

	for (t = strtok_r(line, " \t", &save); t != NULL && nf < 6;
	    t = strtok_r(NULL, " \t", &save))
		f[nf++] = t;
	if (nf == 0)
		return 0;
	if (nf != 5 || strcmp(f[0], "wheel") != 0 ||
	    !plain_word(f[1], sizeof p->dist) ||
	    !plain_word(f[2], sizeof p->version) ||
	    !ab_is_hex(f[3], 64) || !plain_word(f[4], sizeof p->file) ||
	    strlen(f[4]) < 5 || strcmp(f[4] + strlen(f[4]) - 4, ".whl") != 0)
		return ab_fail(err, AB_EUSAGE, "%s:%d: want \"wheel DIST "
		    "VERSION SHA256 FILE.whl\"", lock, no);
	if (w->n == AB_WHEELS_MAX)
		return ab_fail(err, AB_EUSAGE, "%s: more than %d wheels", lock,
		    AB_WHEELS_MAX);
	if (ab_fmt(p->dist, sizeof p->dist, "%s", f[1]) < 0 ||
	    ab_fmt(p->version, sizeof p->version, "%s", f[2]) < 0 ||
	    ab_fmt(p->sha, sizeof p->sha, "%s", f[3]) < 0 ||
	    ab_fmt(p->file, sizeof p->file, "%s", f[4]) < 0)
		return ab_fail(err, AB_EUSAGE, "%s:%d: a field is too long",
		    lock, no);
	w->n++;
	return 0;
}

static int cache_dir(char *out, size_t cap, struct ab_err *err)
{
	const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n;

	/* 80 bytes left for the names under it. */
	if (x != NULL && *x == '/')
		n = ab_fmt(out, cap - 80, "%s/agentbox", x);
	else if (home != NULL && *home == '/')
		n = ab_fmt(out, cap - 80, "%s/.cache/agentbox", home);
	else
		return ab_fail(err, AB_EUSAGE, "no cache directory: set HOME "
		    "or XDG_CACHE_HOME, or give --wheels DIR");
	return n == 0 ? 0 :
	    ab_fail(err, AB_EUSAGE, "cache directory path too long");
}

int ab_wheels_init(struct ab_wheels *w, const char *lock, const char *dir,
    const struct ab_deadline *dl, struct ab_err *err)
{
	struct ab_buf b;
	char *line, *next;
	int no = 0, rc = 0;

	memset(w, 0, sizeof *w);
	w->dir = dir;
	w->dl = *dl;
	if (cache_dir(w->cache, sizeof w->cache, err) < 0)
		return -1;
	ab_buf_init(&b, LOCK_MAX);
	if (ab_file_read_at(AT_FDCWD, lock, &b, NULL, err) < 0) {
		ab_buf_free(&b);
		err->code = AB_EUSAGE;
		return ab_err_wrap(err, "wheel lock");
	}
	for (line = b.data; rc == 0 && line != NULL; line = next) {
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		no++;
		if (strchr(line, '#') != NULL)
			*strchr(line, '#') = '\0';
		rc = lock_line(w, line, lock, no, err);
	}
	ab_buf_free(&b);
	return rc;
}

/* --- files ------------------------------------------------------------ */

static int mkdirs(const char *path)
{
	char p[PATH_MAX], *s;

	if (ab_fmt(p, sizeof p, "%s", path) < 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return mkdir(p, 0700) < 0 && errno != EEXIST ? -1 : 0;
}

/* The SHA-256 of the regular file at PATH; 1 when it is absent. */
static int file_sha(struct ab_hashcache *hc, const char *path, char hex[65],
    struct ab_err *err)
{
	struct stat st;
	int fd, rc;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return 1;
	if (fd < 0)
		return ab_fail_errno(err, AB_EUSAGE, "cannot open %s", path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return ab_fail(err, AB_EUSAGE, "%s is not a regular file",
		    path);
	}
	rc = ab_hc_file(hc, fd, path, &st, hex, err);
	close(fd);
	return rc;
}

/* --- fetching --------------------------------------------------------- */

static void remove_dir(const char *dir)
{
	ab_remove_tree(AT_FDCWD, dir);
}

/* Runs ARGV with stdout on stderr, bounded by the deadline. */
static int spawn(char *const argv[], const struct ab_deadline *dl,
    struct ab_err *err)
{
	struct timespec ts = { 0, 100 * 1000000L };
	pid_t pid, r;
	int status;

	pid = fork();
	if (pid < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot fork");
	if (pid == 0) {
		dup2(2, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	while ((r = waitpid(pid, &status, WNOHANG)) == 0) {
		if (ab_deadline_passed(dl)) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return ab_fail(err, AB_EDEADLINE, "deadline passed while "
			    "pip downloaded a wheel");
		}
		nanosleep(&ts, NULL);
	}
	if (r < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot wait for pip");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return ab_fail(err, AB_EENGINE, "pip download failed (status "
		    "%d): is PyPI reachable? Otherwise give --wheels DIR",
		    WIFEXITED(status) ? WEXITSTATUS(status) : 128 +
		    WTERMSIG(status));
	return 0;
}

/* pip download --no-deps of exactly the pinned version, for the wheel's
 * own platform, into a fresh directory: nothing is installed. */
static int download(struct ab_wheels *w, struct ab_wheel_pin *p,
    const char *dest, struct ab_err *err)
{
	char tmp[1200], got[1500], req[160], sha[65];
	char *argv[] = { "python3", "-m", "pip", "download", "--no-deps",
	    "--only-binary=:all:", "--platform", "manylinux_2_17_x86_64",
	    "--python-version", "3.11", "--quiet", "--dest", tmp, req, NULL };
	int rc;

	if (ab_fmt_err(err, tmp, sizeof tmp, "the wheel cache's path",
	    "%s/wheels/.download-%ld", w->cache, (long)getpid()) < 0 ||
	    ab_fmt_err(err, req, sizeof req, "a wheel's requirement",
	    "%s==%s", p->dist, p->version) < 0 ||
	    ab_fmt_err(err, got, sizeof got, "the wheel cache's path",
	    "%s/%s", tmp, p->file) < 0)
		return -1;
	if (w->progress != NULL) {
		char line[300];

		/* %.200s: it fits. */
		if (ab_fmt(line, sizeof line, "downloading %.200s with pip",
		    req) == 0)
			w->progress(line);
	}
	remove_dir(tmp);
	if (mkdirs(tmp) < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot create %s", tmp);
	rc = spawn(argv, &w->dl, err);
	if (rc == 0 && (rc = file_sha(NULL, got, sha, err)) == 1)
		rc = ab_fail(err, AB_EENGINE, "pip did not fetch %s", p->file);
	if (rc == 0 && strcmp(sha, p->sha) != 0)
		rc = ab_fail(err, AB_EREFUSED, "downloaded %s has SHA-256 %s, "
		    "not %s as the lock pins", p->file, sha, p->sha);
	if (rc == 0 && rename(got, dest) < 0)
		rc = ab_fail_errno(err, AB_EENGINE, "cannot move %s into the "
		    "cache", p->file);
	remove_dir(tmp);
	return rc;
}

/* The verified wheel of P: in --wheels DIR, or the cache (fetched when
 * missing, fetched again when what is cached is not the pinned file). */
static int find_wheel(struct ab_wheels *w, struct ab_wheel_pin *p,
    struct ab_err *err)
{
	char sha[65], dir[PATH_MAX];
	int k;

	if (p->path[0] != '\0')
		return 0;
	if (w->dir != NULL)
		k = ab_fmt_err(err, p->path, sizeof p->path, "--wheels",
		    "%s/%s", w->dir, p->file);
	else
		k = ab_fmt_err(err, p->path, sizeof p->path,
		    "the wheel cache's path", "%s/wheels/%s", w->cache,
		    p->file);
	if (k < 0 || (k = file_sha(w->hc, p->path, sha, err)) < 0)
		goto fail;
	if (k == 0 && strcmp(sha, p->sha) == 0)
		return 0;
	if (w->dir != NULL) {
		ab_fail(err, AB_EREFUSED, k == 1 ? "%s: no such wheel in %s" :
		    "%s in %s does not have the SHA-256 the lock pins",
		    p->file, w->dir);
		goto fail;
	}
	if (ab_fmt_err(err, dir, sizeof dir, "the wheel cache's path",
	    "%s/wheels", w->cache) < 0)
		goto fail;
	if (mkdirs(dir) < 0) {
		ab_fail_errno(err, AB_EENGINE, "cannot create %s", dir);
		goto fail;
	}
	if (download(w, p, p->path, err) == 0)
		return 0;
fail:
	p->path[0] = '\0';
	return -1;
}

/* --- members ---------------------------------------------------------- */

static int b64url(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '-' ? 62 : c == '_' ? 63 : -1;
}

/* RECORD's "sha256=" value (43 characters of unpadded URL-safe base64)
 * as 64 hex digits. */
static int record_hex(const char *s, char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char raw[33];
	unsigned long acc = 0;
	int i, v, bits = 0, n = 0;

	for (i = 0; i < 43; i++) {
		if ((v = b64url((unsigned char)s[i])) < 0)
			return -1;
		acc = (acc << 6) | (unsigned long)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			raw[n++] = (unsigned char)(acc >> bits);
		}
	}
	if (n != 32 || (s[43] != ',' && s[43] != '\0'))
		return -1;
	for (i = 0; i < 32; i++) {
		hex[2 * i] = digits[raw[i] >> 4];
		hex[2 * i + 1] = digits[raw[i] & 15];
	}
	hex[64] = '\0';
	return 0;
}

/* The member's SHA-256 as the wheel's dist-info/RECORD lists it. */
static int record_sha(struct ab_zip *z, const struct ab_wheel_pin *p,
    const char *member, char hex[65], struct ab_err *err)
{
	char name[300], *line, *next, *d;
	struct ab_buf b;
	size_t k = strlen(member);
	int rc = -1;

	/* The dist-info directory names the distribution normalized. */
	if (ab_fmt_err(err, name, sizeof name, "a wheel's RECORD name",
	    "%s-%s.dist-info/RECORD", p->dist, p->version) < 0)
		return -1;
	for (d = name; d < name + strlen(p->dist); d++)
		if (*d == '-' || *d == '.')
			*d = '_';
	ab_buf_init(&b, RECORD_MAX);
	if (ab_zip_read_small(z, name, &b, RECORD_MAX, err) < 0)
		goto out;
	for (line = b.data; line != NULL; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if (strncmp(line, member, k) == 0 &&
		    strncmp(line + k, ",sha256=", 8) == 0) {
			rc = record_hex(line + k + 8, hex) == 0 ? 0 :
			    ab_fail(err, AB_EREFUSED, "%s: RECORD's hash of %s "
			    "is malformed", p->file, member);
			goto out;
		}
	}
	ab_fail(err, AB_EREFUSED, "%s: RECORD lists no %s", p->file, member);
out:
	ab_buf_free(&b);
	return rc;
}

struct sink {
	int fd;
	struct ab_sha256 h;
};

static int to_file(void *ctx, const void *p, size_t n, struct ab_err *err)
{
	struct sink *s = ctx;

	ab_sha256_add(&s->h, p, n);
	if (ab_write_all(s->fd, p, n) < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot write the cache");
	return 0;
}

/* Inflates MEMBER into DEST (named by its hash), hashing as it goes. */
static int extract(struct ab_zip *z, const struct ab_zip_member *m,
    const char *dest, const char *want, struct ab_err *err)
{
	char tmp[PATH_MAX], got[65];
	struct sink s;
	int rc;

	if (ab_fmt_err(err, tmp, sizeof tmp, "the wheel cache's path",
	    "%s.tmp-%ld", dest, (long)getpid()) < 0)
		return -1;
	s.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
	    (m->mode & 0111) ? 0755 : 0644);
	if (s.fd < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot create %s", tmp);
	if ((rc = ab_sha256_init(&s.h, err)) == 0) {
		rc = ab_zip_read(z, m, to_file, &s, err);
		if (rc == 0)
			rc = ab_sha256_hex(&s.h, got, err);
		else
			ab_sha256_free(&s.h);
	}
	if (close(s.fd) < 0 && rc == 0)
		rc = ab_fail_errno(err, AB_EENGINE, "cannot write %s", tmp);
	if (rc == 0 && strcmp(got, want) != 0)
		rc = ab_fail(err, AB_EREFUSED, "%s: not what the wheel's RECORD "
		    "lists", m->name);
	if (rc == 0 && rename(tmp, dest) < 0)
		rc = ab_fail_errno(err, AB_EENGINE, "cannot rename %s", tmp);
	if (rc < 0)
		unlink(tmp);
	return rc;
}

int ab_wheel_member(struct ab_wheels *w, const char *dist,
    const char *member, char *path, size_t cap, char sha[65],
    struct ab_err *err)
{
	struct ab_wheel_pin *p = NULL;
	struct ab_zip_member m;
	struct ab_zip *z = NULL;
	char dir[PATH_MAX];
	int i, fd, rc;

	for (i = 0; i < w->n; i++)
		if (strcmp(w->pin[i].dist, dist) == 0)
			p = &w->pin[i];
	if (p == NULL)
		return ab_fail(err, AB_EUSAGE, "wheel %s is not in the lock",
		    dist);
	if (find_wheel(w, p, err) < 0)
		return -1;
	if ((fd = open(p->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot open %s", p->path);
	rc = ab_zip_open(&z, fd, err);
	if (rc == 0)
		rc = record_sha(z, p, member, sha, err);
	if (rc == 0 && (rc = ab_zip_find(z, member, &m, err)) == 0)
		rc = ab_fail(err, AB_EREFUSED, "%s has no %s", p->file, member);
	if (rc == 1)
		rc = 0;
	/* Content-addressed: a member is extracted once, whatever asks. */
	if (rc == 0)
		rc = ab_fmt_err(err, dir, sizeof dir, "the wheel cache's path",
		    "%s/extracted", w->cache);
	if (rc == 0 && ab_fmt(path, cap, "%s/%s", dir, sha) < 0)
		rc = ab_fail(err, AB_EUSAGE, "cache path too long");
	if (rc == 0 && access(path, F_OK) != 0) {
		if (mkdirs(dir) < 0)
			rc = ab_fail_errno(err, AB_EENGINE, "cannot create %s",
			    dir);
		else
			rc = extract(z, &m, path, sha, err);
	}
	if (z != NULL)
		ab_zip_close(z);
	close(fd);
	return rc;
}
