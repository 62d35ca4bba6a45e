#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cancel.h"
#include "ctr.h"
#include "file.h"
#include "json.h"
#include "mux.h"
#include "run.h"
#include "testhook.h"
#include "version.h"

#define PROBE_OK "agentbox-probe: ok "
/* How long the output may trail the exit before it counts as cut. */
#define DRAIN_MS 3000

/* -- Output. */

static void capture_init(struct ab_capture *c, long long limit)
{
	c->fd = -1;
	c->of.fd = -1;
	c->limit = limit;
	ab_buf_init(&c->keep, (size_t)limit);	/* capture stops there */
}

void ab_run_init(struct ab_run *r)
{
	memset(r, 0, sizeof *r);
	r->status = -1;
	r->grace_ms = 10000;
	capture_init(&r->out, AB_RUN_RECORD_OUTPUT);
	capture_init(&r->err, AB_RUN_RECORD_OUTPUT);
	ab_buf_init(&r->enforced, AB_REPLY_MAX);	/* the inspect's, in part */
	ab_buf_init(&r->egress_json, AB_RECORD_MAX);	/* in the record whole */
}

void ab_run_free(struct ab_run *r)
{
	struct ab_capture *c[2] = { &r->out, &r->err };
	int i;

	for (i = 0; i < 2; i++) {
		ab_outfile_abort(&c[i]->of);
		c[i]->fd = -1;
		ab_buf_free(&c[i]->keep);
	}
	ab_buf_free(&r->enforced);
	ab_buf_free(&r->egress_json);
}

int ab_run_open_outputs(struct ab_run *r, struct ab_err *err)
{
	struct ab_capture *c[2] = { &r->out, &r->err };
	int i;

	for (i = 0; i < 2; i++) {
		if (c[i]->path == NULL)
			continue;
		/* Standard output carries the result's handle. */
		if (strcmp(c[i]->path, "-") == 0)
			return ab_fail(err, AB_EUSAGE, "--%s -: standard output "
			    "carries the result's handle", i ? "stderr" :
			    "stdout");
		if (ab_outfile_open(&c[i]->of, c[i]->path, err) < 0)
			return -1;
		c[i]->fd = c[i]->of.fd;
	}
	return 0;
}

int ab_run_close_outputs(struct ab_run *r, struct ab_err *err)
{
	struct ab_capture *c[2] = { &r->out, &r->err };
	struct ab_err later;
	int i, rc = 0;

	for (i = 0; i < 2; i++) {
		if (c[i]->fd < 0)
			continue;
		if (ab_outfile_commit(&c[i]->of, rc == 0 ? err : &later) < 0)
			rc = -1;
		c[i]->fd = -1;
	}
	return rc;
}

static int capture(struct ab_capture *c, const char *p, size_t n,
    struct ab_err *err)
{
	size_t take = 0;

	if (c->kept < c->limit)
		take = (long long)n < c->limit - c->kept ? n :
		    (size_t)(c->limit - c->kept);
	if (take > 0 && c->fd >= 0 && ab_write_all(c->fd, p, take) < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot write %s",
		    c->path);
	if (take > 0 && c->fd < 0 && ab_buf_add(&c->keep, p, take) < 0)
		return ab_fail(err, AB_EENGINE, "out of memory");
	c->kept += take;
	c->dropped += n - take;
	return 0;
}

/* The probe's line comes first on stdout; what follows is the agent's. */
struct follow {
	struct ab_run *r;
	struct ab_lines probe;	/* a longer line is refused */
	int probe_done, probe_bad;
};

static void probe_line(struct follow *f, int rc, const char *line,
    size_t n)
{
	char want[sizeof PROBE_OK + AB_ID_LEN + 1];

	f->probe_done = 1;
	/* Sized for it: cut, it matches nothing. */
	if (ab_fmt(want, sizeof want, "%s%s", PROBE_OK, f->r->nonce) == 0 &&
	    rc == AB_LINE_OK && n == strlen(want) &&
	    memcmp(line, want, n) == 0) {
		f->r->probe_ok = 1;
		return;
	}
	f->probe_bad = 1;
	/* Kept for the record as printable ASCII only. */
	if (rc < 0)
		n = 0;
	ab_printable(f->r->probe_line, sizeof f->r->probe_line, line, n);
}

static int on_output(void *ctx, int stream, const char *p, size_t n,
    struct ab_err *err)
{
	struct follow *f = ctx;
	const char *line = "";
	size_t k = 0;
	int rc;

	if (stream == 2)
		return capture(&f->r->err, p, n, err);
	if (!f->probe_done) {
		ab_lines_feed(&f->probe, p, n);
		rc = ab_lines_next(&f->probe, &line, &k);
		if (rc == AB_LINE_NONE)
			return 0;
		probe_line(f, rc, line, k);
		ab_lines_rest(&f->probe, &p, &n);
	}
	/* After a refused probe nothing is the agent's.  The CLI's stream
	 * is read before the output limit cuts what is kept. */
	if (f->probe_bad)
		return 0;
	if (f->r->agent != NULL)
		ab_agent_feed(f->r->agent, p, n);
	return capture(&f->r->out, p, n, err);
}

/* -- The last check. */

static const char *const enforced_fields[] = {
	"Image", "Config.User", "Config.Entrypoint", "Config.Cmd",
	"HostConfig.Privileged", "HostConfig.ReadonlyRootfs",
	"HostConfig.CapAdd", "HostConfig.CapDrop", "HostConfig.SecurityOpt",
	"HostConfig.NetworkMode", "HostConfig.IpcMode", "HostConfig.PidMode",
	"HostConfig.UTSMode", "HostConfig.UsernsMode",
	"HostConfig.CgroupnsMode", "HostConfig.Runtime",
	"HostConfig.RestartPolicy", "HostConfig.Memory",
	"HostConfig.MemorySwap", "HostConfig.PidsLimit",
	"HostConfig.NanoCpus", "HostConfig.ShmSize", "HostConfig.Tmpfs",
	"HostConfig.Ulimits", "HostConfig.LogConfig", "Mounts", NULL
};

/* What the check passed, copied from the inspect itself: the record says
 * what was enforced, never what was asked for.  No Env: a credential may
 * live there. */
static int keep_enforced(const struct ab_json *j, struct ab_run *r,
    struct ab_err *err)
{
	struct ab_jw w;
	const char *p;
	size_t n;
	int i, t;

	ab_buf_reset(&r->enforced);
	ab_jw_init(&w, &r->enforced);
	ab_jw_obj(&w);
	for (i = 0; enforced_fields[i] != NULL; i++) {
		t = ab_json_get(j, 0, enforced_fields[i]);
		if (t < 0)
			continue;
		ab_json_span(j, t, &p, &n);
		ab_jw_key(&w, enforced_fields[i]);
		ab_jw_raw(&w, p, n);
	}
	ab_jw_obj_end(&w);
	return ab_jw_done(&w) < 0 ? ab_buf_fail(&r->enforced, AB_EENGINE,
	    "the lockdown enforced", err) : 0;
}

int ab_run_check(struct ab_engine *e, struct ab_run *r,
    const struct ab_lock *l, struct ab_err *err)
{
	struct ab_json j;
	int rc;

	if (ab_ctr_inspect(e, r->cid, &j, err) < 0)
		return -1;
	/* A container runs once: one that ran already is no longer the one
	 * that was validated. */
	if (!ab_json_str_eq(&j, ab_json_get(&j, 0, "State.Status"), "created"))
		rc = ab_fail(err, AB_EREFUSED, "lockdown drift: State.Status: "
		    "the container was started before");
	else
		rc = ab_ctr_check_doc(e, l, &j, err);
	if (rc == 0)
		rc = keep_enforced(&j, r, err);
	ab_json_free(&j);
	return rc;
}

/* -- Start, follow, stop, settle. */

struct stop {
	int stopping, killed;
	long long kill_at;
};

static int post(struct ab_engine *e, const char *fmt, const char *cid,
    const char *arg, const char *what, long *status, struct ab_err *err)
{
	struct ab_resp r;
	char path[200];
	int rc;

	*status = 0;
	if (ab_fmt_err(err, path, sizeof path, "the container's ID", fmt,
	    cid, arg) < 0)
		return -1;
	rc = ab_engine_json(e, "POST", path, NULL, what, &r, err);
	*status = r.status;
	ab_resp_free(&r);
	return rc;
}

/* 409: it is not running (any more); that is what a stop wants. */
static int signal_ctr(struct ab_engine *e, const char *cid, const char *sig,
    struct ab_err *err)
{
	long st;

	if (post(e, "/containers/%s/kill?signal=%s", cid, sig,
	    "signal the container", &st, err) < 0)
		return -1;
	if (st != 204 && st != 409)
		return ab_fail(err, AB_EENGINE, "cannot signal the container: "
		    "engine said %ld", st);
	return st == 204 ? 1 : 0;
}

/* The kill of an agent a run lost track of.  An engine that was lost
 * (killed, crashed) takes no kill, and its containers' shims run on
 * without it: then the agent may still run, and the run's error says so
 * rather than let a reader take the agent for dead.  A reply that it is
 * gone or not running is what the kill wants. */
static void kill_lost(struct ab_engine *e, const char *cid,
    struct ab_err *err)
{
	struct ab_err kerr;
	size_t n;
	long st;

	if (post(e, "/containers/%s/kill?signal=%s", cid, "SIGKILL",
	    "kill the agent's container", &st, &kerr) == 0) {
		if (st == 204 || st == 404 || st == 409)
			return;
		(void)ab_fmt(kerr.msg, sizeof kerr.msg, "the engine said %ld",
		    st);
	}
	/* Appended in place: a line cut at the end loses the least. */
	n = strnlen(err->msg, sizeof err->msg - 1);
	(void)ab_fmt(err->msg + n, sizeof err->msg - n, "; the agent could "
	    "not be killed and may still run: %s", kerr.msg);
}

void ab_run_events_init(struct ab_run_events *ev)
{
	memset(ev, 0, sizeof *ev);
	ab_lines_init(&ev->lines, AB_RUN_EVENT_LINE_MAX);
}

void ab_run_events_feed(struct ab_run_events *ev, const char *p, size_t n)
{
	struct ab_json j;
	struct ab_err skip;
	const char *line;
	size_t k;
	int t, rc;

	ab_lines_feed(&ev->lines, p, n);
	while ((rc = ab_lines_next(&ev->lines, &line, &k)) != AB_LINE_NONE) {
		/* A line too long is skipped: no event of ours is. */
		if (rc != AB_LINE_OK || k == 0 ||
		    ab_json_parse(&j, line, k, &skip) < 0)
			continue;
		t = ab_json_key(&j, 0, "Action");
		ev->kills += ab_json_str_eq(&j, t, "kill");
		ev->died |= ab_json_str_eq(&j, t, "die");
		ev->oom |= ab_json_str_eq(&j, t, "oom");
		ab_json_free(&j);
	}
}

void ab_run_events_free(struct ab_run_events *ev)
{
	ab_lines_free(&ev->lines);
}

/* Subscribed to before the container starts, so none is missed. */
static int on_event(void *ctx, const char *p, size_t n, struct ab_err *err)
{
	(void)err;
	ab_run_events_feed(ctx, p, n);
	return 0;
}

static int events_open(struct ab_engine *e, const char *cid,
    struct ab_stream *s, struct ab_run_events *ev, struct ab_err *err)
{
	char path[400];

	/* filters={"container":["CID"],"type":["container"]}; from now on:
	 * the engine subscribes before it sends the reply's headers. */
	if (ab_fmt_err(err, path, sizeof path, "the container's ID",
	    "/events?filters=%%7B%%22container%%22"
	    "%%3A%%5B%%22%s%%22%%5D%%2C%%22type%%22%%3A%%5B%%22container"
	    "%%22%%5D%%7D", cid) < 0)
		return -1;
	return ab_stream_open(e, s, "GET", path, on_event, ev,
	    "follow the container's events", err);
}

static void set_reason(struct ab_run *r, const char *reason)
{
	/* One of the fixed words: a bug here when cut. */
	if (r->reason[0] == '\0' &&
	    ab_fmt(r->reason, sizeof r->reason, "%s", reason) < 0)
		abort();
}

/* Signals the container, counting what the engine delivered. */
static int own_signal(struct ab_engine *e, struct ab_run *r, const char *sig,
    struct ab_err *err)
{
	int rc = signal_ctr(e, r->cid, sig, err);

	if (rc > 0)
		r->own_kills++;
	return rc < 0 ? -1 : 0;
}

static int begin_stop(struct ab_engine *e, struct ab_run *r, struct stop *st,
    const char *reason, long long grace_ms, struct ab_err *err)
{
	set_reason(r, reason);
	if (st->stopping)
		return 0;
	st->stopping = 1;
	st->kill_at = ab_now_ms() + grace_ms;
	if (grace_ms > 0)
		return own_signal(e, r, "SIGTERM", err);
	st->killed = 1;
	return own_signal(e, r, "SIGKILL", err);
}

/* What happens next, and how long the pump may sleep until then. */
static int step(struct ab_engine *e, struct ab_run *r, struct follow *f,
    struct stop *st, long *sleep_ms, struct ab_err *err)
{
	long long now = ab_now_ms(), next = 1000;

	if (ab_cancel_requested() &&
	    begin_stop(e, r, st, "cancelled", r->grace_ms, err) < 0)
		return -1;
	if (r->dl.set && now >= r->dl.at_ms &&
	    begin_stop(e, r, st, "deadline", r->grace_ms, err) < 0)
		return -1;
	if (f->probe_bad &&
	    begin_stop(e, r, st, "probe-refused", 0, err) < 0)
		return -1;
	if (st->stopping && !st->killed && now >= st->kill_at) {
		st->killed = 1;
		if (own_signal(e, r, "SIGKILL", err) < 0)
			return -1;
	}
	if (!st->stopping && r->dl.set && r->dl.at_ms - now < next)
		next = r->dl.at_ms - now;
	if (st->stopping && !st->killed && st->kill_at - now < next)
		next = st->kill_at - now;
	*sleep_ms = next < 1 ? 1 : (long)next;
	return 0;
}

static int wait_status(const struct ab_stream *w, long long *status,
    struct ab_err *err)
{
	struct ab_json j;
	int rc;

	if (ab_stream_result(w, err) < 0)
		return -1;
	if (w->status != 200 ||
	    ab_json_parse(&j, w->body.data, w->body.len, err) < 0)
		return ab_fail(err, AB_EENGINE, "the engine's wait reply is "
		    "unusable (status %ld)", w->status);
	rc = ab_json_int(&j, ab_json_key(&j, 0, "StatusCode"), status);
	ab_json_free(&j);
	return rc < 0 ? ab_fail(err, AB_EENGINE, "the engine's wait reply "
	    "has no status") : 0;
}

static int start(struct ab_engine *e, struct ab_run *r, struct ab_err *err)
{
	long st;

	if (post(e, "/containers/%s/start%s", r->cid, "",
	    "start the container", &st, err) < 0)
		return -1;
	if (st != 204)
		return ab_fail(err, AB_EENGINE, "cannot start the container: "
		    "engine said %ld", st);
	r->started = 1;
	r->started_ms = ab_now_ms();
	return 0;
}

/* The engine's own account, once it says the container is not running.
 * A container removed after it died (ab-clean under a running agent, or
 * by hand) has none: its wait's status and its events stand. */
static int settle(struct ab_engine *e, struct ab_run *r,
    const struct ab_run_events *ev, struct ab_err *err)
{
	struct ab_json j;
	char *s;
	int running = 1, tries;

	for (tries = 0; running && tries < 50; tries++) {
		if (tries > 0)
			usleep(100 * 1000);
		if (ab_ctr_inspect(e, r->cid, &j, err) < 0) {
			if (err->code != AB_EREFUSED || !ev->died)
				return -1;
			r->oom = ev->oom;
			running = 0;
			break;
		}
		if (ab_json_bool(&j, ab_json_get(&j, 0, "State.Running"),
		    &running) < 0 ||
		    ab_json_bool(&j, ab_json_get(&j, 0, "State.OOMKilled"),
		    &r->oom) < 0) {
			ab_json_free(&j);
			return ab_fail(err, AB_EENGINE, "the engine's inspect "
			    "has no State");
		}
		if (!running) {
			ab_json_int(&j, ab_json_get(&j, 0, "State.ExitCode"),
			    &r->status);
			s = ab_json_str(&j, ab_json_get(&j, 0, "State.StartedAt"));
			/* A time too long to be the engine's is none. */
			if (ab_fmt(r->started_at, sizeof r->started_at, "%s",
			    s ? s : "") < 0)
				r->started_at[0] = '\0';
			free(s);
			s = ab_json_str(&j, ab_json_get(&j, 0,
			    "State.FinishedAt"));
			if (ab_fmt(r->finished_at, sizeof r->finished_at, "%s",
			    s ? s : "") < 0)
				r->finished_at[0] = '\0';
			free(s);
		}
		ab_json_free(&j);
	}
	if (running)
		return ab_fail(err, AB_EENGINE, "the container still runs "
		    "after its wait ended");
	r->ended_ms = ab_now_ms();
	return 0;
}

static int follow(struct ab_engine *e, struct ab_run *r, struct follow *f,
    struct ab_stream *w, struct ab_stream *a, const struct ab_mux *m,
    const struct ab_run_events *ev, struct ab_err *err)
{
	struct stop st = { 0, 0, 0 };
	long long drain_end;
	long sleep_ms;

	if (start(e, r, err) < 0)
		return -1;
	ab_test_pause("run-started");
	while (!w->done) {
		if (step(e, r, f, &st, &sleep_ms, err) < 0 ||
		    ab_stream_pump(e, sleep_ms, err) < 0)
			return -1;
	}
	if (wait_status(w, &r->status, err) < 0)
		return -1;
	/* The output may trail the exit a little; it is never waited for
	 * long, and a cut is recorded, not hidden. */
	drain_end = ab_now_ms() + DRAIN_MS;
	while ((!a->done || !ev->died) && ab_now_ms() < drain_end)
		if (ab_stream_pump(e, 100, err) < 0)
			return -1;
	/* Kills the engine delivered that ab-run did not send. */
	r->outside_kill = ev->died && ev->kills > r->own_kills;
	/* A stream cut mid-frame also ends "cleanly" for curl: the attach
	 * reads until the connection closes. */
	r->output_complete = a->done && a->result == 0 && !a->sink_failed &&
	    ab_mux_clean_end(m);
	if (a->sink_failed) {
		*err = a->sink_err;
		return -1;
	}
	ab_test_pause("run-exited");
	return settle(e, r, ev, err);
}

static void conclude(struct ab_run *r)
{
	if (r->oom)
		set_reason(r, "oom");
	if (r->outside_kill)
		set_reason(r, "killed");
	if (!r->probe_ok)
		set_reason(r, "probe-refused");
	set_reason(r, "exited");
}

int ab_run_follow(struct ab_engine *e, struct ab_run *r, struct ab_err *err)
{
	struct ab_budget saved;
	struct ab_stream w, a, ev;
	struct ab_run_events evs;
	struct follow f;
	struct ab_mux m;
	char path[200];
	int rc = -1;

	memset(&f, 0, sizeof f);
	f.r = r;
	ab_lines_init(&f.probe, sizeof r->probe_line - 1);
	ab_run_events_init(&evs);
	ab_mux_init(&m, on_output, &f);
	/* Every call from here on may outlive the deadline by the stop
	 * sequence and the settlement, and no more. */
	ab_engine_budget_begin(e, ab_deadline_left_ms(&r->dl) + r->grace_ms +
	    AB_RUN_SETTLE_MS, &saved);
	if (events_open(e, r->cid, &ev, &evs, err) < 0)
		goto close_ev;
	if (ab_fmt_err(err, path, sizeof path, "the container's ID",
	    "/containers/%s/wait?condition=next-exit", r->cid) < 0 ||
	    ab_stream_open(e, &w, "POST", path, NULL, NULL,
	    "wait for the container", err) < 0)
		goto close_ev;
	if (ab_fmt_err(err, path, sizeof path, "the container's ID",
	    "/containers/%s/attach?stream=1&stdout=1&stderr=1", r->cid) < 0 ||
	    ab_stream_open(e, &a, "POST", path, ab_mux_feed, &m,
	    "attach to the container", err) < 0)
		goto close_w;
	rc = follow(e, r, &f, &w, &a, &m, &evs, err);
	ab_stream_close(&a);
close_w:
	ab_stream_close(&w);
close_ev:
	ab_stream_close(&ev);
	ab_run_events_free(&evs);
	ab_lines_free(&f.probe);
	if (rc < 0) {
		set_reason(r, "engine-error");
		/* The agent must not outlive a run that lost track of it. */
		if (r->started)
			kill_lost(e, r->cid, err);
		/* As large as the message: a cut one still reads. */
		(void)ab_fmt(r->error, sizeof r->error, "%s", err->msg);
	} else {
		conclude(r);
	}
	ab_engine_budget_end(e, &saved);
	return rc;
}

/* -- The result record. */

static void base64(struct ab_jw *w, const unsigned char *p, size_t n)
{
	static const char t[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	struct ab_buf b;
	unsigned long v;
	size_t i;

	ab_buf_init(&b, (n + 2) / 3 * 4 + 1);	/* 4 bytes for each 3 */
	for (i = 0; i < n; i += 3) {
		v = (unsigned long)p[i] << 16;
		if (i + 1 < n)
			v |= (unsigned long)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		ab_buf_addc(&b, t[v >> 18 & 63]);
		ab_buf_addc(&b, t[v >> 12 & 63]);
		ab_buf_addc(&b, i + 1 < n ? t[v >> 6 & 63] : '=');
		ab_buf_addc(&b, i + 2 < n ? t[v & 63] : '=');
	}
	ab_jw_strn(w, b.data ? b.data : "", b.len);
	ab_buf_free(&b);
}

static void output(struct ab_jw *w, const char *key,
    const struct ab_capture *c)
{
	ab_jw_key(w, key);
	ab_jw_obj(w);
	ab_jw_kint(w, "limit", c->limit);
	ab_jw_kint(w, "kept", c->kept);
	ab_jw_kint(w, "dropped", c->dropped);
	ab_jw_kbool(w, "truncated", c->dropped > 0);
	if (c->path != NULL) {
		ab_jw_kstr(w, "file", c->path);
	} else if (ab_json_text_ok(c->keep.data ? c->keep.data : "",
	    c->keep.len)) {
		ab_jw_key(w, "text");
		ab_jw_strn(w, c->keep.data ? c->keep.data : "", c->keep.len);
	} else {
		ab_jw_key(w, "base64");
		base64(w, (const unsigned char *)c->keep.data, c->keep.len);
	}
	ab_jw_obj_end(w);
}

static void exit_fields(struct ab_jw *w, const struct ab_run *r)
{
	ab_jw_key(w, "exit_status");
	if (r->status >= 0)
		ab_jw_int(w, r->status);
	else
		ab_jw_null(w);
	/* The engine reports a death by signal N as 128 + N. */
	ab_jw_key(w, "signal");
	if (r->status > 128 && r->status < 128 + 65)
		ab_jw_int(w, r->status - 128);
	else
		ab_jw_null(w);
	ab_jw_kbool(w, "oom_killed", r->oom);
	ab_jw_key(w, "probe");
	if (r->probe_ok)
		ab_jw_str(w, "ok");
	else if (r->probe_line[0] != '\0')
		ab_jw_str(w, r->probe_line);
	else
		ab_jw_null(w);
}

static void time_fields(struct ab_jw *w, const struct ab_run *r)
{
	ab_jw_kint(w, "deadline_ms", r->dl.at_ms);
	ab_jw_kint(w, "grace_ms", r->grace_ms);
	ab_jw_kint(w, "started_ms", r->started ? r->started_ms : 0);
	ab_jw_kint(w, "ended_ms", r->ended_ms);
	ab_jw_kint(w, "duration_ms", r->started && r->ended_ms ?
	    r->ended_ms - r->started_ms : 0);
	ab_jw_kstr(w, "engine_started_at", r->started_at);
	ab_jw_kstr(w, "engine_finished_at", r->finished_at);
}

static void sign_in_fields(struct ab_jw *w, const struct ab_run *r)
{
	ab_jw_key(w, "sign_in");
	ab_jw_obj(w);
	ab_jw_kbool(w, "refreshed", r->sign_back.refreshed);
	ab_jw_kbool(w, "written_back", r->sign_back.written);
	ab_jw_key(w, "kept");
	if (r->sign_kept[0] != '\0')
		ab_jw_str(w, r->sign_kept);
	else
		ab_jw_null(w);
	ab_jw_key(w, "problem");
	if (r->sign_back.problem[0] != '\0')
		ab_jw_str(w, r->sign_back.problem);
	else
		ab_jw_null(w);
	ab_jw_obj_end(w);
}

int ab_result_save(struct ab_state *s, const char *id,
    const struct ab_result_ids *ids, const struct ab_run *r,
    struct ab_err *err)
{
	char msg[sizeof r->error];
	struct ab_buf b, m;
	struct ab_jw w;
	int rc;

	ab_buf_init(&b, AB_RECORD_MAX);	/* what a record may be read back */
	ab_jw_init(&w, &b);
	ab_record_begin(&w, s, "result", id);
	ab_jw_kstr(&w, "ctr", ids->ctr);
	ab_jw_kstr(&w, "container", r->cid);
	ab_jw_kstr(&w, "profile", ids->profile);
	ab_jw_kstr(&w, "alloc", ids->alloc);
	ab_jw_kstr(&w, "attempt", ids->attempt);
	ab_jw_kstr(&w, "phase", ids->phase);
	ab_jw_kstr(&w, "agentbox", AB_VERSION);
	ab_jw_kstr(&w, "reason", r->reason);
	exit_fields(&w, r);
	ab_jw_kbool(&w, "started", r->started);
	ab_jw_kbool(&w, "output_complete", r->output_complete);
	output(&w, "stdout", &r->out);
	output(&w, "stderr", &r->err);
	time_fields(&w, r);
	ab_jw_kstr(&w, "image", ids->image);
	ab_jw_kstr(&w, "profile_sha256", ids->profile_sha);
	ab_jw_key(&w, "lockdown");
	if (r->enforced.len > 0)
		ab_jw_raw(&w, r->enforced.data, r->enforced.len);
	else
		ab_jw_null(&w);
	if (r->agent != NULL) {
		ab_jw_key(&w, "agent");
		ab_agent_json(r->agent, r->cli_version, &w);
	}
	if (r->egress != 0) {
		ab_jw_key(&w, "egress");
		if (r->egress > 0 && r->egress_json.len > 0)
			ab_jw_raw(&w, r->egress_json.data, r->egress_json.len);
		else
			ab_jw_null(&w);
	}
	if (r->credential != NULL)
		ab_jw_kstr(&w, "credential", r->credential);
	if (r->sign_in)
		sign_in_fields(&w, r);
	if (r->error[0] != '\0') {
		/* Printable ASCII only: the record keeps no text it did
		 * not make as it came. */
		ab_printable(msg, sizeof msg, r->error, strlen(r->error));
		ab_jw_kstr(&w, "error", msg);
	}
	ab_jw_obj_end(&w);
	ab_buf_init(&m, AB_RECORD_MAX);	/* the same, masked */
	if (ab_jw_done(&w) < 0 || (r->mask != NULL &&
	    ab_progress_mask_json(r->mask, b.data, b.len, &m) < 0))
		rc = b.over || m.over ? ab_buf_fail(b.over ? &b : &m,
		    AB_EENGINE, "the result record", err) : ab_fail(err,
		    AB_EENGINE, "cannot encode the result");
	else if (r->mask != NULL)
		rc = ab_record_write(s, "result", id, m.data, m.len, err);
	else
		rc = ab_record_write(s, "result", id, b.data, b.len, err);
	ab_buf_free(&b);
	ab_buf_free(&m);
	return rc;
}
