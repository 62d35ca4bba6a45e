/* ab-relay: the agent's side of egress.  It runs only inside an agent
 * container, started by the probe: it listens on 127.0.0.1:3128 (the
 * agent's HTTPS_PROXY) and copies each connection to the allocation's
 * proxy socket.  It is not a boundary: the agent may kill it or speak to
 * the socket itself; the proxy decides.
 *
 * It checks that the socket answers and binds its port before it forks
 * into the background, so the probe's "ab-relay ... && exec agent" runs
 * the agent only once the relay listens.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "egress.h"
#include "tool.h"

#define IDLE_MS (24L * 3600 * 1000)	/* the proxy holds the idle bound */
#define STACK_SIZE (128 * 1024)

static const char usage_text[] =
    "usage: ab-relay --socket PATH [--listen ADDR:PORT] [--max-conns N]\n"
    "       ab-relay --version | --help\n";

static struct sockaddr_un proxy;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long active, max_conns = 64;
static volatile int never;

static int dial_proxy(void)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd >= 0 && connect(fd, (struct sockaddr *)&proxy,
	    sizeof proxy) == 0)
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

static void *serve(void *arg)
{
	int fd = (int)(long)arg, up;
	long long moved[2];

	if ((up = dial_proxy()) >= 0) {
		ab_egress_pump(fd, up, IDLE_MS, &never, moved, NULL);
		close(up);
	}
	close(fd);
	pthread_mutex_lock(&lock);
	active--;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void loop(int lfd)
{
	static const int one = 1;
	pthread_attr_t attr;
	pthread_t t;
	int fd, busy;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, STACK_SIZE);
	for (;;) {
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				poll(NULL, 0, 100);
			continue;
		}
		/* A pump passes on what it got at once: an answer's last small
		 * segment must not wait for the client's delayed ACK. */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		pthread_mutex_lock(&lock);
		busy = active >= max_conns;
		if (!busy)
			active++;
		pthread_mutex_unlock(&lock);
		if (!busy && pthread_create(&t, &attr, serve,
		    (void *)(long)fd) == 0)
			continue;
		if (!busy) {
			pthread_mutex_lock(&lock);
			active--;
			pthread_mutex_unlock(&lock);
		}
		close(fd);
	}
}

static int listen_tcp(const char *spec)
{
	struct sockaddr_in sa;
	char addr[32];
	const char *colon = strrchr(spec, ':');
	char *end;
	long port;
	int fd, one = 1;

	if (colon == NULL || (size_t)(colon - spec) >= sizeof addr)
		return -1;
	memcpy(addr, spec, (size_t)(colon - spec));
	addr[colon - spec] = '\0';
	port = strtol(colon + 1, &end, 10);
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)port);
	if (*end || port < 1 || port > 65535 ||
	    inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		return -1;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
	    sizeof one) < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    listen(fd, 128) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* The child serves; stdio goes nowhere, so nothing of the relay mixes
 * with the agent's output. */
static int background(int lfd)
{
	pid_t pid = fork();
	int null;

	if (pid < 0)
		return -1;
	if (pid > 0)
		return 0;
	setsid();
	if ((null = open("/dev/null", O_RDWR | O_CLOEXEC)) >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
	}
	signal(SIGPIPE, SIG_IGN);
	loop(lfd);
	_exit(0);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "listen", required_argument, NULL, 'l' },
		{ "max-conns", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 }
	};
	const char *sock = NULL, *listen_at = "127.0.0.1:3128";
	int c, fd, lfd, rc;
	char *end;

	ab_prog = "ab-relay";
	ab_usage_text = usage_text;
	while ((c = ab_getopt(argc, argv, "", longopts)) != -1) {
		switch (c) {
		case 's': sock = optarg; break;
		case 'l': listen_at = optarg; break;
		case 'm':
			max_conns = strtol(optarg, &end, 10);
			if (*end || max_conns < 1 || max_conns > 4096)
				return ab_usage();
			break;
		default:
			rc = ab_option(c);
			return rc < 0 ? 0 : rc;
		}
	}
	if (sock == NULL || optind != argc || strlen(sock) >= sizeof
	    proxy.sun_path)
		return ab_usage();
	proxy.sun_family = AF_UNIX;
	memcpy(proxy.sun_path, sock, strlen(sock) + 1);
	if ((fd = dial_proxy()) < 0) {
		ab_say("the proxy socket %s does not answer: %s", sock,
		    strerror(errno));
		return 1;
	}
	close(fd);
	if ((lfd = listen_tcp(listen_at)) < 0) {
		ab_say("cannot listen on %s: %s", listen_at, strerror(errno));
		return 1;
	}
	if (background(lfd) < 0) {
		ab_say("cannot fork: %s", strerror(errno));
		return 1;
	}
	return 0;
}
