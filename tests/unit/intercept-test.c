/* intercept-test.c: lib/egress/intercept.c in one process, TAP output, so that
 * the proxy's request rewriting and answer replacement run under the
 * sanitizers (make asan builds this test with them; the proxy itself is
 * a static program, never sanitized).
 *
 * Three parties over socketpair(2): the agent (this thread, trusting
 * only the proxy's CA), the proxy (ab_icept_serve on a thread of its
 * own, with a vault in a temporary directory), and the vendor (a thread
 * with a certificate of a CA of its own, which the vault's entry gives
 * the proxy).  The vendor checks the key it receives and answers with
 * the key echoed in a header and split across two chunks. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "intercept.h"
#include "vault.h"

#include "tap.h"

#define HOST "api.example.com"
static const char key[] = "sk-ant-api03-RealKey0123456789abcdefXYZ";
static const char ph[] = "sk-ant-api03-PlaceHd9876543210zyxwvuABC";
#define TOKEN_HOST "auth.openai.com"
static const char *const hosts[] = { HOST, TOKEN_HOST };

static struct ab_tlsca *vendor_ca;
static int vendor_saw_key, vendor_requests;
static volatile int stop;

static void die(const char *what, const struct ab_err *err)
{
	fprintf(stderr, "intercept-test: %s: %s\n", what, err ? err->msg : "");
	exit(1);
}

/* A request head, read byte by byte to its blank line. */
static int read_head(SSL *s, char *buf, size_t cap)
{
	size_t n = 0;

	while (n + 1 < cap && SSL_read(s, buf + n, 1) == 1) {
		n++;
		if (n >= 4 && memcmp(buf + n - 4, "\r\n\r\n", 4) == 0) {
			buf[n] = '\0';
			return (int)n;
		}
	}
	return -1;
}

static void *vendor(void *arg)
{
	int fd = (int)(long)arg;
	char head[8192], body[16], ans[512];
	struct ab_err err;
	SSL_CTX *ctx = ab_tlsca_server_ctx(vendor_ca, HOST, &err);
	SSL *s = ctx != NULL ? SSL_new(ctx) : NULL;
	int n;

	if (s == NULL || SSL_set_fd(s, fd) != 1 || SSL_accept(s) != 1)
		return NULL;
	while (read_head(s, head, sizeof head) > 0) {
		vendor_requests++;
		/* The key in its header; the placeholder in the query, as
		 * the agent sent it. */
		if (strstr(head, "\r\nx-api-key: sk-ant-api03-RealKey") !=
		    NULL && strstr(head, "?k=sk-ant-api03-PlaceHd") != NULL &&
		    strstr(head, "Accept-Encoding: identity\r\n") != NULL)
			vendor_saw_key++;
		/* The body the agent sent: 2 bytes. */
		if (SSL_read(s, body, 2) != 2)
			break;
		n = snprintf(ans, sizeof ans, "HTTP/1.1 200 OK\r\nX-Echo: %s\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n%zx\r\nkey=%.20s\r\n%zx\r\n"
		    "%s;\r\n0\r\n\r\n", key, 4 + (size_t)20, key,
		    strlen(key) - 20 + 1, key + 20);
		if (SSL_write(s, ans, n) != n)
			break;
	}
	SSL_free(s);
	SSL_CTX_free(ctx);
	return NULL;
}

/* The vendor of the second connection: a 101, then as a tunnel
 * "results" (its last byte could begin the key: the proxy must let it
 * go once the vendor is quiet), and, once the agent answers, the key in
 * two writes 200 ms apart, then an echo of what the agent sent. */
static void *vendor_up(void *arg)
{
	static const char ok101[] = "HTTP/1.1 101 Switching Protocols\r\n"
	    "Upgrade: echo\r\nConnection: Upgrade\r\n\r\nresults";
	int fd = (int)(long)arg;
	char head[8192], got[64];
	struct ab_err err;
	SSL_CTX *ctx = ab_tlsca_server_ctx(vendor_ca, HOST, &err);
	SSL *s = ctx != NULL ? SSL_new(ctx) : NULL;
	int n;

	if (s == NULL || SSL_set_fd(s, fd) != 1 || SSL_accept(s) != 1 ||
	    read_head(s, head, sizeof head) <= 0)
		goto out;
	if (strstr(head, "\r\nx-api-key: sk-ant-api03-RealKey") != NULL)
		vendor_saw_key++;
	if (SSL_write(s, ok101, (int)strlen(ok101)) <= 0 ||
	    (n = SSL_read(s, got, sizeof got - 1)) <= 0)
		goto out;
	SSL_write(s, "key=", 4);
	SSL_write(s, key, 20);
	usleep(200 * 1000);
	SSL_write(s, key + 20, (int)strlen(key) - 20);
	SSL_write(s, ";echo:", 6);
	SSL_write(s, got, n);
out:
	SSL_free(s);
	SSL_CTX_free(ctx);
	return NULL;
}

struct proxy_arg {
	struct ab_icept *ic;
	int cfd, ufd;
	const char *host;	/* NULL: HOST */
};

static void *proxy(void *arg)
{
	struct proxy_arg *p = arg;

	ab_icept_serve(p->ic, p->cfd, p->ufd, p->host ? p->host : HOST, 443);
	close(p->cfd);
	close(p->ufd);
	return NULL;
}

static void vault_put(const char *dir, const struct ab_buf *vpem)
{
	struct ab_vault_entry v = { .header = AB_VAULT_X_API_KEY, .cred = key,
	    .cred_len = strlen(key), .ca = vpem->data, .ca_len = vpem->len };
	char name[512], path[1024];
	struct ab_err err;
	struct ab_buf b;
	int fd;

	ab_buf_init(&b, AB_VAULT_FILE_MAX);
	if (ab_vault_name(HOST, 443, ph, strlen(ph), name, sizeof name,
	    &err) < 0 || ab_vault_encode(&v, &b, &err) < 0)
		die("vault", &err);
	snprintf(path, sizeof path, "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, b.data, b.len) != (ssize_t)b.len)
		die("vault file", NULL);
	close(fd);
	ab_buf_free(&b);
}

/* All the agent reads until the proxy closes or HTTP/1.1 answers come
 * in count. */
static void agent_read(SSL *s, char *out, size_t cap)
{
	size_t n = 0;
	int k;

	while (n + 1 < cap && (k = SSL_read(s, out + n, (int)(cap - n - 1))) > 0)
		n += (size_t)k;
	out[n] = '\0';
}

/* The first answer's chunked body, its data alone. */
static void body_of(const char *ans, char *out, size_t cap)
{
	const char *p = strstr(ans, "\r\n\r\n");
	size_t n = 0, k;
	char *end;

	out[0] = '\0';
	if (p == NULL)
		return;
	for (p += 4; (k = strtoul(p, &end, 16)) > 0 && n + k < cap;
	    p = end + 2 + k + 2) {
		memcpy(out + n, end + 2, k);
		n += k;
	}
	out[n] = '\0';
}

/* A second connection, upgraded: the tunnel past the 101. */
static void upgrade(struct proxy_arg *pa, SSL_CTX *actx)
{
	char req[512], out[1024] = "", want[128];
	struct timeval tv = { 5, 0 };
	pthread_t tp, tv2;
	struct ab_err err;
	int cfd[2], up[2], n;
	size_t got = 0;
	SSL *a;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, cfd) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM, 0, up) < 0)
		die("socketpair", NULL);
	pa->cfd = cfd[1];
	pa->ufd = up[0];
	vendor_saw_key = 0;
	pthread_create(&tv2, NULL, vendor_up, (void *)(long)up[1]);
	pthread_create(&tp, NULL, proxy, pa);
	a = SSL_new(actx);
	SSL_set_fd(a, cfd[0]);
	setsockopt(cfd[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (ab_tls_client_host(a, HOST, &err) < 0 || SSL_connect(a) != 1)
		die("upgrade handshake", &err);
	n = snprintf(req, sizeof req, "GET /v1/up HTTP/1.1\r\nHost: %s\r\n"
	    "x-api-key: %s\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n",
	    HOST, ph);
	SSL_write(a, req, n);
	while (strstr(out, "results") == NULL && got + 1 < sizeof out &&
	    (n = SSL_read(a, out + got, (int)(sizeof out - got - 1))) > 0) {
		got += (size_t)n;
		out[got] = '\0';
	}
	ok(strstr(out, "HTTP/1.1 101") != NULL && strstr(out, "results") !=
	    NULL, "an upgrade: the 101, then the vendor's bytes, the last one "
	    "(it could begin the key) let go once the vendor is quiet");
	SSL_write(a, "ping", 4);
	agent_read(a, out, sizeof out);
	snprintf(want, sizeof want, "key=%s;echo:ping", ph);
	ok(vendor_saw_key == 1 && strcmp(out, want) == 0, "through the "
	    "tunnel: the key in two writes 200 ms apart reaches the agent as "
	    "the placeholder, and the agent's bytes reach the vendor");
	SSL_free(a);
	close(cfd[0]);
	pthread_join(tp, NULL);
	pthread_join(tv2, NULL);
}

/* REQ sent to the proxy serving a sign-in's token host, which answers
 * it alone: no upstream is dialled (its end is never read), so a
 * refusal is the proxy's.  What the agent read into OUT. */
static void token_host(struct ab_icept *ic, SSL_CTX *actx, const char *req,
    char *out, size_t cap)
{
	struct proxy_arg pa;
	struct ab_err err;
	pthread_t tp;
	int c[2], u[2];
	SSL *a;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, c) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM, 0, u) < 0)
		die("socketpair", NULL);
	pa.ic = ic;
	pa.cfd = c[1];
	pa.ufd = u[0];
	pa.host = TOKEN_HOST;
	pthread_create(&tp, NULL, proxy, &pa);
	a = SSL_new(actx);
	SSL_set_fd(a, c[0]);
	if (ab_tls_client_host(a, TOKEN_HOST, &err) < 0 || SSL_connect(a) != 1)
		die("token host handshake", &err);
	SSL_write(a, req, (int)strlen(req));
	agent_read(a, out, cap);
	SSL_free(a);
	close(c[0]);
	pthread_join(tp, NULL);
	close(u[1]);
}

static void token_refusals(struct ab_icept *ic, SSL_CTX *actx)
{
	static const char body[] = "{\"grant_type\":\"refresh_token\","
	    "\"refresh_token\":\"rt_not_one_of_the_vault\"}";
	char req[512], out[2048];

	token_host(ic, actx, "POST /oauth/revoke HTTP/1.1\r\nHost: "
	    TOKEN_HOST "\r\nContent-Length: 2\r\n\r\n{}", out, sizeof out);
	ok(strstr(out, "HTTP/1.1 403") && strstr(out, "X-Agentbox-Refused: "
	    "revoke"), "at a token host a revoke is refused: revoke");
	token_host(ic, actx, "GET /api/accounts HTTP/1.1\r\nHost: "
	    TOKEN_HOST "\r\n\r\n", out, sizeof out);
	ok(strstr(out, "HTTP/1.1 403") && strstr(out, "X-Agentbox-Refused: "
	    "signin-path"), "any other path: signin-path");
	snprintf(req, sizeof req, "POST /oauth/token HTTP/1.1\r\nHost: "
	    TOKEN_HOST "\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\n\r\n%s", strlen(body), body);
	token_host(ic, actx, req, out, sizeof out);
	ok(strstr(out, "HTTP/1.1 403") && strstr(out, "X-Agentbox-Refused: "
	    "credential"), "a refresh of a token the vault does not hold: "
	    "credential");
	token_host(ic, actx, "POST /oauth/token HTTP/1.1\r\nHost: "
	    TOKEN_HOST "\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
	    out, sizeof out);
	ok(strstr(out, "HTTP/1.1 400") && strstr(out, "X-Agentbox-Refused: "
	    "body-framing"), "a body that does not frame: body-framing");
}

int main(void)
{
	char dir[] = "/tmp/intercept-test.XXXXXX", req[1024], out[8192];
	char body[256], want[128];
	struct ab_tlsca *ca;
	struct ab_buf pem, vpem;
	struct ab_icept ic;
	struct proxy_arg pa;
	struct ab_err err;
	pthread_t tp, tv;
	SSL_CTX *actx;
	SSL *a;
	int ca_fd[2], up[2], n;
	long long until = (long long)time(NULL) + 3600;

	plan(16);
	signal(SIGPIPE, SIG_IGN);
	if (ab_tlsca_new(&ca, "proxy", hosts, 2, until, &err) < 0 ||
	    ab_tlsca_new(&vendor_ca, "vendor", hosts, 1, until, &err) < 0)
		die("CA", &err);
	ab_buf_init(&pem, AB_TLSCA_EXTRA_MAX);	/* a CA's PEM, as --ca */
	ab_buf_init(&vpem, AB_TLSCA_EXTRA_MAX);
	if (ab_tlsca_cert_pem(ca, &pem, &err) < 0 ||
	    ab_tlsca_cert_pem(vendor_ca, &vpem, &err) < 0)
		die("PEM", &err);
	if (mkdtemp(dir) == NULL)
		die("mkdtemp", NULL);
	ok(!ab_icept_on(dir, HOST, 443), "an empty vault intercepts nothing");
	vault_put(dir, &vpem);
	ok(ab_icept_on(dir, HOST, 443), "a vault file for the host turns "
	    "interception on");
	ok(!ab_icept_on(dir, "api.example.org", 443) &&
	    !ab_icept_on(dir, HOST, 8443), "for that host and port alone");

	memset(&ic, 0, sizeof ic);
	ic.ca = ca;
	ic.vault = dir;
	ic.anchors = NULL;
	ic.idle_ms = 10000;
	ic.stop = &stop;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, ca_fd) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM, 0, up) < 0)
		die("socketpair", NULL);
	pa.ic = &ic;
	pa.cfd = ca_fd[1];
	pa.ufd = up[0];
	pa.host = NULL;
	pthread_create(&tv, NULL, vendor, (void *)(long)up[1]);
	pthread_create(&tp, NULL, proxy, &pa);

	if ((actx = ab_tls_client_ctx(NULL, pem.data, pem.len, &err)) == NULL)
		die("client context", &err);
	a = SSL_new(actx);
	SSL_set_fd(a, ca_fd[0]);
	if (ab_tls_client_host(a, HOST, &err) < 0)
		die("client host", &err);
	ok(SSL_connect(a) == 1, "the agent's handshake with the proxy's CA");
	/* One good request, then one with another key on the same
	 * connection. */
	n = snprintf(req, sizeof req, "POST /v1/x?k=%s HTTP/1.1\r\nHost: %s\r\n"
	    "x-api-key: %s\r\nContent-Length: 2\r\n\r\nok"
	    "POST /v1/x HTTP/1.1\r\nHost: %s\r\nx-api-key: sk-ant-api03-"
	    "Other000000000000000000000000\r\nContent-Length: 2\r\n\r\nok",
	    ph, HOST, ph, HOST);
	SSL_write(a, req, n);
	agent_read(a, out, sizeof out);
	ok(strstr(out, "HTTP/1.1 200 OK") != NULL, "the first request is "
	    "answered");
	ok(vendor_saw_key == 1 && vendor_requests == 1, "the vendor got the "
	    "key, in its header, once, and no second request");
	ok(strstr(out, key) == NULL, "the key is nowhere in what the agent "
	    "read");
	ok(strstr(out, "X-Echo: sk-ant-api03-PlaceHd") != NULL,
	    "echoed in a header: the placeholder");
	body_of(out, body, sizeof body);
	snprintf(want, sizeof want, "key=%s;", ph);
	ok(strcmp(body, want) == 0, "split across two chunks: the "
	    "placeholder, whole, in the body");
	ok(strstr(out, "HTTP/1.1 403") != NULL &&
	    strstr(out, "X-Agentbox-Refused: credential") != NULL,
	    "the second request, another key, is refused 403");
	SSL_free(a);
	close(ca_fd[0]);
	pthread_join(tp, NULL);
	pthread_join(tv, NULL);
	upgrade(&pa, actx);
	token_refusals(&ic, actx);
	SSL_CTX_free(actx);
	ab_buf_free(&pem);
	ab_buf_free(&vpem);
	ab_tlsca_free(ca);
	ab_tlsca_free(vendor_ca);
	{
		char cmd[128];

		snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
	return done_testing();
}
