/* ab-seed: the trusted commit into an allocation's task and git volumes. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "deadline.h"
#include "engine.h"
#include "seed.h"
#include "state.h"
#include "tool.h"

static const char usage_text[] =
    "usage: ab-seed ALLOC --repo DIR --commit OID [--depth N] "
    "[--deadline FILE]\n"
    "       ab-seed ALLOC --repo DIR --commit REV --expect OID [--depth N]\n"
    "               [--deadline FILE]\n"
    "       ab-seed --version | --help\n";

struct opts {
	const char *alloc, *deadline;
	struct ab_seed_opts seed;
};

static int usage(FILE *f, int status)
{
	fputs(usage_text, f);
	return status;
}

static int depth(const char *s, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return *s >= '1' && *s <= '9' && *end == '\0' && errno == 0 &&
	    *out <= 1000000000L ? 0 : -1;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "repo", required_argument, NULL, 'r' },
		{ "commit", required_argument, NULL, 'c' },
		{ "expect", required_argument, NULL, 'e' },
		{ "depth", required_argument, NULL, 'D' },
		{ "deadline", required_argument, NULL, 'd' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	memset(o, 0, sizeof *o);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'r': o->seed.repo = optarg; break;
		case 'c': o->seed.rev = optarg; break;
		case 'e': o->seed.expect = optarg; break;
		case 'D':
			if (depth(optarg, &o->seed.depth) < 0)
				return ab_usage_error("--depth takes 1 to "
				    "1000000000 commits");
			break;
		case 'd': o->deadline = optarg; break;
		case 'V': return ab_version();
		case 'h': return usage(stdout, -1);
		default: return usage(stderr, AB_EUSAGE);
		}
	}
	if (argc - optind != 1)
		return ab_usage_error("one ALLOC handle is required");
	o->alloc = argv[optind];
	if (o->seed.repo == NULL || o->seed.rev == NULL)
		return ab_usage_error("--repo and --commit are required");
	o->seed.progress = ab_progress_line;
	return 0;
}

static int run(const struct opts *o, struct ab_err *err)
{
	struct ab_deadline dl;
	struct ab_handle h;
	struct ab_alloc a;
	struct ab_engine e;
	struct ab_state s;
	int rc = -1;

	if (ab_handle_parse(&h, o->alloc, "alloc", err) < 0 ||
	    ab_deadline_load(&dl, o->deadline, err) < 0 ||
	    ab_state_open(&s, err) < 0)
		return -1;
	if (ab_alloc_load(&s, &h, &a, err) < 0)
		goto state;
	/* The allocation's deadline bounds every invocation on it. */
	ab_deadline_shrink(&dl, &a.lease);
	if (ab_deadline_check(&dl, "ab-seed started", err) < 0 ||
	    ab_engine_open(&e, &dl, err) < 0)
		goto state;
	if (ab_alloc_on(&e, &a, err) == 0)
		rc = ab_seed(&s, &e, &a, &o->seed, err);
	if (rc == 0)
		rc = ab_print_handle("alloc", a.id, err);
	ab_engine_close(&e);
state:
	ab_state_close(&s);
	return rc;
}

int main(int argc, char **argv)
{
	struct ab_err err;
	struct opts o;
	int rc;

	ab_prog = "ab-seed";
	/* git's pipes (githist.h): a git that died is an error, not ours. */
	signal(SIGPIPE, SIG_IGN);
	rc = parse(argc, argv, &o);
	if (rc != 0)
		return rc < 0 ? 0 : rc;
	memset(&err, 0, sizeof err);
	if (run(&o, &err) < 0)
		return ab_report(&err);
	return 0;
}
