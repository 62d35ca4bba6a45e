#include <curl/curl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>
#include <strings.h>

#include "engine.h"
#include "file.h"
#include "json.h"

struct call_ctx {
	const struct ab_req *q;
	struct ab_resp *r;
	struct ab_err cb_err;
	int cb_failed;
	char api[32];		/* Api-Version header, when asked for */
	int want_api;
};

static int curl_ready;

/* A tar upload is bound by the engine's unpacking process, which reads
 * the socket as fast as it extracts: a send buffer of 4 MiB (the kernel
 * caps it at net.core.wmem_max) keeps it fed while this process waits
 * for the CPU.  100,000 files, five pairs: 2.52-2.58 s -> 2.48-2.54 s a
 * seeding.  Best effort: the default is only slower. */
static int big_sndbuf(void *arg, curl_socket_t fd, curlsocktype purpose)
{
	int n = 4 << 20;

	(void)arg, (void)purpose;
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &n, sizeof n);
	return CURL_SOCKOPT_OK;
}

/* ssh://: every connection curl opens is an ssh of its own, as the docker
 * CLI does it; its connect timeout is what is left of the deadline, at
 * most the CLI's 30 s. */
static curl_socket_t ssh_open(void *arg, curlsocktype purpose,
    struct curl_sockaddr *addr)
{
	struct ab_engine *e = arg;
	long long left = ab_deadline_left_ms(&e->dl);
	long secs = left > 30000 || !e->dl.set ? 30 : (long)(left + 999) / 1000;
	struct sockaddr_un to;
	struct ab_err err;
	socklen_t len;
	int i;

	(void)purpose;
	for (i = 0; i < AB_SSH_MAX && e->ssh[i].pid > 0; i++)
		;
	if (i == AB_SSH_MAX) {
		/* A reason cut short still reads. */
		(void)ab_fmt(e->ssh_said, sizeof e->ssh_said, "more than %d "
		    "ssh connections at once", AB_SSH_MAX);
		return CURL_SOCKET_BAD;
	}
	if (ab_ssh_dial(&e->ep, secs < 1 ? 1 : secs, &e->ssh[i], &to, &len,
	    &err) < 0) {
		(void)ab_fmt(e->ssh_said, sizeof e->ssh_said, "%.200s",
		    err.msg);
		return CURL_SOCKET_BAD;
	}
	/* libcurl connects to the address the callback leaves (its
	 * cf-socket.c says so); behind the declared struct sockaddr is a
	 * sockaddr_storage, so the copy is addressed from the struct. */
	memcpy((char *)addr + offsetof(struct curl_sockaddr, addr), &to, len);
	addr->addrlen = len;
	return e->ssh[i].fd;
}

static int ssh_close(void *arg, curl_socket_t fd)
{
	struct ab_engine *e = arg;
	int i;

	for (i = 0; i < AB_SSH_MAX; i++)
		if (e->ssh[i].pid > 0 && e->ssh[i].fd == fd) {
			ab_ssh_end(&e->ssh[i]);
			if (e->ssh[i].said[0])
				memcpy(e->ssh_said, e->ssh[i].said,
				    sizeof e->ssh_said);
			return 0;
		}
	return close(fd);
}

/* The last line any ssh of this engine wrote on stderr, or "". */
static const char *ssh_words(struct ab_engine *e)
{
	const char *last = e->ssh_said;
	int i;

	for (i = 0; i < AB_SSH_MAX; i++)
		if (e->ssh[i].pid > 0) {
			ab_ssh_listen(&e->ssh[i]);
			if (e->ssh[i].said[0])
				last = e->ssh[i].said;
		}
	return last;
}

/* Options every request carries, on the shared handle or a stream's. */
static void base_opts(struct ab_engine *e, CURL *h, char *errbuf)
{
	errbuf[0] = '\0';
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_SOCKOPTFUNCTION, big_sndbuf);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	if (e->ep.kind == AB_EP_UNIX)
		curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, e->ep.sock);
	if (e->ep.kind == AB_EP_SSH) {
		/* A socket path keeps curl from resolving a name; the socket
		 * itself is ssh's. */
		curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, "/ssh");
		curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, ssh_open);
		curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, e);
		curl_easy_setopt(h, CURLOPT_CLOSESOCKETFUNCTION, ssh_close);
		curl_easy_setopt(h, CURLOPT_CLOSESOCKETDATA, e);
	}
	if (e->ep.tls) {
		curl_easy_setopt(h, CURLOPT_CAINFO, e->ep.ca);
		curl_easy_setopt(h, CURLOPT_SSLCERT, e->ep.cert);
		curl_easy_setopt(h, CURLOPT_SSLKEY, e->ep.key);
		/* Never a prompt: an encrypted key fails instead. */
		curl_easy_setopt(h, CURLOPT_KEYPASSWD, "");
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	}
}

/* The time a call may take; <= 0 when none is left. */
static long long budget_ms(const struct ab_engine *e)
{
	return ab_deadline_left_ms(&e->dl);
}

static int deadline_fail(const struct ab_engine *e, const char *what,
    struct ab_err *err)
{
	if (e->cleanup)
		return ab_fail(err, AB_EDEADLINE,
		    "cleanup budget ran out before it could %s", what);
	return ab_fail(err, AB_EDEADLINE, "deadline passed before it could %s",
	    what);
}

static size_t on_write(char *p, size_t size, size_t n, void *arg)
{
	struct call_ctx *c = arg;
	size_t len = size * n;

	if (c->q->sink != NULL) {
		if (c->q->sink(c->q->sink_ctx, p, len, &c->cb_err) < 0) {
			c->cb_failed = 1;
			return 0;
		}
		return len;
	}
	if (ab_buf_add(&c->r->body, p, len) < 0) {
		ab_fail(&c->cb_err, AB_EENGINE,
		    "the engine's reply to %s is larger than %zu bytes",
		    c->q->what, c->r->body.max);
		c->cb_failed = 1;
		return 0;
	}
	return len;
}

static size_t on_read(char *p, size_t size, size_t n, void *arg)
{
	struct call_ctx *c = arg;
	long got;

	got = c->q->reader(c->q->reader_ctx, p, size * n, &c->cb_err);
	if (got < 0) {
		c->cb_failed = 1;
		return CURL_READFUNC_ABORT;
	}
	return (size_t)got;
}

/* The value of header NAME in the line p[0..len) into out (cap bytes):
 * 1 when the line is that header and the value fits. */
static int header_value(const char *p, size_t len, const char *name,
    char *out, size_t cap)
{
	size_t k = strlen(name);

	if (len <= k || strncasecmp(p, name, k) != 0 || p[k] != ':')
		return 0;
	p += k + 1;
	len -= k + 1;
	while (len > 0 && (*p == ' ' || *p == '\t')) {
		p++;
		len--;
	}
	while (len > 0 && (p[len - 1] == '\r' || p[len - 1] == '\n'))
		len--;
	if (len >= cap)
		return 0;
	memcpy(out, p, len);
	out[len] = '\0';
	return 1;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct call_ctx *c = arg;
	size_t len = size * n;

	if (c->want_api)
		header_value(p, len, "Api-Version", c->api, sizeof c->api);
	if (c->q != NULL && c->q->header != NULL && c->r != NULL)
		header_value(p, len, c->q->header, c->r->header,
		    sizeof c->r->header);
	return size * n;
}

static int url_for(const struct ab_engine *e, const char *path, int versioned,
    char *out, size_t cap)
{
	return ab_fmt(out, cap, "%s%s%s", e->ep.base,
	    versioned ? "/v" AB_API_VERSION : "", path);
}

static int set_method(CURL *h, const struct ab_req *q, struct call_ctx *c)
{
	if (q->reader != NULL) {
		curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(h, CURLOPT_READDATA, c);
		if (strcmp(q->method, "PUT") == 0)
			curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		else
			curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, q->method);
		return 0;
	}
	if (strcmp(q->method, "GET") == 0)
		return 0;
	if (strcmp(q->method, "HEAD") == 0) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
		return 0;
	}
	if (strcmp(q->method, "POST") == 0) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, q->body ? q->body : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)(q->body ? q->body_len : 0));
		return 0;
	}
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, q->method);
	if (q->body != NULL) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, q->body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)q->body_len);
	}
	return 0;
}

static struct curl_slist *req_headers(const struct ab_req *q)
{
	struct curl_slist *l = NULL, *t;
	char ct[128];

	/* No "Expect: 100-continue" pause before a body. */
	l = curl_slist_append(l, "Expect:");
	if (l == NULL)
		return NULL;
	if (q->reader != NULL) {
		t = ab_fmt(ct, sizeof ct, "Content-Type: %s", q->content_type ?
		    q->content_type : "application/octet-stream") < 0 ? NULL :
		    curl_slist_append(l, ct);
		if (t != NULL && strcmp(q->method, "POST") == 0)
			t = curl_slist_append(t, "Transfer-Encoding: chunked");
	} else if (q->body != NULL) {
		t = curl_slist_append(l, "Content-Type: application/json");
	} else {
		t = l;
	}
	if (t == NULL) {
		curl_slist_free_all(l);
		return NULL;
	}
	return t;
}

/* libcurl's own words when it has them: they say which certificate
 * check failed, or which file could not be used. */
static int transport_fail(struct ab_engine *e, CURLcode rc, long oserr,
    const char *what, const char *errbuf, struct ab_err *err)
{
	const char *why = errbuf[0] ? errbuf : curl_easy_strerror(rc);
	const char *ssh = e->ep.kind == AB_EP_SSH ? ssh_words(e) : "";

	/* Every curl timeout is the budget given, so a timeout is the
	 * deadline even when it fires a millisecond before the deadline's
	 * clock says so (curl keeps its own, and the budget was rounded). */
	if (rc == CURLE_OPERATION_TIMEDOUT)
		return deadline_fail(e, what, err);
	/* A socket's own words ("No such file or directory", "Permission
	 * denied") say what to fix; curl's name a port no socket has. */
	if (rc == CURLE_COULDNT_CONNECT && e->ep.kind == AB_EP_UNIX &&
	    oserr != 0)
		why = strerror((int)oserr);
	if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
		return ab_fail(err, AB_EENGINE,
		    "cannot reach the engine at %s: %s%s%.240s", e->ep.where,
		    why, *ssh ? "; ssh said: " : "", ssh);
	/* The engine (or ssh) went away mid-call: stopped, killed, cut. */
	if (rc == CURLE_GOT_NOTHING || rc == CURLE_PARTIAL_FILE ||
	    rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR)
		return ab_fail(err, AB_EENGINE, "the connection to the engine "
		    "at %s broke before it could %s: %s%s%.240s", e->ep.where,
		    what, why, *ssh ? "; ssh said: " : "", ssh);
	return ab_fail(err, AB_EENGINE, "engine at %s failed to %s: %s%s%.240s",
	    e->ep.where, what, why, *ssh ? "; ssh said: " : "", ssh);
}

static int perform(struct ab_engine *e, const struct ab_req *q,
    struct ab_resp *r, struct call_ctx *c, int versioned, struct ab_err *err)
{
	CURL *h = e->easy;
	struct curl_slist *hdrs;
	/* An import's changes carry an image's labels, its package list
	 * among them (ab-image build --packages); a path of /work is at
	 * most AB_URL_MAX. */
	char url[AB_QUERY_MAX];
	long long left;
	CURLcode rc;

	left = budget_ms(e);
	if (left <= 0)
		return deadline_fail(e, q->what, err);
	if (url_for(e, q->path, versioned, url, sizeof url) < 0)
		return ab_fail(err, AB_EUSAGE, "request path too long");
	hdrs = req_headers(q);
	if (hdrs == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	curl_easy_reset(h);
	base_opts(e, h, e->errbuf);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)left);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)left);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
	set_method(h, q, c);
	rc = curl_easy_perform(h);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hdrs);
	if (c->cb_failed) {
		*err = c->cb_err;
		return -1;
	}
	if (rc != CURLE_OK) {
		long oserr = 0;

		curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &oserr);
		return transport_fail(e, rc, oserr, q->what, e->errbuf, err);
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
	/* A reply that settled after the deadline does not count. */
	if (ab_deadline_passed(&e->dl))
		return deadline_fail(e, q->what, err);
	return 0;
}

int ab_engine_call(struct ab_engine *e, const struct ab_req *q,
    struct ab_resp *r, struct ab_err *err)
{
	struct call_ctx c;

	memset(&c, 0, sizeof c);
	c.q = q;
	c.r = r;
	r->status = 0;
	r->header[0] = '\0';
	ab_buf_init(&r->body, AB_REPLY_MAX);
	return perform(e, q, r, &c, 1, err);
}

int ab_engine_json(struct ab_engine *e, const char *method, const char *path,
    const char *body, const char *what, struct ab_resp *r,
    struct ab_err *err)
{
	struct ab_req q;

	memset(&q, 0, sizeof q);
	q.method = method;
	q.path = path;
	q.body = body;
	q.body_len = body ? strlen(body) : 0;
	q.what = what;
	return ab_engine_call(e, &q, r, err);
}

void ab_resp_free(struct ab_resp *r)
{
	ab_buf_free(&r->body);
}

int ab_engine_fail(const struct ab_resp *r, int code, const char *what,
    struct ab_err *err)
{
	struct ab_json j;
	struct ab_err ignored;
	char *msg = NULL;

	if (r->body.len > 0 &&
	    ab_json_parse(&j, r->body.data, r->body.len, &ignored) == 0) {
		msg = ab_json_str(&j, ab_json_key(&j, 0, "message"));
		ab_json_free(&j);
	}
	ab_fail(err, code, "cannot %s: engine said %ld%s%.400s", what,
	    r->status, msg ? ": " : "", msg ? msg : "");
	free(msg);
	return -1;
}

static int api_check(struct ab_engine *e, const char *api, struct ab_err *err)
{
	int major, minor;
	char end;

	if (sscanf(api, "%d.%d%c", &major, &minor, &end) != 2)
		return ab_fail(err, AB_EENGINE,
		    "engine at %s sent no usable Api-Version", e->ep.where);
	if (major != AB_API_MAJOR || minor < AB_API_MINOR)
		return ab_fail(err, AB_EREFUSED,
		    "engine at %s speaks API %d.%d; agentbox needs %d.%d or "
		    "later", e->ep.where, major, minor, AB_API_MAJOR,
		    AB_API_MINOR);
	e->api_minor = minor;
	return 0;
}

static int ping(struct ab_engine *e, struct ab_err *err)
{
	struct ab_req q;
	struct ab_resp r;
	struct call_ctx c;
	int rc;

	memset(&q, 0, sizeof q);
	q.method = "GET";
	q.path = "/_ping";
	q.what = "answer a ping";
	memset(&c, 0, sizeof c);
	c.q = &q;
	c.r = &r;
	c.want_api = 1;
	r.status = 0;
	ab_buf_init(&r.body, 4096);
	rc = perform(e, &q, &r, &c, 0, err);
	if (rc == 0 && r.status != 200)
		rc = ab_engine_fail(&r, AB_EENGINE, "ping the engine", err);
	ab_resp_free(&r);
	if (rc < 0)
		return -1;
	return api_check(e, c.api, err);
}

int ab_engine_open(struct ab_engine *e, const struct ab_deadline *dl,
    struct ab_err *err)
{
	memset(e, 0, sizeof *e);
	if (dl != NULL)
		e->dl = *dl;
	if (ab_endpoint_find(&e->ep, err) < 0)
		return -1;
	if (!curl_ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			return ab_fail(err, AB_EENGINE, "cannot start libcurl");
		curl_ready = 1;
	}
	e->easy = curl_easy_init();
	e->multi = curl_multi_init();
	if (e->easy == NULL || e->multi == NULL) {
		ab_engine_close(e);
		return ab_fail(err, AB_EENGINE, "cannot start libcurl");
	}
	if (ping(e, err) < 0) {
		ab_engine_close(e);
		return -1;
	}
	return 0;
}

int ab_engine_twin(struct ab_engine *t, const struct ab_engine *e,
    struct ab_err *err)
{
	memset(t, 0, sizeof *t);
	t->ep = e->ep;
	t->dl = e->dl;
	t->cleanup = e->cleanup;
	t->api_minor = e->api_minor;
	memcpy(t->mark, e->mark, sizeof t->mark);
	t->mark_ms = e->mark_ms;
	t->easy = curl_easy_init();
	t->multi = curl_multi_init();
	if (t->easy == NULL || t->multi == NULL) {
		ab_engine_close(t);
		return ab_fail(err, AB_EENGINE, "cannot start libcurl");
	}
	return 0;
}

void ab_engine_wake_on(struct ab_engine *e, int fd)
{
	e->wake_fd = fd;
	e->wake_set = fd >= 0;
}

void ab_engine_close(struct ab_engine *e)
{
	int i;

	if (e->easy)
		curl_easy_cleanup(e->easy);
	if (e->multi)
		curl_multi_cleanup(e->multi);
	e->easy = NULL;
	e->multi = NULL;
	ab_buf_free(&e->img);
	e->img_id[0] = '\0';
	for (i = 0; i < AB_SSH_MAX; i++)
		if (e->ssh[i].pid > 0)
			ab_ssh_end(&e->ssh[i]);
}

void ab_engine_cleanup_budget(struct ab_engine *e, long long within_ms)
{
	e->dl.set = 1;
	e->dl.at_ms = ab_now_ms() + within_ms;
	e->cleanup = 1;
}

void ab_engine_budget_begin(struct ab_engine *e, long long within_ms,
    struct ab_budget *saved)
{
	saved->dl = e->dl;
	saved->cleanup = e->cleanup;
	ab_engine_cleanup_budget(e, within_ms);
}

void ab_engine_budget_end(struct ab_engine *e, const struct ab_budget *saved)
{
	e->dl = saved->dl;
	e->cleanup = saved->cleanup;
}

/* "seccomp=builtin" as a security option exists from API 1.42 (Engine
 * 23); older engines read the value as a profile file. */
int ab_engine_seccomp_keyword(const struct ab_engine *e)
{
	return e->api_minor >= 42;
}

static int info_bool(const struct ab_json *j, const char *key)
{
	int v = 0;

	return ab_json_bool(j, ab_json_key(j, 0, key), &v) == 0 && v;
}

int ab_engine_info(struct ab_engine *e, struct ab_info *info,
    struct ab_err *err)
{
	return ab_engine_info_rt(e, info, NULL, NULL, err);
}

int ab_engine_info_rt(struct ab_engine *e, struct ab_info *info,
    const char *name, struct ab_runtime *rt, struct ab_err *err)
{
	struct ab_resp r;
	struct ab_json j;
	int opts, i, t;

	memset(info, 0, sizeof *info);
	if (ab_engine_json(e, "GET", "/info", NULL, "describe the host", &r,
	    err) < 0)
		goto fail;
	if (r.status != 200) {
		ab_engine_fail(&r, AB_EENGINE, "describe the host", err);
		goto fail;
	}
	if (ab_json_parse(&j, r.body.data, r.body.len, err) < 0) {
		err->code = AB_EENGINE;
		ab_err_wrap(err, "engine /info");
		goto fail;
	}
	info->memory_limit = info_bool(&j, "MemoryLimit");
	info->swap_limit = info_bool(&j, "SwapLimit");
	info->pids_limit = info_bool(&j, "PidsLimit");
	info->cpu_cfs_quota = info_bool(&j, "CpuCfsQuota");
	info->cgroup_version = ab_json_str_eq(&j, ab_json_key(&j, 0,
	    "CgroupVersion"), "2") ? 2 : 1;
	opts = ab_json_key(&j, 0, "SecurityOptions");
	for (i = 0; (t = ab_json_elem(&j, opts, i)) >= 0; i++)
		if (ab_json_str_eq(&j, t, "name=seccomp,profile=default") ||
		    ab_json_str_eq(&j, t, "name=seccomp,profile=builtin"))
			info->seccomp_builtin = 1;
	info->seccomp_keyword = ab_engine_seccomp_keyword(e);
	if (rt != NULL)
		ab_runtime_read(&j, name, rt);
	ab_json_free(&j);
	ab_resp_free(&r);
	return 0;
fail:
	ab_resp_free(&r);
	return -1;
}

int ab_url_escape(struct ab_buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p;

	for (p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~", *p) != NULL) {
			if (ab_buf_addc(b, (char)*p) < 0)
				return -1;
		} else if (ab_buf_addc(b, '%') < 0 ||
		    ab_buf_addc(b, hex[*p >> 4]) < 0 ||
		    ab_buf_addc(b, hex[*p & 15]) < 0) {
			return -1;
		}
	}
	return 0;
}

/* Streams: concurrent requests on connections of their own. */

static size_t stream_write(char *p, size_t size, size_t n, void *arg)
{
	struct ab_stream *s = arg;
	size_t len = size * n;

	s->headers_done = 1;
	s->e->events++;
	if (s->sink != NULL) {
		if (s->sink(s->sink_ctx, p, len, &s->sink_err) < 0) {
			s->sink_failed = 1;
			return 0;
		}
		return len;
	}
	if (ab_buf_add(&s->body, p, len) < 0) {
		ab_fail(&s->sink_err, AB_EENGINE,
		    "the engine's reply to %s is too large", s->what);
		s->sink_failed = 1;
		return 0;
	}
	return len;
}

static size_t stream_header(char *p, size_t size, size_t n, void *arg)
{
	struct ab_stream *s = arg;
	size_t len = size * n;
	long code = 0;

	/* The blank line closes a header block; skip interim 1xx blocks. */
	if (len <= 2 && (p[0] == '\r' || p[0] == '\n')) {
		curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &code);
		if (code >= 200) {
			s->status = code;
			s->headers_done = 1;
			s->e->events++;
		}
	}
	return len;
}

int ab_stream_open(struct ab_engine *e, struct ab_stream *s,
    const char *method, const char *path, ab_sink sink, void *ctx,
    const char *what, struct ab_err *err)
{
	long long left;
	CURL *h;

	memset(s, 0, sizeof *s);
	s->e = e;
	s->sink = sink;
	s->sink_ctx = ctx;
	s->what = what;
	ab_buf_init(&s->body, AB_REPLY_MAX);
	left = budget_ms(e);
	if (left <= 0)
		return deadline_fail(e, what, err);
	if (url_for(e, path, 1, s->url, sizeof s->url) < 0)
		return ab_fail(err, AB_EUSAGE, "request path too long");
	h = s->h = curl_easy_init();
	if (h == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	base_opts(e, h, s->errbuf);
	curl_easy_setopt(h, CURLOPT_URL, s->url);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)left);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)left);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, stream_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, stream_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, s);
	curl_easy_setopt(h, CURLOPT_PRIVATE, s);
	if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
	} else if (strcmp(method, "GET") != 0) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	}
	if (curl_multi_add_handle(e->multi, h) != CURLM_OK) {
		ab_stream_close(s);
		return ab_fail(err, AB_EENGINE, "cannot start a stream");
	}
	while (!s->headers_done && !s->done)
		if (ab_stream_pump(e, 200, err) < 0) {
			ab_stream_close(s);
			return -1;
		}
	if (s->done && ab_stream_result(s, err) < 0) {
		ab_stream_close(s);
		return -1;
	}
	return 0;
}

int ab_stream_pump(struct ab_engine *e, long timeout_ms, struct ab_err *err)
{
	struct curl_waitfd wake = { e->wake_fd, CURL_WAIT_POLLIN, 0 };
	struct ab_stream *s;
	long long left = budget_ms(e);
	unsigned long before;
	CURLMsg *m;
	int running, left_msgs;

	if (left <= 0)
		return deadline_fail(e, "finish waiting", err);
	if (timeout_ms > left)
		timeout_ms = (long)left;
	before = e->events;
	if (curl_multi_perform(e->multi, &running) != CURLM_OK)
		return ab_fail(err, AB_EENGINE, "curl multi failed");
	/* What the first perform read (a reply head, say) is the caller's
	 * to see now: waiting in the poll would sleep on it (200 ms for an
	 * attach before a start, measured). */
	if (e->events == before &&
	    (curl_multi_poll(e->multi, e->wake_set ? &wake : NULL,
	    e->wake_set ? 1 : 0, (int)timeout_ms, NULL) != CURLM_OK ||
	    curl_multi_perform(e->multi, &running) != CURLM_OK))
		return ab_fail(err, AB_EENGINE, "curl multi failed");
	while ((m = curl_multi_info_read(e->multi, &left_msgs)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &s);
		s->done = 1;
		s->result = m->data.result;
		curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE,
		    &s->status);
	}
	return 0;
}

int ab_stream_result(const struct ab_stream *s, struct ab_err *err)
{
	if (s->sink_failed) {
		*err = s->sink_err;
		return -1;
	}
	if (!s->done)
		return ab_fail(err, AB_EENGINE, "%s has not finished", s->what);
	if (s->result != CURLE_OK) {
		long oserr = 0;

		curl_easy_getinfo(s->h, CURLINFO_OS_ERRNO, &oserr);
		return transport_fail(s->e, (CURLcode)s->result, oserr,
		    s->what, s->errbuf, err);
	}
	if (ab_deadline_passed(&s->e->dl))
		return deadline_fail(s->e, s->what, err);
	return 0;
}

void ab_stream_close(struct ab_stream *s)
{
	if (s->h != NULL) {
		curl_multi_remove_handle(s->e->multi, s->h);
		curl_easy_cleanup(s->h);
		s->h = NULL;
	}
	ab_buf_free(&s->body);
}

int ab_engine_list(struct ab_engine *e, const char *kind,
    const char *const *labels, struct ab_json *j, int *list,
    struct ab_err *err)
{
	struct ab_buf q, f;
	struct ab_resp r;
	struct ab_jw w;
	int rc = -1;

	ab_buf_init(&q, AB_QUERY_MAX);
	ab_buf_init(&f, AB_QUERY_MAX);	/* escaped into q */
	ab_jw_init(&w, &f);
	ab_jw_obj(&w);
	ab_jw_key(&w, "label");
	ab_jw_arr(&w);
	for (; *labels != NULL; labels++)
		ab_jw_str(&w, *labels);
	ab_jw_arr_end(&w);
	ab_jw_obj_end(&w);
	/* /volumes and /networks list without "/json"; containers need
	 * all=1 to include stopped ones. */
	ab_buf_addf(&q, "/%s%s", kind, strcmp(kind, "volumes") == 0 ||
	    strcmp(kind, "networks") == 0 ? "?filters=" :
	    "/json?all=1&filters=");
	memset(&r, 0, sizeof r);
	if (ab_jw_done(&w) < 0 || ab_url_escape(&q, f.data) < 0 ||
	    q.data == NULL)
		ab_buf_fail(f.over ? &f : &q, AB_EENGINE, "the listing's query",
		    err);
	else if (ab_engine_json(e, "GET", q.data, NULL, "list by label", &r,
	    err) == 0) {
		if (r.status != 200)
			ab_engine_fail(&r, AB_EENGINE, "list by label", err);
		else if (ab_json_parse(j, r.body.data, r.body.len, err) < 0)
			err->code = AB_EENGINE;
		else {
			*list = strcmp(kind, "volumes") == 0 ?
			    ab_json_key(j, 0, "Volumes") : 0;
			rc = 0;
		}
	}
	ab_resp_free(&r);
	ab_buf_free(&q);
	ab_buf_free(&f);
	return rc;
}
