#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <unistd.h>

#include "adapter.h"
#include "ctr.h"
#include "file.h"
#include "git.h"
#include "hash.h"
#include "imagereg.h"
#include "json.h"
#include "profile.h"
#include "proxy.h"
#include "vault.h"
#include "version.h"

#define LEDGER "attempts"
#define LEDGER_MAX (16u << 20)

void ab_profile_env(struct ab_profile_lock *k, int *n, const char *name,
    const char *value)
{
	/* The list is fixed by this code: a full table is a bug here. */
	if (*n >= AB_PROFILE_ENV_MAX)
		abort();
	if (ab_fmt(k->env_text[*n], sizeof k->env_text[0], "%s=%s", name,
	    value) < 0) {
		k->env_cut = 1;
		return;
	}
	k->env[*n] = k->env_text[*n];
	(*n)++;
}

void ab_profile_env_int(struct ab_profile_lock *k, int *n, const char *name,
    long long value)
{
	char text[24];

	if (ab_fmt(text, sizeof text, "%lld", value) < 0) {
		k->env_cut = 1;
		return;
	}
	ab_profile_env(k, n, name, text);
}

static const char *const input_names[] = { "prompt.txt", "schema.json",
    "ca.pem", "codex.rules", "secret", "auth.json" };

void ab_profile_input(const struct ab_profile *p, enum ab_input in,
    struct ab_keeper_file *f)
{
	memset(f, 0, sizeof *f);
	f->dir = in == AB_IN_AUTH ? AB_AUTH_DIR : AB_INPUTS_DIR;
	/* An ID and a name of the table always fit: a bug here. */
	if (ab_fmt(f->sub, sizeof f->sub, "%s", p->id) < 0 ||
	    ab_fmt(f->name, sizeof f->name, "%s", input_names[in]) < 0)
		abort();
	/* Root's, so that no agent (all are 10001) opens it as its owner;
	 * the group's, so that this invocation's agent does. */
	f->uid = 0;
	f->gid = (unsigned)p->group;
	f->sub_mode = 0750;
	/* Codex rewrites its sign-in in place, through the link the probe
	 * makes (measured: the refresh lands in the copy). */
	f->mode = in == AB_IN_AUTH ? 0660 : 0440;
}

const char *ab_profile_signin(const struct ab_profile *p,
    enum ab_oauth_kind *kind)
{
	*kind = p->claude_auth[0] != '\0' ? AB_OAUTH_CLAUDE : AB_OAUTH_CODEX;
	if (p->claude_auth[0] != '\0')
		return p->claude_auth;
	return p->codex_auth[0] != '\0' ? p->codex_auth : NULL;
}

void ab_profile_input_path(const struct ab_profile *p, enum ab_input in,
    char *out, size_t cap)
{
	struct ab_keeper_file f;

	ab_profile_input(p, in, &f);
	/* Callers' buffers are sized for it: a bug here. */
	if (ab_fmt(out, cap, "%s/%s/%s", f.dir, f.sub, f.name) < 0)
		abort();
}

void ab_profile_call(const struct ab_profile *p, struct ab_profile_call *pc)
{
	struct ab_invocation *c = &pc->c;

	ab_profile_input_path(p, AB_IN_PROMPT, pc->prompt, sizeof pc->prompt);
	ab_profile_input_path(p, AB_IN_SCHEMA, pc->schema, sizeof pc->schema);
	ab_profile_input_path(p, AB_IN_RULES, pc->rules, sizeof pc->rules);
	ab_profile_input_path(p, AB_IN_SECRET, pc->secret, sizeof pc->secret);
	ab_profile_input_path(p, AB_IN_AUTH, pc->auth, sizeof pc->auth);
	c->id = p->id;
	c->provider = p->provider;
	c->phase = p->phase;
	c->model = p->model;
	c->schema = p->schema;
	c->cred_var = p->cred_var;
	c->codex_signin = p->codex_auth[0] != '\0';
	c->claude_signin = p->claude_auth[0] != '\0';
	c->allow = p->allow;
	c->nallow = p->nallow;
	c->prompt_file = pc->prompt;
	c->schema_file = pc->schema;
	c->rules_file = pc->rules;
	c->secret_file = pc->secret;
	c->auth_file = pc->auth;
}

/* The group of profile record ID when it is one of allocation ALLOC's,
 * else 0. */
static long long group_of(struct ab_state *s, const char *id,
    const char *alloc)
{
	struct ab_handle h;
	struct ab_json j;
	struct ab_err skip;
	long long g = 0;

	if (ab_fmt(h.kind, sizeof h.kind, "profile") < 0 ||
	    ab_fmt(h.id, sizeof h.id, "%s", id) < 0 ||
	    ab_record_read(s, &h, &j, &skip) < 0)
		return 0;
	if (ab_json_str_eq(&j, ab_json_key(&j, 0, "alloc"), alloc) &&
	    ab_json_int(&j, ab_json_key(&j, 0, "group"), &g) < 0)
		g = 0;
	ab_json_free(&j);
	return g;
}

int ab_profile_group_new(struct ab_state *s, struct ab_profile *p,
    struct ab_err *err)
{
	const unsigned long long span = AB_GROUP_MAX - AB_GROUP_MIN + 1;
	char (*ids)[AB_ID_LEN + 1];
	uint64_t r;
	size_t n, i;
	int tries;

	if (ab_record_list(s, "profile", &ids, &n, err) < 0)
		return -1;
	for (tries = 0; tries < 8; tries++) {
		/* Rejection sampling: every group equally likely. */
		do {
			if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) {
				free(ids);
				return ab_fail_errno(err, AB_EENGINE,
				    "getrandom");
			}
		} while (r >= UINT64_MAX - UINT64_MAX % span);
		p->group = AB_GROUP_MIN + (long long)(r % span);
		for (i = 0; i < n; i++)
			if (group_of(s, ids[i], p->alloc) == p->group)
				break;
		if (i == n) {
			free(ids);
			return 0;
		}
	}
	free(ids);
	return ab_fail(err, AB_EENGINE, "no group of its own for the "
	    "invocation");
}

/* Egress: every spelling of the proxy variables points at the relay,
 * and nothing is exempt from it. */
static void egress_env(const struct ab_alloc *a, struct ab_profile_lock *k,
    int *n)
{
	static const char *const names[] = { "HTTPS_PROXY", "https_proxy",
	    "HTTP_PROXY", "http_proxy", NULL };
	int i;

	if (!a->eg.on)
		return;
	for (i = 0; names[i] != NULL; i++)
		ab_profile_env(k, n, names[i], AB_RELAY_URL);
	ab_profile_env(k, n, "NO_PROXY", "");
	ab_profile_env(k, n, "no_proxy", "");
	ab_profile_env(k, n, "AB_PROBE_EGRESS", AB_EGRESS_SOCKET);
}

/* The agent's trust anchors.  With --ca, or with a credential the proxy
 * puts in (the proxy's CA, on the egress volume), the probe puts
 * together the image's anchors and those (AB_CA_BUNDLE), for
 * OpenSSL-based clients, and those alone (AB_CA_EXTRA), which Node and
 * Codex add to their own. */
static void ca_env(const struct ab_profile *p, const struct ab_alloc *a,
    struct ab_profile_lock *k, int *n)
{
	char ca[200];
	/* As ab_inject_on (inject.h), which needs this module; a sign-in's
	 * tokens always go through the proxy. */
	int inject = (p->cred_var[0] != '\0' && !p->cred_in_agent &&
	    ab_egress_injects(&a->eg.list, p->provider)) ||
	    p->codex_auth[0] != '\0' || p->claude_auth[0] != '\0';

	if (p->ca_sha[0] == '\0' && !inject)
		return;
	ab_profile_env(k, n, "SSL_CERT_FILE", AB_CA_BUNDLE);
	ab_profile_env(k, n, "NODE_EXTRA_CA_CERTS", AB_CA_EXTRA);
	ab_profile_env(k, n, "CODEX_CA_CERTIFICATE", AB_CA_EXTRA);
	if (p->ca_sha[0] != '\0') {
		ab_profile_input_path(p, AB_IN_CA, ca, sizeof ca);
		ab_profile_env(k, n, "AB_PROBE_CA", ca);
	}
	if (inject)
		ab_profile_env(k, n, "AB_PROBE_PROXY_CA", AB_EGRESS_DIR "/"
		    AB_VAULT_CA_NAME);
}

/* An unset runtime is runc: ab_profile_load names runc for a record made
 * before there was a choice, and a profile built in code may set none. */
static int under_runsc(const struct ab_profile *p)
{
	return p->runtime[0] != '\0' && !ab_runtime_is_runc(p->runtime);
}

struct env_at {
	struct ab_profile_lock *k;
	int *n;
};

static void env_put(void *ctx, const char *name, const char *value)
{
	struct env_at *at = ctx;

	ab_profile_env(at->k, at->n, name, value);
}

/* The environment is rebuilt from this list alone: nothing of the
 * caller's passes through. */
static void profile_env(const struct ab_profile *p, const struct ab_alloc *a,
    struct ab_profile_lock *k)
{
	struct ab_profile_call pc;
	int n = 0;
	struct env_at at = { k, &n };

	ab_profile_env(k, &n, "PATH", p->path_env);
	ab_profile_env(k, &n, "HOME", AB_HOME);
	ab_profile_env(k, &n, "TMPDIR", "/tmp");
	ab_profile_env(k, &n, "LANG", "C.UTF-8");
	ab_profile_env(k, &n, "npm_config_cache", "/tmp/.npm");
	ab_profile_env(k, &n, "XDG_CACHE_HOME", "/tmp/.cache");
	ab_profile_env(k, &n, "AB_PROBE_NONCE", p->nonce);
	ab_profile_env(k, &n, "AB_PROBE_PHASE", p->phase);
	ab_profile_env(k, &n, "AB_PROBE_HOME", AB_HOME);
	ab_profile_env_int(k, &n, "AB_PROBE_HOME_BYTES", p->home_bytes);
	ab_profile_env_int(k, &n, "AB_PROBE_TMP_BYTES", p->tmp_bytes);
	ab_profile_env_int(k, &n, "AB_PROBE_GROUP", p->group);
	if (under_runsc(p))
		ab_profile_env(k, &n, "AB_PROBE_RUNTIME", "runsc");
	egress_env(a, k, &n);
	ca_env(p, a, k, &n);
	ab_profile_call(p, &pc);
	ab_adapter_env(&pc.c, env_put, &at);
	k->env[n] = NULL;
}

int ab_attempt_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 64)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || strchr("._-", *s)))
			return 0;
	return 1;
}

long long ab_profile_memory_need(const struct ab_profile *p,
    const struct ab_alloc *a)
{
	long long writable = p->home_bytes + p->tmp_bytes;

	if (strcmp(p->phase, "execution") == 0)
		writable += a->vol[AB_VOL_TASK].bytes;
	return writable + AB_WORKING_SET;
}

static int known_phase(const char *s)
{
	return strcmp(s, "planning") == 0 || strcmp(s, "questions") == 0 ||
	    strcmp(s, "execution") == 0;
}

/* A PATH: absolute directories of plain characters, colon-separated. */
static int plain_path(const char *s)
{
	if (*s != '/')
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || strchr("/:._-", *s)))
			return 0;
	return 1;
}

static int bound_fail(const struct ab_profile *p, const char *what,
    struct ab_err *err)
{
	return ab_fail(err, AB_EREFUSED, "profile:%s: %s is out of bounds",
	    p->id, what);
}

static int cred_var_ok(const char *provider, const char *var)
{
	if (strcmp(provider, "codex") == 0)
		return strcmp(var, "CODEX_API_KEY") == 0;
	return strcmp(var, "ANTHROPIC_API_KEY") == 0 ||
	    strcmp(var, "CLAUDE_CODE_OAUTH_TOKEN") == 0;
}

/* A provider's argv is what its adapter builds, nothing else. */
static int provider_bounded(const struct ab_profile *p, struct ab_err *err)
{
	struct ab_profile_call pc;
	struct ab_err skip;
	int i, same;

	if (p->provider[0] == '\0')
		return p->cred_var[0] == '\0' && p->prompt_sha[0] == '\0' &&
		    p->codex_auth[0] == '\0' && p->claude_auth[0] == '\0' ? 0 :
		    bound_fail(p, "a credential without a provider", err);
	if (!ab_adapter_known(p->provider) ||
	    !ab_is_hex(p->prompt_sha, 64))
		return bound_fail(p, "the provider or its prompt", err);
	if (p->cred_var[0] != '\0' && (p->cred_path[0] != '/' ||
	    !cred_var_ok(p->provider, p->cred_var)))
		return bound_fail(p, "the credential", err);
	if (p->codex_auth[0] != '\0' && (p->codex_auth[0] != '/' ||
	    strcmp(p->provider, "codex") != 0 || p->cred_var[0] != '\0'))
		return bound_fail(p, "the sign-in", err);
	if (p->claude_auth[0] != '\0' && (p->claude_auth[0] != '/' ||
	    strcmp(p->provider, "claude") != 0 || p->cred_var[0] != '\0' ||
	    p->codex_auth[0] != '\0'))
		return bound_fail(p, "the sign-in", err);
	for (i = 0; i < p->nallow; i++)
		if (ab_adapter_allow_ok(p->provider, p->allow[i], &skip) < 0)
			return bound_fail(p, "an approved command", err);
	ab_profile_call(p, &pc);
	if ((same = ab_adapter_argv_is(&pc.c, p->argv, p->argc, AB_MAX_ARGV,
	    err)) < 0)
		return -1;
	if (!same)
		return bound_fail(p, "the agent's argv", err);
	return 0;
}

/* Refuses a profile whose values lie outside what ab-profile accepts
 * (AB_EREFUSED naming the value). */
static int profile_bounded(const struct ab_profile *p,
    const struct ab_alloc *a, struct ab_err *err)
{
	if (!known_phase(p->phase))
		return bound_fail(p, "the phase", err);
	if (!ab_attempt_ok(p->attempt) || !ab_is_id(p->nonce))
		return bound_fail(p, "the attempt or nonce", err);
	if (!plain_path(p->path_env))
		return bound_fail(p, "PATH", err);
	if ((p->schema_sha[0] != '\0' && !ab_is_hex(p->schema_sha, 64)) ||
	    (p->ca_sha[0] != '\0' && !ab_is_hex(p->ca_sha, 64)))
		return bound_fail(p, "a snapshot's hash", err);
	if (p->dl.at_ms <= 0 || p->dl.at_ms > AB_TIME_MAX_MS)
		return bound_fail(p, "the deadline", err);
	if (!ab_runtime_name_ok(p->runtime))
		return bound_fail(p, "the runtime", err);
	if (p->group < AB_GROUP_MIN || p->group > AB_GROUP_MAX)
		return bound_fail(p, "the invocation's group", err);
	if (p->home_bytes != AB_HOME_BYTES || p->home_inodes != AB_HOME_INODES ||
	    p->tmp_bytes != AB_TMP_BYTES || p->tmp_inodes != AB_TMP_INODES)
		return bound_fail(p, "a HOME or /tmp ceiling", err);
	if (p->memory < ab_profile_memory_need(p, a) ||
	    p->memory > AB_MEMORY_MAX)
		return bound_fail(p, "the memory limit", err);
	if (p->pids < 1 || p->pids > AB_PIDS_MAX)
		return bound_fail(p, "the pids limit", err);
	if (p->nano_cpus < AB_NANO_CPUS_MIN || p->nano_cpus > AB_NANO_CPUS_MAX)
		return bound_fail(p, "the CPU limit", err);
	if (p->argc < 1 || (p->nallow > 0 && strcmp(p->phase,
	    "execution") != 0))
		return bound_fail(p, "the argv or approved commands", err);
	if ((p->codex_auth[0] != '\0' || p->claude_auth[0] != '\0') &&
	    (!a->sign_in || !a->eg.on))
		return bound_fail(p, "a sign-in on an allocation without one",
		    err);
	return provider_bounded(p, err);
}

/* Under runsc, HOME and /tmp on volumes of the invocation's own, made
 * by ab-validate before the container, with the ceilings the tmpfs mounts
 * have under runc, inodes included: the host kernel's tmpfs enforces
 * them, gVisor's own ignores nr_inodes. */
static void runsc_lock(const struct ab_profile *p, struct ab_profile_lock *k)
{
	static const char *const roles[] = { "tmp", "home" };
	static const char *const targets[] = { "/tmp", AB_HOME };
	const long long bytes[] = { p->tmp_bytes, p->home_bytes };
	const long long inodes[] = { p->tmp_inodes, p->home_inodes };
	static const int modes[] = { 01777, 0700 };
	struct ab_volume *v;
	int i;

	for (i = 0; i < 2; i++) {
		v = &k->vols[i];
		/* An ID always fits: a bug here. */
		if (ab_fmt(v->name, sizeof v->name, "agentbox-%s-%s", p->id,
		    roles[i]) < 0)
			abort();
		v->role = roles[i];
		v->target = targets[i];
		v->bytes = bytes[i];
		v->inodes = inodes[i];
		v->uid = AB_AGENT_UID;
		v->mode = modes[i];
		k->mounts[k->l.nmounts].volume = v->name;
		k->mounts[k->l.nmounts].target = v->target;
		k->l.nmounts++;
	}
	k->nvols = 2;
	k->l.tmpfs = NULL;
}

void ab_profile_lock(const struct ab_profile *p, const struct ab_alloc *a,
    const char *digest, const char *sid, int seccomp_keyword,
    struct ab_profile_lock *k)
{
	int i;

	memset(k, 0, sizeof *k);
	profile_env(p, a, k);
	k->labels[0] = "org.agentbox.alloc";
	k->labels[1] = a->id;
	k->labels[2] = "org.agentbox.state";
	k->labels[3] = sid;
	k->labels[4] = "org.agentbox.profile";
	k->labels[5] = p->id;
	k->labels[6] = "org.agentbox.role";
	k->labels[7] = "agent";
	for (i = 0; i < AB_NVOL; i++) {
		k->mounts[i].volume = a->vol[i].name;
		k->mounts[i].target = a->vol[i].target;
		/* /work is writable in execution only; .git and the inputs
		 * never are. */
		k->mounts[i].readonly = i != AB_VOL_TASK ||
		    strcmp(p->phase, "execution") != 0;
	}
	/* Numbers and an ID always fit: a bug here. */
	if (ab_fmt(k->tmpfs_text[0], sizeof k->tmpfs_text[0],
	    "rw,nosuid,nodev,size=%lld,nr_inodes=%lld,uid=%d,gid=%d,mode=1777",
	    p->tmp_bytes, p->tmp_inodes, AB_AGENT_UID, AB_AGENT_UID) < 0 ||
	    ab_fmt(k->tmpfs_text[1], sizeof k->tmpfs_text[1],
	    "rw,nosuid,nodev,size=%lld,nr_inodes=%lld,uid=%d,gid=%d,mode=0700",
	    p->home_bytes, p->home_inodes, AB_AGENT_UID, AB_AGENT_UID) < 0)
		abort();
	k->tmpfs[0] = "/tmp";
	k->tmpfs[1] = k->tmpfs_text[0];
	k->tmpfs[2] = AB_HOME;
	k->tmpfs[3] = k->tmpfs_text[1];
	k->l.tmpfs = k->tmpfs;
	k->entry[0] = "/usr/lib/agentbox/probe.sh";
	if (ab_fmt(k->name, sizeof k->name, "agentbox-%s", p->id) < 0)
		abort();
	k->l.image = digest;
	k->l.entrypoint = k->entry;
	k->l.cmd = (const char *const *)p->argv;
	k->l.env = k->env;
	k->l.labels = k->labels;
	k->l.memory = p->memory;
	k->l.pids = p->pids;
	k->l.nano_cpus = p->nano_cpus;
	k->l.log_max_size = "1m";
	k->l.runtime = under_runsc(p) ? p->runtime : NULL;
	k->l.seccomp_keyword = seccomp_keyword;
	k->l.mounts = k->mounts;
	k->l.nmounts = AB_NVOL;
	/* The proxy's socket, read-only: connecting to it needs no more. */
	if (a->eg.on) {
		k->mounts[AB_NVOL].volume = a->eg.vol.name;
		k->mounts[AB_NVOL].target = AB_EGRESS_DIR;
		k->mounts[AB_NVOL].readonly = 1;
		k->l.nmounts = AB_NVOL + 1;
	}
	/* The sign-in's copy, which the CLI rewrites when it refreshes. */
	if (p->codex_auth[0] != '\0' || p->claude_auth[0] != '\0') {
		k->mounts[k->l.nmounts].volume = a->auth.name;
		k->mounts[k->l.nmounts].target = a->auth.target;
		k->l.nmounts++;
	}
	if (under_runsc(p))
		runsc_lock(p, k);
	k->l.shm_size = 64LL << 20;
	k->l.nofile = 1024;
	if (ab_fmt(k->group_text, sizeof k->group_text, "%lld",
	    p->group) < 0)
		abort();
	k->group_add[0] = k->group_text;
	k->l.group_add = k->group_add;
}

int ab_profile_body(const struct ab_profile_lock *k, struct ab_buf *body,
    char sha[65], struct ab_err *err)
{
	struct ab_sha256 h;

	if (k->env_cut)
		return ab_fail(err, AB_EREFUSED, "an entry of the agent's "
		    "environment is longer than %zu bytes",
		    sizeof k->env_text[0] - 1);
	if (ab_lock_body(&k->l, body, err) < 0 || ab_sha256_init(&h, err) < 0)
		return -1;
	ab_sha256_add(&h, body->data, body->len);
	return ab_sha256_hex(&h, sha, err);
}

static void str_array(struct ab_jw *w, const char *key, char *const *v,
    int n)
{
	int i;

	ab_jw_key(w, key);
	ab_jw_arr(w);
	for (i = 0; i < n; i++)
		ab_jw_str(w, v[i]);
	ab_jw_arr_end(w);
}

int ab_profile_save(struct ab_state *s, const struct ab_profile *p,
    const char *body, const char *body_sha, struct ab_err *err)
{
	struct ab_buf b;
	struct ab_jw w;
	int rc;

	ab_buf_init(&b, AB_RECORD_MAX);	/* what a record may be read back */
	ab_jw_init(&w, &b);
	ab_record_begin(&w, s, "profile", p->id);
	ab_jw_kstr(&w, "alloc", p->alloc);
	ab_jw_kstr(&w, "phase", p->phase);
	ab_jw_kstr(&w, "attempt", p->attempt);
	ab_jw_kstr(&w, "nonce", p->nonce);
	ab_jw_kstr(&w, "path", p->path_env);
	ab_jw_kstr(&w, "schema_sha256", p->schema_sha);
	ab_jw_kstr(&w, "ca_sha256", p->ca_sha);
	ab_jw_kstr(&w, "provider", p->provider);
	ab_jw_kstr(&w, "model", p->model);
	ab_jw_kstr(&w, "prompt_sha256", p->prompt_sha);
	ab_jw_kstr(&w, "credential_var", p->cred_var);
	ab_jw_kstr(&w, "credential_file", p->cred_path);
	ab_jw_kbool(&w, "credential_in_agent", p->cred_in_agent);
	ab_jw_kstr(&w, "codex_auth_file", p->codex_auth);
	ab_jw_kstr(&w, "claude_auth_file", p->claude_auth);
	ab_jw_kstr(&w, "runtime", p->runtime);
	ab_jw_key(&w, "schema");
	if (p->schema != NULL)
		ab_jw_str(&w, p->schema);
	else
		ab_jw_null(&w);
	ab_jw_kint(&w, "deadline_ms", p->dl.at_ms);
	ab_jw_kint(&w, "group", p->group);
	ab_jw_kint(&w, "memory", p->memory);
	ab_jw_kint(&w, "pids", p->pids);
	ab_jw_kint(&w, "nano_cpus", p->nano_cpus);
	ab_jw_kint(&w, "home_bytes", p->home_bytes);
	ab_jw_kint(&w, "home_inodes", p->home_inodes);
	ab_jw_kint(&w, "tmp_bytes", p->tmp_bytes);
	ab_jw_kint(&w, "tmp_inodes", p->tmp_inodes);
	str_array(&w, "argv", p->argv, p->argc);
	str_array(&w, "allow_commands", p->allow, p->nallow);
	ab_jw_kstr(&w, "agentbox", AB_VERSION);
	ab_jw_kstr(&w, "body_sha256", body_sha);
	ab_jw_key(&w, "body");
	ab_jw_raw(&w, body, strlen(body));
	ab_jw_obj_end(&w);
	rc = ab_jw_done(&w) < 0 && b.over ? ab_buf_fail(&b, AB_EUSAGE,
	    "the profile record", err) : ab_jw_done(&w) < 0 ? ab_fail(err,
	    AB_EUSAGE, "cannot encode the profile (an argument is not "
	    "UTF-8?)") : ab_record_write(s, "profile", p->id, b.data, b.len,
	    err);
	ab_buf_free(&b);
	return rc;
}

/* A key later versions added: absent in older records means "". */
static int copy_opt_str(const struct ab_json *j, const char *key, char *dst,
    size_t cap)
{
	if (ab_json_key(j, 0, key) < 0) {
		dst[0] = '\0';
		return 0;
	}
	return ab_json_copy(j, key, dst, cap);
}

static int copy_array(const struct ab_json *j, const char *key, char **v,
    int *n)
{
	int t = ab_json_key(j, 0, key), i, c = ab_json_count(j, t);

	if (ab_json_type(j, t) != AB_JSON_ARRAY || c > AB_MAX_ARGV)
		return -1;
	for (i = 0; i < c; i++)
		if ((v[i] = ab_json_str(j, ab_json_elem(j, t, i))) == NULL)
			return -1;
	v[c] = NULL;
	*n = c;
	return 0;
}

static int copy_ints(const struct ab_json *j, struct ab_profile *p)
{
	static const char *const keys[] = { "deadline_ms", "memory", "pids",
	    "nano_cpus", "home_bytes", "home_inodes", "tmp_bytes",
	    "tmp_inodes", NULL };
	long long *dst[] = { &p->dl.at_ms, &p->memory, &p->pids,
	    &p->nano_cpus, &p->home_bytes, &p->home_inodes, &p->tmp_bytes,
	    &p->tmp_inodes };
	int i;

	for (i = 0; keys[i] != NULL; i++)
		if (ab_json_int(j, ab_json_key(j, 0, keys[i]), dst[i]) < 0)
			return -1;
	p->dl.set = 1;
	/* Absent in a record made before the choice: 0, the default. */
	if (ab_json_key(j, 0, "credential_in_agent") >= 0 &&
	    ab_json_bool(j, ab_json_key(j, 0, "credential_in_agent"),
	    &p->cred_in_agent) < 0)
		return -1;
	/* Absent in a record made before invocations had groups: 0, which
	 * profile_bounded refuses. */
	if (ab_json_key(j, 0, "group") >= 0 &&
	    ab_json_int(j, ab_json_key(j, 0, "group"), &p->group) < 0)
		return -1;
	return 0;
}

static int copy_schema(const struct ab_json *j, struct ab_profile *p)
{
	int t = ab_json_key(j, 0, "schema");

	if (ab_json_type(j, t) == AB_JSON_NULL)
		return 0;
	p->schema = ab_json_str(j, t);
	return p->schema == NULL || strlen(p->schema) > 65536 ? -1 : 0;
}

int ab_profile_load(struct ab_state *s, const struct ab_handle *h,
    struct ab_profile *p, char *body_sha, struct ab_err *err)
{
	struct ab_json j;
	int rc = 0;

	memset(p, 0, sizeof *p);
	if (ab_record_read(s, h, &j, err) < 0)
		return -1;
	memcpy(p->id, h->id, sizeof p->id);
	if (ab_json_copy(&j, "alloc", p->alloc, sizeof p->alloc) ||
	    ab_json_copy(&j, "phase", p->phase, sizeof p->phase) ||
	    ab_json_copy(&j, "attempt", p->attempt, sizeof p->attempt) ||
	    ab_json_copy(&j, "nonce", p->nonce, sizeof p->nonce) ||
	    ab_json_copy(&j, "path", p->path_env, sizeof p->path_env) ||
	    ab_json_copy(&j, "schema_sha256", p->schema_sha, sizeof p->schema_sha) ||
	    ab_json_copy(&j, "ca_sha256", p->ca_sha, sizeof p->ca_sha) ||
	    ab_json_copy(&j, "provider", p->provider, sizeof p->provider) ||
	    ab_json_copy(&j, "model", p->model, sizeof p->model) ||
	    ab_json_copy(&j, "prompt_sha256", p->prompt_sha, sizeof p->prompt_sha) ||
	    ab_json_copy(&j, "credential_var", p->cred_var, sizeof p->cred_var) ||
	    ab_json_copy(&j, "credential_file", p->cred_path,
	    sizeof p->cred_path) || copy_opt_str(&j, "codex_auth_file",
	    p->codex_auth, sizeof p->codex_auth) || copy_opt_str(&j,
	    "claude_auth_file", p->claude_auth, sizeof p->claude_auth) ||
	    copy_opt_str(&j, "runtime", p->runtime, sizeof p->runtime) || copy_schema(&j, p) ||
	    ab_json_copy(&j, "body_sha256", body_sha, 65) ||
	    !ab_is_hex(body_sha, 64) || copy_ints(&j, p) ||
	    copy_array(&j, "argv", p->argv, &p->argc) ||
	    copy_array(&j, "allow_commands", p->allow, &p->nallow) ||
	    !ab_is_id(p->alloc))
		rc = ab_fail(err, AB_EREFUSED, "record of profile:%s is corrupt",
		    h->id);
	ab_json_free(&j);
	if (rc == 0 && p->runtime[0] == '\0')
		rc = ab_fmt_err(err, p->runtime, sizeof p->runtime,
		    "the default runtime", AB_RUNTIME_DEFAULT);
	if (rc < 0)
		ab_profile_free(p);
	return rc;
}

void ab_profile_free(struct ab_profile *p)
{
	int i;

	for (i = 0; i < AB_MAX_ARGV && p->argv[i] != NULL; i++)
		free(p->argv[i]);
	for (i = 0; i < AB_MAX_ARGV && p->allow[i] != NULL; i++)
		free(p->allow[i]);
	memset(p->argv, 0, sizeof p->argv);
	memset(p->allow, 0, sizeof p->allow);
	free(p->schema);
	p->schema = NULL;
}

/* Append-only and never cleaned: an attempt ID is used once, ever.  An
 * exclusive lock makes the look-up and the append one step. */
int ab_attempt_claim(struct ab_state *s, const char *attempt,
    struct ab_err *err)
{
	struct ab_buf b;
	char line[80];
	int fd, rc = 0;

	fd = openat(s->dirfd, LEDGER, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX) < 0) {
		if (fd >= 0)
			close(fd);
		return ab_fail_errno(err, AB_EENGINE, "cannot open the ledger");
	}
	/* One ID a line: look for "\nID\n" in "\n" + the ledger. */
	ab_buf_init(&b, LEDGER_MAX);
	if (ab_fmt_err(err, line, sizeof line, "--attempt", "\n%s\n",
	    attempt) < 0)
		rc = -1;
	else if (ab_buf_addc(&b, '\n') < 0)
		rc = ab_fail(err, AB_EENGINE, "out of memory");
	else if (ab_file_read_at(s->dirfd, LEDGER, &b, NULL, err) < 0)
		rc = -1;
	else if (strstr(b.data, line) != NULL)
		rc = ab_fail(err, AB_EREFUSED, "attempt %s was used before",
		    attempt);
	else if (ab_write_all(fd, line + 1, strlen(line + 1)) < 0 ||
	    fsync(fd) < 0)
		rc = ab_fail_errno(err, AB_EENGINE, "cannot write the ledger");
	ab_buf_free(&b);
	close(fd);
	return rc;
}

int ab_profile_open(struct ab_state *s, const struct ab_handle *h,
    struct ab_profile *p, struct ab_alloc *a, char *body_sha,
    struct ab_err *err)
{
	struct ab_profile_lock *k;
	struct ab_handle ah;
	struct ab_buf body;
	char sha[65];
	int rc;

	if (ab_profile_load(s, h, p, body_sha, err) < 0)
		return -1;
	memcpy(ah.id, p->alloc, sizeof ah.id);
	if (ab_fmt_err(err, ah.kind, sizeof ah.kind, "a kind", "alloc") < 0 ||
	    ab_alloc_load(s, &ah, a, err) < 0)
		return -1;
	k = malloc(sizeof *k);
	if (k == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	ab_profile_lock(p, a, a->digest, s->sid, 0, k);
	ab_buf_init(&body, AB_REQUEST_MAX);
	rc = ab_profile_body(k, &body, sha, err);
	ab_buf_free(&body);
	free(k);
	if (rc == 0 && strcmp(sha, body_sha) != 0)
		rc = ab_fail(err, AB_EREFUSED, "profile:%s: its record was "
		    "altered", p->id);
	return rc == 0 ? profile_bounded(p, a, err) : rc;
}

int ab_profile_engine_check(struct ab_state *s, struct ab_engine *e,
    const struct ab_profile *p, const struct ab_alloc *a,
    struct ab_profile_lock *k, struct ab_err *err)
{
	struct ab_keeper_lock kl;
	struct ab_proxy_of px;
	struct ab_runtime rt;
	struct ab_handle img;
	struct ab_info info;

	memcpy(img.id, a->image, sizeof img.id);
	if (ab_fmt_err(err, img.kind, sizeof img.kind, "a kind", "image") < 0 ||
	    ab_alloc_on(e, a, err) < 0 ||
	    ab_image_verify(s, e, &img, 0, NULL, err) < 0 ||
	    ab_engine_info_rt(e, &info, p->runtime, &rt, err) < 0 ||
	    ab_lock_host_check(&info, err) < 0 ||
	    ab_runtime_check(&rt, a->eg.on, e->ep.where, err) < 0)
		return -1;
	ab_alloc_keeper_lock(a, s->sid, info.seccomp_keyword, &kl);
	kl.l.running = 1;
	if (ab_ctr_check(e, &kl.l, a->keeper_id, err) < 0)
		return ab_err_wrap(err, "keeper of alloc:%s", a->id);
	ab_alloc_proxy(a, &px);
	if (a->eg.on && ab_proxy_check(s, e, &px, info.seccomp_keyword,
	    err) < 0)
		return -1;
	ab_profile_lock(p, a, a->digest, s->sid, info.seccomp_keyword, k);
	return 0;
}
