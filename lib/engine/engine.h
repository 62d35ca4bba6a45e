/* engine.h: the Docker Engine API client, over libcurl.
 *
 * The engine is found as the docker CLI finds it (endpoint.h): unix://,
 * tcp:// with or without TLS, ssh:// (sshdial.h), from DOCKER_HOST or a
 * context.  Every path is prefixed with the pinned API version, and the
 * daemon's own version is checked at open.
 *
 * Sequential calls share one easy handle, so one connection is reused for
 * a tool's whole run.  Calls that must overlap (wait, attach) are streams
 * on their own connections, driven together through a curl multi handle.
 *
 * Every call is bounded by the deadline in force: it gets only the time
 * that remains, and a reply that settles after the deadline is reported as
 * AB_EDEADLINE, never as success.
 */
#ifndef AB_ENGINE_H
#define AB_ENGINE_H

#include <stddef.h>

#include "buf.h"
#include "deadline.h"
#include "endpoint.h"
#include "err.h"
#include "json.h"
#include "runtime.h"
#include "sshdial.h"

/* The API version agentbox speaks; the oldest engine it accepts. */
#define AB_API_VERSION "1.41"
#define AB_API_MAJOR 1
#define AB_API_MINOR 41

/* ssh connections of one engine handle at once: the shared handle's,
 * and each stream's. */
#define AB_SSH_MAX 32

/* The largest reply body kept in memory by ab_engine_call. */
#define AB_REPLY_MAX (8u << 20)
/* The largest request body we write: the engine gives a container's or
 * a volume's configuration back in its inspect reply, which must fit in
 * AB_REPLY_MAX for it to be checked. */
#define AB_REQUEST_MAX AB_REPLY_MAX
/* A request's path and query, as perform's URL holds them. */
#define AB_QUERY_MAX (64 * 1024)

struct ab_info {
	int memory_limit, swap_limit, pids_limit, cpu_cfs_quota;
	int cgroup_version;
	int seccomp_builtin;	/* the daemon's own default profile is on */
	int seccomp_keyword;	/* the engine accepts "seccomp=builtin" */
};

struct ab_engine {
	void *easy;		/* CURL * */
	void *multi;		/* CURLM * */
	void *headers;		/* struct curl_slist *, JSON content type */
	struct ab_endpoint ep;	/* where the engine is, and how */
	struct ab_ssh ssh[AB_SSH_MAX];	/* ssh://: one per connection */
	char ssh_said[256];	/* the last words of an ssh that ended */
	char errbuf[256];	/* libcurl's words for the last failure */
	int api_minor;		/* the daemon's Api-Version minor */
	struct ab_deadline dl;	/* the deadline in force for every call */
	int cleanup;		/* dl is a cleanup budget, not the task's */
	int wake_fd;		/* readable: ab_stream_pump returns early */
	int wake_set;
	unsigned long events;	/* stream headers and data seen, a counter */
	/* The mark ab_engine_is found, and when (engineid.h): a second
	 * check of the same step, a moment later, asks again for nothing. */
	char mark[40];
	long long mark_ms;
	/* The last image inspected by its content address (ctr.h). */
	char img_id[80];
	struct ab_buf img;
};

/* Produces a request body: fills at most n bytes of p and returns the
 * count, 0 at the end, or -1 to abort the request (err filled). */
typedef long (*ab_reader)(void *ctx, char *p, size_t n, struct ab_err *err);
/* Consumes a reply body as it arrives; -1 aborts (err filled). */
typedef int (*ab_sink)(void *ctx, const char *p, size_t n,
    struct ab_err *err);

struct ab_req {
	const char *method;
	const char *path;	/* after the version prefix: "/containers/json" */
	const char *body;	/* a JSON body, or NULL */
	size_t body_len;
	const char *content_type; /* for a reader body */
	ab_reader reader;
	void *reader_ctx;
	ab_sink sink;		/* NULL: the reply is kept in the resp body */
	void *sink_ctx;
	const char *what;	/* for messages: "create the probe container" */
	const char *header;	/* a reply header to keep: "X-Docker-..." */
};

struct ab_resp {
	long status;
	struct ab_buf body;
	char header[1024];	/* the value of q->header, or "" */
};

int ab_engine_open(struct ab_engine *e, const struct ab_deadline *dl,
    struct ab_err *err);
/* A second connection to E's engine, for a call made while E's own is
 * busy (side.h): the same endpoint, deadline and API version, no ping
 * (E's answered), no cancellation wake-up (its calls are short). */
int ab_engine_twin(struct ab_engine *t, const struct ab_engine *e,
    struct ab_err *err);
void ab_engine_close(struct ab_engine *e);
/* A stream pump returns early once FD is readable (ab_cancel_fd); a
 * negative FD wakes nothing. */
void ab_engine_wake_on(struct ab_engine *e, int fd);
/* From now on calls are bounded by WITHIN_MS from now, whatever the
 * task's deadline: cleanup must still run after the deadline passed. */
void ab_engine_cleanup_budget(struct ab_engine *e, long long within_ms);

/* A cleanup step inside a tool: calls get a budget of their own until
 * ab_engine_budget_end puts the deadline that was in force back;
 * AB_CLEANUP_MS is the one such steps take. */
#define AB_CLEANUP_MS 15000
struct ab_budget {
	struct ab_deadline dl;
	int cleanup;
};
void ab_engine_budget_begin(struct ab_engine *e, long long within_ms,
    struct ab_budget *saved);
void ab_engine_budget_end(struct ab_engine *e, const struct ab_budget *saved);

/* Sends the request and waits for the whole reply.  0 when an HTTP reply
 * arrived (any status: check r->status); -1 when none did, or when the
 * deadline passed meanwhile.  ab_resp_free afterwards either way. */
int ab_engine_call(struct ab_engine *e, const struct ab_req *q,
    struct ab_resp *r, struct ab_err *err);
/* Shorthand for a JSON request kept in r. */
int ab_engine_json(struct ab_engine *e, const char *method, const char *path,
    const char *body, const char *what, struct ab_resp *r,
    struct ab_err *err);
void ab_resp_free(struct ab_resp *r);
/* Fails with CODE, naming WHAT, the HTTP status and the daemon's message. */
int ab_engine_fail(const struct ab_resp *r, int code, const char *what,
    struct ab_err *err);

/* 1 when the engine takes "seccomp=builtin" (API 1.42, Engine 23 on);
 * known from the ping, without /info. */
int ab_engine_seccomp_keyword(const struct ab_engine *e);
int ab_engine_info(struct ab_engine *e, struct ab_info *info,
    struct ab_err *err);
/* The same, and what /info shows of runtime NAME in rt (runtime.h). */
int ab_engine_info_rt(struct ab_engine *e, struct ab_info *info,
    const char *name, struct ab_runtime *rt, struct ab_err *err);

/* The longest URL of a request: a path of /work (PATH_MAX) with each of
 * its bytes escaped, and the rest. */
#define AB_URL_MAX (3 * 4096 + 1024)

/* A concurrent request on its own connection. */
struct ab_stream {
	void *h;		/* CURL * */
	struct ab_engine *e;
	void *hdrs;
	char url[AB_URL_MAX];
	long status;
	int headers_done;
	int done;
	int result;		/* CURLcode once done */
	ab_sink sink;
	void *sink_ctx;
	struct ab_buf body;	/* when sink is NULL */
	struct ab_err sink_err;
	int sink_failed;
	const char *what;
	char errbuf[256];	/* libcurl's words for its failure */
};

/* Starts the request and drives it until its reply headers arrived, so a
 * wait is registered in the daemon before the caller goes on. */
int ab_stream_open(struct ab_engine *e, struct ab_stream *s,
    const char *method, const char *path, ab_sink sink, void *ctx,
    const char *what, struct ab_err *err);
/* Drives every open stream for at most timeout_ms (bounded by the
 * deadline), returning early when the wake fd, if set, is readable (a
 * signal's self-pipe).  -1 only for a multi failure or the deadline. */
int ab_stream_pump(struct ab_engine *e, long timeout_ms, struct ab_err *err);
/* 0 when the stream finished with a complete reply; -1 otherwise. */
int ab_stream_result(const struct ab_stream *s, struct ab_err *err);
void ab_stream_close(struct ab_stream *s);

/* Lists the "containers" (all, stopped too), "volumes", "images" or
 * "networks" that
 * carry every label of LABELS ("key=value" strings, NULL-terminated).  On
 * success *list is the array token of their descriptions in j. */
int ab_engine_list(struct ab_engine *e, const char *kind,
    const char *const *labels, struct ab_json *j, int *list,
    struct ab_err *err);

/* Percent-encodes S for a query string into b. */
int ab_url_escape(struct ab_buf *b, const char *s);

#endif
