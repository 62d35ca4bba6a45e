/* ab-profile: capture one invocation as a frozen, validated-later profile. */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter.h"
#include "alloc.h"
#include "buf.h"
#include "ctr.h"
#include "deadline.h"
#include "engine.h"
#include "file.h"
#include "hash.h"
#include "image.h"
#include "imagereg.h"
#include "keeper.h"
#include "profile.h"
#include "schema.h"
#include "signin.h"
#include "size.h"
#include "state.h"
#include "tool.h"

static const char usage_text[] =
    "usage: ab-profile --alloc ALLOC --phase planning|questions|execution\n"
    "                  --attempt ID [--deadline FILE] [--schema FILE]\n"
    "                  [--ca FILE] [--allow-command CMD]...\n"
    "                  [--memory N] [--pids N] [--cpus N] [--runtime NAME]\n"
    "                  -- ARGV...\n"
    "       ab-profile --alloc ALLOC --phase PHASE --attempt ID\n"
    "                  --provider claude|codex --prompt FILE [--model NAME]\n"
    "                  [--api-key-file FILE | --claude-token-file FILE |\n"
    "                   --codex-auth FILE | --claude-auth FILE]\n"
    "                  [--credential-in-agent]\n"
    "                  [--schema FILE] [--ca FILE] [--allow-command CMD]...\n"
    "                  [--deadline FILE] [--memory N] [--pids N] [--cpus N]\n"
    "                  [--runtime NAME]\n"
    "       ab-profile --version | --help\n";

#define SCHEMA_MAX (64 * 1024)
#define CA_MAX (512 * 1024)
/* Codex's rules: a line for each approved command (AB_ALLOW_MAX bytes,
 * its words quoted) and one for each program, with its pinned path
 * (under 1 KiB). */
#define RULES_MAX (AB_MAX_ARGV * (4 * AB_ALLOW_MAX + 1024 + 256) + 256)

struct opts {
	const char *alloc, *phase, *attempt, *deadline, *memory, *pids, *cpus;
	const char *schema, *ca, *runtime;
	const char *provider, *prompt, *model, *cred, *cred_var;
	/* --codex-auth or --claude-auth: the sign-in, its flag, its kind */
	const char *auth, *auth_flag;
	enum ab_oauth_kind auth_kind;
	int cred_in_agent;
	char **allow;
	int nallow;
	char **argv;
	int argc;
};

static int usage(FILE *f, int status)
{
	fputs(usage_text, f);
	return status;
}

static int plain_model(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 100)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || strchr("._:-[]", *s)))
			return 0;
	return 1;
}

/* A provider's argv is built, never given. */
static int check_provider(const struct opts *o)
{
	struct ab_err err;
	int i;

	if (!ab_adapter_known(o->provider))
		return ab_usage_error("unknown provider %.40s (known: claude, "
		    "codex)", o->provider);
	if (strcmp(o->provider, "codex") == 0 && o->cred_var != NULL &&
	    strcmp(o->cred_var, "CLAUDE_CODE_OAUTH_TOKEN") == 0)
		return ab_usage_error("--claude-token-file goes with --provider "
		    "claude");
	if (o->auth != NULL && strcmp(o->provider, o->auth_kind ==
	    AB_OAUTH_CODEX ? "codex" : "claude") != 0)
		return ab_usage_error("%s goes with --provider %s", o->auth_flag,
		    o->auth_kind == AB_OAUTH_CODEX ? "codex" : "claude");
	if (o->auth != NULL && o->cred != NULL)
		return ab_usage_error("one credential file");
	if (o->cred_in_agent && o->cred == NULL)
		return ab_usage_error("--credential-in-agent goes with "
		    "--api-key-file or --claude-token-file");
	if (o->argc > 0)
		return ab_usage_error("--provider builds the agent's argv: "
		    "give none after --");
	if (o->prompt == NULL)
		return ab_usage_error("--provider needs --prompt FILE");
	if (o->model != NULL && !plain_model(o->model))
		return ab_usage_error("--model: 1 to 100 of [A-Za-z0-9._:-[]]");
	for (i = 0; i < o->nallow; i++)
		if (ab_adapter_allow_ok(o->provider, o->allow[i], &err) < 0)
			return ab_usage_error("%s", err.msg);
	return 0;
}

static int check(const struct opts *o)
{
	if (o->alloc == NULL || o->phase == NULL || o->attempt == NULL)
		return ab_usage_error("--alloc, --phase and --attempt are "
		    "required");
	if (strcmp(o->phase, "planning") != 0 &&
	    strcmp(o->phase, "questions") != 0 &&
	    strcmp(o->phase, "execution") != 0)
		return ab_usage_error("unknown phase %.40s", o->phase);
	if (o->nallow > 0 && strcmp(o->phase, "execution") != 0)
		return ab_usage_error("%s cannot be granted commands",
		    o->phase);
	if (!ab_attempt_ok(o->attempt))
		return ab_usage_error("attempt ID: 1 to 64 of [A-Za-z0-9._-]");
	if (o->runtime != NULL && !ab_runtime_name_ok(o->runtime))
		return ab_usage_error("--runtime: 1 to 63 of [A-Za-z0-9._-]");
	if (o->provider != NULL)
		return check_provider(o);
	if (o->prompt || o->model || o->cred || o->auth ||
	    o->cred_in_agent)
		return ab_usage_error("--prompt, --model and credentials go "
		    "with --provider");
	if (o->argc < 1 || o->argc > AB_MAX_ARGV)
		return ab_usage_error("give the agent's ARGV after --");
	return 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "alloc", required_argument, NULL, 'a' },
		{ "phase", required_argument, NULL, 'p' },
		{ "attempt", required_argument, NULL, 't' },
		{ "deadline", required_argument, NULL, 'd' },
		{ "allow-command", required_argument, NULL, 'c' },
		{ "memory", required_argument, NULL, 'm' },
		{ "pids", required_argument, NULL, 'P' },
		{ "cpus", required_argument, NULL, 'C' },
		{ "schema", required_argument, NULL, 's' },
		{ "ca", required_argument, NULL, 'A' },
		{ "provider", required_argument, NULL, 'R' },
		{ "prompt", required_argument, NULL, 'Q' },
		{ "model", required_argument, NULL, 'M' },
		{ "api-key-file", required_argument, NULL, 'K' },
		{ "claude-token-file", required_argument, NULL, 'T' },
		{ "codex-auth", required_argument, NULL, 'U' },
		{ "claude-auth", required_argument, NULL, 'L' },
		{ "credential-in-agent", no_argument, NULL, 'I' },
		{ "runtime", required_argument, NULL, 'r' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	static char *allow[AB_MAX_ARGV];
	int c;

	memset(o, 0, sizeof *o);
	o->allow = allow;
	/* "+": options end at the first operand, so ARGV is never parsed. */
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'a': o->alloc = optarg; break;
		case 'p': o->phase = optarg; break;
		case 't': o->attempt = optarg; break;
		case 'd': o->deadline = optarg; break;
		case 'm': o->memory = optarg; break;
		case 'P': o->pids = optarg; break;
		case 'C': o->cpus = optarg; break;
		case 's': o->schema = optarg; break;
		case 'A': o->ca = optarg; break;
		case 'R': o->provider = optarg; break;
		case 'Q': o->prompt = optarg; break;
		case 'M': o->model = optarg; break;
		case 'U':
		case 'L':
			if (o->auth != NULL && o->auth_kind != (c == 'U' ?
			    AB_OAUTH_CODEX : AB_OAUTH_CLAUDE))
				return ab_usage_error("one sign-in");
			o->auth = optarg;
			o->auth_flag = c == 'U' ? "--codex-auth" : "--claude-auth";
			o->auth_kind = c == 'U' ? AB_OAUTH_CODEX :
			    AB_OAUTH_CLAUDE;
			break;
		case 'I': o->cred_in_agent = 1; break;
		case 'r': o->runtime = optarg; break;
		case 'K':
		case 'T':
			if (o->cred != NULL)
				return ab_usage_error("one credential file");
			o->cred = optarg;
			o->cred_var = c == 'K' ? "ANTHROPIC_API_KEY" :
			    "CLAUDE_CODE_OAUTH_TOKEN";
			break;
		case 'c':
			if (o->nallow == AB_MAX_ARGV)
				return ab_usage_error("too many --allow-command");
			allow[o->nallow++] = optarg;
			break;
		case 'V': return ab_version();
		case 'h': return usage(stdout, -1);
		default: return usage(stderr, AB_EUSAGE);
		}
	}
	o->argv = argv + optind;
	o->argc = argc - optind;
	return check(o);
}

/* "1", "0.5", "2.25" CPUs as nano-CPUs. */
static int parse_cpus(const char *s, long long *out)
{
	char *end;
	double v = strtod(s, &end);

	if (*s < '0' || *s > '9' || *end || v < 0.01 || v > 64)
		return -1;
	*out = (long long)(v * 1e9 + 0.5);
	return *out >= AB_NANO_CPUS_MIN && *out <= AB_NANO_CPUS_MAX ? 0 : -1;
}

static int limits(const struct opts *o, const struct ab_alloc *a,
    struct ab_profile *p, struct ab_err *err)
{
	long long need;

	p->home_bytes = AB_HOME_BYTES;
	p->home_inodes = AB_HOME_INODES;
	p->tmp_bytes = AB_TMP_BYTES;
	p->tmp_inodes = AB_TMP_INODES;
	need = ab_profile_memory_need(p, a);
	p->memory = need + AB_WORKING_SET;
	/* Under runsc the pids limit also holds gVisor's own host tasks. */
	p->pids = AB_PIDS_DEFAULT + (ab_runtime_is_runc(p->runtime) ? 0 :
	    AB_PIDS_RUNSC_OWN);
	p->nano_cpus = 1000000000LL;
	if ((o->memory && ab_parse_size(o->memory, AB_MEMORY_MAX, "--memory",
	    &p->memory, err) < 0) || (o->pids && ab_parse_size(o->pids,
	    AB_PIDS_MAX, "--pids", &p->pids, err) < 0))
		return -1;
	if (o->cpus && parse_cpus(o->cpus, &p->nano_cpus) < 0)
		return ab_fail(err, AB_EUSAGE, "--cpus: 0.01 to 64: %.20s",
		    o->cpus);
	/* Below this, "disk full" in a tmpfs would be an OOM kill instead. */
	if (p->memory < need)
		return ab_fail(err, AB_EREFUSED, "memory %lld is below the "
		    "writable ceilings plus a working set: %lld needed",
		    p->memory, need);
	return 0;
}

/* A file the agent reads (the prompt, the schema, the trust anchors) is
 * read once, through O_NOFOLLOW, from a regular file, and the read itself
 * is bounded: a file that grows past the bound while it is read is
 * refused, not read past it. */
static int read_input(const char *path, size_t max, const char *what,
    struct ab_buf *b, struct ab_err *err)
{
	int rc;

	ab_buf_init(b, max);
	rc = ab_file_read_at(AT_FDCWD, path, b, NULL, err);
	if (rc < 0 && err->code == AB_EENGINE)
		err->code = AB_EUSAGE;
	if (rc == 0 && ab_buf_addc(b, '\0') == 0)
		b->len--;	/* a NUL-terminated copy, whatever it holds */
	if (rc < 0)
		ab_err_wrap(err, "%s", what);
	return rc;
}

/* The snapshots ab-profile writes (prompt, schema, CA, rules), queued
 * and put in one upload once all are read and checked (flush_inputs). */
static struct {
	struct ab_keeper_item put[4];
	int n;
} queued;

/* Its snapshot goes into the inputs filesystem, read-only to the agent
 * and unreadable to every other agent (profile.h), and its SHA-256 into
 * the record; no host path is mounted. */
static int put_input(struct ab_profile *p, enum ab_input in,
    const struct ab_buf *b, char sha[65], struct ab_err *err)
{
	struct ab_keeper_item *q = &queued.put[queued.n];
	struct ab_sha256 h;
	char *copy;

	if (ab_sha256_init(&h, err) < 0)
		return -1;
	ab_sha256_add(&h, b->data ? b->data : "", b->len);
	if (ab_sha256_hex(&h, sha, err) < 0)
		return -1;
	/* Four kinds, each at most once: a fifth is agentbox's own bug. */
	if (queued.n == (int)(sizeof queued.put / sizeof queued.put[0]))
		return ab_fail(err, AB_EENGINE, "more snapshots than kinds");
	if ((copy = malloc(b->len + 1)) == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	memcpy(copy, b->data ? b->data : "", b->len);
	ab_profile_input(p, in, &q->f);
	q->data = copy;
	q->len = b->len;
	queued.n++;
	return 0;
}

static void drop_inputs(void)
{
	while (queued.n > 0)
		free((char *)queued.put[--queued.n].data);
}

static int flush_inputs(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, struct ab_err *err)
{
	int rc = ab_keeper_put_all(s, e, a, queued.put, queued.n, err);

	drop_inputs();
	return rc;
}

static int schema_input(const struct opts *o, struct ab_profile *p,
    struct ab_err *err)
{
	struct ab_buf b;
	int rc;

	if (read_input(o->schema, SCHEMA_MAX, "schema", &b, err) < 0) {
		ab_buf_free(&b);
		return -1;
	}
	/* Only what agentbox can check is accepted: a keyword it would
	 * ignore would be a promise it does not keep. */
	rc = ab_schema_check(b.data ? b.data : "", b.len, err);
	if (rc == 0)
		rc = put_input(p, AB_IN_SCHEMA, &b, p->schema_sha, err);
	if (rc == 0 && o->provider != NULL &&
	    (p->schema = strdup(b.data ? b.data : "")) == NULL)
		rc = ab_fail(err, AB_EENGINE, "out of memory");
	ab_buf_free(&b);
	return rc;
}

static int plain_input(const char *path, size_t max, const char *what,
    enum ab_input in, struct ab_profile *p, char sha[65], struct ab_err *err)
{
	struct ab_buf b;
	int rc;

	rc = read_input(path, max, what, &b, err);
	/* Trust anchors are PEM: anything else is a mistake worth naming. */
	if (rc == 0 && strcmp(what, "--ca") == 0 && (b.data == NULL ||
	    memmem(b.data, b.len, "-----BEGIN CERTIFICATE-----", 27) == NULL))
		rc = ab_fail(err, AB_EUSAGE, "--ca: no PEM certificate in it");
	if (rc == 0 && strcmp(what, "prompt") == 0 && b.len == 0)
		rc = ab_fail(err, AB_EUSAGE, "prompt: the file is empty");
	if (rc == 0)
		rc = put_input(p, in, &b, sha, err);
	ab_buf_free(&b);
	return rc;
}

/* The credential is only looked at here (a readable regular file, not
 * empty, bounded): ab-validate reads it when it creates the container,
 * and only its path is recorded. */
static int credential(const struct opts *o, struct ab_profile *p,
    struct ab_err *err)
{
	struct ab_buf b;
	int rc;

	if (o->cred == NULL)
		return 0;
	if (realpath(o->cred, p->cred_path) == NULL)
		return ab_fail_errno(err, AB_EUSAGE, "credential file %.200s",
		    o->cred);
	ab_buf_init(&b, AB_SECRET_MAX);
	rc = ab_file_read_at(AT_FDCWD, o->cred, &b, NULL, err);
	if (rc == 0 && b.len == 0)
		rc = ab_fail(err, AB_EUSAGE, "credential file %.200s is empty",
		    o->cred);
	if (rc < 0 && err->code == AB_EENGINE)
		err->code = AB_EUSAGE;
	if (b.data != NULL)
		explicit_bzero(b.data, b.len);
	ab_buf_free(&b);
	if (rc == 0)
		rc = ab_fmt_err(err, p->cred_var, sizeof p->cred_var,
		    "--cred-var", "%s", strcmp(o->provider, "codex") == 0 ?
		    "CODEX_API_KEY" : o->cred_var);
	return rc;
}

/* A credential goes to the allocation's proxy, which puts it in for its
 * provider's API host (inject.h): that host must be an entry of the
 * egress, or the agent would hold a credential it cannot use, unless
 * the caller asked for the credential in the agent's environment. */
static int cred_route(const struct opts *o, const struct ab_alloc *a,
    struct ab_profile *p, struct ab_err *err)
{
	const char *host;
	int port = 443;

	if (o->cred == NULL)
		return 0;
	p->cred_in_agent = o->cred_in_agent;
	if (o->cred_in_agent || (a->eg.on &&
	    ab_egress_injects(&a->eg.list, o->provider)))
		return 0;
	host = ab_egress_api(o->provider, &port);
	return ab_fail(err, AB_EREFUSED, "%s: alloc:%s does not allow %s:%d, "
	    "where the egress proxy puts the credential in (ab-alloc "
	    "--egress), and --credential-in-agent was not given",
	    strcmp(o->cred_var, "CLAUDE_CODE_OAUTH_TOKEN") == 0 ?
	    "--claude-token-file" : "--api-key-file", a->id,
	    host != NULL ? host : "its API host", port);
}

/* A sign-in needs the allocation's auth volume and egress to its CLI's
 * API host and token host (egress.h), where the proxy puts its tokens
 * in and refreshes them; the file is checked here and read again by
 * ab-validate, when the agent is given placeholders. */
static int sign_in(const struct opts *o, const struct ab_alloc *a,
    struct ab_profile *p, struct ab_err *err)
{
	const struct ab_egress_signin *si;
	char *path;
	struct ab_signin sn;
	struct ab_buf b;
	int rc;

	if (o->auth == NULL)
		return 0;
	si = ab_egress_signin(o->provider);
	path = o->auth_kind == AB_OAUTH_CODEX ? p->codex_auth : p->claude_auth;
	if (!a->sign_in)
		return ab_fail(err, AB_EREFUSED, "%s: alloc:%s has no sign-in "
		    "volume (ab-alloc --sign-in)", o->auth_flag, a->id);
	if (!a->eg.on || !ab_egress_find(&a->eg.list, si->api[0], 443) ||
	    !ab_egress_find(&a->eg.list, si->token_host, 443))
		return ab_fail(err, AB_EREFUSED, "%s: alloc:%s does not allow "
		    "%s:443 and %s:443", o->auth_flag, a->id, si->api[0],
		    si->token_host);
	if (realpath(o->auth, path) == NULL)
		return ab_fail_errno(err, AB_EUSAGE, "%s %.200s", o->auth_flag,
		    o->auth);
	rc = ab_signin_read(o->auth_kind, path, &b, &sn, err);
	if (b.data != NULL)
		explicit_bzero(b.data, b.len);
	ab_buf_free(&b);
	if (rc < 0) {
		err->code = AB_EUSAGE;
		ab_err_wrap(err, "%s %.200s", o->auth_flag, o->auth);
	}
	return rc;
}

/* Codex's approvals, as its rules, beside the prompt: read-only to the
 * agent, derived from the record's list (so not hashed apart). */
static int codex_rules(struct ab_profile *p, char *const *pins,
    struct ab_err *err)
{
	struct ab_profile_call pc;
	struct ab_buf b;
	char sha[65];
	int rc;

	ab_profile_call(p, &pc);
	ab_buf_init(&b, RULES_MAX);
	rc = ab_adapter_rules(&pc.c, pins, &b);
	if (rc < 0)
		rc = ab_buf_fail(&b, AB_EUSAGE, "Codex's rules", err);
	if (rc == 0)
		rc = put_input(p, AB_IN_RULES, &b, sha, err);
	ab_buf_free(&b);
	return rc;
}

/* The argv is built for one version of the CLI: its flags and what they
 * hold were measured on it.  Any other is refused, not driven blind. */
static int cli_pinned(struct ab_state *s, const struct ab_alloc *a,
    const char *provider, struct ab_err *err)
{
	const char *component, *version;
	char have[64] = "";
	int rc;

	ab_adapter_cli(provider, &component, &version);
	rc = ab_image_version(s, a->image, component, have, sizeof have, err);
	if (rc < 0)
		return -1;
	if (rc == 0 || strcmp(have, version) != 0)
		return ab_fail(err, AB_EREFUSED, "--provider %s drives %s %s; "
		    "image:%s has %s (ab-image build --recipe agents)", provider,
		    component, version, a->image, rc ? have : "none");
	return 0;
}

static int provider_argv(struct ab_profile *p, struct ab_err *err)
{
	struct ab_profile_call pc;

	ab_profile_call(p, &pc);
	return ab_adapter_argv(&pc.c, p->argv, &p->argc, AB_MAX_ARGV, err);
}

static int snapshots(const struct opts *o, struct ab_state *s,
    const struct ab_alloc *a, struct ab_profile *p, char *const *pins,
    struct ab_err *err)
{
	if (o->schema != NULL && schema_input(o, p, err) < 0)
		return -1;
	if (o->ca != NULL && plain_input(o->ca, CA_MAX, "--ca", AB_IN_CA, p,
	    p->ca_sha, err) < 0)
		return -1;
	if (o->provider == NULL)
		return 0;
	if (cli_pinned(s, a, o->provider, err) < 0)
		return -1;
	if (plain_input(o->prompt, AB_PROMPT_MAX, "prompt", AB_IN_PROMPT, p,
	    p->prompt_sha, err) < 0 || credential(o, p, err) < 0 ||
	    cred_route(o, a, p, err) < 0 || sign_in(o, a, p, err) < 0)
		return -1;
	if (ab_fmt_err(err, p->provider, sizeof p->provider, "--provider",
	    "%s", o->provider) < 0 || (o->model != NULL &&
	    ab_fmt_err(err, p->model, sizeof p->model, "--model", "%s",
	    o->model) < 0))
		return -1;
	if (strcmp(p->provider, "codex") == 0 &&
	    codex_rules(p, pins, err) < 0)
		return -1;
	return provider_argv(p, err);
}

static void free_pins(char **pins, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(pins[i]);
}

/* An approved command's program is one of the image's, found on the
 * image's PATH as the agent's shell finds it (the allocation's keeper
 * runs the image), never a path: a repository's ./git is not git.
 * PINS[i] gets the file allow[i] runs; Codex's rules pin it there. */
static int approved_programs(struct ab_engine *e, const struct ab_alloc *a,
    struct ab_profile *p, char **pins, struct ab_err *err)
{
	char name[AB_ALLOW_MAX + 1], path[1024];
	int i, rc = 0;

	for (i = 0; rc == 0 && i < p->nallow; i++) {
		ab_adapter_first_word(p->allow[i], name, sizeof name);
		rc = strchr(name, '/') != NULL ? 0 : ab_ctr_which(e,
		    a->keeper_id, p->path_env, name, path, sizeof path, err);
		if (rc == 0)
			rc = ab_fail(err, AB_EREFUSED, "--allow-command %.60s: "
			    "%.60s is no program on image:%s's PATH (%s)",
			    p->allow[i], name, a->image, p->path_env);
		else if (rc > 0)
			rc = (pins[i] = strdup(path)) != NULL ? 0 :
			    ab_fail(err, AB_EENGINE, "out of memory");
	}
	return rc;
}

/* A runtime other than runc is refused here already when the engine
 * cannot show it keeps the guarantees; ab-validate and ab-run ask again. */
static int runtime_ok(struct ab_engine *e, const struct ab_alloc *a,
    const struct ab_profile *p, struct ab_err *err)
{
	struct ab_runtime rt;
	struct ab_info info;

	if (ab_runtime_is_runc(p->runtime))
		return 0;
	if (ab_engine_info_rt(e, &info, p->runtime, &rt, err) < 0)
		return -1;
	return ab_runtime_check(&rt, a->eg.on, e->ep.where, err);
}

/* The profile itself, once its deadline and its allocation's engine are
 * known: every engine call on E, the snapshots in one upload. */
static int capture_on(const struct opts *o, struct ab_state *s,
    struct ab_engine *e, struct ab_alloc *a, struct ab_profile *p,
    struct ab_err *err)
{
	struct ab_profile_lock k;
	struct ab_buf body;
	char sha[65], *pins[AB_MAX_ARGV + 1] = { NULL };
	int i, rc;

	if (ab_fmt_err(err, p->phase, sizeof p->phase, "--phase", "%s",
	    o->phase) < 0 || ab_fmt_err(err, p->attempt, sizeof p->attempt,
	    "--attempt", "%s", o->attempt) < 0 ||
	    ab_fmt_err(err, p->runtime, sizeof p->runtime, "--runtime", "%s",
	    o->runtime ? o->runtime : AB_RUNTIME_DEFAULT) < 0)
		return -1;
	memcpy(p->alloc, a->id, sizeof p->alloc);
	for (i = 0; i < o->argc; i++)
		p->argv[i] = o->argv[i];
	p->argc = o->argc;
	for (i = 0; i < o->nallow; i++)
		p->allow[i] = o->allow[i];
	p->nallow = o->nallow;
	if (runtime_ok(e, a, p, err) < 0 || limits(o, a, p, err) < 0 ||
	    ab_image_path(s, a->image, p->path_env, sizeof p->path_env,
	    err) < 0 || ab_new_id(p->id, err) < 0 ||
	    ab_new_id(p->nonce, err) < 0 || ab_profile_group_new(s, p, err) < 0)
		return -1;
	if (approved_programs(e, a, p, pins, err) < 0 ||
	    snapshots(o, s, a, p, pins, err) < 0 ||
	    flush_inputs(s, e, a, err) < 0) {
		drop_inputs();
		free_pins(pins, p->nallow);
		return -1;
	}
	free_pins(pins, p->nallow);
	/* The body is checked against the default seccomp form; ab-validate
	 * rebuilds it for the engine it meets and compares the parameters. */
	ab_profile_lock(p, a, a->digest, s->sid, 0, &k);
	ab_buf_init(&body, AB_REQUEST_MAX);
	rc = ab_profile_body(&k, &body, sha, err);
	if (rc == 0)
		rc = ab_attempt_claim(s, p->attempt, err);
	if (rc == 0)
		rc = ab_profile_save(s, p, body.data, sha, err);
	ab_buf_free(&body);
	return rc;
}

static int capture(const struct opts *o, struct ab_state *s,
    struct ab_profile *p, struct ab_err *err)
{
	struct ab_deadline given;
	struct ab_engine e;
	struct ab_handle h;
	struct ab_alloc a;
	int rc;

	if (ab_handle_parse(&h, o->alloc, "alloc", err) < 0 ||
	    ab_alloc_load(s, &h, &a, err) < 0)
		return -1;
	if (strcmp(a.status, "seeded") != 0)
		return ab_fail(err, AB_EREFUSED, "alloc:%s is %s, not seeded",
		    a.id, a.status);
	if (ab_deadline_load(&given, o->deadline, err) < 0)
		return -1;
	if (!given.set)
		return ab_fail(err, AB_EUSAGE, "a profile needs a deadline: "
		    "--deadline FILE or AB_DEADLINE");
	p->dl = given;
	ab_deadline_shrink(&p->dl, &a.lease);
	/* The allocation's own engine, before anything is put on it. */
	if (ab_deadline_check(&p->dl, "the profile was captured", err) < 0 ||
	    ab_engine_open(&e, &p->dl, err) < 0)
		return -1;
	rc = ab_alloc_on(&e, &a, err);
	if (rc == 0)
		rc = capture_on(o, s, &e, &a, p, err);
	ab_engine_close(&e);
	return rc;
}

int main(int argc, char **argv)
{
	struct ab_profile p;
	struct ab_state s;
	struct ab_err err;
	struct opts o;
	int rc;

	ab_prog = "ab-profile";
	rc = parse(argc, argv, &o);
	if (rc != 0)
		return rc < 0 ? 0 : rc;
	memset(&err, 0, sizeof err);
	memset(&p, 0, sizeof p);
	if (ab_state_open(&s, &err) < 0)
		return ab_report(&err);
	rc = capture(&o, &s, &p, &err);
	if (rc == 0)
		rc = ab_print_handle("profile", p.id, &err);
	ab_state_close(&s);
	/* A provider's argv is built here; a plain one is the caller's. */
	for (int i = 0; o.provider != NULL && i < p.argc; i++)
		free(p.argv[i]);
	free(p.schema);
	return rc < 0 ? ab_report(&err) : 0;
}
