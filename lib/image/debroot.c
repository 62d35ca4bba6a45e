#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "debroot.h"
#include "file.h"

#define OUTPUT_MAX (16u << 20)
#define LIST_MAX 4096
#define ARGS_MAX 64

/* Debian policy 5.6.1: lower case letters, digits, + - . (two or more,
 * starting with an alphanumeric). */
static int package_name(const char *s, size_t n)
{
	size_t i;

	if (n < 2 || !((s[0] >= 'a' && s[0] <= 'z') ||
	    (s[0] >= '0' && s[0] <= '9')))
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9') || strchr("+-.", s[i])))
			return 0;
	return 1;
}

static int check_list(const char *list, struct ab_err *err)
{
	const char *p = list, *c;
	size_t n;

	if (strlen(list) > LIST_MAX)
		return ab_fail(err, AB_EUSAGE, "--packages: list too long");
	for (;;) {
		c = strchr(p, ',');
		n = c ? (size_t)(c - p) : strlen(p);
		if (!package_name(p, n))
			return ab_fail(err, AB_EUSAGE, "--packages: %.*s is not "
			    "a Debian package name", (int)(n < 80 ? n : 80), p);
		if (c == NULL)
			return 0;
		p = c + 1;
	}
}

/* VERSION_CODENAME of /etc/os-release: mmdebstrap makes that release. */
static int host_suite(char suite[64], struct ab_err *err)
{
	struct ab_buf b;
	char *p, *e;
	int rc = -1;

	ab_buf_init(&b, 64 * 1024);
	if (ab_file_read_at(AT_FDCWD, "/usr/lib/os-release", &b, NULL, err) < 0) {
		ab_buf_free(&b);
		return -1;
	}
	p = b.data ? strstr(b.data, "\nVERSION_CODENAME=") : NULL;
	if (p != NULL) {
		p += 18;
		e = p + strcspn(p, "\n\"'");
		if (e > p && e - p < 64 && package_name(p, (size_t)(e - p)) &&
		    ab_fmt(suite, 64, "%.*s", (int)(e - p), p) == 0)
			rc = 0;
	}
	ab_buf_free(&b);
	return rc == 0 ? 0 : ab_fail(err, AB_EUSAGE, "--packages needs a "
	    "Debian host: /etc/os-release names no VERSION_CODENAME");
}

/* mmdebstrap's argv: OPTS, then the suite, OUT, and the host's sources
 * (each sources.list file, so mmdebstrap reads the host's mirrors). */
static int run(struct ab_debroot *d, const char *const *opts, const char *out,
    struct ab_buf *got, struct ab_err *err)
{
	struct timespec ts = { 0, 100 * 1000000L };
	const char *argv[ARGS_MAX];
	struct stat st;
	glob_t g;
	size_t i;
	int n = 0, fds[2], status, rc = 0;
	pid_t pid, r;
	char chunk[4096];
	ssize_t k;

	argv[n++] = "mmdebstrap";
	for (i = 0; opts[i] != NULL; i++)
		argv[n++] = opts[i];
	argv[n++] = d->suite;
	argv[n++] = out;
	memset(&g, 0, sizeof g);
	if (stat("/etc/apt/sources.list", &st) == 0 && st.st_size > 0)
		argv[n++] = "/etc/apt/sources.list";
	glob("/etc/apt/sources.list.d/*.sources", 0, NULL, &g);
	glob("/etc/apt/sources.list.d/*.list", GLOB_APPEND, NULL, &g);
	for (i = 0; i < g.gl_pathc && n < ARGS_MAX - 1; i++)
		argv[n++] = g.gl_pathv[i];
	argv[n] = NULL;
	if (pipe2(fds, O_CLOEXEC) < 0) {
		globfree(&g);
		return ab_fail_errno(err, AB_EENGINE, "cannot make a pipe");
	}
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		/* Nothing of this process's but the output: mmdebstrap hands
		 * its own pipes to dash, which takes descriptors 0-9 only. */
		close_range(3, ~0U, 0);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	globfree(&g);
	if (pid < 0) {
		close(fds[0]);
		return ab_fail_errno(err, AB_EENGINE, "cannot fork");
	}
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	for (;;) {
		while ((k = read(fds[0], chunk, sizeof chunk)) > 0)
			if (ab_buf_add(got, chunk, (size_t)k) < 0)
				ab_buf_consume(got, got->len / 2);
		r = waitpid(pid, &status, WNOHANG);
		if (r != 0)
			break;
		if (ab_deadline_passed(&d->dl)) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			rc = ab_fail(err, AB_EDEADLINE, "deadline passed while "
			    "mmdebstrap ran");
			break;
		}
		nanosleep(&ts, NULL);
	}
	while ((k = read(fds[0], chunk, sizeof chunk)) > 0)
		if (ab_buf_add(got, chunk, (size_t)k) < 0)
			ab_buf_consume(got, got->len / 2);
	close(fds[0]);
	if (rc == 0 && r < 0)
		rc = ab_fail_errno(err, AB_EENGINE, "cannot wait for mmdebstrap");
	if (rc == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
		rc = WIFEXITED(status) && WEXITSTATUS(status) == 127 ?
		    ab_fail(err, AB_EUSAGE, "mmdebstrap is not installed "
		    "(apt-get install mmdebstrap)") : 1;
	return rc;
}

/* mmdebstrap's words for why it failed: the package apt could not find,
 * else its first error line. */
static int failed(const struct ab_buf *got, struct ab_err *err)
{
	const char *s = got->data ? got->data : "", *p, *e;

	if ((p = strstr(s, "E: Unable to locate package ")) != NULL) {
		p += 28;
		e = p + strcspn(p, "\r\n ");
		return ab_fail(err, AB_EUSAGE, "Debian package %.*s does not "
		    "exist in the host's apt sources", (int)(e - p < 100 ?
		    e - p : 100), p);
	}
	if ((p = strstr(s, "\nE: ")) != NULL || (p = strstr(s, "E: ")) == s) {
		p += *p == '\n' ? 4 : 3;
		e = p + strcspn(p, "\r\n");
		return ab_fail(err, AB_EENGINE, "mmdebstrap failed: %.*s",
		    (int)(e - p < 300 ? e - p : 300), p);
	}
	return ab_fail(err, AB_EENGINE, "mmdebstrap failed");
}

static int by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "Inst NAME (VERSION ..." lines: the set, sorted, each package once. */
static int parse_set(struct ab_debroot *d, const struct ab_buf *got,
    struct ab_err *err)
{
	char **v = NULL, **nv, *line, *copy, *save, *name, *ver;
	struct ab_buf out;
	size_t n = 0, i;
	int rc = 0;

	copy = strndup(got->data ? got->data : "", got->len);
	if (copy == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	for (line = strtok_r(copy, "\n", &save); line != NULL && rc == 0;
	    line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "Inst ", 5) != 0)
			continue;
		name = line + 5;
		ver = strstr(name, " (");
		if (ver == NULL || !package_name(name, (size_t)(ver - name)))
			continue;
		*ver = '\0';
		ver += 2;
		ver[strcspn(ver, " )")] = '\0';
		nv = realloc(v, (n + 1) * sizeof *v);
		if (nv == NULL || asprintf(&nv[n], "%s=%s", name, ver) < 0) {
			v = nv ? nv : v;
			rc = ab_fail(err, AB_EENGINE, "out of memory");
			break;
		}
		v = nv;
		n++;
	}
	free(copy);
	/* qsort wants a real array even of none: v is NULL then. */
	if (rc == 0 && n > 0)
		qsort(v, n, sizeof *v, by_str);
	ab_buf_init(&out, OUTPUT_MAX);	/* shorter than apt's lines it is from */
	for (i = 0; i < n; i++) {
		if (rc == 0 && (i == 0 || strcmp(v[i], v[i - 1]) != 0)) {
			if ((out.len > 0 && ab_buf_adds(&out, " ") < 0) ||
			    ab_buf_adds(&out, v[i]) < 0)
				rc = ab_buf_fail(&out, AB_EENGINE, "the package "
				    "set", err);
			d->count++;
		}
	}
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
	if (rc == 0 && d->count == 0)
		rc = ab_fail(err, AB_EENGINE, "mmdebstrap resolved no packages");
	if (rc == 0)
		d->set = out.data;
	else
		ab_buf_free(&out);
	return rc;
}

/* NAME=VERSION, from the set, for each package of the include list. */
static int pin(struct ab_debroot *d, struct ab_err *err)
{
	struct ab_buf b;
	char *copy = strdup(d->include), *save, *name, want[128];
	const char *at, *end;

	if (copy == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	ab_buf_init(&b, OUTPUT_MAX);	/* entries of the set */
	for (name = strtok_r(copy, ",", &save); name != NULL;
	    name = strtok_r(NULL, ",", &save)) {
		if (ab_fmt(want, sizeof want, "%s=", name) < 0) {
			ab_fail(err, AB_EUSAGE, "--packages: %.80s...: too "
			    "long a name", name);
			free(copy);
			ab_buf_free(&b);
			return -1;
		}
		for (at = d->set; (at = strstr(at, want)) != NULL; at++)
			if (at == d->set || at[-1] == ' ')
				break;
		if (at == NULL)
			continue;	/* a virtual package: apt chose */
		end = at + strcspn(at, " ");
		if ((b.len > 0 && ab_buf_adds(&b, ",") < 0) ||
		    ab_buf_add(&b, at, (size_t)(end - at)) < 0 ||
		    ab_buf_adds(&b, "") < 0) {
			free(copy);
			ab_buf_fail(&b, AB_EENGINE, "the pinned list", err);
			ab_buf_free(&b);
			return -1;
		}
	}
	free(copy);
	d->pinned = b.data ? b.data : strdup(d->include);
	return d->pinned ? 0 : ab_fail(err, AB_EENGINE, "out of memory");
}

int ab_debroot_resolve(struct ab_debroot *d, const char *list,
    const char *needs, const struct ab_deadline *dl, struct ab_err *err)
{
	char opt[LIST_MAX + 64];
	const char *opts[] = { "--verbose", "--simulate",
	    "--variant=essential", opt, NULL };
	struct ab_buf got;
	int rc;

	memset(d, 0, sizeof *d);
	d->dl = *dl;
	if (check_list(list, err) < 0 || host_suite(d->suite, err) < 0)
		return -1;
	if (asprintf(&d->include, "%s,%s", list, needs) < 0) {
		d->include = NULL;
		return ab_fail(err, AB_EENGINE, "out of memory");
	}
	if (ab_fmt(opt, sizeof opt, "--include=%s", d->include) < 0)
		return ab_fail(err, AB_EUSAGE, "--packages: list too long");
	ab_buf_init(&got, OUTPUT_MAX);
	rc = run(d, opts, "/dev/null", &got, err);
	if (rc == 1)
		rc = failed(&got, err);
	if (rc == 0)
		rc = parse_set(d, &got, err);
	if (rc == 0)
		rc = pin(d, err);
	ab_buf_free(&got);
	if (rc < 0)
		ab_debroot_free(d);
	return rc;
}

int ab_debroot_build(struct ab_debroot *d, const char *out,
    struct ab_err *err)
{
	char opt[LIST_MAX * 2 + 64];
	const char *opts[] = { "--variant=essential", "--format=tar", opt,
	    NULL };
	struct ab_buf got;
	int rc;

	if (ab_fmt(opt, sizeof opt, "--include=%s", d->pinned) < 0)
		return ab_fail(err, AB_EUSAGE, "--packages: list too long");
	ab_buf_init(&got, OUTPUT_MAX);
	rc = run(d, opts, out, &got, err);
	if (rc == 1)
		rc = failed(&got, err);
	ab_buf_free(&got);
	return rc;
}

void ab_debroot_free(struct ab_debroot *d)
{
	free(d->include);
	free(d->set);
	free(d->pinned);
	d->include = d->set = d->pinned = NULL;
}
