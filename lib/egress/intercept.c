#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "egress.h"
#include "httpmsg.h"
#include "intercept.h"
#include "oauth.h"
#include "secret.h"
#include "vault.h"

/* One connection: both TLS sessions, the request being read (and what
 * came after it: a pipelined next request), and the credential of the
 * request being served. */
struct sess {
	const struct ab_icept *ic;
	const char *host;
	int port;
	SSL *c, *u;
	SSL_CTX *uctx;
	int cfd, ufd;
	char head[AB_HTTP_HEAD_MAX];
	size_t got;			/* bytes in head[] */
	char io[AB_ICEPT_IO];
	char out[2 * AB_ICEPT_IO + AB_VAULT_CRED_MAX];
	struct ab_vault_entry cred;
	char ph[AB_VAULT_CRED_MAX];	/* the placeholder it answers to */
	struct ab_icept_request r;
	long long t0;
};

/* head_out's bound: the head read, a byte more a field (": "), and
 * the Accept-Encoding line. */
_Static_assert(sizeof ((struct sess *)0)->out >= AB_HTTP_HEAD_MAX +
    AB_HTTP_HEADERS_MAX + 64, "out[] holds a head going upstream");
/* chunk_out's: a size line, a piece and what the replacement held back,
 * and a CRLF. */
_Static_assert(sizeof ((struct sess *)0)->out >= 24 + AB_ICEPT_IO +
    AB_VAULT_CRED_MAX + 2, "out[] holds a chunk going to the agent");

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void timeout_ms(int fd, long ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

int ab_icept_on(const char *vault, const char *host, int port)
{
	char prefix[AB_TLSCA_HOST_MAX + 16];
	struct dirent *d;
	struct stat st;
	DIR *dir;
	int on = 0;
	size_t n;

	if (ab_fmt(prefix, sizeof prefix, "%s:%d.", host, port) < 0 ||
	    (dir = opendir(vault)) == NULL)
		return 0;	/* no vault name is that long */
	n = strlen(prefix);
	while (!on && (d = readdir(dir)) != NULL)
		on = strncmp(d->d_name, prefix, n) == 0 &&
		    fstatat(dirfd(dir), d->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
	closedir(dir);
	return on;
}

/* -- Reading and writing through TLS, each within its time. */

static int put(SSL *ssl, const char *p, size_t n)
{
	size_t done;

	while (n > 0) {
		if (SSL_write_ex(ssl, p, n, &done) != 1)
			return -1;
		p += done;
		n -= done;
	}
	return 0;
}

/* Up to CAP bytes: their count, 0 at the peer's end, -1 on an error or
 * when MS passed. */
static long get(SSL *ssl, int fd, char *p, size_t cap, long ms)
{
	size_t n;
	int e;

	timeout_ms(fd, ms);
	if (SSL_read_ex(ssl, p, cap, &n) == 1)
		return (long)n;
	e = SSL_get_error(ssl, 0);
	return e == SSL_ERROR_ZERO_RETURN ? 0 : -1;
}

static void answer(struct sess *s, int status, const char *reason)
{
	char msg[200];
	const char *text = status == 403 ? "Forbidden" : status == 408 ?
	    "Request Timeout" : status == 431 ?
	    "Request Header Fields Too Large" : status == 501 ?
	    "Not Implemented" : status == 502 ? "Bad Gateway" :
	    status == 505 ? "HTTP Version Not Supported" : "Bad Request";
	int n;

	s->r.status = status;
	s->r.reason = reason;
	/* The reasons are this file's words: a bug here when cut. */
	if (ab_fmt(msg, sizeof msg, "HTTP/1.1 %d %s\r\nConnection: close\r\n"
	    "Content-Length: 0\r\nX-Agentbox-Refused: %s\r\n\r\n", status, text,
	    reason) < 0)
		abort();
	n = (int)strlen(msg);
	timeout_ms(s->cfd, 1000);
	put(s->c, msg, (size_t)n);
}

static void report(struct sess *s)
{
	s->r.ms = now_ms() - s->t0;
	if (s->ic->report != NULL)
		s->ic->report(s->ic->ctx, s->host, s->port, &s->r);
}

/* -- The request. */

/* The head of the next request into head[]: its length, 0 when the
 * agent ended the connection between requests, -1 refused (answered). */
static long read_head(struct sess *s)
{
	long long end = now_ms() + AB_ICEPT_HEAD_MS;
	long len, k;

	for (;;) {
		if ((len = ab_http_head_len(s->head, s->got)) != 0)
			break;
		if (now_ms() >= end) {
			answer(s, 408, "head-timeout");
			return -1;
		}
		k = get(s->c, s->cfd, s->head + s->got,
		    sizeof s->head - s->got, (long)(end - now_ms()));
		if (k <= 0 && s->got == 0)
			return 0;
		if (k < 0) {
			answer(s, 408, "head-timeout");
			return -1;
		}
		if (k == 0) {
			s->r.reason = "client-gone";
			return -1;
		}
		s->got += (size_t)k;
	}
	if (len < 0) {
		answer(s, 431, "head-too-large");
		return -1;
	}
	return len;
}

static int name_is(const struct ab_http_field *f, const char *name)
{
	return f->name_len == strlen(name) &&
	    strncasecmp(f->name, name, f->name_len) == 0;
}

/* The one credential header of the request: its index and where its
 * token lies, or -1. */
static int cred_field(const struct ab_http_head *h, const char **tok,
    size_t *n)
{
	const struct ab_http_field *f;
	int i, at = -1;

	for (i = 0; i < h->nf; i++) {
		f = &h->f[i];
		if (!name_is(f, "x-api-key") && !name_is(f, "authorization"))
			continue;
		if (at >= 0)
			return -1;
		at = i;
	}
	if (at < 0)
		return -1;
	f = &h->f[at];
	*tok = f->value;
	*n = f->value_len;
	if (name_is(f, "authorization")) {
		if (*n <= 7 || strncasecmp(*tok, "Bearer ", 7) != 0)
			return -1;
		*tok += 7;
		*n -= 7;
	}
	return at;
}

/* The vault's credential for the placeholder TOK, bound to this host
 * and port and to the header it came in. */
static int find_cred(struct sess *s, const struct ab_http_field *f,
    const char *tok, size_t n)
{
	char name[AB_TLSCA_HOST_MAX + 96], path[4200], *buf;
	struct ab_err err;
	size_t got = 0;
	ssize_t k = 1;
	int fd, rc = -1;

	ab_vault_entry_free(&s->cred);
	if (n == 0 || n > sizeof s->ph ||
	    ab_vault_name(s->host, s->port, tok, n, name, sizeof name,
	    &err) < 0)
		return -1;
	if (ab_fmt(path, sizeof path, "%s/%s", s->ic->vault, name) < 0 ||
	    (fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return -1;
	if ((buf = malloc(AB_VAULT_FILE_MAX)) != NULL) {
		while (got < AB_VAULT_FILE_MAX && (k = read(fd, buf + got,
		    AB_VAULT_FILE_MAX - got)) > 0)
			got += (size_t)k;
		if (k == 0)
			rc = ab_vault_decode(buf, got, &s->cred, &err);
		explicit_bzero(buf, got);
		free(buf);
	}
	close(fd);
	if (rc < 0)
		return -1;
	if (s->cred.cred_len != n || s->cred.header == AB_VAULT_REFRESH ||
	    (s->cred.header == AB_VAULT_BEARER) != name_is(f,
	    "authorization")) {
		ab_vault_entry_free(&s->cred);
		return -1;
	}
	memcpy(s->ph, tok, n);
	/* The invocation the request is listed for (tally.h): a sign-in's
	 * names itself, its placeholders changing at each refresh. */
	/* The hash's first bytes, cut by the precision (vault.h). */
	return ab_fmt(s->r.who, sizeof s->r.who, "%.*s",
	    (int)sizeof s->r.who - 1, s->cred.who[0] != '\0' ?
	    s->cred.who : strrchr(name, '.') + 1);
}

static char *cat(char *o, const char *p, size_t n)
{
	memcpy(o, p, n);
	return o + n;
}

/* The head as it goes upstream, into out[] (never a buffer that grows:
 * no copy of the credential is left behind in freed memory): every
 * field as the agent sent it, but the credential's value,
 * Accept-Encoding (identity: an answer must be plain to be searched for
 * the credential) and Expect (the proxy said 100 Continue itself).  Its
 * length; it fits, as it is never longer than the head read but for
 * the Accept-Encoding line. */
static size_t head_out(struct sess *s, const struct ab_http_head *h, int at,
    const char *tok)
{
	const struct ab_http_field *f;
	char *o = s->out;
	int i;

	o = cat(o, h->method, h->method_len);
	o = cat(o, " ", 1);
	o = cat(o, h->target, h->target_len);
	o = cat(o, h->minor ? " HTTP/1.1\r\n" : " HTTP/1.0\r\n", 11);
	for (i = 0; i < h->nf; i++) {
		f = &h->f[i];
		if (name_is(f, "accept-encoding") || name_is(f, "expect"))
			continue;
		o = cat(o, f->name, f->name_len);
		o = cat(o, ": ", 2);
		if (i == at) {
			memcpy(o, f->value, (size_t)(tok - f->value));
			o += tok - f->value;
			memcpy(o, s->cred.cred, s->cred.cred_len);
			o += s->cred.cred_len;
		} else {
			memcpy(o, f->value, f->value_len);
			o += f->value_len;
		}
		memcpy(o, "\r\n", 2);
		o += 2;
	}
	memcpy(o, "Accept-Encoding: identity\r\n\r\n", 29);
	return (size_t)(o + 29 - s->out);
}

/* -- The upstream. */

static int upstream(struct sess *s, const char *ca, size_t ca_len)
{
	struct ab_err err;

	if (s->u != NULL)
		return 0;
	s->uctx = ab_tls_client_ctx_shared(s->ic->anchors, ca, ca_len, &err);
	if (s->uctx == NULL || (s->u = SSL_new(s->uctx)) == NULL ||
	    SSL_set_fd(s->u, s->ufd) != 1 ||
	    ab_tls_client_host(s->u, s->host, &err) < 0) {
		/* A detail cut short still reads. */
		(void)ab_fmt(s->r.detail, sizeof s->r.detail, "%.159s",
		    err.msg);
		return -1;
	}
	timeout_ms(s->ufd, AB_ICEPT_HANDSHAKE_MS);
	if (SSL_connect(s->u) != 1) {
		ab_tls_reason(s->u, s->r.detail, sizeof s->r.detail);
		return -1;
	}
	return 0;
}

/* The request's body, from what followed its head and then the agent,
 * to the upstream as it comes; what follows the body stays in head[]. */
static int body_up(struct sess *s, const struct ab_http_head *h,
    size_t hlen)
{
	struct ab_http_framer fr;
	size_t have = s->got - hlen;
	long used, k;
	int done = 0;

	memmove(s->head, s->head + hlen, have);
	s->got = have;
	ab_http_framer_init(&fr, h);
	if (fr.kind == AB_BODY_NONE)
		return 0;
	for (;;) {
		if (s->got > 0) {
			used = ab_http_framer_feed(&fr, s->head, s->got, &done);
			if (used < 0)
				return answer(s, 400, "body-framing"), -1;
			if (put(s->u, s->head, (size_t)used) < 0)
				return -1;
			s->r.up += used;
			memmove(s->head, s->head + used, s->got - (size_t)used);
			s->got -= (size_t)used;
		}
		if (done)
			return 0;
		k = get(s->c, s->cfd, s->head, sizeof s->head,
		    s->ic->idle_ms);
		if (k <= 0)
			return -1;
		s->got = (size_t)k;
	}
}

/* -- The answer. */

/* The answer's head from the upstream into IO: its length, the bytes
 * that came after it in *extra. */
static long answer_head(struct sess *s, char *buf, size_t cap,
    size_t *got)
{
	long len, k;

	*got = 0;
	for (;;) {
		if ((len = ab_http_head_len(buf, *got)) != 0)
			return len;
		k = get(s->u, s->ufd, buf + *got, cap - *got, s->ic->idle_ms);
		if (k <= 0)
			return -1;
		*got += (size_t)k;
	}
}

/* Bytes toward the agent, the credential replaced on the way. */
static int down(struct sess *s, struct ab_subst *sub, const char *p,
    size_t n)
{
	size_t m;

	while (n > 0) {
		size_t piece = n < AB_ICEPT_IO ? n : AB_ICEPT_IO;

		m = ab_subst_feed(sub, p, piece, s->out);
		if (put(s->c, s->out, m) < 0)
			return -1;
		s->r.down += (long long)m;
		p += piece;
		n -= piece;
	}
	return 0;
}

static int down_flush(struct sess *s, struct ab_subst *sub)
{
	size_t m = ab_subst_flush(sub, s->out);

	s->r.down += (long long)m;
	return put(s->c, s->out, m);
}

/* A chunked answer: its data, through the replacement, goes to the agent
 * in chunks of the proxy's own, so a credential split across the
 * vendor's chunks is found all the same; each chunk one write, its size
 * line put before the data in out[]. */
#define LINE_ROOM 24
static int chunk_put(struct sess *s, char *data, size_t m)
{
	char line[LINE_ROOM];
	int k;

	if (ab_fmt(line, sizeof line, "%zx\r\n", m) < 0)
		return -1;
	k = (int)strlen(line);
	memcpy(data - k, line, (size_t)k);
	memcpy(data + m, "\r\n", 2);
	s->r.down += (long long)m + k + 2;
	return put(s->c, data - k, (size_t)k + m + 2);
}

static int chunk_out(struct sess *s, struct ab_subst *sub, const char *p,
    size_t n)
{
	size_t m, piece;

	while (n > 0) {
		piece = n < AB_ICEPT_IO ? n : AB_ICEPT_IO;
		m = ab_subst_feed(sub, p, piece, s->out + LINE_ROOM);
		p += piece;
		n -= piece;
		if (m > 0 && chunk_put(s, s->out + LINE_ROOM, m) < 0)
			return -1;
	}
	return 0;
}

static int chunk_end(struct sess *s, struct ab_subst *sub)
{
	size_t m = ab_subst_flush(sub, s->out + LINE_ROOM);

	if (m > 0 && chunk_put(s, s->out + LINE_ROOM, m) < 0)
		return -1;
	s->r.down += 5;
	return put(s->c, "0\r\n\r\n", 5);
}

/* The answer's body, as the framer cuts it: data through the
 * replacement, chunk framing rewritten, trailers dropped. */
static int body_down(struct sess *s, const struct ab_http_head *h,
    struct ab_subst *sub, size_t extra)
{
	struct ab_http_framer fr;
	size_t off, len, have = extra;
	long used, k;
	int done = 0;

	ab_http_framer_init(&fr, h);
	if (fr.kind == AB_BODY_NONE)
		return 0;
	for (;;) {
		off = 0;
		while (off < have && !done) {
			size_t doff, dlen;

			used = ab_http_framer_data(&fr, s->io + off, have - off,
			    &doff, &dlen, &done);
			if (used < 0)
				return -1;
			len = dlen;
			if (len > 0 && (fr.kind == AB_BODY_CHUNKED ?
			    chunk_out(s, sub, s->io + off + doff, len) :
			    down(s, sub, s->io + off + doff, len)) < 0)
				return -1;
			off += (size_t)used;
		}
		if (done)
			break;
		k = get(s->u, s->ufd, s->io, sizeof s->io, s->ic->idle_ms);
		if (k < 0 || (k == 0 && fr.kind != AB_BODY_EOF))
			return -1;
		if (k == 0)
			break;
		have = (size_t)k;
	}
	return fr.kind == AB_BODY_CHUNKED ? chunk_end(s, sub) :
	    down_flush(s, sub);
}

/* Tunnel bytes toward the agent: the replacement's output, less the
 * *AHEAD bytes already sent ahead of it (release()). */
static int tdown(struct sess *s, struct ab_subst *sub, const char *p,
    size_t n, size_t *ahead, int end)
{
	size_t m, skip, piece;

	do {
		piece = n < AB_ICEPT_IO ? n : AB_ICEPT_IO;
		m = end ? ab_subst_flush(sub, s->out) :
		    ab_subst_feed(sub, p, piece, s->out);
		skip = m < *ahead ? m : *ahead;
		*ahead -= skip;
		if (put(s->c, s->out + skip, m - skip) < 0)
			return -1;
		s->r.down += (long long)(m - skip);
		p += piece;
		n -= piece;
	} while (n > 0);
	return 0;
}

/* What the replacement holds back once the vendor is quiet: its first
 * bytes, as far as the credential and the placeholder agree (PUB: the
 * public prefix, "sk-ant-api03-"), sent ahead.  Held bytes are the
 * credential's first ones, so whether or not the credential follows,
 * those are the bytes the agent must get; past PUB they would be the
 * credential's own, and wait. */
static size_t releasable(const struct ab_subst *sub, size_t pub)
{
	return sub->nheld < pub ? sub->nheld : pub;
}

static int release(struct sess *s, struct ab_subst *sub, size_t pub,
    size_t *ahead)
{
	size_t k = releasable(sub, pub);

	if (put(s->c, sub->held + *ahead, k - *ahead) < 0)
		return -1;
	s->r.down += (long long)(k - *ahead);
	*ahead = k;
	return 0;
}

/* After a 101 the connection is a tunnel: bytes each way as they come,
 * the agent's to the vendor as they are, the vendor's through the
 * replacement (the credential never reaches the agent), until a side
 * ends, an idle spell or *stop.  EXTRA bytes after the 101's head in
 * io[], and what followed the request in head[], are the tunnel's.
 * Always -1: the connection ends with it. */
static int tunnel(struct sess *s, struct ab_subst *sub, size_t extra)
{
	struct pollfd pf[2] = { { s->cfd, POLLIN, 0 }, { s->ufd, POLLIN, 0 } };
	size_t pub = 0, ahead = 0;
	int n, quiet;
	long k;

	while (pub < s->cred.cred_len && s->cred.cred[pub] == s->ph[pub])
		pub++;
	if ((extra > 0 && tdown(s, sub, s->io, extra, &ahead, 0) < 0) ||
	    (s->got > 0 && put(s->u, s->head, s->got) < 0))
		return -1;
	s->r.up += (long long)s->got;
	s->got = 0;
	while (!*s->ic->stop) {
		pf[0].revents = SSL_pending(s->c) > 0 ? POLLIN : 0;
		pf[1].revents = SSL_pending(s->u) > 0 ? POLLIN : 0;
		quiet = releasable(sub, pub) > ahead;
		n = pf[0].revents | pf[1].revents ? 1 : poll(pf, 2, quiet ?
		    AB_ICEPT_HOLD_MS : (int)s->ic->idle_ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (n == 0 && !quiet))
			break;
		if (n == 0 && release(s, sub, pub, &ahead) < 0)
			return -1;
		if (n > 0 && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			if ((k = get(s->c, s->cfd, s->io, sizeof s->io,
			    s->ic->idle_ms)) <= 0 ||
			    put(s->u, s->io, (size_t)k) < 0)
				break;
			s->r.up += k;
		}
		if (n > 0 && (pf[1].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    ((k = get(s->u, s->ufd, s->io, sizeof s->io,
		    s->ic->idle_ms)) <= 0 ||
		    tdown(s, sub, s->io, (size_t)k, &ahead, 0) < 0))
			break;
	}
	tdown(s, sub, NULL, 0, &ahead, 1);
	return -1;
}

/* The answer to the request of method M: 1xx heads passed on, then the
 * final head and its body.  0, or -1 (the connection ends). */
static int answer_up(struct sess *s, const struct ab_http_head *req,
    struct ab_subst *sub, int *keep)
{
	struct ab_http_head h;
	size_t got;
	long len;

	for (;;) {
		len = answer_head(s, s->io, sizeof s->io, &got);
		if (len < 0 || ab_http_response(s->io, (size_t)len, req->method,
		    req->method_len, &h) != NULL)
			return answer(s, 502, "upstream-answer"), -1;
		s->r.status = h.status;
		if (down(s, sub, s->io, (size_t)len) < 0 ||
		    down_flush(s, sub) < 0)
			return -1;
		memmove(s->io, s->io + len, got - (size_t)len);
		got -= (size_t)len;
		if (h.status >= 200 || h.status == 101)
			break;
	}
	if (h.status == 101)
		return tunnel(s, sub, got);
	*keep = h.keep_alive && h.body != AB_BODY_EOF;
	return body_down(s, &h, sub, got);
}

/* -- A sign-in's refresh (oauth.h), at its token host. */

static void wipe_buf(struct ab_buf *b)
{
	if (b->data != NULL)
		explicit_bzero(b->data, b->len);
	ab_buf_free(b);
}

/* A body whole into OUT (bounded): HAVE bytes at P first, then reads
 * from SSL into io[]. */
static int whole(struct sess *s, SSL *ssl, int fd, const struct ab_http_head
    *h, const char *p, size_t have, struct ab_buf *out)
{
	struct ab_http_framer fr;
	size_t off = 0, doff, dlen;
	int done = 0;
	long used, k;

	ab_buf_init(out, AB_OAUTH_BODY_MAX);
	ab_http_framer_init(&fr, h);
	if (fr.kind == AB_BODY_NONE)
		return 0;
	for (;;) {
		while (off < have && !done) {
			used = ab_http_framer_data(&fr, p + off, have - off,
			    &doff, &dlen, &done);
			if (used < 0 || ab_buf_add(out, p + off + doff, dlen) < 0)
				return -1;
			off += (size_t)used;
		}
		if (done)
			return 0;
		k = get(ssl, fd, s->io, sizeof s->io, s->ic->idle_ms);
		if (k == 0 && fr.kind == AB_BODY_EOF)
			return 0;
		if (k <= 0)
			return -1;
		p = s->io;
		have = (size_t)k;
		off = 0;
	}
}

/* The refresh's head as it goes upstream, into out[]: the agent's, but
 * its length (the body's is LEN now), encoding and connection. */
static size_t refresh_head(struct sess *s, const struct ab_http_head *h,
    size_t len)
{
	static const char *const drop[] = { "content-length",
	    "transfer-encoding", "accept-encoding", "expect", "connection",
	    NULL };
	const struct ab_http_field *f;
	const char *const *d;
	char *o = s->out;
	int i, k;

	o = cat(o, h->method, h->method_len);
	o = cat(o, " ", 1);
	o = cat(o, h->target, h->target_len);
	o = cat(o, " HTTP/1.1\r\n", 11);
	for (i = 0; i < h->nf; i++) {
		f = &h->f[i];
		for (d = drop; *d != NULL && !name_is(f, *d); d++)
			;
		if (*d != NULL)
			continue;
		o = cat(o, f->name, f->name_len);
		o = cat(o, ": ", 2);
		o = cat(o, f->value, f->value_len);
		o = cat(o, "\r\n", 2);
	}
	/* The 96 bytes were kept for it: a bug here when cut. */
	if (ab_fmt(o, 96, "Content-Length: %zu\r\nAccept-Encoding: identity"
	    "\r\nConnection: close\r\n\r\n", len) < 0)
		abort();
	k = (int)strlen(o);
	return (size_t)(o + k - s->out);
}

/* The vendor's answer to the refresh, whole: its status, body in B.  No
 * Expect went up, so an interim answer is not one to pass on: refused. */
static int refresh_answer(struct sess *s, const struct ab_http_head *req,
    struct ab_buf *b)
{
	struct ab_http_head h;
	size_t got;
	long len;

	len = answer_head(s, s->io, sizeof s->io, &got);
	if (len < 0 || ab_http_response(s->io, (size_t)len, req->method,
	    req->method_len, &h) != NULL || h.status < 200)
		return -1;
	memmove(s->io, s->io + len, got - (size_t)len);
	return whole(s, s->u, s->ufd, &h, s->io, got - (size_t)len, b) < 0 ?
	    -1 : h.status;
}

/* The agent's answer: STATUS, BODY (JSON), and the connection closed. */
static int refresh_reply(struct sess *s, int status, const struct ab_buf *b)
{
	char head[200];
	int n;

	if (ab_fmt(head, sizeof head, "HTTP/1.1 %d %s\r\nContent-Type: "
	    "application/json\r\nContent-Length: %zu\r\nCache-Control: "
	    "no-store\r\nConnection: close\r\n\r\n", status,
	    status == 200 ? "OK" : "Refused", b->len) < 0)
		return -1;
	n = (int)strlen(head);
	s->r.status = status;
	s->r.down = n + (long long)b->len;
	return put(s->c, head, (size_t)n) < 0 || put(s->c, b->data, b->len) <
	    0 ? -1 : 0;
}

/* The four buffers of a refresh, each wiped at its end. */
struct refresh_bufs {
	struct ab_buf body, up, ans, agent;
};

/* The refresh once it is known to be one: up, back, and to the agent;
 * a refusal or a failure is answered here.  0, or -1. */
static int refresh_go(struct sess *s, const struct ab_egress_signin *si,
    const struct ab_http_head *h, size_t hlen, struct ab_oauth_op *op,
    struct refresh_bufs *b)
{
	struct ab_err err;
	int status;

	if (whole(s, s->c, s->cfd, h, s->head + hlen, s->got - hlen,
	    &b->body) < 0)
		return answer(s, 400, "body-framing"), -1;
	if (ab_oauth_begin(s->ic->vault, si, b->body.data, b->body.len, op,
	    &b->up, &err) < 0)
		return answer(s, 403, "credential"), -1;
	memcpy(s->r.who, op->ent.who, sizeof s->r.who);
	if (upstream(s, op->ent.ca, op->ent.ca_len) < 0)
		return answer(s, 502, "upstream-tls"), -1;
	s->r.up += (long long)b->up.len;
	if (put(s->u, s->out, refresh_head(s, h, b->up.len)) < 0 ||
	    put(s->u, b->up.data, b->up.len) < 0 ||
	    (status = refresh_answer(s, h, &b->ans)) < 0)
		return answer(s, 502, "upstream-answer"), -1;
	if (ab_oauth_end(op, status, b->ans.data, b->ans.len, &b->agent,
	    &err) < 0)
		return answer(s, 502, "signin-keep"), -1;
	return refresh_reply(s, status, &b->agent);
}

/* Only the refresh is served at a token host: a revoke or a sign-out
 * would sign the user out, anything else has no credential of ours. */
static int refresh_one(struct sess *s, const struct ab_egress_signin *si,
    const struct ab_http_head *h, size_t hlen)
{
	struct refresh_bufs b;
	struct ab_oauth_op op;

	if (h->method_len != 4 || memcmp(h->method, "POST", 4) != 0 ||
	    strcmp(s->r.path, si->token_path) != 0)
		return answer(s, 403, strstr(s->r.path, "revoke") != NULL ||
		    strstr(s->r.path, "logout") != NULL ? "revoke" :
		    "signin-path"), report(s), -1;
	memset(&op, 0, sizeof op);
	memset(&b, 0, sizeof b);
	if (h->expect_continue)
		put(s->c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
	refresh_go(s, si, h, hlen, &op, &b);
	ab_oauth_op_free(&op);
	wipe_buf(&b.body);
	wipe_buf(&b.up);
	wipe_buf(&b.ans);
	wipe_buf(&b.agent);
	report(s);
	/* The connection ends with a refresh, answered or refused. */
	return -1;
}

/* -- One request, whole. */

static int one(struct sess *s, int *keep)
{
	const struct ab_egress_signin *si;
	struct ab_http_head h;
	struct ab_subst sub;
	const char *tok, *why;
	size_t n, q;
	long hlen;
	int at, status, rc;

	memset(&s->r, 0, sizeof s->r);
	s->t0 = now_ms();
	if ((hlen = read_head(s)) <= 0)
		return hlen == 0 ? 1 : (report(s), -1);
	if ((why = ab_http_request(s->head, (size_t)hlen, &h, &status)) !=
	    NULL)
		return answer(s, status, why), report(s), -1;
	q = strcspn(h.target, "?# ");
	if (q > h.target_len)
		q = h.target_len;
	/* Cut to fit by their precisions: a bug here when cut. */
	if (ab_fmt(s->r.method, sizeof s->r.method, "%.*s",
	    (int)(h.method_len < 15 ? h.method_len : 15), h.method) < 0 ||
	    ab_fmt(s->r.path, sizeof s->r.path, "%.*s",
	    (int)(q < 255 ? q : 255), h.target) < 0)
		abort();
	if ((si = ab_egress_token_host(s->host, s->port)) != NULL)
		return *keep = 0, refresh_one(s, si, &h, (size_t)hlen);
	if ((at = cred_field(&h, &tok, &n)) < 0 ||
	    find_cred(s, &h.f[at], tok, n) < 0)
		return answer(s, 403, "credential"), report(s), -1;
	if (upstream(s, s->cred.ca, s->cred.ca_len) < 0)
		return answer(s, 502, "upstream-tls"), report(s), -1;
	n = head_out(s, &h, at, tok);
	rc = put(s->u, s->out, n);
	s->r.up = (long long)n;
	explicit_bzero(s->out, n);
	if (rc < 0 || (h.expect_continue &&
	    put(s->c, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0) ||
	    body_up(s, &h, (size_t)hlen) < 0)
		return report(s), -1;
	if (ab_subst_init(&sub, s->cred.cred, s->ph, s->cred.cred_len) < 0)
		return report(s), -1;
	rc = answer_up(s, &h, &sub, keep);
	ab_subst_free(&sub);
	*keep = *keep && h.keep_alive;
	report(s);
	return rc;
}

void ab_icept_serve(const struct ab_icept *ic, int cfd, int ufd,
    const char *host, int port)
{
	struct ab_err err = { 0 };
	SSL_CTX *sctx;
	struct sess *s;
	int keep = 1;

	if ((s = calloc(1, sizeof *s)) == NULL)
		return;
	/* Blocking, each wait bounded by a socket timeout (timeout_ms). */
	fcntl(cfd, F_SETFL, fcntl(cfd, F_GETFL) & ~O_NONBLOCK);
	fcntl(ufd, F_SETFL, fcntl(ufd, F_GETFL) & ~O_NONBLOCK);
	s->ic = ic;
	s->host = host;
	s->port = port;
	s->cfd = cfd;
	s->ufd = ufd;
	s->t0 = now_ms();
	/* The session keeps the context it needs; our reference goes. */
	if ((sctx = ab_tlsca_server_ctx(ic->ca, host, &err)) != NULL) {
		s->c = SSL_new(sctx);
		SSL_CTX_free(sctx);
	}
	if (s->c == NULL || SSL_set_fd(s->c, cfd) != 1) {
		s->r.reason = "proxy-tls";
		(void)ab_fmt(s->r.detail, sizeof s->r.detail, "%.159s",
		    err.msg);	/* a detail cut short still reads */
		report(s);
		goto out;
	}
	timeout_ms(cfd, AB_ICEPT_HANDSHAKE_MS);
	if (SSL_accept(s->c) != 1) {
		s->r.reason = "agent-tls";
		ab_tls_reason(s->c, s->r.detail, sizeof s->r.detail);
		report(s);
		goto out;
	}
	while (keep && !*ic->stop && one(s, &keep) == 0)
		;
out:
	if (s->c != NULL) {
		SSL_shutdown(s->c);
		SSL_free(s->c);
	}
	if (s->u != NULL) {
		SSL_shutdown(s->u);
		SSL_free(s->u);
	}
	SSL_CTX_free(s->uctx);
	ab_vault_entry_free(&s->cred);
	explicit_bzero(s, sizeof *s);
	free(s);
	ERR_clear_error();
}
