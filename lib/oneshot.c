#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deadline.h"
#include "json.h"
#include "mux.h"
#include "oneshot.h"
#include "owned.h"
#include "testhook.h"

#define OUTPUT_MAX (64 * 1024)
/* How long the output may trail the exit. */
#define DRAIN_MS 2000

/* Any warning means the engine dropped or changed part of the request. */
int ab_ctr_create(struct ab_engine *e, const struct ab_lock *l,
    const char *name, const char *what, char id[80], int *conflict,
    struct ab_err *err)
{
	struct ab_buf body, path;
	struct ab_resp r;
	struct ab_json j;
	char *s = NULL;
	int rc = -1, w;

	ab_buf_init(&body, AB_REQUEST_MAX);
	ab_buf_init(&path, AB_QUERY_MAX);
	memset(&j, 0, sizeof j);
	if (ab_lock_body(l, &body, err) < 0)
		goto out;
	if (ab_buf_addf(&path, "/containers/create?name=%s", name) < 0) {
		ab_buf_fail(&path, AB_EUSAGE, "the container's name", err);
		goto out;
	}
	if (ab_engine_json(e, "POST", path.data, body.data, what, &r, err) < 0)
		goto resp;
	if (r.status != 201) {
		*conflict = r.status == 409;
		ab_engine_fail(&r, *conflict ? AB_EREFUSED : AB_EENGINE, what,
		    err);
		goto resp;
	}
	if (ab_json_parse(&j, r.body.data, r.body.len, err) < 0) {
		err->code = AB_EENGINE;
		goto resp;
	}
	w = ab_json_key(&j, 0, "Warnings");
	if (ab_json_type(&j, w) == AB_JSON_ARRAY && ab_json_count(&j, w) > 0) {
		s = ab_json_str(&j, ab_json_elem(&j, w, 0));
		ab_fail(err, AB_EREFUSED, "engine warned on create: %.300s",
		    s ? s : "?");
		goto resp;
	}
	s = ab_json_str(&j, ab_json_key(&j, 0, "Id"));
	if (s == NULL || strlen(s) != 64) {
		ab_fail(err, AB_EENGINE, "engine sent no container id");
		goto resp;
	}
	snprintf(id, 80, "%s", s);
	rc = 0;
resp:
	ab_resp_free(&r);
out:
	free(s);
	ab_json_free(&j);
	ab_buf_free(&body);
	ab_buf_free(&path);
	return rc;
}

int ab_ctr_inspect(struct ab_engine *e, const char *id, struct ab_json *j,
    struct ab_err *err)
{
	struct ab_resp r;
	char path[160];
	int rc = -1;

	memset(j, 0, sizeof *j);
	snprintf(path, sizeof path, "/containers/%s/json", id);
	if (ab_engine_json(e, "GET", path, NULL, "inspect a container", &r,
	    err) < 0)
		goto out;
	if (r.status != 200) {
		ab_engine_fail(&r, r.status == 404 ? AB_EREFUSED : AB_EENGINE,
		    "inspect a container", err);
		goto out;
	}
	if ((rc = ab_json_parse(j, r.body.data, r.body.len, err)) < 0)
		err->code = AB_EENGINE;
out:
	ab_resp_free(&r);
	return rc;
}

/* sha256: and 64 hex digits: an image ID, which is the hash of the
 * image's configuration, labels included. */
static int content_addressed(const char *id)
{
	size_t i;

	if (strncmp(id, "sha256:", 7) != 0 || strlen(id) != 71)
		return 0;
	for (i = 7; i < 71; i++)
		if (strchr("0123456789abcdef", id[i]) == NULL)
			return 0;
	return 1;
}

void ab_image_keep(struct ab_engine *e, const char *id, const char *body,
    size_t len)
{
	ab_buf_free(&e->img);
	ab_buf_init(&e->img, AB_REPLY_MAX);	/* the inspect reply it was */
	e->img_id[0] = '\0';
	if (!content_addressed(id) || strlen(id) >= sizeof e->img_id ||
	    ab_buf_add(&e->img, body, len) < 0)
		return;
	snprintf(e->img_id, sizeof e->img_id, "%s", id);
}

/* The image by its ID.  Its configuration cannot change under that ID,
 * so the one this process inspected last (ab_image_verify's, or a check's
 * before) is read again from memory, not from the engine: each container
 * check of ab-validate and ab-run asked for it anew. */
static int image_inspect(struct ab_engine *e, const char *digest,
    struct ab_json *j, struct ab_err *err)
{
	struct ab_resp r;
	char path[160];
	int rc = -1;

	memset(j, 0, sizeof *j);
	if (e->img_id[0] != '\0' && strcmp(e->img_id, digest) == 0) {
		if ((rc = ab_json_parse(j, e->img.data, e->img.len, err)) < 0)
			err->code = AB_EENGINE;
		return rc;
	}
	snprintf(path, sizeof path, "/images/%s/json", digest);
	if (ab_engine_json(e, "GET", path, NULL, "inspect the image", &r,
	    err) < 0)
		goto out;
	if (r.status != 200) {
		ab_engine_fail(&r, r.status == 404 ? AB_EREFUSED : AB_EENGINE,
		    "inspect the image", err);
		goto out;
	}
	if ((rc = ab_json_parse(j, r.body.data, r.body.len, err)) < 0)
		err->code = AB_EENGINE;
	else
		ab_image_keep(e, digest, r.body.data, r.body.len);
out:
	ab_resp_free(&r);
	return rc;
}

int ab_ctr_check_doc(struct ab_engine *e, const struct ab_lock *l,
    const struct ab_json *ins, struct ab_err *err)
{
	struct ab_json img;
	int rc;

	/* The image by the lockdown's digest: what the container must run,
	 * and whose labels it inherits. */
	if (image_inspect(e, l->image, &img, err) < 0)
		return -1;
	rc = ab_lock_check_doc(ins, &img, l, err);
	ab_json_free(&img);
	return rc;
}

int ab_ctr_check(struct ab_engine *e, const struct ab_lock *l,
    const char *id, struct ab_err *err)
{
	struct ab_json j;
	int rc;

	if (ab_ctr_inspect(e, id, &j, err) < 0)
		return -1;
	rc = ab_ctr_check_doc(e, l, &j, err);
	ab_json_free(&j);
	return rc;
}

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
	snprintf(path, sizeof path, "/containers/%s/wait?condition=next-exit",
	    id);
	if (ab_stream_open(e, &w, "POST", path, NULL, NULL,
	    "wait for the probe container", err) < 0)
		return -1;
	ab_mux_init(&m, collect, o);
	snprintf(path, sizeof path,
	    "/containers/%s/attach?stream=1&stdout=1&stderr=1", id);
	if (ab_stream_open(e, &a, "POST", path, ab_mux_feed, &m,
	    "read the probe's output", err) < 0) {
		ab_stream_close(&w);
		return -1;
	}
	snprintf(path, sizeof path, "/containers/%s/start", id);
	if (ab_engine_json(e, "POST", path, NULL, "start the probe container",
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
