/* ab-run: run a validated container to its end and record the result. */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter.h"
#include "alloc.h"
#include "cancel.h"
#include "ctr.h"
#include "ctrrec.h"
#include "deadline.h"
#include "engine.h"
#include "file.h"
#include "image.h"
#include "imagereg.h"
#include "inject.h"
#include "json.h"
#include "keeper.h"
#include "profile.h"
#include "progress.h"
#include "proxy.h"
#include "run.h"
#include "side.h"
#include "signin.h"
#include "size.h"
#include "state.h"
#include "tool.h"

static const char usage_text[] =
    "usage: ab-run CTR [--deadline FILE] [--stdout FILE] [--stderr FILE]\n"
    "              [--output-limit BYTES] [--grace SECONDS] [--quiet]\n"
    "       ab-run --show RESULT\n"
    "       ab-run --version | --help\n";

struct opts {
	const char *ctr, *show, *deadline, *out, *err;
	long long limit, grace_ms;
	int quiet;
};

struct ctx {
	struct ab_agent agent;
	struct ab_state s;
	struct ab_engine e;
	struct ab_ctr c;
	struct ab_profile p;
	struct ab_alloc a;
	struct ab_profile_lock k;
	char body_sha[65];
	char result[AB_ID_LEN + 1];
	struct ab_run r;
	struct ab_tally *tally;	/* the proxy's, read just before the start */
	char who[AB_TALLY_WHO + 1];	/* this invocation's in it; "" */
	long long tally_ms;
	struct ab_progress progress;
	char prefix[40];	/* "ab-run: agent: " */
};

static int usage(FILE *f, int status)
{
	fputs(usage_text, f);
	return status;
}

static int grace(const char *s, long long *ms)
{
	char *end;
	long v;

	v = strtol(s, &end, 10);
	if (*s < '0' || *s > '9' || *end != '\0' || v > 600)
		return ab_usage_error("--grace takes 0 to 600 seconds");
	*ms = v * 1000;
	return 0;
}

static int option(int c, struct opts *o)
{
	struct ab_err err;

	switch (c) {
	case 'd': o->deadline = optarg; return 0;
	case 'o': o->out = optarg; return 0;
	case 'e': o->err = optarg; return 0;
	case 's': o->show = optarg; return 0;
	case 'q': o->quiet = 1; return 0;
	case 'g': return grace(optarg, &o->grace_ms);
	case 'l':
		if (ab_parse_size(optarg, 1LL << 30, "--output-limit",
		    &o->limit, &err) == 0)
			return 0;
		return ab_usage_error("%s", err.msg);
	case 'V': return ab_version();
	case 'h': return usage(stdout, -1);
	default: return usage(stderr, AB_EUSAGE);
	}
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "deadline", required_argument, NULL, 'd' },
		{ "stdout", required_argument, NULL, 'o' },
		{ "stderr", required_argument, NULL, 'e' },
		{ "output-limit", required_argument, NULL, 'l' },
		{ "grace", required_argument, NULL, 'g' },
		{ "show", required_argument, NULL, 's' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c, rc;

	memset(o, 0, sizeof *o);
	o->limit = AB_RUN_RECORD_OUTPUT;
	o->grace_ms = 10000;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1)
		if ((rc = option(c, o)) != 0)
			return rc;
	if (o->show != NULL)
		return argc == optind ? 0 : usage(stderr, AB_EUSAGE);
	if (argc - optind != 1)
		return usage(stderr, AB_EUSAGE);
	o->ctr = argv[optind];
	/* The record holds at most this much of each stream itself. */
	if (o->limit > AB_RUN_RECORD_OUTPUT && (o->out == NULL ||
	    o->err == NULL))
		return ab_usage_error("an --output-limit above 1M needs "
		    "--stdout FILE and --stderr FILE");
	return 0;
}

static int show(const char *text)
{
	struct ab_state s;
	struct ab_handle h;
	struct ab_json j;
	struct ab_err err;
	const char *p;
	size_t n;
	int rc = -1;

	memset(&err, 0, sizeof err);
	s.dirfd = -1;
	if (ab_handle_parse(&h, text, "result", &err) == 0 &&
	    ab_state_open(&s, &err) == 0 &&
	    ab_record_read(&s, &h, &j, &err) == 0) {
		ab_json_span(&j, 0, &p, &n);
		if (fwrite(p, 1, n, stdout) == n && putchar('\n') != EOF &&
		    fflush(stdout) == 0)
			rc = 0;
		else
			ab_fail_errno(&err, AB_EENGINE, "cannot write the result");
		ab_json_free(&j);
	}
	ab_state_close(&s);
	return rc < 0 ? ab_report(&err) : 0;
}

/* A provider's CLI: its stream is read into the result's agent section,
 * the answer checked against the profile's schema. */
static int adapter(struct ctx *c, struct ab_err *err)
{
	const char *component, *version;

	ab_agent_init(&c->agent, c->p.provider, c->p.schema,
	    c->p.schema ? strlen(c->p.schema) : 0);
	c->r.agent = &c->agent;
	ab_adapter_cli(c->p.provider, &component, &version);
	if (ab_image_version(&c->s, c->a.image, component,
	    c->r.cli_version, sizeof c->r.cli_version, err) < 0)
		return -1;
	return 0;
}

/* The credential goes as soon as the agent settled (or never started):
 * the vault's file and the snapshot emptied in place (inject.h), within
 * a cleanup budget of its own, beside the egress summary (side.h). */
static int forget_secret(struct ab_engine *e, void *arg, struct ab_err *err)
{
	struct ctx *c = arg;
	struct ab_budget saved;
	struct ab_err skip;

	(void)err;
	ab_engine_budget_begin(e, AB_CLEANUP_MS, &saved);
	if (ab_inject_forget(&c->s, e, &c->a, &c->p, &skip) < 0)
		ab_say("could not forget the credential: %s", skip.msg);
	ab_engine_budget_end(e, &saved);
	return 0;
}

static int forgets(const struct ctx *c)
{
	return c->p.cred_var[0] != '\0' && c->e.easy != NULL;
}

/* What the agent was given to sign in with, read back from the inputs
 * or the auth volume: what it could echo. */
static int given(struct ctx *c, enum ab_input in, struct ab_buf *b,
    struct ab_err *err)
{
	char path[200];

	ab_profile_input_path(&c->p, in, path, sizeof path);
	ab_buf_init(b, in == AB_IN_SECRET ? AB_SECRET_MAX : AB_SIGNIN_MAX);
	return ab_keeper_get(&c->s, &c->e, &c->a, path, b, err);
}

static void wipe(struct ab_buf *b)
{
	if (b->data != NULL)
		explicit_bzero(b->data, b->len);
	ab_buf_free(b);
}

/* A sign-in's placeholders, each masked: what the agent holds. */
static int sign_in_masked(struct ctx *c, const struct ab_buf *b,
    struct ab_err *err)
{
	static const char *const keys[] = { "tokens.id_token",
	    "tokens.access_token", "tokens.refresh_token", "OPENAI_API_KEY",
	    "claudeAiOauth.accessToken", "claudeAiOauth.refreshToken" };
	struct ab_json j;
	size_t i, n;
	char *v;
	int rc = 0;

	if (ab_json_parse(&j, b->data ? b->data : "", b->len, err) < 0)
		return ab_fail(err, AB_EREFUSED, "the sign-in's copy is not "
		    "JSON");
	for (i = 0; rc == 0 && i < sizeof keys / sizeof keys[0]; i++) {
		/* By its length: a token holding a NUL is masked whole,
		 * not skipped. */
		if ((v = ab_json_strn(&j, ab_json_get(&j, 0, keys[i]),
		    &n)) == NULL)
			continue;
		rc = ab_progress_secret(&c->progress, v, n);
		explicit_bzero(v, n);
		free(v);
	}
	explicit_bzero(j.text, j.len);
	ab_json_free(&j);
	return rc < 0 ? ab_fail(err, AB_EENGINE, "out of memory") : 0;
}

/* Every credential the agent holds, to be masked in its lines. */
static int masked(struct ctx *c, struct ab_err *err)
{
	enum ab_oauth_kind kind;
	struct ab_buf b;
	int rc = 0;

	if (c->p.cred_var[0] != '\0') {
		rc = given(c, AB_IN_SECRET, &b, err);
		if (rc == 0 && ab_progress_secret(&c->progress, b.data ?
		    b.data : "", b.len) < 0)
			rc = ab_fail(err, AB_EENGINE, "out of memory");
		/* The placeholder names the requests the proxy lists. */
		if (rc == 0 && ab_inject_on(&c->p, &c->a) && b.len > 0)
			rc = ab_inject_who(&c->p, b.data, b.len, c->who,
			    sizeof c->who, err);
		wipe(&b);
	}
	/* Injected, the agent holds a placeholder, and the proxy gives it
	 * the placeholder wherever an answer carries the credential whole;
	 * an answer may still carry it cut by its own encoding (a model's
	 * text streamed in pieces), which only these lines see whole. */
	if (rc == 0 && ab_inject_on(&c->p, &c->a)) {
		rc = ab_inject_read(&c->p, &b, err);
		if (rc == 0 && b.len > 0 && ab_progress_secret(&c->progress,
		    b.data, b.len) < 0)
			rc = ab_fail(err, AB_EENGINE, "out of memory");
		if (rc < 0)
			ab_err_wrap(err, "credential %s", c->p.cred_var);
		wipe(&b);
	}
	if (rc == 0 && ab_profile_signin(&c->p, &kind) != NULL) {
		rc = given(c, AB_IN_AUTH, &b, err);
		if (rc == 0)
			rc = sign_in_masked(c, &b, err);
		if (rc == 0)
			rc = ab_inject_signin_who(&c->p, c->who, sizeof c->who,
			    err);
		wipe(&b);
	}
	return rc;
}

/* The agent's steps on standard error as they come, once every
 * credential it holds is known to be masked; when one cannot be read
 * back, no step is told at all. */
static int progress_on(struct ctx *c, const struct opts *o,
    struct ab_err *err)
{
	if (c->r.agent == NULL)
		return 0;
	if (ab_fmt_err(err, c->prefix, sizeof c->prefix, "the tool's name",
	    "%s: agent: ", ab_prog) < 0)
		return -1;
	ab_progress_init(&c->progress, o->quiet ? -1 : 2, c->prefix);
	if (masked(c, err) < 0) {
		ab_progress_free(&c->progress);
		/* Held by the agent itself, it could reach the record
		 * unmasked: the run does not start. */
		if (c->p.cred_var[0] != '\0' && !ab_inject_on(&c->p, &c->a))
			return ab_err_wrap(err, "the credential could not be "
			    "read back to be masked"), -1;
		if (!o->quiet)
			ab_say("no agent lines: the credential could not be "
			    "read to be masked: %s", err->msg);
		return 0;
	}
	c->r.mask = &c->progress;
	if (!o->quiet)
		c->agent.progress = &c->progress;
	return 0;
}

/* The last agent line: how it finished, after any count of lines not
 * shown. */
static void progress_end(struct ctx *c)
{
	char text[64];
	int n;

	if (c->agent.progress == NULL)
		return;
	/* A status word always fits; cut, the line is not shown. */
	n = c->r.probe_ok && ab_fmt(text, sizeof text, "finished (%s)",
	    ab_agent_status(&c->agent)) == 0 ? (int)strlen(text) : 0;
	ab_progress_end(&c->progress, n > 0 ? text : NULL, (size_t)n);
}

/* The sign-in's copy, read back and emptied, within a cleanup budget. */
/* Once the agent settled, the tokens the proxy refreshed go back over
 * FILE if FILE is as ab-validate read it; otherwise they are kept in the
 * state directory and named, for the user to choose (the old refresh
 * token may be spent).  The agent's copy is never read: it holds
 * placeholders, and whatever it wrote there.  Then the vault's files
 * and the copy are emptied.  The exit status stays the agent's. */
static void sign_in_back(struct ctx *c)
{
	struct ab_signin_back *o = &c->r.sign_back;
	enum ab_oauth_kind kind;
	const char *path = ab_profile_signin(&c->p, &kind);
	struct ab_budget saved;
	struct ab_err err;

	if (!c->c.sign_in || c->e.easy == NULL || path == NULL)
		return;
	c->r.sign_in = 1;
	ab_engine_budget_begin(&c->e, AB_CLEANUP_MS, &saved);
	if (ab_inject_signin_settle(&c->s, &c->e, &c->a, &c->p, &c->c.sn, o,
	    c->r.sign_kept, sizeof c->r.sign_kept, &err) < 0)
		ab_say("could not forget the sign-in: %s", err.msg);
	if (o->problem[0] != '\0')
		ab_say("%s %s: %s%s%s", kind == AB_OAUTH_CODEX ?
		    "--codex-auth" : "--claude-auth", path, o->problem,
		    c->r.sign_kept[0] ? "; the refreshed sign-in is in " : "",
		    c->r.sign_kept);
	ab_engine_budget_end(&c->e, &saved);
}

/* ctr -> profile -> alloc, each bound to the next. */
static int load(struct ctx *c, const struct opts *o, struct ab_err *err)
{
	struct ab_deadline given;
	struct ab_handle h;

	if (ab_handle_parse(&h, o->ctr, "ctr", err) < 0 ||
	    ab_deadline_load(&given, o->deadline, err) < 0 ||
	    ab_state_open(&c->s, err) < 0 ||
	    ab_ctr_load(&c->s, &h, &c->c, err) < 0)
		return -1;
	memcpy(h.id, c->c.profile, sizeof h.id);
	if (ab_fmt_err(err, h.kind, sizeof h.kind, "a kind", "profile") < 0 ||
	    ab_profile_open(&c->s, &h, &c->p, &c->a, c->body_sha, err) < 0)
		return -1;
	if (strcmp(c->p.alloc, c->c.alloc) != 0)
		return ab_fail(err, AB_EREFUSED, "ctr:%s is not bound to its "
		    "profile's allocation", c->c.id);
	/* Only ever closer: a later --deadline cannot extend the profile's. */
	c->r.dl = c->p.dl;
	ab_deadline_shrink(&c->r.dl, &given);
	c->r.cid = c->c.container;
	c->r.nonce = c->p.nonce;
	c->r.grace_ms = o->grace_ms;
	c->r.out.path = o->out;
	c->r.err.path = o->err;
	c->r.out.limit = c->r.err.limit = o->limit;
	if (ab_run_open_outputs(&c->r, err) < 0)
		return -1;
	if (c->p.provider[0] != '\0' && adapter(c, err) < 0)
		return -1;
	return ab_new_id(c->result, err);
}

/* Image, keeper and container, against what the code makes of the
 * profile for this engine.  Any refusal is drift. */
static int check(struct ctx *c, struct ab_err *err)
{
	if (ab_profile_engine_check(&c->s, &c->e, &c->p, &c->a, &c->k, err) < 0)
		return -1;
	return ab_run_check(&c->e, &c->r, &c->k.l, err);
}

/* What the proxy counted before the agent starts: the run's egress is
 * what it counts from here on.  None read, no run: its record could not
 * be told from another's.  Read beside the credential's (side.h). */
static int baseline(struct ab_engine *e, void *arg, struct ab_err *err)
{
	struct ctx *c = arg;
	struct ab_proxy_of px;

	if ((c->tally = malloc(sizeof *c->tally)) == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	c->tally_ms = ab_now_ms();
	ab_alloc_proxy(&c->a, &px);
	return ab_proxy_tally(e, &px, c->tally, err);
}

/* Everything up to the start; the reason when it ends the run there. */
static const char *prepare(struct ctx *c, struct ab_err *err)
{
	/* Caught before the first engine call, so no signal kills ab-run
	 * between its start and its result. */
	if (ab_cancel_catch(err) < 0)
		return "engine-error";
	if (ab_deadline_check(&c->r.dl, "ab-run started", err) < 0)
		return "deadline";
	if (ab_engine_open(&c->e, &c->r.dl, err) < 0)
		return err->code == AB_EDEADLINE ? "deadline" : "engine-error";
	ab_engine_wake_on(&c->e, ab_cancel_fd());
	if (check(c, err) < 0) {
		if (err->code == AB_EDEADLINE)
			return "deadline";
		if (err->code == AB_EREFUSED)
			return "drift";
		return "engine-error";
	}
	return NULL;
}

/* The proxy's baseline and the credential read back for masking, at
 * once; the reason when the run ends here. */
static const char *ready(struct ctx *c, const struct opts *o,
    struct ab_err *err)
{
	struct ab_side side;
	struct ab_err skip;
	int rc;

	if (c->a.eg.on)
		ab_side_start(&side, &c->e, baseline, c);
	rc = progress_on(c, o, err);
	if (c->a.eg.on && ab_side_join(&side, rc < 0 ? &skip : err) < 0 &&
	    rc == 0)
		return err->code == AB_EDEADLINE ? "deadline" : "engine-error";
	if (rc < 0)
		return "engine-error";
	return ab_cancel_requested() ? "cancelled" : NULL;
}

static int exit_status(const struct ab_run *r)
{
	/* A kill from outside ends with the status the engine saw. */
	if (strcmp(r->reason, "exited") == 0 ||
	    strcmp(r->reason, "killed") == 0)
		return (int)r->status;
	if (strcmp(r->reason, "deadline") == 0)
		return AB_EDEADLINE;
	if (strcmp(r->reason, "cancelled") == 0)
		return AB_ECANCELLED;
	if (strcmp(r->reason, "oom") == 0)
		return 137;	/* 128 + SIGKILL, what a memory kill is */
	if (strcmp(r->reason, "drift") == 0 ||
	    strcmp(r->reason, "probe-refused") == 0)
		return 126;
	return AB_EENGINE;
}

/* One line for a person; the result record has the rest. */
static void tell(const struct ab_run *r, const struct ab_err *err)
{
	if (strcmp(r->reason, "exited") == 0) {
		if (r->status != 0)
			ab_say("the agent exited with status %lld", r->status);
	} else if (!r->started && strcmp(r->reason, "cancelled") == 0) {
		ab_say("cancelled before the start; the agent did not start");
	} else if (!r->started) {
		ab_say("%s: %s; the agent did not start", r->reason, err->msg);
	} else if (strcmp(r->reason, "probe-refused") == 0) {
		ab_say("probe-refused: %s", r->probe_line[0] ? r->probe_line :
		    "no probe line");
	} else if (strcmp(r->reason, "oom") == 0) {
		ab_say("oom: the engine killed the agent for memory");
	} else if (strcmp(r->reason, "killed") == 0) {
		ab_say("killed: a signal ab-run did not send stopped the agent "
		    "(status %lld)", r->status);
	} else if (strcmp(r->reason, "engine-error") == 0) {
		ab_report(err);
	} else {
		ab_say("%s: the container was stopped", r->reason);
	}
}

/* What the proxy allowed and refused while the agent ran; a tally that
 * cannot be read gives null and never changes the reason. */
static void egress(struct ctx *c)
{
	struct ab_budget saved;
	struct ab_proxy_of px;
	struct ab_err skip;
	const char *state = "unknown";

	if (!c->a.eg.on)
		return;
	c->r.egress = -1;
	if (!c->r.started || c->e.easy == NULL || c->tally == NULL)
		return;
	ab_engine_budget_begin(&c->e, AB_CLEANUP_MS, &saved);
	ab_alloc_proxy(&c->a, &px);
	if (ab_proxy_summary(&c->e, &px, c->r.cid, c->tally, c->tally_ms,
	    c->who[0] != '\0' ? c->who : NULL, &c->r.egress_json, &state,
	    &skip) == 0)
		c->r.egress = 1;
	ab_engine_budget_end(&c->e, &saved);
	/* The agent's status stays its own; the record says the rest. */
	if (c->r.egress != 1 || strcmp(state, "running") == 0)
		return;
	if (strcmp(state, "unknown") == 0)
		ab_say("the allocation's egress proxy could not be inspected "
		    "after the run: its egress record may be incomplete");
	else
		ab_say("the allocation's egress proxy died while the agent "
		    "ran (%s): its egress record is incomplete", state);
}

static int record(struct ctx *c, struct ab_err *err)
{
	struct ab_result_ids ids = {
		c->c.id, c->p.id, c->a.id, c->p.attempt, c->p.phase,
		c->a.digest, c->body_sha
	};

	if (ab_result_save(&c->s, c->result, &ids, &c->r, err) < 0)
		return -1;
	return ab_print_handle("result", c->result, err);
}

static int run(struct ctx *c, const struct opts *o)
{
	struct ab_side side;
	struct ab_err err, rerr;
	const char *stop;
	int rc, forget;

	memset(&err, 0, sizeof err);
	if (load(c, o, &err) < 0)
		return ab_report(&err);
	stop = prepare(c, &err);
	if (stop == NULL)
		stop = ready(c, o, &err);
	if (stop != NULL) {
		/* One of the fixed words: a bug here when cut. */
		if (ab_fmt(c->r.reason, sizeof c->r.reason, "%s", stop) < 0)
			abort();
		/* As large as the message: a cut one still reads. */
		if (strcmp(stop, "engine-error") == 0)
			(void)ab_fmt(c->r.error, sizeof c->r.error, "%s",
			    err.msg);
	} else {
		ab_run_follow(&c->e, &c->r, &err);
	}
	if (c->r.agent != NULL)
		ab_agent_end(c->r.agent);
	progress_end(c);
	forget = forgets(c);
	if (c->p.cred_var[0] != '\0')
		c->r.credential = ab_inject_on(&c->p, &c->a) ? "injected" :
		    "in-agent";
	if (forget)
		ab_side_start(&side, &c->e, forget_secret, c);
	egress(c);
	if (forget)
		ab_side_join(&side, NULL);
	sign_in_back(c);
	tell(&c->r, &err);
	rc = exit_status(&c->r);
	/* The files given are complete only now; one that cannot be put in
	 * place is output lost: said, and never an exit status of 0. */
	if (ab_run_close_outputs(&c->r, &rerr) < 0) {
		ab_report(&rerr);
		if (rc == 0)
			rc = AB_EENGINE;
	}
	if (record(c, &rerr) < 0)
		return ab_report(&rerr);
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct ctx c;
	int rc;

	ab_prog = "ab-run";
	rc = parse(argc, argv, &o);
	if (rc != 0)
		return rc < 0 ? 0 : rc;
	if (o.show != NULL)
		return show(o.show);
	memset(&c, 0, sizeof c);
	c.s.dirfd = -1;
	ab_run_init(&c.r);
	rc = run(&c, &o);
	if (c.r.agent != NULL)
		ab_agent_free(c.r.agent);
	ab_progress_free(&c.progress);
	ab_run_free(&c.r);
	free(c.tally);
	ab_engine_close(&c.e);
	ab_profile_free(&c.p);
	ab_state_close(&c.s);
	return rc;
}
