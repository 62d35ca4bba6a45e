/* ab-codex: the approval client that drives Codex CLI in the execution
 * phase.  It runs only inside an agent container, exec'd by the probe
 * with the prompt on its standard input: it writes Codex's trust entry
 * for the root, starts `codex app-server` (the argv after --) in the
 * root, starts one thread and one turn, and is the only approver of
 * what Codex asks (lib/agent/appserver.c).  Its standard output is the event
 * stream ab-run reads into the result's agent section.
 *
 * As the container's PID 1 it also reaps whatever Codex leaves behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "appserver.h"
#include "json.h"
#include "tool.h"

static const char usage_text[] =
    "usage: ab-codex [--root DIR] [--model NAME] [--schema FILE] --\n"
    "                CODEX app-server [ARG...]\n"
    "       ab-codex --version | --help\n";

#define PROMPT_MAX (256 * 1024)
#define SCHEMA_MAX (64 * 1024)
#define EXIT_GRACE_MS 5000	/* for Codex to end once its turn has */

static int sig_pipe[2] = { -1, -1 };
static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	int saved = errno;

	if (sig != SIGCHLD)
		got_signal = sig;
	if (write(sig_pipe[1], "x", 1) < 0) {
		/* Full: a wakeup is already pending. */
	}
	errno = saved;
}

/* One line on stderr, and the exit status; with_errno appends the
 * system's reason. */
static void __attribute__((format(printf, 3, 4), noreturn))
die(int status, int with_errno, const char *fmt, ...)
{
	int saved = errno;
	char text[4096];
	va_list ap;

	va_start(ap, fmt);
	/* A reason cut short still reads. */
	(void)ab_vfmt(text, sizeof text, fmt, ap);
	va_end(ap);
	if (with_errno)
		ab_say("%s: %s", text, strerror(saved));
	else
		ab_say("%s", text);
	exit(status);
}

/* Reads at most max bytes of fd; more is an error. */
static char *read_bounded(int fd, size_t max, size_t *len)
{
	char *b = malloc(max + 2);
	size_t n = 0;
	ssize_t r;

	if (b == NULL)
		return NULL;
	while (n <= max && (r = read(fd, b + n, max + 1 - n)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(b);
			return NULL;
		}
		n += (size_t)r;
	}
	if (n > max) {
		free(b);
		errno = EFBIG;
		return NULL;
	}
	b[n] = '\0';
	*len = n;
	return b;
}

static char *read_schema(const char *path)
{
	struct ab_json j;
	struct ab_err err;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char *s;
	size_t n;

	if (fd < 0)
		die(2, 1, "--schema %s: cannot open", path);
	s = read_bounded(fd, SCHEMA_MAX, &n);
	close(fd);
	if (s == NULL || strlen(s) != n || ab_json_parse(&j, s, n, &err) < 0)
		die(2, 0, "--schema %s: not a JSON text of at most 64 KiB",
		    path);
	ab_json_free(&j);
	return s;
}

/* Codex loads a project's own rules and MCP servers unless the project
 * is untrusted, and app-server has no flag for that: only its config. */
static void trust_entry(const char *root)
{
	const char *home = getenv("CODEX_HOME");
	char path[4096];
	FILE *f;
	int fd;

	if (home == NULL || home[0] != '/')
		die(2, 0, "CODEX_HOME must be an absolute path");
	if (ab_fmt(path, sizeof path, "%s/config.toml", home) < 0)
		die(2, 0, "CODEX_HOME is too long a path");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd < 0 || (f = fdopen(fd, "w")) == NULL)
		die(1, 1, "cannot write %s", path);
	fprintf(f, "[projects.\"%s\"]\ntrust_level = \"untrusted\"\n", root);
	if (fclose(f) != 0)
		die(1, 1, "cannot write %s", path);
}

/* Codex on pipes, in the root, in a process group of its own, dying with
 * us.  in/out are our ends. */
static pid_t spawn(char **argv, const char *root, int *in, int *out)
{
	int to[2], from[2];
	pid_t pid;

	if (pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(to[0], 0) < 0 || dup2(from[1], 1) < 0 ||
		    chdir(root) < 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	/* The turn's line (prompt and schema, 320 KiB at most) fits whole,
	 * so writing it never waits on Codex reading while Codex waits on
	 * us reading: best effort, the kernel's ceiling may be lower. */
	fcntl(to[1], F_SETPIPE_SZ, 1 << 20);
	*in = to[1];
	*out = from[0];
	return pid;
}

static int write_all(int fd, struct ab_buf *b)
{
	size_t off = 0;
	ssize_t w;

	while (off < b->len) {
		w = write(fd, b->data + off, b->len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		off += (size_t)w;
	}
	ab_buf_reset(b);
	return 0;
}

/* Every child that ended, Codex's own and the orphans PID 1 inherits;
 * 1 once Codex itself has. */
static int reap(pid_t codex, int *codex_gone)
{
	pid_t p;
	int st;

	while ((p = waitpid(-1, &st, WNOHANG)) > 0)
		if (p == codex)
			*codex_gone = 1;
	return *codex_gone;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int running(const struct ab_as *s)
{
	return s->state == AB_AS_STARTING || s->state == AB_AS_RUNNING;
}

/* Feeds Codex's output to s until the turn ends, Codex ends or a signal
 * comes. */
static void converse(struct ab_as *s, pid_t pid, int in, int out,
    int *codex_gone)
{
	struct pollfd pf[2];
	char buf[65536], drain[64];
	ssize_t r;

	while (running(s)) {
		if (write_all(in, &s->to_server) < 0)
			ab_as_abort(s, "Codex stopped reading: %s",
			    strerror(errno));
		if (write_all(1, &s->events) < 0)
			ab_as_abort(s, "the event stream cannot be written");
		if (!running(s))
			break;
		pf[0].fd = out;
		pf[0].events = POLLIN;
		pf[1].fd = sig_pipe[0];
		pf[1].events = POLLIN;
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			ab_as_abort(s, "poll: %s", strerror(errno));
		if (pf[1].revents & POLLIN)
			while (read(sig_pipe[0], drain, sizeof drain) > 0)
				;
		reap(pid, codex_gone);
		if (got_signal) {
			ab_as_abort(s, "cancelled by signal %d", got_signal);
			break;
		}
		if (!(pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		r = read(out, buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			ab_as_eof(s);
		else
			ab_as_feed(s, buf, (size_t)r);
	}
	write_all(1, &s->events);
}

/* Once the turn is over: Codex's stdin closes, and it gets a moment to
 * end by itself before its whole process group is killed. */
static void finish(pid_t pid, int in, int *codex_gone, int kill_now)
{
	long long end = now_ms() + (kill_now ? 0 : EXIT_GRACE_MS);
	char drain[64];

	close(in);
	while (!reap(pid, codex_gone) && now_ms() < end)
		if (poll(&(struct pollfd){ .fd = sig_pipe[0],
		    .events = POLLIN }, 1, 100) > 0)
			while (read(sig_pipe[0], drain, sizeof drain) > 0)
				;
	if (!*codex_gone) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		while (!reap(pid, codex_gone))
			if (waitpid(pid, NULL, 0) == pid)
				*codex_gone = 1;
	}
	reap(pid, codex_gone);
}

static void signals(void)
{
	struct sigaction sa;

	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		die(1, 1, "cannot make a pipe");
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_NOCLDSTOP;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "root", required_argument, NULL, 'r' },
		{ "model", required_argument, NULL, 'm' },
		{ "schema", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 }
	};
	const char *root = "/work", *model = NULL, *schema_path = NULL;
	char *prompt, *schema = NULL;
	int c, in, out, gone = 0, rc;
	struct ab_as s;
	size_t n;
	pid_t pid;

	ab_prog = "ab-codex";
	ab_usage_text = usage_text;
	while ((c = ab_getopt(argc, argv, "", longopts)) != -1) {
		switch (c) {
		case 'r': root = optarg; break;
		case 'm': model = optarg; break;
		case 's': schema_path = optarg; break;
		default:
			rc = ab_option(c);
			return rc < 0 ? 0 : rc;
		}
	}
	if (optind >= argc || argv[optind][0] != '/' || root[0] != '/' ||
	    strspn(root, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789._/-") != strlen(root))
		return ab_usage();
	prompt = read_bounded(0, PROMPT_MAX, &n);
	if (prompt == NULL || strlen(prompt) != n)
		die(2, 0, "the prompt on standard input is not text of at most "
		    "256 KiB");
	if (schema_path != NULL)
		schema = read_schema(schema_path);
	trust_entry(root);
	signals();
	if (ab_as_init(&s, root, model, prompt, schema, lstat) < 0)
		die(2, 0, "the prompt is not UTF-8 text");
	if ((pid = spawn(argv + optind, root, &in, &out)) < 0)
		die(1, 1, "cannot start %s", argv[optind]);
	converse(&s, pid, in, out, &gone);
	finish(pid, in, &gone, s.state != AB_AS_DONE);
	rc = s.state == AB_AS_DONE ? 0 : 1;
	if (s.state == AB_AS_ABORTED)
		ab_say("stopped Codex: %s", s.why);
	else if (s.state == AB_AS_FAILED)
		ab_say("the turn failed");
	if (got_signal)
		rc = 128 + got_signal;
	ab_as_free(&s);
	free(prompt);
	free(schema);
	return rc;
}
