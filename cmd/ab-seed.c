/* ab-seed: the trusted commit into an allocation's task and git volumes. */
#include <errno.h>
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
		{ NULL, 0, NULL, 0 }
	};
	int c;

	memset(o, 0, sizeof *o);
	while ((c = ab_getopt(argc, argv, "h", longopts)) != -1) {
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
		default: return ab_option(c);
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

static int run(void *opts, struct ab_err *err)
{
	const struct opts *o = opts;
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
	struct opts o;

	ab_prog = "ab-seed";
	ab_usage_text = usage_text;
	/* git's pipes (githist.h): a git that died is an error, not ours. */
	signal(SIGPIPE, SIG_IGN);
	return ab_tool_main(parse(argc, argv, &o), run, &o);
}
