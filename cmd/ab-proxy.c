/* ab-proxy: an allocation's egress proxy.  It runs only inside the
 * allocation's proxy container (ab-alloc --egress), never on the host.
 *
 * CONNECT only, one request per connection, HOST:PORT compared exactly
 * with the list it was started with, names resolved here and every
 * resolved address checked before it is dialled (no second lookup), one
 * JSON line on stdout per decision and per closed tunnel.  One thread per
 * connection: a slow resolution or a slow peer holds up only its own
 * connection, and the number of threads is the connection bound.
 *
 * With --vault, a provider's API host of the list (ab_egress_provider)
 * for which the vault holds a credential (ab_icept_on) is not a blind
 * tunnel: TLS
 * ends here, under a CA this proxy draws when it starts (its key in this
 * process's memory alone, constrained to those hosts), and each request
 * gets the real credential in place of the agent's placeholder
 * (intercept.h).  The CA's certificate, public, is written beside the
 * socket for the agents to trust.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "egress.h"
#include "intercept.h"
#include "tlsca.h"
#include "vault.h"
#include "tally.h"
#include "tool.h"

#define HEAD_TIMEOUT_MS 10000
#define CONNECT_TIMEOUT_MS 10000
#define STACK_SIZE (256 * 1024)
#define TALLY_TICK_MS 250	/* a tally that changed is written this often */
#define TALLY_BEAT_MS 1000	/* and one that did not, this often */

static const char usage_text[] =
    "usage: ab-proxy --socket PATH [--tally PATH] [--max-conns N]\n"
    "                [--lease EPOCH_MS] [--idle SECONDS]\n"
    "                [--vault DIR --anchors FILE] ENTRY...\n"
    "       ab-proxy --version | --help\n";

struct conf {
	const char *socket;
	const char *tally;	/* NULL: none kept on disk */
	long max_conns;
	long long lease_ms;	/* 0: none */
	long idle_ms;
	const char *vault;	/* NULL: every destination a blind tunnel */
	const char *anchors;
	struct ab_egress_list list;
};

static struct conf cf;
static volatile int stopping;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long active;
static long long n_allowed, n_refused;
/* Under lock, but for the rows' bytes, which tunnels add to atomically. */
static struct ab_tally tl;
static int dirty;
/* The allowlist's bytes up and down, apart: tunnels add to them without
 * the lock, and only atomically read copies reach the file. */
static long long live_bytes[AB_EGRESS_MAX][2];
static int sigpipe_fd[2] = { -1, -1 };
/* The CA, when the list holds a provider's host and --vault is given. */
static struct ab_tlsca *ca;
static struct ab_icept icept;
/* SIGUSR1: ab-run asks for a tally now (its agent has ended). */
static int askpipe_fd[2] = { -1, -1 };

struct conn {
	int fd;
	long long t0;
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One line on stdout, whole, under the lock. */
static void log_line(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static void log_line(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	/* A line cut short is still logged; one the format failed is not. */
	line[0] = '\0';
	va_start(ap, fmt);
	(void)ab_vfmt(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (line[0] == '\0')
		return;
	n = (int)strlen(line);
	line[n++] = '\n';
	pthread_mutex_lock(&lock);
	if (write(STDOUT_FILENO, line, (size_t)n) < 0) {
		/* Nobody to tell: the log is the engine's. */
	}
	pthread_mutex_unlock(&lock);
}

static void refuse(struct conn *c, int status, const char *reason,
    const char *host, int port)
{
	char msg[128];
	const char *text = status == 403 ? "Forbidden" : status == 405 ?
	    "Method Not Allowed" : status == 408 ? "Request Timeout" :
	    status == 502 ? "Bad Gateway" : status == 503 ?
	    "Service Unavailable" : "Bad Request";
	int n;

	/* This file's words: cut, nothing is sent and the client sees the
	 * connection close. */
	n = ab_fmt(msg, sizeof msg, "HTTP/1.1 %d %s\r\nConnection: close"
	    "\r\nContent-Length: 0\r\n\r\n", status, text);
	if (n == 0 && send(c->fd, msg, strlen(msg), MSG_NOSIGNAL |
	    MSG_DONTWAIT) < 0) {
		/* The client is gone; the decision is logged all the same. */
	}
	pthread_mutex_lock(&lock);
	n_refused++;
	ab_tally_refused(&tl, host, port, reason);
	dirty = 1;
	pthread_mutex_unlock(&lock);
	if (host != NULL)
		log_line("{\"t\":%lld,\"event\":\"refused\",\"host\":\"%s\","
		    "\"port\":%d,\"reason\":\"%s\",\"status\":%d}", now_ms(),
		    host, port, reason, status);
	else
		log_line("{\"t\":%lld,\"event\":\"refused\",\"reason\":\"%s\","
		    "\"status\":%d}", now_ms(), reason, status);
}

/* Reads the request head within HEAD_TIMEOUT_MS.  The bytes read, the
 * head and whatever came with it (ab_egress_request judges both), or 0
 * with *reason and *status set. */
static size_t read_head(struct conn *c, char *buf, const char **reason,
    int *status)
{
	struct pollfd p = { c->fd, POLLIN, 0 };
	size_t got = 0;
	long long end = now_ms() + HEAD_TIMEOUT_MS, left;
	ssize_t k;

	for (;;) {
		left = end - now_ms();
		if (left <= 0 || poll(&p, 1, (int)left) == 0) {
			*reason = "request-timeout";
			*status = 408;
			return 0;
		}
		k = recv(c->fd, buf + got, AB_EGRESS_HEAD_MAX - got, 0);
		if (k <= 0) {
			/* Closed before a byte: no request, no decision (the
			 * relay's check that the socket answers). */
			*reason = got == 0 ? NULL : "client-gone";
			*status = 400;
			return 0;
		}
		if (got == 0 && (*reason = ab_egress_first_byte(
		    (unsigned char)buf[0], status)) != NULL)
			return 0;
		got += (size_t)k;
		if (ab_egress_head_len(buf, got) > 0)
			return got;
		if (got == AB_EGRESS_HEAD_MAX) {
			*reason = "head-too-large";
			*status = 400;
			return 0;
		}
	}
}

/* Pinned buffers: what a tunnel's sockets may hold is AB_EGRESS_SOCK_BUF
 * each way whatever the peers do, never the kernel's autotuned megabytes,
 * so the memory limit (AB_PROXY_MEMORY) holds every tunnel the bound
 * lets in.  Before connect(2), so the window offered fits it. */
static int pin_buffers(int fd)
{
	int v = AB_EGRESS_SOCK_BUF;

	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v) < 0)
		return -1;
	return 0;
}

static int connect_within(const struct sockaddr *sa, socklen_t len)
{
	static const int one = 1;
	struct pollfd p;
	socklen_t el = sizeof(int);
	int fd, e = 0;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0);
	if (fd < 0)
		return -1;
	if (pin_buffers(fd) < 0) {
		close(fd);
		return -1;
	}
	/* What the proxy passes on goes at once (a request's last small
	 * segment would otherwise wait for the server's delayed ACK). */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(fd, sa, len) == 0)
		return fd;
	if (errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	p.fd = fd;
	p.events = POLLOUT;
	if (poll(&p, 1, CONNECT_TIMEOUT_MS) != 1 ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0 || e != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void addr_text(const struct sockaddr *sa, char *buf, size_t cap)
{
	char a[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (sa->sa_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
		    a, sizeof a);
		port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
		if (ab_fmt(buf, cap, "%s:%d", a, port) < 0)
			buf[0] = '\0';	/* a cut address is none */
	} else {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->
		    sin6_addr, a, sizeof a);
		port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
		if (ab_fmt(buf, cap, "[%s]:%d", a, port) < 0)
			buf[0] = '\0';
	}
}

/* Dials the pin, or each resolved address the guard allows, in turn:
 * exactly the addresses checked, no second lookup.  The socket, or -1
 * with *reason and *status. */
static int dial(const struct ab_egress_entry *e, char *addr, size_t cap,
    const char **reason, int *status)
{
	struct addrinfo hints, *res = NULL, *ai;
	char port[8];
	const char *why;
	int fd = -1;

	if (e->pinned) {
		addr_text((const struct sockaddr *)&e->pin, addr, cap);
		if ((fd = connect_within((const struct sockaddr *)&e->pin,
		    e->pin_len)) < 0) {
			*reason = "connect-failed";
			*status = 502;
		}
		return fd;
	}
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if (ab_fmt(port, sizeof port, "%d", e->port) < 0 ||
	    getaddrinfo(e->host, port, &hints, &res) != 0) {
		*reason = "resolve-failed";
		*status = 502;
		return -1;
	}
	*reason = "connect-failed";
	*status = 502;
	for (ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
		addr_text(ai->ai_addr, addr, cap);
		if ((why = ab_egress_guard(ai->ai_addr)) != NULL) {
			*reason = why;
			*status = 403;
			continue;
		}
		fd = connect_within(ai->ai_addr, ai->ai_addrlen);
	}
	freeaddrinfo(res);
	return fd;
}

static void tunnel(struct conn *c, const struct ab_egress_entry *e)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	char addr[80] = "", why[48];
	const char *reason = NULL;
	struct ab_tally_row *row;
	long long moved[2] = { 0, 0 }, *live[2] = { NULL, NULL };
	int status, fd, inside;

	fd = dial(e, addr, sizeof addr, &reason, &status);
	if (fd < 0) {
		if (status == 403 &&
		    ab_fmt(why, sizeof why, "address-%s", reason) == 0)
			reason = why;
		refuse(c, status, reason, e->host, e->port);
		return;
	}
	pthread_mutex_lock(&lock);
	n_allowed++;
	/* Rows are never moved: a tunnel may hold on to its own. */
	if ((row = ab_tally_allowed(&tl, e->host, e->port)) != NULL) {
		row->allowed++;
		live[0] = &live_bytes[row - tl.allow][0];
		live[1] = &live_bytes[row - tl.allow][1];
	}
	dirty = 1;
	pthread_mutex_unlock(&lock);
	log_line("{\"t\":%lld,\"event\":\"open\",\"host\":\"%s\",\"port\":%d,"
	    "\"addr\":\"%s\"}", now_ms(), e->host, e->port, addr);
	inside = ca != NULL && ab_egress_provider(e->host, e->port) &&
	    ab_icept_on(cf.vault, e->host, e->port);
	if (send(c->fd, ok, sizeof ok - 1, MSG_NOSIGNAL) !=
	    (ssize_t)(sizeof ok - 1))
		inside = -1;
	if (inside == 1)
		ab_icept_serve(&icept, c->fd, fd, e->host, e->port);
	else if (inside == 0)
		ab_egress_pump(c->fd, fd, cf.idle_ms, &stopping, moved, live);
	close(fd);
	log_line("{\"t\":%lld,\"event\":\"close\",\"host\":\"%s\",\"port\":%d,"
	    "\"addr\":\"%s\",\"up\":%lld,\"down\":%lld,\"ms\":%lld}", now_ms(),
	    e->host, e->port, addr, moved[0], moved[1], now_ms() - c->t0);
}

/* What an agent sent, fit for a log line: bytes outside a plain set
 * become '?', so no quote or backslash ends the JSON string early. */
static void clean(const char *in, char *out, size_t cap)
{
	static const char ok[] = "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 /._~%:+,=@()-";
	size_t i;

	for (i = 0; in[i] != '\0' && i + 1 < cap; i++)
		out[i] = strchr(ok, in[i]) != NULL ? in[i] : '?';
	out[i] = '\0';
}

/* One request of an intercepted connection, as it ended: counted in its
 * host's row (a refusal by its reason), its bytes added, and logged. */
static void on_request(void *ctx, const char *host, int port,
    const struct ab_icept_request *r)
{
	char m[16], p[256], d[160];
	struct ab_tally_row *row;
	struct ab_tally_req q;

	(void)ctx;
	clean(r->method, m, sizeof m);
	clean(r->path, p, sizeof p);
	clean(r->detail, d, sizeof d);
	pthread_mutex_lock(&lock);
	if ((row = ab_tally_allowed(&tl, host, port)) != NULL) {
		__atomic_add_fetch(&live_bytes[row - tl.allow][0], r->up,
		    __ATOMIC_RELAXED);
		__atomic_add_fetch(&live_bytes[row - tl.allow][1], r->down,
		    __ATOMIC_RELAXED);
	}
	if (r->reason != NULL && r->status >= 400 && r->status < 500) {
		n_refused++;
		ab_tally_refused(&tl, host, port, r->reason);
	}
	/* Listed for the invocation whose placeholder it carried. */
	if (r->who[0] != '\0') {
		memset(&q, 0, sizeof q);
		/* Cut to fit by their precisions: a bug here when cut. */
		if (ab_fmt(q.method, sizeof q.method, "%.11s", m) < 0 ||
		    ab_fmt(q.path, sizeof q.path, "%.159s", p) < 0)
			abort();
		q.status = r->status;
		q.up = r->up;
		q.down = r->down;
		q.ms = r->ms;
		ab_tally_request(&tl, r->who, &q, now_ms());
	}
	dirty = 1;
	pthread_mutex_unlock(&lock);
	log_line("{\"t\":%lld,\"event\":\"request\",\"host\":\"%s\",\"port\":%d,"
	    "\"method\":\"%s\",\"path\":\"%s\",\"status\":%d,\"reason\":"
	    "\"%s\",\"detail\":\"%s\",\"up\":%lld,\"down\":%lld,\"ms\":%lld}",
	    now_ms(), host, port, m, p, r->status, r->reason ? r->reason : "",
	    d, r->up, r->down, r->ms);
}

static int write_all(int fd, const char *p, size_t n)
{
	ssize_t k;

	while (n > 0) {
		if ((k = write(fd, p, n)) < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The tally, whole, where ab-run reads it: a new file renamed over the
 * old, so a reader never sees half of one.  Only the tally thread calls
 * this, and run() once that thread has ended. */
static void tally_save(void)
{
	static struct ab_tally snap;
	static int told;
	struct ab_buf b;
	char tmp[300];
	int i, fd, ok;

	pthread_mutex_lock(&lock);
	tl.seq++;
	snap = tl;
	dirty = 0;
	pthread_mutex_unlock(&lock);
	for (i = 0; i < snap.nallow; i++) {
		snap.allow[i].up = __atomic_load_n(&live_bytes[i][0],
		    __ATOMIC_RELAXED);
		snap.allow[i].down = __atomic_load_n(&live_bytes[i][1],
		    __ATOMIC_RELAXED);
	}
	ab_buf_init(&b, AB_TALLY_FILE_MAX);
	ok = ab_fmt(tmp, sizeof tmp, "%s.new", cf.tally) == 0 &&
	    ab_tally_write(&snap, &b) == 0;
	fd = ok ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
	    O_NOFOLLOW, 0644) : -1;
	ok = fd >= 0 && write_all(fd, b.data, b.len) == 0;
	if (fd >= 0 && close(fd) < 0)
		ok = 0;
	if ((!ok || rename(tmp, cf.tally) < 0) && !told) {
		/* ab-run sees a tally that stopped moving and says so. */
		told = 1;
		log_line("{\"t\":%lld,\"event\":\"tally-failed\",\"errno\":"
		    "%d}", now_ms(), errno);
	}
	ab_buf_free(&b);
}

/* A tally that changed, or tunnels that are open, are written every
 * TALLY_TICK_MS; a quiet one every TALLY_BEAT_MS, so a reader waiting for
 * a newer write never waits long; and one at once when asked (SIGUSR1),
 * so ab-run, whose agent has ended, need not wait for the beat. */
static void *tally_loop(void *arg)
{
	struct pollfd p = { -1, POLLIN, 0 };
	long long last = now_ms();
	char drain[16];
	sigset_t usr1;
	int busy, asked;

	(void)arg;
	/* Only this thread takes SIGUSR1, so no tunnel's call is cut. */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	p.fd = askpipe_fd[0];
	while (!stopping) {
		asked = poll(&p, 1, TALLY_TICK_MS) > 0;
		while (asked && read(askpipe_fd[0], drain, sizeof drain) > 0)
			;
		pthread_mutex_lock(&lock);
		busy = dirty || active > 0;
		pthread_mutex_unlock(&lock);
		if (asked || busy || now_ms() - last >= TALLY_BEAT_MS) {
			tally_save();
			last = now_ms();
		}
	}
	return NULL;
}

static void *serve(void *arg)
{
	char head[AB_EGRESS_HEAD_MAX], host[AB_EGRESS_HOST_MAX + 1];
	struct conn *c = arg;
	const struct ab_egress_entry *e;
	const char *reason = NULL;
	int status = 400, port = 0;
	size_t n;

	n = read_head(c, head, &reason, &status);
	if (n > 0)
		reason = ab_egress_request(head, n, host, &port, &status);
	/* A refused request names no host: what it said is not logged.  A
	 * connection gone before its first byte made no request at all. */
	if (reason != NULL)
		refuse(c, status, reason, NULL, 0);
	else if (n > 0 && (e = ab_egress_find(&cf.list, host, port)) == NULL)
		refuse(c, 403, "not-allowed", host, port);
	else if (n > 0)
		tunnel(c, e);
	close(c->fd);
	free(c);
	pthread_mutex_lock(&lock);
	active--;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void on_ask(int sig)
{
	int saved = errno;
	char b = (char)sig;

	if (write(askpipe_fd[1], &b, 1) < 0) {
		/* Full: a tally is already asked for. */
	}
	errno = saved;
}

static void on_signal(int sig)
{
	int saved = errno;
	char b = (char)sig;

	stopping = 1;
	if (write(sigpipe_fd[1], &b, 1) < 0) {
		/* The loop sees stopping at its next wake. */
	}
	errno = saved;
}

static int listen_on(const char *path)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd;

	if (strlen(path) >= sizeof sa.sun_path)
		return -1;
	/* A socket left by an earlier run of this proxy, and nothing else. */
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* 0666: the agents' uid connects, through a read-only mount. */
	umask(0111);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    listen(fd, 128) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void accept_one(int lfd)
{
	pthread_attr_t attr;
	pthread_t t;
	struct conn *c;
	int fd, busy;

	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (pin_buffers(fd) < 0) {
		close(fd);
		return;
	}
	c = calloc(1, sizeof *c);
	if (c == NULL) {
		close(fd);
		return;
	}
	c->fd = fd;
	c->t0 = now_ms();
	if (cf.lease_ms > 0 && c->t0 > cf.lease_ms) {
		refuse(c, 403, "lease-expired", NULL, 0);
		close(fd);
		free(c);
		return;
	}
	pthread_mutex_lock(&lock);
	busy = active >= cf.max_conns;
	if (!busy)
		active++;
	pthread_mutex_unlock(&lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, STACK_SIZE);
	if (!busy && pthread_create(&t, &attr, serve, c) == 0) {
		pthread_attr_destroy(&attr);
		return;
	}
	pthread_attr_destroy(&attr);
	if (!busy) {
		pthread_mutex_lock(&lock);
		active--;
		pthread_mutex_unlock(&lock);
	}
	refuse(c, 503, "busy", NULL, 0);
	close(fd);
	free(c);
}

/* Until SIGTERM or SIGINT: then no new connection, every tunnel told to
 * end (each sees it within a second), a last line with the counters. */
static int run(int lfd)
{
	struct pollfd p[2] = { { lfd, POLLIN, 0 }, { sigpipe_fd[0], POLLIN,
	    0 } };
	pthread_t writer;
	int i, writing = 0;
	long left;

	if (cf.tally != NULL) {
		tally_save();
		writing = pthread_create(&writer, NULL, tally_loop, NULL) == 0;
		if (!writing)
			return 1;
	}
	while (!stopping) {
		if (poll(p, 2, 1000) < 0 && errno != EINTR)
			return 1;
		if (!stopping && (p[0].revents & POLLIN))
			accept_one(lfd);
	}
	close(lfd);
	unlink(cf.socket);
	for (i = 0; i < 50; i++) {
		pthread_mutex_lock(&lock);
		left = active;
		pthread_mutex_unlock(&lock);
		if (left == 0)
			break;
		poll(NULL, 0, 100);
	}
	if (writing) {
		pthread_join(writer, NULL);
		tally_save();
	}
	log_line("{\"t\":%lld,\"event\":\"stop\",\"allowed\":%lld,"
	    "\"refused\":%lld,\"open\":%ld}", now_ms(), n_allowed, n_refused,
	    left);
	return 0;
}

static int number(const char *s, long long max, long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *s < '0' || *s > '9' || *end || v < 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "tally", required_argument, NULL, 't' },
		{ "max-conns", required_argument, NULL, 'm' },
		{ "lease", required_argument, NULL, 'l' },
		{ "idle", required_argument, NULL, 'i' },
		{ "vault", required_argument, NULL, 'v' },
		{ "anchors", required_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 }
	};
	struct ab_err err;
	long long v;
	int c, i, rc;

	cf.max_conns = 64;
	cf.idle_ms = 600000;
	while ((c = ab_getopt(argc, argv, "", longopts)) != -1) {
		switch (c) {
		case 's': cf.socket = optarg; break;
		case 't': cf.tally = optarg; break;
		case 'm':
			if (number(optarg, 4096, &v) < 0 || v < 1)
				goto usage;
			cf.max_conns = (long)v;
			break;
		case 'l':
			if (number(optarg, 253402300799999LL, &v) < 0)
				goto usage;
			cf.lease_ms = v;
			break;
		case 'i':
			if (number(optarg, 86400, &v) < 0 || v < 10)
				goto usage;
			cf.idle_ms = (long)v * 1000;
			break;
		case 'v': cf.vault = optarg; break;
		case 'a': cf.anchors = optarg; break;
		default:
			if ((rc = ab_option(c)) < 0)
				exit(0);
			return rc;
		}
	}
	if (cf.socket == NULL || optind == argc || (cf.tally != NULL &&
	    strlen(cf.tally) > 250) || (cf.vault == NULL) !=
	    (cf.anchors == NULL) || (cf.vault != NULL &&
	    strlen(cf.vault) > 250) ||
	    argc - optind > AB_EGRESS_MAX)
		goto usage;
	for (i = optind; i < argc; i++) {
		if (ab_egress_entry_parse(&cf.list.e[cf.list.n], argv[i],
		    &err) < 0) {
			ab_report(&err);
			return 2;
		}
		cf.list.n++;
	}
	return 0;
usage:
	return ab_usage();
}

/* The vault, the CA for the list's providers' hosts (none: nothing is
 * intercepted), and the CA's certificate where agents read it. */
static int inside_start(void)
{
	const char *hosts[AB_EGRESS_MAX];
	char path[300], tmp[310];
	struct ab_err err;
	struct ab_buf pem;
	struct stat st;
	size_t n = 0;
	int i, fd, ok;
	long long until;

	if ((mkdir(cf.vault, 0700) < 0 && errno != EEXIST) ||
	    lstat(cf.vault, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != geteuid() || chmod(cf.vault, 0700) < 0) {
		ab_say("the vault %s is not a directory of this proxy's own",
		    cf.vault);
		return 1;
	}
	for (i = 0; i < cf.list.n; i++)
		if (ab_egress_provider(cf.list.e[i].host, cf.list.e[i].port))
			hosts[n++] = cf.list.e[i].host;
	if (n == 0)
		return 0;
	/* As long as the lease, or a year: the allocation's life. */
	until = cf.lease_ms > 0 ? cf.lease_ms / 1000 + 3600 :
	    (long long)time(NULL) + 366LL * 86400;
	ab_buf_init(&pem, 64 * 1024);
	if (ab_tlsca_new(&ca, "egress", hosts, n, until, &err) < 0 ||
	    ab_tlsca_cert_pem(ca, &pem, &err) < 0) {
		ab_say("cannot make its CA: %s", err.msg);
		return 1;
	}
	if (ab_fmt(path, sizeof path, "%.*s/%s", (int)(strrchr(cf.socket,
	    '/') ? strrchr(cf.socket, '/') - cf.socket : 1), cf.socket,
	    AB_VAULT_CA_NAME) < 0 || ab_fmt(tmp, sizeof tmp, "%s.new",
	    path) < 0) {
		fprintf(stderr, "ab-proxy: the socket's path %.200s is too "
		    "long\n", cf.socket);
		ab_buf_free(&pem);
		return 1;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	    0644);
	ok = fd >= 0 && fchmod(fd, 0644) == 0 &&
	    write_all(fd, pem.data, pem.len) == 0;
	if ((fd >= 0 && close(fd) < 0) || !ok || rename(tmp, path) < 0) {
		ab_say("cannot write %s: %s", path, strerror(errno));
		ab_buf_free(&pem);
		return 1;
	}
	ab_buf_free(&pem);
	icept.ca = ca;
	icept.vault = cf.vault;
	/* The image's anchors; agentbox's own where its root has none. */
	icept.anchors = access(cf.anchors, R_OK) == 0 ? cf.anchors :
	    "/usr/lib/agentbox/ca-certificates.crt";
	icept.idle_ms = cf.idle_ms;
	icept.stop = &stopping;
	icept.report = on_request;
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	sigset_t usr1;
	int lfd, rc;

	ab_prog = "ab-proxy";
	ab_usage_text = usage_text;
	if ((rc = parse(argc, argv)) != 0)
		return rc;
	if (pipe2(sigpipe_fd, O_CLOEXEC | O_NONBLOCK) < 0 ||
	    pipe2(askpipe_fd, O_CLOEXEC | O_NONBLOCK) < 0)
		return 1;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_ask;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	signal(SIGPIPE, SIG_IGN);
	if ((lfd = listen_on(cf.socket)) < 0) {
		ab_say("cannot listen on %s: %s", cf.socket, strerror(errno));
		return 1;
	}
	if (cf.vault != NULL && (rc = inside_start()) != 0)
		return rc;
	ab_tally_init(&tl, &cf.list, now_ms());
	log_line("{\"t\":%lld,\"event\":\"start\",\"entries\":%d,"
	    "\"max_conns\":%ld}", now_ms(), cf.list.n, cf.max_conns);
	return run(lfd);
}
