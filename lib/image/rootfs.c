#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "deadline.h"
#include "elfdeps.h"
#include "file.h"
#include "hash.h"
#include "rootfs.h"
#include "version.h"

#ifndef AB_MULTIARCH
#define AB_MULTIARCH "x86_64-linux-gnu"
#endif
#define MANIFEST_MAX (64 * 1024)
#define DPKG_STATUS "/var/lib/dpkg/status"

static const char *const libdirs[] = { "/lib/" AB_MULTIARCH,
    "/usr/lib/" AB_MULTIARCH, "/lib64", "/lib", "/usr/lib", NULL };

struct parse {
	struct ab_rootfs *r;
	const char *dir, *manifest;
	struct ab_wheels *wheels;
	int line;
};

static int bad(struct parse *p, const char *why, struct ab_err *err)
{
	return ab_fail(err, AB_EUSAGE, "%s/%s:%d: %s", p->dir, p->manifest,
	    p->line, why);
}

static struct ab_rentry *add(struct ab_rootfs *r, const char *path,
    enum ab_tar_type type, unsigned mode, unsigned uid)
{
	struct ab_rentry *v, *e;

	while (*path == '/')
		path++;
	v = realloc(r->e, (r->n + 1) * sizeof *v);
	if (v == NULL)
		return NULL;
	r->e = v;
	e = &r->e[r->n];
	memset(e, 0, sizeof *e);
	e->path = strdup(path);
	if (e->path == NULL)
		return NULL;
	e->type = type;
	e->mode = mode;
	e->uid = uid;
	r->n++;
	return e;
}

static int add_host(struct ab_rootfs *r, const char *path, unsigned mode,
    const char *src, struct ab_err *err)
{
	char real[PATH_MAX];
	struct ab_rentry *e;

	/* The image gets the file itself, never a link into the host. */
	if (realpath(src, real) == NULL)
		return ab_fail_errno(err, AB_EUSAGE, "cannot find %s", src);
	e = add(r, path, AB_TAR_FILE, mode, 0);
	if (e == NULL || (e->src = strdup(real)) == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	return 0;
}

static int have_path(const struct ab_rootfs *r, const char *path)
{
	size_t i;

	while (*path == '/')
		path++;
	for (i = 0; i < r->n; i++)
		if (strcmp(r->e[i].path, path) == 0)
			return 1;
	return 0;
}

static int find_lib(const char *name, char *out, size_t cap)
{
	int i;

	for (i = 0; libdirs[i] != NULL; i++)
		if (ab_fmt(out, cap, "%s/%s", libdirs[i], name) == 0 &&
		    access(out, R_OK) == 0)
			return 0;
	return -1;
}

/* Where a host library goes in the image: its own path, or with a
 * "libdir" directive that directory, so a layer put on another base
 * never replaces the base's own libraries. */
static int beside(const struct ab_rootfs *r, const char *lib, char *out,
    size_t cap, struct ab_err *err)
{
	const char *base = strrchr(lib, '/');

	if (r->libdir[0] == '\0')
		return ab_fmt_err(err, out, cap, lib, "%s", lib);
	return ab_fmt_err(err, out, cap, lib, "%s/%s", r->libdir,
	    base ? base + 1 : lib);
}

static int add_elf(struct ab_rootfs *r, const char *path, unsigned mode,
    const char *src, int depth, struct ab_err *err)
{
	struct ab_elf_deps d;
	char lib[PATH_MAX], to[PATH_MAX];
	size_t i;
	int rc = 0;

	if (depth > 16)
		return ab_fail(err, AB_EUSAGE, "%s: libraries nest too deep",
		    src);
	if (add_host(r, path, mode, src, err) < 0 ||
	    ab_elf_deps(src, &d, err) < 0)
		return -1;
	if (d.interp != NULL && beside(r, d.interp, to, sizeof to, err) < 0)
		rc = -1;
	else if (d.interp != NULL && !have_path(r, to))
		rc = add_host(r, to, 0755, d.interp, err);
	for (i = 0; rc == 0 && i < d.n; i++) {
		if (strchr(d.needed[i], '/') != NULL ||
		    find_lib(d.needed[i], lib, sizeof lib) < 0) {
			rc = ab_fail(err, AB_EUSAGE,
			    "%s needs %s, which is not on this host", src,
			    d.needed[i]);
			break;
		}
		if (beside(r, lib, to, sizeof to, err) < 0)
			rc = -1;
		else if (!have_path(r, to))
			rc = add_elf(r, to, 0755, lib, depth + 1, err);
	}
	ab_elf_deps_free(&d);
	return rc;
}

static int parse_mode(const char *s, unsigned *mode)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 8);
	if (errno || *end || end == s || v > 07777)
		return -1;
	*mode = (unsigned)v;
	return 0;
}

static int parse_uid(const char *s, unsigned *uid)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v > 65535)
		return -1;
	*uid = (unsigned)v;
	return 0;
}

/* An agentbox program that runs only in containers (ab-proxy, ab-relay):
 * beside the running tool in a build tree, or in ../lib/agentbox when
 * installed. */
static int tool_path(const char *name, char *out, size_t cap,
    struct ab_err *err)
{
	char exe[PATH_MAX], *slash;
	ssize_t n;

	if (strchr(name, '/') != NULL)
		return ab_fail(err, AB_EUSAGE, "tool %s: a name, not a path",
		    name);
	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot find myself");
	exe[n] = '\0';
	if ((slash = strrchr(exe, '/')) != NULL)
		*slash = '\0';
	if (strlen(exe) + strlen(name) + 20 > cap)
		return ab_fail(err, AB_EUSAGE, "tool %s: path too long", name);
	if (ab_fmt(out, cap, "%s/%s", exe, name) == 0 &&
	    access(out, R_OK) == 0)
		return 0;
	if (ab_fmt(out, cap, "%s/../lib/agentbox/%s", exe, name) == 0 &&
	    access(out, R_OK) == 0)
		return 0;
	return ab_fail(err, AB_EUSAGE, "tool %s is neither beside %s nor in "
	    "its ../lib/agentbox: build it first (make)", name, exe);
}

/* The upstream version of an installed Debian package ("1:2.39.5-0+deb12u3"
 * gives "2.39.5"), from the dpkg status file; malloc'd. */
static int deb_version(const char *pkg, char **out, struct ab_err *err);

static int add_version(struct ab_rootfs *r, const char *name,
    const char *pkg, struct ab_err *err)
{
	struct ab_version *v;
	char *val;

	/* "@agentbox": this agentbox's own version, for its programs;
	 * "=V": V as stated (a CLI out of a wheel), which the version probe
	 * must read from the CLI itself. */
	if (strcmp(pkg, "@agentbox") == 0)
		val = strdup(AB_VERSION);
	else if (pkg[0] == '=' && pkg[1] != '\0')
		val = strdup(pkg + 1);
	else if (deb_version(pkg, &val, err) < 0)
		return -1;
	if (val == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	v = realloc(r->v, (r->nv + 1) * sizeof *v);
	if (v == NULL || (v[r->nv].name = strdup(name)) == NULL) {
		if (v != NULL)
			r->v = v;
		free(val);
		return ab_fail(err, AB_EENGINE, "out of memory");
	}
	r->v = v;
	r->v[r->nv++].value = val;
	return 0;
}

static int set_str(char *dst, size_t cap, const char *v)
{
	if (*v != '/')
		return -1;
	return ab_fmt(dst, cap, "%s", v);
}

/* wheel PATH MODE DIST MEMBER [elf]: a file out of a pinned wheel, with
 * the shared libraries it needs from the host when it is an ELF. */
static int add_wheel(struct parse *p, char **f, int elf, unsigned mode,
    struct ab_err *err)
{
	char src[PATH_MAX], sha[65];
	size_t n = p->r->n;

	if (p->wheels == NULL)
		return bad(p, "no wheel lock for this recipe", err);
	if (ab_wheel_member(p->wheels, f[3], f[4], src, sizeof src, sha,
	    err) < 0)
		return -1;
	if ((elf ? add_elf(p->r, f[1], mode, src, 0, err) :
	    add_host(p->r, f[1], mode, src, err)) < 0)
		return -1;
	/* add_host put the member first; the libraries after it are the
	 * host's own. */
	memcpy(p->r->e[n].sha, sha, sizeof sha);
	return 0;
}

static int directive(struct parse *p, char **f, int nf, struct ab_err *err)
{
	struct ab_rootfs *r = p->r;
	char src[PATH_MAX];
	unsigned mode = 0, uid = 0;

	if (nf >= 3 && strcmp(f[0], "link") != 0 &&
	    strcmp(f[0], "version") != 0 && parse_mode(f[2], &mode) < 0)
		return bad(p, "bad mode", err);
	if (strcmp(f[0], "user") == 0 && nf == 2 &&
	    ab_fmt(r->user, sizeof r->user, "%s", f[1]) == 0)
		return 0;
	if (strcmp(f[0], "path") == 0 && nf == 2)
		return set_str(r->path_env, sizeof r->path_env, f[1]) < 0 ?
		    bad(p, "bad path", err) : 0;
	if (strcmp(f[0], "libdir") == 0 && nf == 2)
		return set_str(r->libdir, sizeof r->libdir, f[1]) < 0 ?
		    bad(p, "bad libdir", err) : 0;
	if (strcmp(f[0], "entrypoint") == 0 && nf == 2)
		return set_str(r->entrypoint, sizeof r->entrypoint, f[1]) < 0 ?
		    bad(p, "bad entrypoint", err) : 0;
	if (strcmp(f[0], "dir") == 0 && (nf == 3 || nf == 4)) {
		if (nf == 4 && parse_uid(f[3], &uid) < 0)
			return bad(p, "bad uid", err);
		return add(r, f[1], AB_TAR_DIR, mode, uid) ? 0 :
		    ab_fail(err, AB_EENGINE, "out of memory");
	}
	if (strcmp(f[0], "host") == 0 && (nf == 3 || nf == 4))
		return add_host(r, f[1], mode, nf == 4 ? f[3] : f[1], err);
	if (strcmp(f[0], "elf") == 0 && (nf == 3 || nf == 4))
		return add_elf(r, f[1], mode, nf == 4 ? f[3] : f[1], 0, err);
	if (strcmp(f[0], "tool") == 0 && nf == 4)
		return tool_path(f[3], src, sizeof src, err) < 0 ? -1 :
		    add_elf(r, f[1], mode, src, 0, err);
	if (strcmp(f[0], "wheel") == 0 && (nf == 5 || (nf == 6 &&
	    strcmp(f[5], "elf") == 0)))
		return add_wheel(p, f, nf == 6, mode, err);
	if (strcmp(f[0], "file") == 0 && nf == 4) {
		if (strchr(f[3], '/') != NULL)
			return bad(p, "recipe files are named without '/'",
			    err);
		if (ab_fmt(src, sizeof src, "%s/%s", p->dir, f[3]) < 0)
			return bad(p, "the recipe file's path is too long",
			    err);
		return add_host(r, f[1], mode, src, err);
	}
	if (strcmp(f[0], "link") == 0 && nf == 3) {
		struct ab_rentry *e = add(r, f[1], AB_TAR_SYMLINK, 0777, 0);

		if (e == NULL || (e->link = strdup(f[2])) == NULL)
			return ab_fail(err, AB_EENGINE, "out of memory");
		return 0;
	}
	if (strcmp(f[0], "version") == 0 && nf == 3)
		return add_version(r, f[1], f[2], err);
	return bad(p, "unknown directive or wrong number of fields", err);
}

static int parse_manifest(struct parse *p, char *text, struct ab_err *err)
{
	char *line, *next, *f[8], *tok, *save;
	int nf;

	for (line = text; line != NULL; line = next) {
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		p->line++;
		if ((tok = strchr(line, '#')) != NULL)
			*tok = '\0';
		nf = 0;
		for (tok = strtok_r(line, " \t", &save); tok != NULL;
		    tok = strtok_r(NULL, " \t", &save)) {
			if (nf == 8)
				return bad(p, "too many fields", err);
			f[nf++] = tok;
		}
		if (nf > 0 && directive(p, f, nf, err) < 0)
			return -1;
	}
	if (!p->r->user[0] || !p->r->path_env[0] || !p->r->entrypoint[0])
		return ab_fail(err, AB_EUSAGE,
		    "%s/%s: user, path and entrypoint are required", p->dir,
		    p->manifest);
	return 0;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct ab_rentry *)a)->path,
	    ((const struct ab_rentry *)b)->path);
}

/* Every directory entry must precede what is inside it: add the missing
 * parents (root's, 0755), sort, and refuse a path named twice. */
static int finish_tree(struct ab_rootfs *r, const char *manifest,
    struct ab_err *err)
{
	size_t i, n = r->n;
	char *copy, *slash;

	for (i = 0; i < n; i++) {
		copy = strdup(r->e[i].path);
		if (copy == NULL)
			return ab_fail(err, AB_EENGINE, "out of memory");
		while ((slash = strrchr(copy, '/')) != NULL) {
			*slash = '\0';
			if (!have_path(r, copy) &&
			    add(r, copy, AB_TAR_DIR, 0755, 0) == NULL) {
				free(copy);
				return ab_fail(err, AB_EENGINE, "out of memory");
			}
		}
		free(copy);
	}
	qsort(r->e, r->n, sizeof *r->e, by_path);
	for (i = 1; i < r->n; i++)
		if (strcmp(r->e[i - 1].path, r->e[i].path) == 0)
			return ab_fail(err, AB_EUSAGE,
			    "%s: /%s is named twice", manifest, r->e[i].path);
	return 0;
}

static int open_input(struct ab_rentry *e, struct stat *st,
    struct ab_err *err)
{
	int fd = open(e->src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return ab_fail_errno(err, AB_EUSAGE, "cannot open %s", e->src);
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		return ab_fail(err, AB_EUSAGE, "%s is not a regular file",
		    e->src);
	}
	return fd;
}

/* A wheel member in the cache is checked against its wheel's RECORD each
 * time it is read, in the same pass as the recipe hash. */
/* The file's SHA-256 goes into the recipe hash, so the cache can answer
 * for the file without its bytes being read again (hashcache.h). */
static int hash_file(struct ab_rentry *e, struct ab_sha256 *h,
    struct ab_hashcache *hc, struct ab_err *err)
{
	char sha[65];
	struct stat st;
	int fd, rc;

	if ((fd = open_input(e, &st, err)) < 0)
		return -1;
	rc = ab_hc_file(hc, fd, e->src, &st, sha, err);
	close(fd);
	if (rc < 0)
		return -1;
	if (e->sha[0] != '\0' && strcmp(sha, e->sha) != 0)
		return ab_fail(err, AB_EREFUSED, "%s in the wheel cache is not "
		    "the member its wheel lists: remove it", e->src);
	ab_sha256_add(h, sha, 64);
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	e->size = (long long)st.st_size;
	e->mtime_ns = ab_ns(&st.st_mtim);
	e->ctime_ns = ab_ns(&st.st_ctim);
	return 0;
}

static int hash_all(struct ab_rootfs *r, const char *manifest,
    struct ab_hashcache *hc, struct ab_err *err)
{
	struct ab_sha256 h;
	char meta[64];
	size_t i;

	if (ab_sha256_init(&h, err) < 0)
		return -1;
	ab_sha256_add(&h, "agentbox default image 2\n", 25);
	ab_sha256_add(&h, manifest, strlen(manifest) + 1);
	for (i = 0; i < r->nv; i++) {
		ab_sha256_add(&h, r->v[i].name, strlen(r->v[i].name) + 1);
		ab_sha256_add(&h, r->v[i].value, strlen(r->v[i].value) + 1);
	}
	for (i = 0; i < r->n; i++) {
		struct ab_rentry *e = &r->e[i];

		ab_sha256_add(&h, e->path, strlen(e->path) + 1);
		/* Three numbers into room for them: a bug here when cut. */
		if (ab_fmt(meta, sizeof meta, "%d %o %u", (int)e->type,
		    e->mode, e->uid) < 0)
			abort();
		ab_sha256_add(&h, meta, strlen(meta) + 1);
		if (e->link != NULL)
			ab_sha256_add(&h, e->link, strlen(e->link) + 1);
		if (e->type == AB_TAR_FILE) {
			if (hash_file(e, &h, hc, err) < 0) {
				ab_sha256_free(&h);
				return -1;
			}
			r->bytes += e->size;
		}
	}
	return ab_sha256_hex(&h, r->recipe, err);
}

int ab_rootfs_load(struct ab_rootfs *r, const char *dir,
    const char *manifest, struct ab_wheels *wheels, struct ab_hashcache *hc,
    struct ab_err *err)
{
	struct ab_buf b;
	struct parse p;
	char path[PATH_MAX], *keep = NULL;
	int rc;

	memset(r, 0, sizeof *r);
	r->fd = -1;
	if (ab_fmt_err(err, path, sizeof path, "the recipe's path", "%s/%s",
	    dir, manifest) < 0)
		return -1;
	ab_buf_init(&b, MANIFEST_MAX);
	if (ab_file_read_at(AT_FDCWD, path, &b, NULL, err) < 0) {
		ab_buf_free(&b);
		err->code = AB_EUSAGE;
		return ab_err_wrap(err, "image recipe");
	}
	keep = strdup(b.data ? b.data : "");
	memset(&p, 0, sizeof p);
	p.r = r;
	p.dir = dir;
	p.manifest = manifest;
	p.wheels = wheels;
	rc = keep == NULL ? ab_fail(err, AB_EENGINE, "out of memory") :
	    parse_manifest(&p, b.data ? b.data : (char *)"", err);
	if (rc == 0)
		rc = finish_tree(r, manifest, err);
	if (rc == 0)
		rc = hash_all(r, keep, hc, err);
	free(keep);
	ab_buf_free(&b);
	if (rc < 0)
		ab_rootfs_free(r);
	return rc;
}

static int src_next(void *ctx, struct ab_tar_entry *te, struct ab_err *err)
{
	struct ab_rootfs *r = ctx;
	struct ab_rentry *e;
	struct stat st;

	if (r->fd >= 0) {
		close(r->fd);
		r->fd = -1;
	}
	if (r->next == r->n)
		return 0;
	e = &r->e[r->next++];
	te->path = e->path;
	te->type = e->type;
	te->mode = e->mode;
	te->uid = te->gid = e->uid;
	te->link = e->link;
	if (e->type != AB_TAR_FILE)
		return 1;
	if ((r->fd = open_input(e, &st, err)) < 0)
		return -1;
	/* What is sent must be what was hashed into the recipe label. */
	if (st.st_dev != e->dev || st.st_ino != e->ino ||
	    (long long)st.st_size != e->size ||
	    ab_ns(&st.st_mtim) != e->mtime_ns ||
	    ab_ns(&st.st_ctim) != e->ctime_ns)
		return ab_fail(err, AB_EREFUSED,
		    "%s changed while the image was assembled", e->src);
	te->size = e->size;
	r->left = e->size;
	return 1;
}

static long src_data(void *ctx, char *p, size_t n, struct ab_err *err)
{
	struct ab_rootfs *r = ctx;
	ssize_t got;

	if ((long long)n > r->left)
		n = (size_t)r->left;
	if (n == 0)
		return 0;
	do
		got = read(r->fd, p, n);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return ab_fail_errno(err, AB_EENGINE, "read");
	r->left -= got;
	return (long)got;
}

void ab_rootfs_source(struct ab_rootfs *r, struct ab_tar_source *src)
{
	r->next = 0;
	src->next = src_next;
	src->data = src_data;
	src->ctx = r;
}

void ab_rootfs_free(struct ab_rootfs *r)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		free(r->e[i].path);
		free(r->e[i].src);
		free(r->e[i].link);
	}
	for (i = 0; i < r->nv; i++) {
		free(r->v[i].name);
		free(r->v[i].value);
	}
	free(r->e);
	free(r->v);
	if (r->fd >= 0)
		close(r->fd);
	memset(r, 0, sizeof *r);
	r->fd = -1;
}

/* "Version: [EPOCH:]UPSTREAM[-REVISION]" -> UPSTREAM. */
static char *upstream(const char *v, size_t n)
{
	const char *colon = memchr(v, ':', n), *dash = NULL, *p;

	if (colon != NULL) {
		n -= (size_t)(colon + 1 - v);
		v = colon + 1;
	}
	for (p = v; p < v + n; p++)
		if (*p == '-')
			dash = p;
	if (dash != NULL)
		n = (size_t)(dash - v);
	return n ? strndup(v, n) : NULL;
}

static int stanza_version(const char *s, const char *end, char **out)
{
	const char *line, *eol;
	int installed = 0;

	*out = NULL;
	for (line = s; line < end; line = eol + 1) {
		eol = memchr(line, '\n', (size_t)(end - line));
		if (eol == NULL)
			eol = end;
		if (strncmp(line, "Status: ", 8) == 0)
			installed = (size_t)(eol - line) >= 25 &&
			    memcmp(eol - 9, "installed", 9) == 0 &&
			    memmem(line, (size_t)(eol - line), " ok ", 4);
		if (strncmp(line, "Version: ", 9) == 0 && *out == NULL)
			*out = upstream(line + 9, (size_t)(eol - line - 9));
	}
	if (!installed) {
		free(*out);
		*out = NULL;
	}
	return *out ? 0 : -1;
}

static int deb_version(const char *pkg, char **out, struct ab_err *err)
{
	struct ab_buf b;
	char want[256];
	const char *s, *end, *next;
	int rc = -1;

	*out = NULL;
	if (ab_fmt_err(err, want, sizeof want, "a package's name",
	    "Package: %s\n", pkg) < 0)
		return -1;
	ab_buf_init(&b, 256u << 20);
	if (ab_file_read_at(AT_FDCWD, DPKG_STATUS, &b, NULL, err) < 0) {
		ab_buf_free(&b);
		return -1;
	}
	for (s = b.data; s != NULL && *s; s = next) {
		next = strstr(s, "\n\n");
		end = next ? next + 1 : b.data + b.len;
		if (next != NULL)
			next += 2;
		if (strncmp(s, want, strlen(want)) == 0) {
			rc = stanza_version(s, end, out);
			break;
		}
	}
	ab_buf_free(&b);
	if (rc < 0)
		return ab_fail(err, AB_EUSAGE,
		    "Debian package %s is not installed (apt-get install %s)",
		    pkg, pkg);
	return 0;
}
