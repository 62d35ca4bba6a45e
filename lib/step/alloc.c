#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "cancel.h"
#include "ctr.h"
#include "engineid.h"
#include "git.h"
#include "json.h"
#include "owned.h"
#include "proxy.h"
#include "side.h"
#include "testhook.h"

static const char *const roles[AB_NVOL] = { "task", "git", "inputs" };
static const char *const targets[AB_NVOL] = { "/work", "/work/.git",
    AB_INPUTS_DIR };
/* busybox sleep as PID 1 ignores SIGTERM: the keeper is killed, never
 * stopped politely (ab_owned_remove forces).  agentbox's own busybox,
 * which every image has wherever its root came from. */
static const char *const keeper_entry[] = { "/usr/lib/agentbox/busybox",
    "sleep", "2147483647", NULL };
static const char *const keeper_env = "PATH=/usr/bin:/bin";

void ab_alloc_init(struct ab_alloc *a, const char *id, const char *sid)
{
	struct ab_volume *v = &a->eg.vol;
	int i;

	memset(a, 0, sizeof *a);
	/* ID and SID are IDs (callers check): a name that does not fit
	 * is a bug here. */
	if (ab_fmt(a->id, sizeof a->id, "%s", id) < 0)
		abort();
	for (i = 0; i < AB_NVOL; i++) {
		a->vol[i].role = roles[i];
		a->vol[i].target = targets[i];
		a->vol[i].uid = AB_AGENT_UID;
		if (ab_fmt(a->vol[i].name, sizeof a->vol[i].name,
		    "agentbox-%s-%s", id, roles[i]) < 0)
			abort();
	}
	if (ab_fmt(a->keeper, sizeof a->keeper, "agentbox-%s-keeper",
	    id) < 0 || ab_fmt(a->status, sizeof a->status, "creating") < 0)
		abort();
	/* Named even without egress: cleanup looks for them all. */
	v->role = "egress";
	v->target = AB_EGRESS_DIR;
	v->uid = AB_PROXY_UID;
	/* The socket, the tally, the CA's certificate, and the vault: a
	 * file for each invocation given a credential (vault.h), emptied
	 * when it settles. */
	v->bytes = 16LL << 20;
	v->inodes = 4096;
	if (ab_fmt(v->name, sizeof v->name, "agentbox-%s-egress", id) < 0 ||
	    ab_fmt(a->eg.proxy, sizeof a->eg.proxy, "agentbox-%s-proxy",
	    id) < 0)
		abort();
	/* An older agentbox's network, the state directory's, unless
	 * ab_alloc_create or the record says otherwise (allocrec.h). */
	if (ab_fmt(a->eg.network, sizeof a->eg.network, "agentbox-%s-egress",
	    sid) < 0)
		abort();
	v = &a->auth;
	v->role = "auth";
	v->target = AB_AUTH_DIR;
	/* Root's, though agents mount it writable: an agent owning it could
	 * rename another invocation's directory away and put one of its own
	 * in its place, into which that invocation's Codex would then write
	 * its refreshed tokens. */
	v->uid = 0;
	v->bytes = 1LL << 20;
	v->inodes = 64;
	if (ab_fmt(v->name, sizeof v->name, "agentbox-%s-auth", id) < 0)
		abort();
}

void ab_alloc_proxy(const struct ab_alloc *a, struct ab_proxy_of *px)
{
	px->id = a->id;
	px->engine = a->engine;
	px->digest = a->digest;
	px->lease = a->lease;
	px->eg = &a->eg;
}

int ab_alloc_volumes(const struct ab_alloc *a, const struct ab_volume *v[])
{
	int i;

	for (i = 0; i < AB_NVOL; i++)
		v[i] = &a->vol[i];
	v[i++] = &a->eg.vol;
	v[i++] = &a->auth;
	return i;
}

void ab_alloc_keeper_lock(const struct ab_alloc *a, const char *sid,
    int seccomp_keyword, struct ab_keeper_lock *k)
{
	int i;

	memset(k, 0, sizeof *k);
	k->labels[0] = "org.agentbox.alloc";
	k->labels[1] = a->id;
	k->labels[2] = "org.agentbox.state";
	k->labels[3] = sid;
	k->labels[4] = "org.agentbox.role";
	k->labels[5] = "keeper";
	k->env[0] = keeper_env;
	for (i = 0; i < AB_NVOL; i++) {
		k->mounts[i].volume = a->vol[i].name;
		k->mounts[i].target = a->vol[i].target;
	}
	k->l.image = a->digest;
	k->l.entrypoint = keeper_entry;
	k->l.env = k->env;
	k->l.labels = k->labels;
	k->l.memory = 32LL << 20;
	k->l.pids = 8;
	k->l.nano_cpus = 100000000LL;
	k->l.log_max_size = "64k";
	k->l.shm_size = 64LL << 20;
	k->l.nofile = 1024;
	k->l.seccomp_keyword = seccomp_keyword;
	k->l.mounts = k->mounts;
	k->l.nmounts = AB_NVOL;
	if (a->sign_in) {
		k->mounts[AB_NVOL].volume = a->auth.name;
		k->mounts[AB_NVOL].target = a->auth.target;
		k->l.nmounts = AB_NVOL + 1;
	}
}

/* Numbers into a buffer sized for them: a bug here when cut. */
static void vol_opts(const struct ab_volume *v, char *o, size_t cap)
{
	if (ab_fmt(o, cap, "size=%lld,nr_inodes=%lld,uid=%d,gid=%d,mode=%04o",
	    v->bytes, v->inodes, v->uid, v->uid, v->mode ? v->mode : 0755) < 0)
		abort();
}

/* --- the record ---------------------------------------------------- */

static void egress_save(struct ab_jw *w, const struct ab_alloc *a)
{
	char text[400];
	int i;

	ab_jw_key(w, "egress");
	if (!a->eg.on) {
		ab_jw_null(w);
		return;
	}
	ab_jw_obj(w);
	ab_jw_key(w, "allow");
	ab_jw_arr(w);
	for (i = 0; i < a->eg.list.n; i++) {
		ab_egress_entry_text(&a->eg.list.e[i], text, sizeof text);
		ab_jw_str(w, text);
	}
	ab_jw_arr_end(w);
	ab_jw_kint(w, "max_conns", a->eg.max_conns);
	ab_jw_kstr(w, "proxy_id", a->eg.proxy_id);
	ab_jw_kstr(w, "network", a->eg.network);
	ab_jw_kstr(w, "network_id", a->eg.network_id);
	ab_jw_obj_end(w);
}

int ab_alloc_save(struct ab_state *s, const struct ab_alloc *a,
    struct ab_err *err)
{
	struct ab_buf b;
	struct ab_jw w;
	int i, rc;

	ab_buf_init(&b, AB_RECORD_MAX);	/* what a record may be read back */
	ab_jw_init(&w, &b);
	ab_record_begin(&w, s, "alloc", a->id);
	ab_jw_kstr(&w, "engine", a->engine);
	ab_jw_kstr(&w, "status", a->status);
	ab_jw_kstr(&w, "image", a->image);
	ab_jw_kstr(&w, "digest", a->digest);
	ab_jw_key(&w, "deadline_ms");
	if (a->lease.set)
		ab_jw_int(&w, a->lease.at_ms);
	else
		ab_jw_null(&w);
	ab_jw_kstr(&w, "keeper", a->keeper);
	ab_jw_kstr(&w, "keeper_id", a->keeper_id);
	ab_jw_kstr(&w, "commit", a->commit);
	ab_jw_kint(&w, "stage_dev", a->stage_dev);
	ab_jw_kint(&w, "stage_ino", a->stage_ino);
	ab_jw_kint(&w, "objects_ino", a->objects_ino);
	ab_jw_key(&w, "volumes");
	ab_jw_arr(&w);
	for (i = 0; i < AB_NVOL; i++) {
		ab_jw_obj(&w);
		ab_jw_kstr(&w, "role", a->vol[i].role);
		ab_jw_kstr(&w, "name", a->vol[i].name);
		ab_jw_kint(&w, "bytes", a->vol[i].bytes);
		ab_jw_kint(&w, "inodes", a->vol[i].inodes);
		ab_jw_obj_end(&w);
	}
	ab_jw_arr_end(&w);
	egress_save(&w, a);
	ab_jw_kbool(&w, "sign_in", a->sign_in);
	ab_jw_obj_end(&w);
	rc = ab_jw_done(&w) < 0 ? ab_buf_fail(&b, AB_EENGINE, "the alloc "
	    "record", err) : ab_record_write(s, "alloc", a->id, b.data, b.len,
	    err);
	ab_buf_free(&b);
	return rc;
}

static int get_str(const struct ab_json *j, int obj, const char *key,
    char *dst, size_t cap)
{
	char *v = ab_json_str(j, ab_json_key(j, obj, key));
	int rc = v != NULL ? ab_fmt(dst, cap, "%s", v) : -1;

	free(v);
	return rc;
}

static int load_volumes(const struct ab_json *j, struct ab_alloc *a)
{
	int vs = ab_json_key(j, 0, "volumes"), i, t;
	struct ab_volume *v;
	char name[96];

	if (ab_json_count(j, vs) != AB_NVOL)
		return -1;
	for (i = 0; i < AB_NVOL; i++) {
		t = ab_json_elem(j, vs, i);
		v = &a->vol[i];
		if (!ab_json_str_eq(j, ab_json_key(j, t, "role"), roles[i]) ||
		    get_str(j, t, "name", name, sizeof name) < 0 ||
		    strcmp(name, v->name) != 0 ||
		    ab_json_int(j, ab_json_key(j, t, "bytes"), &v->bytes) < 0 ||
		    ab_json_int(j, ab_json_key(j, t, "inodes"), &v->inodes) < 0 ||
		    v->bytes < 1 || v->bytes > AB_VOL_MAX_BYTES ||
		    v->inodes < 1 || v->inodes > AB_VOL_MAX_INODES)
			return -1;
	}
	return 0;
}

/* The network is an egress network of the record's engine (proxy.h), or
 * none yet; a record that names none is an older agentbox's, on the state
 * directory's network (ab_alloc_init). */
static int network_load(const struct ab_json *j, int eg, struct ab_alloc *a)
{
	if (ab_json_key(j, eg, "network") < 0)
		return 0;
	if (get_str(j, eg, "network", a->eg.network, sizeof a->eg.network) < 0)
		return -1;
	return a->eg.network[0] == '\0' ||
	    ab_egress_network_named(a->eg.network, a->engine) ? 0 : -1;
}

/* The list is parsed again as ab-alloc parsed it: bounded the same. */
static int egress_load(const struct ab_json *j, struct ab_alloc *a)
{
	int eg = ab_json_key(j, 0, "egress"), list, i, t;
	struct ab_err skip;
	char *v;

	if (ab_json_type(j, eg) == AB_JSON_NULL)
		return 0;
	if (network_load(j, eg, a) < 0)
		return -1;
	list = ab_json_key(j, eg, "allow");
	if (ab_json_type(j, list) != AB_JSON_ARRAY ||
	    ab_json_count(j, list) < 1 ||
	    ab_json_count(j, list) > AB_EGRESS_MAX ||
	    ab_json_int(j, ab_json_key(j, eg, "max_conns"),
	    &a->eg.max_conns) < 0 || a->eg.max_conns < 1 ||
	    a->eg.max_conns > AB_EGRESS_CONNS_MAX ||
	    get_str(j, eg, "proxy_id", a->eg.proxy_id,
	    sizeof a->eg.proxy_id) < 0 ||
	    get_str(j, eg, "network_id", a->eg.network_id,
	    sizeof a->eg.network_id) < 0 ||
	    (a->eg.proxy_id[0] && !ab_is_hex(a->eg.proxy_id, 64)) ||
	    (a->eg.network_id[0] && !ab_is_hex(a->eg.network_id, 64)))
		return -1;
	for (i = 0; (t = ab_json_elem(j, list, i)) >= 0; i++) {
		v = ab_json_str(j, t);
		if (v == NULL || ab_egress_entry_parse(&a->eg.list.e[i], v,
		    &skip) < 0 || ab_egress_find(&a->eg.list,
		    a->eg.list.e[i].host, a->eg.list.e[i].port) != NULL) {
			free(v);
			return -1;
		}
		free(v);
		a->eg.list.n++;
	}
	a->eg.on = 1;
	return 0;
}

/* Absent in records written before sign-ins existed: none. */
static int sign_in_load(const struct ab_json *j, struct ab_alloc *a)
{
	int t = ab_json_key(j, 0, "sign_in");

	return t < 0 ? 0 : ab_json_bool(j, t, &a->sign_in);
}

/* A record made before engines were marked has no "engine": loaded as
 * "", which every step but ab-clean refuses (ab_engine_is). */
static int engine_load(const struct ab_json *j, struct ab_alloc *a)
{
	int t = ab_json_key(j, 0, "engine");

	a->engine[0] = '\0';
	if (t < 0)
		return 0;
	if (get_str(j, 0, "engine", a->engine, sizeof a->engine) != 0)
		return -1;
	return a->engine[0] == '\0' || ab_is_id(a->engine) ? 0 : -1;
}

static int known_status(const char *s)
{
	return strcmp(s, "creating") == 0 || strcmp(s, "ready") == 0 ||
	    strcmp(s, "seeding") == 0 || strcmp(s, "seeded") == 0;
}

/* The values the tools wrote, within the bounds they write them with. */
static int bounded(const struct ab_alloc *a)
{
	return known_status(a->status) && ab_is_id(a->image) &&
	    strncmp(a->digest, "sha256:", 7) == 0 &&
	    ab_is_hex(a->digest + 7, 64) &&
	    (a->keeper_id[0] == '\0' || ab_is_hex(a->keeper_id, 64)) &&
	    (a->commit[0] == '\0' || ab_is_hex(a->commit, 40)) &&
	    (!a->lease.set || (a->lease.at_ms > 0 &&
	    a->lease.at_ms <= AB_TIME_MAX_MS)) &&
	    a->stage_dev >= 0 && a->stage_ino >= 0 && a->objects_ino >= 0;
}

int ab_alloc_load(struct ab_state *s, const struct ab_handle *h,
    struct ab_alloc *a, struct ab_err *err)
{
	struct ab_json j;
	char keeper[96];
	int t, rc = 0;

	if (ab_record_read(s, h, &j, err) < 0)
		return -1;
	ab_alloc_init(a, h->id, s->sid);
	t = ab_json_key(&j, 0, "deadline_ms");
	if (ab_json_type(&j, t) != AB_JSON_NULL) {
		a->lease.set = 1;
		rc = ab_json_int(&j, t, &a->lease.at_ms);
	}
	/* Names are derived, never taken from the record: a record edited
	 * to name another allocation's objects is refused here. */
	if (rc < 0 || engine_load(&j, a) < 0 ||
	    get_str(&j, 0, "status", a->status, sizeof a->status) ||
	    get_str(&j, 0, "image", a->image, sizeof a->image) ||
	    get_str(&j, 0, "digest", a->digest, sizeof a->digest) ||
	    get_str(&j, 0, "keeper_id", a->keeper_id, sizeof a->keeper_id) ||
	    get_str(&j, 0, "keeper", keeper, sizeof keeper) ||
	    strcmp(keeper, a->keeper) != 0 || load_volumes(&j, a) < 0 ||
	    get_str(&j, 0, "commit", a->commit, sizeof a->commit) ||
	    ab_json_int(&j, ab_json_key(&j, 0, "stage_dev"), &a->stage_dev) ||
	    ab_json_int(&j, ab_json_key(&j, 0, "stage_ino"), &a->stage_ino) ||
	    ab_json_int(&j, ab_json_key(&j, 0, "objects_ino"),
	    &a->objects_ino) || egress_load(&j, a) < 0 ||
	    sign_in_load(&j, a) < 0 || !bounded(a))
		rc = ab_fail(err, AB_EREFUSED, "record of alloc:%s is corrupt "
		    "or out of bounds", h->id);
	ab_json_free(&j);
	return rc;
}

int ab_alloc_engine_of(struct ab_state *s, const struct ab_handle *h,
    char engine[AB_ID_LEN + 1], struct ab_err *err)
{
	struct ab_alloc a;
	struct ab_json j;
	int rc;

	if (ab_record_read(s, h, &j, err) < 0)
		return -1;
	rc = engine_load(&j, &a);
	ab_json_free(&j);
	if (rc < 0)
		return ab_fail(err, AB_EREFUSED, "record of alloc:%s names no "
		    "engine agentbox could have marked", h->id);
	memcpy(engine, a.engine, AB_ID_LEN + 1);
	return 0;
}

int ab_alloc_on(struct ab_engine *e, const struct ab_alloc *a,
    struct ab_err *err)
{
	char what[48];

	if (ab_fmt_err(err, what, sizeof what, "an allocation's ID",
	    "alloc:%s", a->id) < 0)
		return -1;
	return ab_engine_is(e, a->engine, what, err);
}

/* --- volumes ------------------------------------------------------- */

static void volume_body(struct ab_jw *w, const struct ab_volume *v,
    const char *id, const char *sid)
{
	char o[160];

	vol_opts(v, o, sizeof o);
	ab_jw_obj(w);
	ab_jw_kstr(w, "Name", v->name);
	ab_jw_kstr(w, "Driver", "local");
	ab_jw_key(w, "DriverOpts");
	ab_jw_obj(w);
	ab_jw_kstr(w, "type", "tmpfs");
	ab_jw_kstr(w, "device", "tmpfs");
	ab_jw_kstr(w, "o", o);
	ab_jw_obj_end(w);
	ab_jw_key(w, "Labels");
	ab_jw_obj(w);
	ab_jw_kstr(w, "org.agentbox.alloc", id);
	ab_jw_kstr(w, "org.agentbox.state", sid);
	ab_jw_kstr(w, "org.agentbox.role", v->role);
	ab_jw_obj_end(w);
	ab_jw_obj_end(w);
}

/* Creating a volume whose name exists silently returns the old one: the
 * reply must carry exactly our driver, options and labels. */
static int volume_check(const struct ab_json *j, const struct ab_volume *v,
    const char *id, const char *sid, struct ab_err *err)
{
	int opts = ab_json_key(j, 0, "Options");
	int labels = ab_json_key(j, 0, "Labels");
	char o[160];

	vol_opts(v, o, sizeof o);
	if (!ab_json_str_eq(j, ab_json_key(j, 0, "Name"), v->name) ||
	    !ab_json_str_eq(j, ab_json_key(j, 0, "Driver"), "local") ||
	    ab_json_count(j, opts) != 3 ||
	    !ab_json_str_eq(j, ab_json_key(j, opts, "type"), "tmpfs") ||
	    !ab_json_str_eq(j, ab_json_key(j, opts, "device"), "tmpfs") ||
	    !ab_json_str_eq(j, ab_json_key(j, opts, "o"), o) ||
	    ab_json_count(j, labels) != 3 ||
	    !ab_json_str_eq(j, ab_json_key(j, labels, "org.agentbox.alloc"),
	    id) ||
	    !ab_json_str_eq(j, ab_json_key(j, labels, "org.agentbox.state"),
	    sid) ||
	    !ab_json_str_eq(j, ab_json_key(j, labels, "org.agentbox.role"),
	    v->role))
		return ab_fail(err, AB_EREFUSED,
		    "volume %s exists with other options or labels", v->name);
	return 0;
}

int ab_alloc_volume_create(struct ab_engine *e, const struct ab_volume *v,
    const char *id, const char *sid, struct ab_err *err)
{
	struct ab_buf b;
	struct ab_jw w;
	struct ab_resp r;
	struct ab_json j;
	int rc = -1;

	ab_buf_init(&b, AB_REQUEST_MAX);
	ab_jw_init(&w, &b);
	volume_body(&w, v, id, sid);
	if (ab_jw_done(&w) < 0) {
		ab_buf_fail(&b, AB_EENGINE, "the volume's request", err);
		ab_buf_free(&b);
		return -1;
	}
	if (ab_engine_json(e, "POST", "/volumes/create", b.data,
	    "create a volume", &r, err) == 0) {
		if (r.status != 201)
			ab_engine_fail(&r, AB_EENGINE, "create a volume", err);
		else if (ab_json_parse(&j, r.body.data, r.body.len, err) < 0)
			err->code = AB_EENGINE;
		else {
			rc = volume_check(&j, v, id, sid, err);
			ab_json_free(&j);
		}
	}
	ab_resp_free(&r);
	ab_buf_free(&b);
	return rc;
}

/* Removes keeper, proxy and volumes (containers first), each only when
 * it carries this state's and this allocation's labels, then the state's
 * egress network if nothing uses it any more; 0 when all of ours are
 * gone. */
static int alloc_remove(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, struct ab_err *err)
{
	const char *ctrs[2] = { a->keeper, a->eg.proxy };
	const struct ab_volume *v[AB_NVOL + 2];
	int i, n, rc = 0;
	struct ab_err one;

	/* Containers first: a volume still referenced cannot go (409).  By
	 * name, so a create whose reply was lost is found too; never an
	 * object that is not this allocation's (ab_owned_remove checks). */
	for (i = 0; i < 2; i++)
		if (ab_owned_remove(e, AB_CONTAINER, ctrs[i], s->sid, a->id,
		    &one) < 0 && rc == 0) {
			*err = one;
			rc = -1;
		}
	n = ab_alloc_volumes(a, v);
	for (i = 0; i < n; i++) {
		if (ab_owned_remove(e, AB_VOLUME, v[i]->name, s->sid, a->id,
		    &one) < 0 && rc == 0) {
			*err = one;
			rc = -1;
		}
	}
	if (a->eg.on)
		ab_egress_network_release(s, e);
	return rc;
}

/* --- the keeper and the proxy, at once -------------------------------- */

/* The keeper and the proxy are made at the same time (side.h), each
 * path on its own copy of what it writes; an ID joins the allocation,
 * and the record, under this lock, so a save never reads half of one. */
static pthread_mutex_t publish_lock = PTHREAD_MUTEX_INITIALIZER;

static int publish_keeper(struct ab_state *s, struct ab_alloc *a,
    const char *id, struct ab_err *err)
{
	int rc;

	pthread_mutex_lock(&publish_lock);
	rc = ab_fmt_err(err, a->keeper_id, sizeof a->keeper_id,
	    "the keeper's ID", "%s", id);
	if (rc == 0)
		rc = ab_alloc_save(s, a, err);
	pthread_mutex_unlock(&publish_lock);
	return rc;
}

static int publish_proxy(struct ab_state *s, struct ab_alloc *a,
    const struct ab_alloc *own, struct ab_err *err)
{
	int rc;

	pthread_mutex_lock(&publish_lock);
	memcpy(a->eg.network, own->eg.network, sizeof a->eg.network);
	memcpy(a->eg.network_id, own->eg.network_id, sizeof a->eg.network_id);
	memcpy(a->eg.proxy_id, own->eg.proxy_id, sizeof a->eg.proxy_id);
	rc = ab_alloc_save(s, a, err);
	pthread_mutex_unlock(&publish_lock);
	return rc;
}

static int keeper_start(struct ab_state *s, struct ab_engine *e,
    struct ab_alloc *a, int seccomp_keyword, struct ab_err *err)
{
	struct ab_keeper_lock k;
	struct ab_resp r;
	char path[160], id[80];
	int conflict = 0, rc;

	ab_alloc_keeper_lock(a, s->sid, seccomp_keyword, &k);
	if (ab_ctr_create(e, &k.l, a->keeper, "create the keeper", id,
	    &conflict, err) < 0 || publish_keeper(s, a, id, err) < 0)
		return -1;
	if (ab_fmt_err(err, path, sizeof path, "the keeper's ID",
	    "/containers/%s/start", id) < 0)
		return -1;
	rc = ab_engine_json(e, "POST", path, NULL, "start the keeper", &r,
	    err);
	if (rc == 0 && r.status != 204)
		rc = ab_engine_fail(&r, AB_EENGINE, "start the keeper", err);
	ab_resp_free(&r);
	/* What the engine applied, not what was asked for. */
	if (rc == 0)
		rc = ab_ctr_check(e, &k.l, id, err);
	return rc;
}

struct proxy_job {
	struct ab_state *s;
	struct ab_alloc *a;	/* read here; written only by publish */
	struct ab_alloc own;
	int seccomp_keyword;
};

/* The proxy, from the network's look-up to running on it; its ID is on
 * disk before it starts. */
static int proxy_up(struct ab_engine *e, void *arg, struct ab_err *err)
{
	struct proxy_job *j = arg;
	struct ab_proxy_of px;
	int rc;

	ab_alloc_proxy(&j->own, &px);
	rc = ab_proxy_create(j->s, e, &px, &j->own.eg, j->seccomp_keyword,
	    err);
	if (rc == 0)
		rc = publish_proxy(j->s, j->a, &j->own, err);
	if (rc == 0) {
		ab_test_pause("alloc-proxy-created");
		rc = ab_proxy_start(j->s, e, &px, j->seccomp_keyword, err);
	}
	return rc;
}

/* The keeper here, the proxy beside it: the proxy's network and start
 * take the longest of an allocation, and neither needs the other. */
static int containers_up(struct ab_state *s, struct ab_engine *e,
    struct ab_alloc *a, int seccomp_keyword, struct ab_err *err)
{
	struct proxy_job *j = NULL;
	struct ab_side side;
	struct ab_err perr;
	int rc, prc = 0;

	if (a->eg.on) {
		if ((j = malloc(sizeof *j)) == NULL)
			return ab_fail(err, AB_EENGINE, "out of memory");
		j->s = s;
		j->a = a;
		j->own = *a;
		j->seccomp_keyword = seccomp_keyword;
		ab_side_start(&side, e, proxy_up, j);
	}
	rc = keeper_start(s, e, a, seccomp_keyword, err);
	if (j != NULL) {
		prc = ab_side_join(&side, &perr);
		free(j);
	}
	if (rc == 0 && prc < 0) {
		*err = perr;
		rc = -1;
	}
	return rc;
}

static int create_all(struct ab_state *s, struct ab_engine *e,
    struct ab_alloc *a, struct ab_err *err)
{
	struct ab_info info;
	int i;

	if (ab_engine_info(e, &info, err) < 0 ||
	    ab_lock_host_check(&info, err) < 0)
		return -1;
	for (i = 0; i < AB_NVOL; i++)
		if (ab_alloc_volume_create(e, &a->vol[i], a->id, s->sid,
		    err) < 0)
			return -1;
	if (a->eg.on && ab_alloc_volume_create(e, &a->eg.vol, a->id, s->sid,
	    err) < 0)
		return -1;
	if (a->sign_in && ab_alloc_volume_create(e, &a->auth, a->id, s->sid,
	    err) < 0)
		return -1;
	ab_test_pause("alloc-volumes-created");
	if (containers_up(s, e, a, info.seccomp_keyword, err) < 0)
		return -1;
	if (ab_fmt_err(err, a->status, sizeof a->status, "a status",
	    "ready") < 0)
		return -1;
	return ab_alloc_save(s, a, err);
}

int ab_alloc_create(struct ab_state *s, struct ab_engine *e,
    struct ab_alloc *a, struct ab_err *err)
{
	struct ab_handle h;
	struct ab_err cerr;

	/* The engine is named, and the names are on disk, before the first
	 * create that uses them. */
	if (ab_engine_mark(e, 1, a->engine, err) < 0)
		return -1;
	a->eg.network[0] = '\0';	/* the engine's, once found (proxy.h) */
	if (ab_alloc_save(s, a, err) < 0)
		return -1;
	ab_test_pause("alloc-recorded");
	/* A cancellation is honoured once the creates are done: what they
	 * made is removed, so no handle is lost with the tool. */
	if (ab_inflight_begin(s, "alloc", a->id, err) < 0)
		return -1;
	if (create_all(s, e, a, err) == 0 &&
	    ab_cancel_check("ab-alloc could finish", err) == 0) {
		ab_inflight_end(s, "alloc", a->id);
		return 0;
	}
	if (alloc_remove(s, e, a, &cerr) == 0) {
		memcpy(h.id, a->id, sizeof h.id);
		if (ab_fmt_err(&cerr, h.kind, sizeof h.kind, "a kind",
		    "alloc") == 0)
			ab_record_remove(s, &h, &cerr);
	}
	ab_inflight_end(s, "alloc", a->id);
	return -1;
}
