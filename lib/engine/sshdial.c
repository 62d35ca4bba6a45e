#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sshdial.h"

/* ssh's path from PATH, found before the fork: the child only execs. */
static int find_ssh(char *out, size_t cap, struct ab_err *err)
{
	const char *path = getenv("PATH"), *p, *end;
	size_t n;

	for (p = path ? path : "/usr/bin:/bin"; *p; p = *end ? end + 1 : end) {
		end = strchr(p, ':');
		if (end == NULL)
			end = p + strlen(p);
		n = (size_t)(end - p);
		if (n == 0 || n + 5 >= cap)
			continue;
		memcpy(out, p, n);
		memcpy(out + n, "/ssh", 5);
		if (access(out, X_OK) == 0)
			return 0;
	}
	return ab_fail(err, AB_EENGINE, "no ssh on PATH to reach the engine "
	    "with (apt-get install openssh-client)");
}

/* The docker CLI's command, with what keeps ssh from ever asking. */
static void ssh_argv(const struct ab_endpoint *ep, const char *ssh,
    char *timeout, size_t cap, long connect_s, const char **av)
{
	int n = 0;

	/* A number into room for it: a bug here when cut. */
	if (ab_fmt(timeout, cap, "ConnectTimeout=%ld", connect_s) < 0)
		abort();
	av[n++] = ssh;
	av[n++] = "-o";
	av[n++] = timeout;
	av[n++] = "-o";
	av[n++] = "BatchMode=yes";
	av[n++] = "-o";
	av[n++] = "StrictHostKeyChecking=yes";
	av[n++] = "-T";
	if (ep->user[0]) {
		av[n++] = "-l";
		av[n++] = ep->user;
	}
	if (ep->port[0]) {
		av[n++] = "-p";
		av[n++] = ep->port;
	}
	av[n++] = "--";
	av[n++] = ep->host;
	av[n++] = "docker";
	av[n++] = "system";
	av[n++] = "dial-stdio";
	av[n] = NULL;
}

/* The socket's name and its directory, gone once connected, or never. */
static void unname(const char *dir)
{
	char path[sizeof ((struct ab_ssh *)0)->dir + 2];

	if (dir[0] == '\0')
		return;
	memcpy(path, dir, strlen(dir));
	memcpy(path + strlen(dir), "/s", 3);
	(void)unlink(path);
	(void)rmdir(dir);
}

/* The child takes the one connection its parent makes, refusing any
 * other process's, removes the socket's name, then
 * becomes ssh with that connection as its stdin and stdout.  Only calls
 * safe after a fork in a threaded process. */
static void child(int lfd, int errw, pid_t parent, const char *dir,
    int wait_ms, const char *const *av)
{
	struct pollfd p = { lfd, POLLIN, 0 };
	struct ucred cr;
	socklen_t n;
	sigset_t none;
	int c, i;

	(void)setsid();
	for (;;) {
		if (poll(&p, 1, wait_ms) != 1) {
			unname(dir);
			_exit(126);
		}
		c = accept(lfd, NULL, NULL);
		n = sizeof cr;
		if (c >= 0 && getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr,
		    &n) == 0 && cr.pid == parent)
			break;
		if (c >= 0)
			close(c);
	}
	unname(dir);
	if (dup2(c, 0) < 0 || dup2(c, 1) < 0 || dup2(errw, 2) < 0)
		_exit(127);
	for (i = 1; i < NSIG; i++)
		(void)signal(i, SIG_DFL);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	(void)close_range(3, UINT_MAX, 0);
	execv(av[0], (char *const *)av);
	(void)!write(2, "cannot run ssh\n", 15);
	_exit(127);
}

/* A listening socket in a directory of its own (0700) into addr, named
 * by a path: libcurl 7.88 reuses no connection whose peer it cannot name,
 * and an abstract socket's name reads as empty. */
static int listener(struct ab_ssh *s, struct sockaddr_un *addr,
    socklen_t *len, struct ab_err *err)
{
	const char *tmp = getenv("TMPDIR");
	int fd, n;

	if (tmp == NULL || *tmp != '/' || strlen(tmp) > 60)
		tmp = "/tmp";
	if (ab_fmt_err(err, s->dir, sizeof s->dir, "TMPDIR",
	    "%s/agentbox-ssh-XXXXXX", tmp) < 0) {
		s->dir[0] = '\0';
		return -1;
	}
	if (mkdtemp(s->dir) == NULL) {
		s->dir[0] = '\0';
		return ab_fail_errno(err, AB_EENGINE, "cannot make a directory "
		    "in %s for ssh's socket", tmp);
	}
	memset(addr, 0, sizeof *addr);
	addr->sun_family = AF_UNIX;
	if (ab_fmt_err(err, addr->sun_path, sizeof addr->sun_path,
	    "ssh's socket path", "%s/s", s->dir) < 0)
		return -1;
	n = (int)strlen(addr->sun_path);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return ab_fail_errno(err, AB_EENGINE, "socket");
	if (bind(fd, (struct sockaddr *)addr, *len) < 0 || listen(fd, 1) < 0) {
		close(fd);
		return ab_fail_errno(err, AB_EENGINE, "listen for ssh");
	}
	return fd;
}

int ab_ssh_dial(const struct ab_endpoint *ep, long connect_s,
    struct ab_ssh *s, struct sockaddr_un *addr, socklen_t *len,
    struct ab_err *err)
{
	char ssh[PATH_MAX], timeout[64];
	const char *av[24];
	pid_t parent = getpid();
	int lfd, pe[2];

	memset(s, 0, sizeof *s);
	s->fd = s->errfd = -1;
	if (find_ssh(ssh, sizeof ssh, err) < 0)
		return -1;
	ssh_argv(ep, ssh, timeout, sizeof timeout, connect_s, av);
	if ((lfd = listener(s, addr, len, err)) < 0) {
		unname(s->dir);
		return -1;
	}
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->fd < 0 || pipe2(pe, O_CLOEXEC) < 0) {
		ab_fail_errno(err, AB_EENGINE, "socket");
		goto fail;
	}
	s->pid = fork();
	if (s->pid == 0)
		child(lfd, pe[1], parent, s->dir, (int)(connect_s * 1000), av);
	close(pe[1]);
	if (s->pid < 0) {
		close(pe[0]);
		ab_fail_errno(err, AB_EENGINE, "cannot start ssh");
		goto fail;
	}
	close(lfd);
	(void)fcntl(pe[0], F_SETFL, O_NONBLOCK);
	s->errfd = pe[0];
	return 0;
fail:
	close(lfd);
	unname(s->dir);
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->pid = 0;
	return -1;
}

/* Keeps the last non-empty line of what ssh wrote. */
static void keep_last(struct ab_ssh *s, char *p, size_t n)
{
	char *line, *nl;

	p[n] = '\0';
	for (line = p; line != NULL; line = nl) {
		nl = strchr(line, '\n');
		if (nl != NULL)
			*nl++ = '\0';
		line[strcspn(line, "\r")] = '\0';
		if (*line != '\0')	/* a line cut short still reads */
			(void)ab_fmt(s->said, sizeof s->said, "%.250s", line);
	}
}

void ab_ssh_listen(struct ab_ssh *s)
{
	char buf[4096];
	ssize_t n;

	if (s->errfd < 0)
		return;
	while ((n = read(s->errfd, buf, sizeof buf - 1)) > 0)
		keep_last(s, buf, (size_t)n);
}

void ab_ssh_end(struct ab_ssh *s)
{
	int st;

	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	if (s->pid > 0) {
		(void)kill(s->pid, SIGTERM);
		while (waitpid(s->pid, &st, 0) < 0 && errno == EINTR)
			;
		s->pid = 0;
	}
	unname(s->dir);
	ab_ssh_listen(s);
	if (s->errfd >= 0)
		close(s->errfd);
	s->errfd = -1;
}
