#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctr.h"
#include "deadline.h"
#include "json.h"
#include "mux.h"
#include "oneshot.h"
#include "owned.h"
#include "testhook.h"

#define OUTPUT_MAX (64 * 1024)
/* How long the output may trail the exit. */
#define DRAIN_MS 2000

static int collect(void *ctx, int stream, const char *p, size_t n,
    struct ab_err *err)
{
	struct ab_oneshot *o = ctx;
	struct ab_buf *b = stream == 1 ? &o->out : &o->err;

	if (ab_buf_add(b, p, n) < 0 && !b->over)
		return ab_fail(err, AB_EENGINE, "out of memory");
	return 0;	/* past the bound: counted as over, dropped */
}

/* The output is read through an attach made before the start, never
 * from the log: the log driver keeps only its last megabyte and writes
 * bytes that are not UTF-8 as U+FFFD, and /work's names are bytes. */
static int start_and_wait(struct ab_engine *e, const char *id,
    struct ab_oneshot *o, struct ab_err *err)
{
	struct ab_stream w, a;
	struct ab_resp r;
	struct ab_json j;
	struct ab_mux m;
	char path[160];
	long long drain_end;
	int rc = -1;

	/* The wait is registered before the start, so no exit is missed. */
	if (ab_fmt_err(err, path, sizeof path, "the container's ID",
	    "/containers/%s/wait?condition=next-exit", id) < 0 ||
	    ab_stream_open(e, &w, "POST", path, NULL, NULL,
	    "wait for the probe container", err) < 0)
		return -1;
	ab_mux_init(&m, collect, o);
	if (ab_fmt_err(err, path, sizeof path, "the container's ID",
	    "/containers/%s/attach?stream=1&stdout=1&stderr=1", id) < 0 ||
	    ab_stream_open(e, &a, "POST", path, ab_mux_feed, &m,
	    "read the probe's output", err) < 0) {
		ab_stream_close(&w);
		return -1;
	}
	memset(&r, 0, sizeof r);	/* freed at resp whatever fails */
	if (ab_fmt_err(err, path, sizeof path, "the container's ID",
	    "/containers/%s/start", id) < 0 ||
	    ab_engine_json(e, "POST", path, NULL, "start the probe container",
	    &r, err) < 0)
		goto resp;
	if (r.status != 204) {
		ab_engine_fail(&r, AB_EENGINE, "start the probe container", err);
		goto resp;
	}
	while (!w.done)
		if (ab_stream_pump(e, 1000, err) < 0)
			goto resp;
	/* The output may trail the exit a little. */
	drain_end = ab_now_ms() + DRAIN_MS;
	while (!a.done && ab_now_ms() < drain_end)
		if (ab_stream_pump(e, 100, err) < 0)
			goto resp;
	if (ab_stream_result(&w, err) < 0)
		goto resp;
	if (a.sink_failed) {
		*err = a.sink_err;
		goto resp;
	}
	/* A stream cut mid-frame also ends "cleanly" for curl. */
	if (!a.done || a.result != 0 || !ab_mux_clean_end(&m)) {
		ab_fail(err, AB_EENGINE, "the probe's output was cut");
		goto resp;
	}
	if (w.status != 200 || ab_json_parse(&j, w.body.data, w.body.len,
	    err) < 0) {
		ab_fail(err, AB_EENGINE, "engine's wait reply is unusable");
		goto resp;
	}
	if (ab_json_int(&j, ab_json_key(&j, 0, "StatusCode"), &o->status) == 0)
		rc = 0;
	else
		ab_fail(err, AB_EENGINE, "engine's wait reply has no status");
	ab_json_free(&j);
resp:
	ab_resp_free(&r);
	ab_stream_close(&a);
	ab_stream_close(&w);
	return rc;
}

void ab_oneshot_limits(struct ab_lock *l)
{
	l->memory = 64LL << 20;
	l->pids = 64;
	l->nano_cpus = 1000000000LL;
	l->log_max_size = "1m";
	l->shm_size = 64LL << 20;
	l->nofile = 1024;
}

int ab_oneshot_run(struct ab_engine *e, const struct ab_lock *l,
    const char *name, struct ab_oneshot *o, struct ab_err *err)
{
	return ab_oneshot_run_max(e, l, name, OUTPUT_MAX, o, err);
}

int ab_oneshot_run_max(struct ab_engine *e, const struct ab_lock *l,
    const char *name, size_t out_max, struct ab_oneshot *o,
    struct ab_err *err)
{
	struct ab_err cerr;
	char id[80] = "";
	int rc, conflict = 0;

	memset(o, 0, sizeof *o);
	ab_buf_init(&o->out, out_max);
	ab_buf_init(&o->err, OUTPUT_MAX);
	o->status = -1;
	rc = ab_ctr_create(e, l, name, "create the probe container", id,
	    &conflict, err);
	if (rc == 0)
		rc = ab_ctr_check(e, l, id, err);
	if (rc == 0)
		ab_test_pause("probe-created");
	if (rc == 0)
		rc = start_and_wait(e, id, o, err);
	/* By name: it also finds a create whose reply never reached us;
	 * unless the name was another's (409), which is left alone. */
	if (!conflict && ab_owned_remove(e, AB_CONTAINER, name,
	    ab_lock_label(l, "org.agentbox.state"), NULL, &cerr) < 0 &&
	    rc == 0) {
		*err = cerr;
		rc = -1;
	}
	return rc;
}

void ab_oneshot_free(struct ab_oneshot *o)
{
	ab_buf_free(&o->out);
	ab_buf_free(&o->err);
}
