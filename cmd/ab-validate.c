/* ab-validate: create the container of a profile and refuse any drift. */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter.h"
#include "alloc.h"
#include "ctr.h"
#include "ctrrec.h"
#include "deadline.h"
#include "engine.h"
#include "file.h"
#include "inject.h"
#include "owned.h"
#include "profile.h"
#include "side.h"
#include "signin.h"
#include "state.h"
#include "tool.h"

static const char usage_text[] =
    "usage: ab-validate PROFILE [--deadline FILE]\n"
    "       ab-validate --container ID PROFILE [--deadline FILE]\n"
    "       ab-validate --version | --help\n";

struct opts {
	const char *profile, *container, *deadline;
};

struct ctx {
	struct ab_state s;
	struct ab_engine e;
	struct ab_profile p;
	struct ab_alloc a;
	struct ab_profile_lock k;
};

static int usage(FILE *f, int status)
{
	fputs(usage_text, f);
	return status;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "container", required_argument, NULL, 'c' },
		{ "deadline", required_argument, NULL, 'd' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	memset(o, 0, sizeof *o);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': o->container = optarg; break;
		case 'd': o->deadline = optarg; break;
		case 'V': return ab_version();
		case 'h': return usage(stdout, -1);
		default: return usage(stderr, AB_EUSAGE);
		}
	}
	if (argc - optind != 1)
		return usage(stderr, AB_EUSAGE);
	o->profile = argv[optind];
	return 0;
}

static int load(struct ctx *c, const struct opts *o, struct ab_err *err)
{
	struct ab_deadline given;
	struct ab_handle h;
	char stored[65];

	if (ab_handle_parse(&h, o->profile, "profile", err) < 0 ||
	    ab_deadline_load(&given, o->deadline, err) < 0 ||
	    ab_state_open(&c->s, err) < 0)
		return -1;
	if (ab_profile_open(&c->s, &h, &c->p, &c->a, stored, err) < 0)
		return -1;
	/* Only ever closer: a later --deadline cannot extend the profile's. */
	ab_deadline_shrink(&c->p.dl, &given);
	return ab_deadline_check(&c->p.dl, "ab-validate started", err);
}

static int engine_checks(struct ctx *c, struct ab_err *err)
{
	if (ab_engine_open(&c->e, &c->p.dl, err) < 0)
		return -1;
	return ab_profile_engine_check(&c->s, &c->e, &c->p, &c->a, &c->k, err);
}

/* A refused validation leaves no credential behind. */
static void forget(struct ctx *c)
{
	struct ab_err skip;
	enum ab_oauth_kind kind;

	if (ab_profile_signin(&c->p, &kind) != NULL)
		ab_inject_signin_forget(&c->s, &c->e, &c->a, &c->p, &skip);
	if (c->p.cred_var[0] == '\0')
		return;
	ab_inject_forget(&c->s, &c->e, &c->a, &c->p, &skip);
}

/* A sign-in, read now: the agent's copy, on the allocation's auth
 * volume where this invocation's agent alone can read and rewrite it
 * (profile.h), holds placeholders, and the proxy's vault the tokens
 * (inject.h).  What FILE was goes into the ctr record, so ab-run writes
 * a refresh back only over that very file. */
static int sign_in(struct ctx *c, struct ab_ctr *r, struct ab_err *err)
{
	enum ab_oauth_kind kind;
	int rc;

	if (ab_profile_signin(&c->p, &kind) == NULL)
		return 0;
	rc = ab_inject_signin_give(&c->s, &c->e, &c->a, &c->p, &r->sn, err);
	r->sign_in = rc == 0;
	return rc;
}

/* The profile's credential, read now (O_NOFOLLOW, bounded): the agent's
 * snapshot on the read-only inputs volume, which only this invocation's
 * container can read (its group, profile.h), holds a placeholder and the
 * proxy's vault the credential, or, without egress to the provider, the
 * snapshot holds the credential (inject.h); never in a record, never in
 * the container's configuration.  Our copies are wiped at once; ab-run
 * forgets both when the agent settles. */
static int secret(struct ab_engine *e, void *arg, struct ab_err *err)
{
	struct ctx *c = arg;

	if (c->p.cred_var[0] == '\0')
		return 0;
	return ab_inject_give(&c->s, e, &c->a, &c->p, err);
}

/* Under runsc, HOME and /tmp are volumes of the invocation's own
 * (profile.h), labelled with the allocation, so ab-clean removes them
 * with it; the engine's reply is checked to hold exactly their ceilings. */
static int own_volumes(struct ctx *c, struct ab_err *err)
{
	int i;

	for (i = 0; i < c->k.nvols; i++)
		if (ab_alloc_volume_create(&c->e, &c->k.vols[i], c->a.id,
		    c->s.sid, err) < 0)
			return -1;
	return 0;
}

static int create(struct ctx *c, struct ab_err *err)
{
	struct ab_err cerr, serr;
	struct ab_side side;
	struct ab_ctr r;
	int conflict = 0, rc;

	memset(&r, 0, sizeof r);
	if (ab_new_id(r.id, err) < 0)
		return -1;
	memcpy(r.profile, c->p.id, sizeof r.profile);
	memcpy(r.alloc, c->a.id, sizeof r.alloc);
	if (ab_fmt_err(err, r.name, sizeof r.name, "the container's name",
	    "%s", c->k.name) < 0 ||
	    ab_inflight_begin(&c->s, "alloc", c->a.id, err) < 0)
		return -1;
	/* The credential's snapshot goes up while the container is made
	 * (side.h); a refusal empties it (forget). */
	if (c->p.cred_var[0] != '\0')
		ab_side_start(&side, &c->e, secret, c);
	rc = own_volumes(c, err);
	if (rc == 0)
		rc = ab_ctr_create(&c->e, &c->k.l, c->k.name,
		    "create the container", r.container, &conflict, err);
	if (rc == 0)
		rc = ab_ctr_check(&c->e, &c->k.l, r.container, err);
	if (c->p.cred_var[0] != '\0' && ab_side_join(&side, &serr) < 0 &&
	    rc == 0) {
		*err = serr;
		rc = -1;
	}
	if (rc == 0 && sign_in(c, &r, err) == 0 &&
	    ab_ctr_save(&c->s, &r, err) == 0) {
		ab_inflight_end(&c->s, "alloc", c->a.id);
		return ab_print_handle("ctr", r.id, err);
	}
	/* The name is the profile's own: a second validation of it, not
	 * the engine's text about names. */
	if (conflict)
		ab_fail(err, AB_EREFUSED, "profile:%s was validated already: "
		    "its container %s exists (one container per profile; "
		    "ab-profile makes another)", c->p.id, c->k.name);
	/* Only what this call created is removed: a held name is not ours,
	 * and nothing without this allocation's labels is touched. */
	forget(c);
	if (!conflict) {
		ab_owned_remove(&c->e, AB_CONTAINER, c->k.name, c->s.sid,
		    c->a.id, &cerr);
		for (int i = 0; i < c->k.nvols; i++)
			ab_owned_remove(&c->e, AB_VOLUME, c->k.vols[i].name,
			    c->s.sid, c->a.id, &cerr);
	}
	ab_inflight_end(&c->s, "alloc", c->a.id);
	return -1;
}

int main(int argc, char **argv)
{
	struct ab_err err;
	struct opts o;
	struct ctx c;
	int rc;

	ab_prog = "ab-validate";
	rc = parse(argc, argv, &o);
	if (rc != 0)
		return rc < 0 ? 0 : rc;
	memset(&err, 0, sizeof err);
	memset(&c, 0, sizeof c);
	c.s.dirfd = -1;
	rc = load(&c, &o, &err);
	if (rc == 0)
		rc = engine_checks(&c, &err);
	if (rc == 0 && o.container != NULL)
		rc = ab_ctr_check(&c.e, &c.k.l, o.container, &err);
	else if (rc == 0)
		rc = create(&c, &err);
	ab_engine_close(&c.e);
	ab_profile_free(&c.p);
	ab_state_close(&c.s);
	return rc < 0 ? ab_report(&err) : 0;
}
