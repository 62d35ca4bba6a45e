/* ab-profile: capture one invocation as a frozen, validated-later profile. */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "deadline.h"
#include "engine.h"
#include "file.h"
#include "hash.h"
#include "image.h"
#include "profile.h"
#include "seed.h"
#include "size.h"
#include "state.h"
#include "tool.h"

static const char usage_text[] =
    "usage: ab-profile --alloc ALLOC --phase planning|questions|execution\n"
    "                  --attempt ID [--deadline FILE] [--schema FILE]\n"
    "                  [--ca FILE]\n"
    "                  [--allow-command CMD]...\n"
    "                  [--memory N] [--pids N] [--cpus N] -- ARGV...\n";

#define SCHEMA_MAX (64 * 1024)
#define CA_MAX (512 * 1024)

struct opts {
	const char *alloc, *phase, *attempt, *deadline, *memory, *pids, *cpus;
	const char *schema, *ca;
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
		case 'c':
			if (o->nallow == AB_MAX_ARGV)
				return ab_usage_error("too many --allow-command");
			allow[o->nallow++] = optarg;
			break;
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
	p->pids = 256;
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

/* A file the agent reads (the schema, the trust anchors) is read once,
 * through O_NOFOLLOW, from a regular file, and the read itself is
 * bounded: a file that grows past the bound while it is read is refused,
 * not read past it.  Its snapshot goes into the inputs filesystem,
 * read-only to the agent, and its SHA-256 into the record; no host path
 * is mounted. */
static int snapshot(const char *path, size_t max, const char *what,
    const char *name, struct ab_state *s, const struct ab_alloc *a,
    struct ab_profile *p, char sha[65], struct ab_err *err)
{
	struct ab_sha256 h;
	struct ab_engine e;
	struct ab_buf b;
	int rc;

	ab_buf_init(&b, max);
	rc = ab_file_read_at(AT_FDCWD, path, &b, NULL, err);
	if (rc < 0 && err->code == AB_EENGINE)
		err->code = AB_EUSAGE;
	/* Trust anchors are PEM: anything else is a mistake worth naming. */
	if (rc == 0 && strcmp(what, "--ca") == 0 && (b.data == NULL ||
	    memmem(b.data, b.len, "-----BEGIN CERTIFICATE-----", 27) == NULL))
		rc = ab_fail(err, AB_EUSAGE, "no PEM certificate in it");
	if (rc < 0) {
		ab_buf_free(&b);
		return ab_err_wrap(err, "%s", what);
	}
	if (ab_sha256_init(&h, err) == 0) {
		ab_sha256_add(&h, b.data ? b.data : "", b.len);
		rc = ab_sha256_hex(&h, sha, err);
	} else {
		rc = -1;
	}
	if (rc == 0 && (rc = ab_engine_open(&e, &p->dl, err)) == 0) {
		rc = ab_inputs_put(s, &e, a, name, b.data ? b.data : "", b.len,
		    err);
		ab_engine_close(&e);
	}
	ab_buf_free(&b);
	return rc;
}

static int snapshots(const struct opts *o, struct ab_state *s,
    const struct ab_alloc *a, struct ab_profile *p, struct ab_err *err)
{
	char name[80];

	snprintf(name, sizeof name, "schema-%s.json", p->id);
	if (o->schema != NULL && snapshot(o->schema, SCHEMA_MAX, "schema",
	    name, s, a, p, p->schema_sha, err) < 0)
		return -1;
	snprintf(name, sizeof name, "ca-%s.pem", p->id);
	if (o->ca != NULL && snapshot(o->ca, CA_MAX, "--ca", name, s, a, p,
	    p->ca_sha, err) < 0)
		return -1;
	return 0;
}

static int capture(const struct opts *o, struct ab_state *s,
    struct ab_profile *p, struct ab_err *err)
{
	struct ab_profile_lock k;
	struct ab_deadline given;
	struct ab_handle h;
	struct ab_alloc a;
	struct ab_buf body;
	char sha[65];
	int i, rc;

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
	if (ab_deadline_check(&p->dl, "the profile was captured", err) < 0)
		return -1;
	snprintf(p->phase, sizeof p->phase, "%s", o->phase);
	snprintf(p->attempt, sizeof p->attempt, "%s", o->attempt);
	memcpy(p->alloc, a.id, sizeof p->alloc);
	for (i = 0; i < o->argc; i++)
		p->argv[i] = o->argv[i];
	p->argc = o->argc;
	for (i = 0; i < o->nallow; i++)
		p->allow[i] = o->allow[i];
	p->nallow = o->nallow;
	if (limits(o, &a, p, err) < 0 ||
	    ab_image_path(s, a.image, p->path_env, sizeof p->path_env,
	    err) < 0 || ab_new_id(p->id, err) < 0 ||
	    ab_new_id(p->nonce, err) < 0)
		return -1;
	/* The body is checked against the default seccomp form; ab-validate
	 * rebuilds it for the engine it meets and compares the parameters. */
	if (snapshots(o, s, &a, p, err) < 0)
		return -1;
	ab_profile_lock(p, &a, a.digest, s->sid, 0, &k);
	ab_buf_init(&body, 0);
	rc = ab_profile_body(&k, &body, sha, err);
	if (rc == 0)
		rc = ab_attempt_claim(s, p->attempt, err);
	if (rc == 0)
		rc = ab_profile_save(s, p, body.data, sha, err);
	ab_buf_free(&body);
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
	return rc < 0 ? ab_report(&err) : 0;
}
