#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "archive.h"
#include "ctr.h"
#include "deadline.h"
#include "engineid.h"
#include "file.h"
#include "json.h"
#include "lockdown.h"
#include "owned.h"
#include "proxy.h"
#include "tarread.h"
#include "testhook.h"
#include "vault.h"

#define ICC_OPTION "com.docker.network.bridge.enable_icc"
#define NETWORK_LOCK "egress-network.lock"
#define EGRESS_PREFIX "agentbox-egress-"
#define NETWORK_LOCK_MS 60000	/* at most; the deadline bounds it too */
/* A tally read before a run may be this old (the proxy's quiet beat and
 * a margin); after the run, a newer one is awaited at most 3 s. */
#define TALLY_STALE_MS 1500
#define TALLY_WAIT_STEP_MS 100
#define TALLY_WAIT_TRIES 35
#define TALLY_WAIT_QUICK 5	/* the first tries, for the asked write */
#define TALLY_WAIT_QUICK_MS 10

/* --- the lockdown ---------------------------------------------------- */

/* The proxy container's lockdown and the storage it points into. */
struct ab_proxy_lock {
	struct ab_lock l;
	const char *labels[7];
	const char *env[2];
	const char *entry[2];
	const char *cmd[AB_EGRESS_MAX + 12];
	char text[AB_EGRESS_MAX + 12][320];
	struct ab_mount mount;
};

static void arg(struct ab_proxy_lock *k, int *n, const char *fmt,
    const char *s, long long v)
{
	/* Fixed names and numbers: a bug here when cut. */
	if (ab_fmt(k->text[*n], sizeof k->text[0], fmt, s, v) < 0)
		abort();
	k->cmd[*n] = k->text[*n];
	(*n)++;
}

static void proxy_lock(const struct ab_proxy_of *a, const char *sid,
    int seccomp_keyword, struct ab_proxy_lock *k)
{
	int n = 0, i;

	memset(k, 0, sizeof *k);
	k->labels[0] = "org.agentbox.alloc";
	k->labels[1] = a->id;
	k->labels[2] = "org.agentbox.state";
	k->labels[3] = sid;
	k->labels[4] = "org.agentbox.role";
	k->labels[5] = "proxy";
	k->env[0] = "PATH=/usr/bin:/bin";
	k->entry[0] = "/usr/lib/agentbox/ab-proxy";
	/* The list and the lease are in the command: validated with the
	 * rest, and no later call can widen them. */
	arg(k, &n, "--socket=%s%.0lld", AB_EGRESS_SOCKET, 0);
	arg(k, &n, "--tally=%s%.0lld", AB_EGRESS_TALLY, 0);
	arg(k, &n, "--max-conns=%s%lld", "", a->eg->max_conns);
	arg(k, &n, "--vault=%s%.0lld", AB_EGRESS_DIR "/" AB_VAULT_NAME, 0);
	arg(k, &n, "--anchors=%s%.0lld", AB_PROXY_ANCHORS, 0);
	if (a->lease.set)
		arg(k, &n, "--lease=%s%lld", "", a->lease.at_ms);
	for (i = 0; i < a->eg->list.n; i++, n++) {
		ab_egress_entry_text(&a->eg->list.e[i], k->text[n],
		    sizeof k->text[0]);
		k->cmd[n] = k->text[n];
	}
	k->cmd[n] = NULL;
	k->mount.volume = a->eg->vol.name;
	k->mount.target = AB_EGRESS_DIR;
	k->l.image = a->digest;
	k->l.user = AB_PROXY_USER;
	k->l.network = a->eg->network;
	k->l.network_id = a->eg->network_id;
	k->l.entrypoint = k->entry;
	k->l.cmd = k->cmd;
	k->l.env = k->env;
	k->l.labels = k->labels;
	k->l.memory = AB_PROXY_MEMORY(a->eg->max_conns);
	k->l.pids = a->eg->max_conns + 16;
	k->l.nano_cpus = 1000000000LL;
	k->l.log_max_size = AB_PROXY_LOG_MAX;
	k->l.seccomp_keyword = seccomp_keyword;
	k->l.mounts = &k->mount;
	k->l.nmounts = 1;
	k->l.shm_size = 64LL << 20;
	k->l.nofile = 2 * a->eg->max_conns + 64;
	k->l.running = 1;
}

/* --- the network ----------------------------------------------------- */

/* Exactly what network_create makes, at token t, but for the name: a
 * bridge, not internal, inter-container traffic off, and two labels: the
 * role and KEY=VALUE (the engine's mark; an older agentbox's state
 * directory). */
static int network_is_ours(const struct ab_json *j, int t, const char *key,
    const char *value)
{
	int labels = ab_json_key(j, t, "Labels");
	int opts = ab_json_key(j, t, "Options");
	int b;

	return ab_json_str_eq(j, ab_json_key(j, t, "Driver"), "bridge") &&
	    ab_json_bool(j, ab_json_key(j, t, "Internal"), &b) == 0 && !b &&
	    ab_json_count(j, labels) == 2 &&
	    ab_json_str_eq(j, ab_json_key(j, labels, key), value) &&
	    ab_json_str_eq(j, ab_json_key(j, labels, "org.agentbox.role"),
	    "egress") &&
	    ab_json_count(j, opts) == 1 &&
	    ab_json_str_eq(j, ab_json_key(j, opts, ICC_OPTION), "false");
}

int ab_egress_network_named(const char *name, const char *mark)
{
	size_t n = strlen(EGRESS_PREFIX), m = strlen(mark);

	return ab_is_id(mark) && strncmp(name, EGRESS_PREFIX, n) == 0 &&
	    strncmp(name + n, mark, m) == 0 && name[n + m] == '-' &&
	    ab_is_id(name + n + m + 1);
}

/* The engine's egress network into a (name and ID): 1 found, 0 none, -1
 * failed.  Each is named by the allocation that made it, so names never
 * clash: no lock spans state directories, and the first allocations of
 * two at once can each make one (the engine resolves a network by name
 * when a container starts, and refuses a name two networks share).  Every
 * allocation then joins the one of the lowest ID. */
static int network_find(struct ab_engine *e, const struct ab_proxy_of *a,
    struct ab_alloc_egress *eg, struct ab_err *err)
{
	char label[80], *id, *name;
	const char *labels[3] = { "org.agentbox.role=egress", label, NULL };
	struct ab_json j;
	int list, i, t;

	if (ab_fmt_err(err, label, sizeof label, "the engine's mark",
	    AB_ENGINE_LABEL "=%s", a->engine) < 0 ||
	    ab_engine_list(e, "networks", labels, &j, &list, err) < 0)
		return -1;
	eg->network_id[0] = '\0';
	for (i = 0; (t = ab_json_elem(&j, list, i)) >= 0; i++) {
		id = ab_json_str(&j, ab_json_key(&j, t, "Id"));
		name = ab_json_str(&j, ab_json_key(&j, t, "Name"));
		if (id != NULL && name != NULL && strlen(id) == 64 &&
		    strlen(name) < sizeof eg->network &&
		    ab_egress_network_named(name, a->engine) &&
		    network_is_ours(&j, t, AB_ENGINE_LABEL, a->engine) &&
		    (!eg->network_id[0] ||
		    strcmp(id, eg->network_id) < 0) &&
		    ab_fmt(eg->network, sizeof eg->network, "%s",
		    name) == 0)
			memcpy(eg->network_id, id, 65);
		free(id);
		free(name);
	}
	ab_json_free(&j);
	return eg->network_id[0] != '\0';
}

static void network_body(struct ab_buf *b, const char *name,
    const char *mark)
{
	struct ab_jw w;

	ab_jw_init(&w, b);
	ab_jw_obj(&w);
	ab_jw_kstr(&w, "Name", name);
	/* The engine allows two networks of one name unless asked not to. */
	ab_jw_kbool(&w, "CheckDuplicate", 1);
	ab_jw_kstr(&w, "Driver", "bridge");
	ab_jw_kbool(&w, "Internal", 0);
	ab_jw_kbool(&w, "Attachable", 0);
	ab_jw_kbool(&w, "EnableIPv6", 0);
	ab_jw_key(&w, "Options");
	ab_jw_obj(&w);
	ab_jw_kstr(&w, ICC_OPTION, "false");
	ab_jw_obj_end(&w);
	ab_jw_key(&w, "Labels");
	ab_jw_obj(&w);
	ab_jw_kstr(&w, AB_ENGINE_LABEL, mark);
	ab_jw_kstr(&w, "org.agentbox.role", "egress");
	ab_jw_obj_end(&w);
	ab_jw_obj_end(&w);
}

/* The engine's egress network, named by this allocation. */
static int network_create(struct ab_engine *e, const struct ab_proxy_of *a,
    struct ab_err *err)
{
	struct ab_resp r;
	struct ab_buf b;
	char name[sizeof a->eg->network];
	int rc = -1;

	if (ab_fmt_err(err, name, sizeof name, "the egress network's name",
	    EGRESS_PREFIX "%s-%s", a->engine, a->id) < 0)
		return -1;
	ab_buf_init(&b, AB_REQUEST_MAX);
	network_body(&b, name, a->engine);
	if (b.data == NULL || b.over) {
		ab_buf_fail(&b, AB_EENGINE, "the network's request", err);
		ab_buf_free(&b);
		return -1;
	}
	if (ab_engine_json(e, "POST", "/networks/create", b.data,
	    "create the egress network", &r, err) == 0) {
		if (r.status == 201)
			rc = 0;
		else if (r.body.data != NULL &&
		    strstr(r.body.data, "address pool") != NULL)
			ab_fail(err, AB_EENGINE, "the engine has no free address "
			    "pool for the egress network (its default pools "
			    "hold about 31 bridge networks): remove unused "
			    "networks or widen default-address-pools");
		else
			ab_engine_fail(&r, AB_EENGINE,
			    "create the egress network", err);
	}
	ab_resp_free(&r);
	ab_buf_free(&b);
	return rc;
}

/* The engine's CheckDuplicate is a look before the create, not a lock:
 * allocations made at once in one state directory each made a network of
 * the shared name (seen on Engine 20.10 with four at once).  So the look
 * and the create are one step under a lock file of the state directory's,
 * as are the look and the removal of an older agentbox's network.  -1
 * when it cannot be had. */
static int network_lock(struct ab_state *s, long ms, struct ab_err *err)
{
	int fd = openat(s->dirfd, NETWORK_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, 0600);

	if (fd < 0 || ab_flock_within(fd, ms) < 0) {
		if (fd >= 0)
			close(fd);
		return ab_fail_errno(err, AB_EENGINE, "cannot lock %s/%s",
		    s->path, NETWORK_LOCK);
	}
	return fd;
}

static int network_lock_within_deadline(struct ab_state *s,
    struct ab_engine *e, struct ab_err *err)
{
	long long left = ab_deadline_left_ms(&e->dl);

	/* The holders are engine calls of other tools: the wait is the
	 * deadline's, like any engine call's. */
	return network_lock(s, left < 0 || left > NETWORK_LOCK_MS ?
	    NETWORK_LOCK_MS : (long)left, err);
}

/* The engine's network, found, or made by the engine's first egress
 * allocation; it outlives every allocation (proxy.h). */
static int network_ensure(struct ab_state *s, struct ab_engine *e,
    const struct ab_proxy_of *a, struct ab_alloc_egress *eg,
    struct ab_err *err)
{
	int k, made = -1, fd;

	if ((k = network_find(e, a, eg, err)) != 0)
		return k < 0 ? -1 : 0;
	if ((fd = network_lock_within_deadline(s, e, err)) < 0)
		return -1;
	k = network_find(e, a, eg, err);
	if (k == 0 && (made = network_create(e, a, err)) == 0)
		k = network_find(e, a, eg, err);
	close(fd);
	if (k == 0 && made == 0)
		return ab_fail(err, AB_EENGINE, "the egress network made for "
		    "alloc:%s vanished as it was made", a->id);
	return k == 1 ? 0 : -1;
}

/* One egress network of an older agentbox's in this state directory, by
 * ID: removed when it is exactly that and no container is on it (1).  In
 * use (403 or 409): it stays, and whoever uses it last removes it. */
static int network_drop_empty(struct ab_state *s, struct ab_engine *e,
    const char *id, const char *name)
{
	struct ab_resp r;
	struct ab_json j;
	struct ab_err err;
	char path[160];
	int empty = 0;

	if (ab_fmt(path, sizeof path, "/networks/%s", id) < 0)
		return 0;	/* not a network's ID */
	if (ab_engine_json(e, "GET", path, NULL, "inspect the egress network",
	    &r, &err) == 0 && r.status == 200 &&
	    ab_json_parse(&j, r.body.data, r.body.len, &err) == 0) {
		empty = ab_json_str_eq(&j, ab_json_key(&j, 0, "Name"), name) &&
		    network_is_ours(&j, 0, "org.agentbox.state", s->sid) &&
		    ab_json_count(&j,
		    ab_json_key(&j, 0, "Containers")) <= 0;
		ab_json_free(&j);
	}
	ab_resp_free(&r);
	return empty &&
	    ab_owned_remove(e, AB_NETWORK, id, s->sid, NULL, &err) == 0;
}

/* Listed, not looked up by name: networks of one name made at once before
 * the state's lock made every look-up by name ambiguous, and this removes
 * them. */
int ab_egress_network_release(struct ab_state *s, struct ab_engine *e)
{
	char name[96], label[64], *id;
	const char *labels[3] = { label, "org.agentbox.role=egress", NULL };
	struct ab_budget saved;
	struct ab_json j;
	struct ab_err err;
	int fd, list, i, n, gone = 0;

	if (ab_fmt(name, sizeof name, "agentbox-%s-egress", s->sid) < 0 ||
	    ab_fmt(label, sizeof label, "org.agentbox.state=%s", s->sid) < 0)
		return 0;	/* a state's ID fits: nothing of ours */
	ab_engine_budget_begin(e, AB_CLEANUP_MS, &saved);
	/* Most cleans are of allocations in a state with no egress at all:
	 * they look once and never wait for the lock. */
	if (ab_engine_list(e, "networks", labels, &j, &list, &err) < 0) {
		ab_engine_budget_end(e, &saved);
		return 0;
	}
	n = ab_json_count(&j, list);
	ab_json_free(&j);
	if (n <= 0 || (fd = network_lock(s, AB_CLEANUP_MS, &err)) < 0) {
		ab_engine_budget_end(e, &saved);
		return 0;	/* what stays, a later release removes */
	}
	if (ab_engine_list(e, "networks", labels, &j, &list, &err) == 0) {
		n = ab_json_count(&j, list);
		for (i = 0; i < n; i++) {
			id = ab_json_str(&j, ab_json_key(&j,
			    ab_json_elem(&j, list, i), "Id"));
			if (id != NULL && strlen(id) == 64)
				gone += network_drop_empty(s, e, id, name);
			free(id);
		}
		ab_json_free(&j);
	}
	ab_engine_budget_end(e, &saved);
	close(fd);
	return gone;
}

/* --- the container --------------------------------------------------- */

int ab_proxy_check(struct ab_state *s, struct ab_engine *e,
    const struct ab_proxy_of *a, int seccomp_keyword, struct ab_err *err)
{
	struct ab_proxy_lock *k = malloc(sizeof *k);
	int rc;

	if (k == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	proxy_lock(a, s->sid, seccomp_keyword, k);
	rc = ab_ctr_check(e, &k->l, a->eg->proxy_id, err);
	free(k);
	if (rc == 0)
		return 0;
	/* Nothing but the command moves a proxy's command: one made before
	 * the proxy took credentials in (no --vault) is such a proxy. */
	if (err != NULL && strstr(err->msg, "drift: Config.Cmd") != NULL) {
		static const char hint[] = " (an allocation made before "
		    "agentbox put credentials in at its proxy has another "
		    "command: make a new allocation)";
		size_t n = strlen(err->msg);

		if (n + sizeof hint <= sizeof err->msg)
			memcpy(err->msg + n, hint, sizeof hint);
	}
	return ab_err_wrap(err, "proxy of alloc:%s", a->id);
}

static int start(struct ab_engine *e, const char *id, struct ab_err *err)
{
	struct ab_resp r;
	char path[160];
	int rc;

	if (ab_fmt_err(err, path, sizeof path, "the proxy's ID",
	    "/containers/%s/start", id) < 0)
		return -1;
	rc = ab_engine_json(e, "POST", path, NULL, "start the proxy", &r, err);
	if (rc == 0 && r.status != 204)
		rc = ab_engine_fail(&r, AB_EENGINE, "start the proxy", err);
	ab_resp_free(&r);
	return rc;
}

int ab_proxy_create(struct ab_state *s, struct ab_engine *e,
    const struct ab_proxy_of *a, struct ab_alloc_egress *made,
    int seccomp_keyword, struct ab_err *err)
{
	struct ab_proxy_lock *k;
	int conflict = 0, rc;

	if ((k = malloc(sizeof *k)) == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	rc = network_ensure(s, e, a, made, err);
	if (rc == 0) {
		ab_test_pause("alloc-network-ready");
		proxy_lock(a, s->sid, seccomp_keyword, k);
		rc = ab_ctr_create(e, &k->l, made->proxy, "create the proxy",
		    made->proxy_id, &conflict, err);
	}
	free(k);
	return rc;
}

int ab_proxy_start(struct ab_state *s, struct ab_engine *e,
    const struct ab_proxy_of *a, int seccomp_keyword, struct ab_err *err)
{
	if (start(e, a->eg->proxy_id, err) < 0)
		return -1;
	return ab_proxy_check(s, e, a, seccomp_keyword, err);
}

/* --- what the proxy counted ------------------------------------------ */

static int tally_once(struct ab_engine *e, const char *path,
    struct ab_tally *t, struct ab_err *err)
{
	struct ab_tarread *tr;
	struct ab_buf b;
	int rc;

	ab_buf_init(&b, AB_TALLY_FILE_MAX);
	rc = ab_archive_open(&tr, e, path, AB_TALLY_FILE_MAX + 8192,
	    "read the proxy's tally", err);
	/* Each failure names the tally once: the read's, the parser's. */
	if (rc == 0) {
		if ((rc = ab_tarread_one(tr, &b, err)) < 0)
			ab_err_wrap(err, "the proxy's tally");
		ab_tarread_close(tr);
	}
	if (rc == 0)
		rc = ab_tally_parse(t, b.data ? b.data : "", b.len, err);
	ab_buf_free(&b);
	return rc;
}

/* The engine sizes an archive's entry by a stat, then copies the file it
 * opens by name: a tally the proxy renamed in between arrives cut short
 * (its size changes with its counters), and the stream ends in error.
 * Another read a moment later finds the file whole. */
#define TALLY_READS 4
#define TALLY_READ_GAP_MS 30

int ab_proxy_tally(struct ab_engine *e, const struct ab_proxy_of *a,
    struct ab_tally *t, struct ab_err *err)
{
	char path[200];
	int i, rc = -1;

	if (ab_fmt_err(err, path, sizeof path, "the proxy's ID",
	    "/containers/%s/archive?path=%s", a->eg->proxy_id,
	    AB_EGRESS_TALLY) < 0)
		return -1;
	for (i = 0; i < TALLY_READS && rc < 0; i++) {
		if (i > 0) {
			if (ab_deadline_left_ms(&e->dl) <= TALLY_READ_GAP_MS)
				break;
			poll(NULL, 0, TALLY_READ_GAP_MS);
		}
		rc = tally_once(e, path, t, err);
	}
	return rc;
}

/* Seconds since the epoch of "2026-12-03T09:41:37.037974239Z", in ms. */
static long long rfc3339_ms(const char *s)
{
	struct tm tm;
	long long ms = 0, scale = 100;
	const char *p;

	memset(&tm, 0, sizeof tm);
	p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (p == NULL)
		return 0;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
			ms += (*p - '0') * scale;
	return (long long)timegm(&tm) * 1000 + ms;
}

/* 1 when another agent of the allocation ran during the window. */
static int overlapped(struct ab_engine *e, const struct ab_proxy_of *a,
    const char *self, long long from, long long to)
{
	char label[64];
	const char *labels[3] = { label, "org.agentbox.role=agent", NULL };
	struct ab_json j, c;
	struct ab_err skip;
	long long started, finished;
	int list, i, t, other = 0;
	char *id, *st, *fi;

	if (ab_fmt(label, sizeof label, "org.agentbox.alloc=%s", a->id) < 0 ||
	    ab_engine_list(e, "containers", labels, &j, &list, &skip) < 0)
		return 1;	/* unknown: say allocation-wide */
	for (i = 0; !other && (t = ab_json_elem(&j, list, i)) >= 0; i++) {
		id = ab_json_str(&j, ab_json_key(&j, t, "Id"));
		if (id != NULL && strcmp(id, self) != 0 &&
		    ab_ctr_inspect(e, id, &c, &skip) == 0) {
			st = ab_json_str(&c, ab_json_get(&c, 0,
			    "State.StartedAt"));
			fi = ab_json_str(&c, ab_json_get(&c, 0,
			    "State.FinishedAt"));
			started = st ? rfc3339_ms(st) : 0;
			finished = fi ? rfc3339_ms(fi) : 0;
			/* Started before our end, and not finished before
			 * our start (a zero time: never finished). */
			other = started > 0 && started <= to &&
			    (finished <= 0 || finished >= from ||
			    finished < started);
			free(st);
			free(fi);
			ab_json_free(&c);
		}
		free(id);
	}
	ab_json_free(&j);
	return other;
}

/* The proxy now: "running", or how it ended ("oom" when the engine
 * killed it for memory, else "exited"); "unknown" when it cannot be told. */
static const char *proxy_state(struct ab_engine *e, const struct ab_proxy_of *a)
{
	struct ab_json c;
	struct ab_err skip;
	const char *st = "unknown";
	int running = 0, oom = 0;

	if (ab_ctr_inspect(e, a->eg->proxy_id, &c, &skip) < 0)
		return st;
	if (ab_json_bool(&c, ab_json_get(&c, 0, "State.Running"), &running)
	    == 0 && ab_json_bool(&c, ab_json_get(&c, 0, "State.OOMKilled"),
	    &oom) == 0)
		st = running ? "running" : oom ? "oom" : "exited";
	ab_json_free(&c);
	return st;
}

/* Asks the proxy for a tally now (SIGUSR1, cmd/ab-proxy.c).  A proxy of
 * an older image has no handler, and as its container's first process
 * the kernel keeps the signal from it; failing, the beat still comes. */
static void ask_tally(struct ab_engine *e, const struct ab_proxy_of *a)
{
	struct ab_resp r;
	struct ab_err skip;
	char path[160];

	if (ab_fmt(path, sizeof path, "/containers/%s/kill?signal=SIGUSR1",
	    a->eg->proxy_id) == 0 && ab_engine_json(e, "POST", path, NULL,
	    "ask the proxy for its tally", &r, &skip) == 0)
		ab_resp_free(&r);
}

/* A tally written after the run's end: the first whose seq is past the
 * one read at the end (asked for at once; the proxy writes at least once
 * a second anyway).  1 when one came within the wait. */
static int fresh_tally(struct ab_engine *e, const struct ab_proxy_of *a,
    struct ab_tally *end)
{
	struct ab_tally *t = malloc(sizeof *t);
	struct ab_err skip;
	int i, fresh = 0;

	ask_tally(e, a);
	for (i = 0; t != NULL && i < TALLY_WAIT_TRIES && !fresh; i++) {
		poll(NULL, 0, i < TALLY_WAIT_QUICK ? TALLY_WAIT_QUICK_MS :
		    TALLY_WAIT_STEP_MS);
		if (ab_proxy_tally(e, a, t, &skip) == 0 &&
		    t->start_ms == end->start_ms && t->seq > end->seq) {
			*end = *t;
			fresh = 1;
		}
	}
	free(t);
	return fresh;
}

int ab_proxy_summary(struct ab_engine *e, const struct ab_proxy_of *a,
    const char *self, const struct ab_tally *begin, long long from_ms,
    const char *who, struct ab_buf *out, const char **state_out,
    struct ab_err *err)
{
	struct ab_tally *end;
	const char *state;
	struct ab_jw w;
	char text[400];
	int i, fresh = 0, have;

	if ((end = malloc(sizeof *end)) == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	have = ab_proxy_tally(e, a, end, err) == 0;
	*state_out = state = proxy_state(e, a);
	/* A proxy that died takes its tally with it (the egress volume is a
	 * tmpfs, gone with its last mount): the record says so, and counts
	 * nothing it cannot show. */
	if (!have && strcmp(state, "running") == 0) {
		free(end);
		return -1;
	}
	if (have && strcmp(state, "running") == 0)
		fresh = fresh_tally(e, a, end);
	ab_jw_init(&w, out);
	ab_jw_obj(&w);
	ab_jw_key(&w, "allow");
	ab_jw_arr(&w);
	for (i = 0; i < a->eg->list.n; i++) {
		ab_egress_entry_text(&a->eg->list.e[i], text, sizeof text);
		ab_jw_str(&w, text);
	}
	ab_jw_arr_end(&w);
	/* The tally is the allocation's: another agent that ran between
	 * the two readings shares it. */
	ab_jw_kstr(&w, "scope", overlapped(e, a, self, from_ms - TALLY_STALE_MS,
	    ab_now_ms()) ? "allocation-wide" : "invocation");
	ab_jw_kstr(&w, "proxy", state);
	/* Complete: the same proxy, alive, counted past the agent's end. */
	ab_jw_kbool(&w, "complete", have && fresh &&
	    end->start_ms == begin->start_ms);
	if (have) {
		ab_tally_diff_json(end, end->start_ms == begin->start_ms ?
		    begin : NULL, &w);
	} else {
		ab_jw_key(&w, "destinations");
		ab_jw_null(&w);
		ab_jw_key(&w, "totals");
		ab_jw_null(&w);
	}
	/* The invocation's own intercepted requests: its scope whatever
	 * other agents did. */
	if (who != NULL && have)
		ab_tally_requests_json(end, end->start_ms == begin->start_ms ?
		    begin : NULL, who, &w);
	else if (who != NULL) {
		ab_jw_key(&w, "requests");
		ab_jw_null(&w);
	}
	ab_jw_obj_end(&w);
	free(end);
	return ab_jw_done(&w) < 0 ? ab_buf_fail(out, AB_EENGINE, "the egress "
	    "summary", err) : 0;
}
