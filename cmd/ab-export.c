/* ab-export: the agent's work in /work, as a git patch or bundle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "cancel.h"
#include "deadline.h"
#include "engine.h"
#include "export.h"
#include "inject.h"
#include "outfile.h"
#include "size.h"
#include "state.h"
#include "tool.h"

static const char usage_text[] =
    "usage: ab-export ALLOC [--format patch|bundle] [-o FILE] "
    "[--message MSG]\n"
    "                 [--strict] [--max-file SIZE] [--read auto|changed|all]\n"
    "                 [--deadline FILE]\n"
    "       ab-export --version | --help\n";

/* A regular file over this is left out, its bytes never read: a file
 * of holes costs the agent nothing and its reader a byte per byte. */
#define MAX_FILE (100LL << 20)

struct opts {
	const char *alloc, *out, *deadline;
	struct ab_export_opts x;
};

static int option(int c, struct opts *o)
{
	struct ab_err err;

	switch (c) {
	case 'f':
		if (strcmp(optarg, "patch") != 0 && strcmp(optarg, "bundle") != 0)
			return ab_usage_error("--format is patch or bundle");
		o->x.bundle = strcmp(optarg, "bundle") == 0;
		return 0;
	case 'o': o->out = optarg; return 0;
	case 'm': o->x.message = optarg; return 0;
	case 's': o->x.strict = 1; return 0;
	case 'M':
		return ab_parse_size(optarg, AB_VOL_MAX_BYTES, "--max-file",
		    &o->x.max_file, &err) < 0 ? ab_report(&err) : 0;
	case 'r':
		if (strcmp(optarg, "auto") == 0)
			o->x.read = AB_READ_AUTO;
		else if (strcmp(optarg, "changed") == 0)
			o->x.read = AB_READ_CHANGED;
		else if (strcmp(optarg, "all") == 0)
			o->x.read = AB_READ_ALL;
		else
			return ab_usage_error("--read is auto, changed or all");
		return 0;
	case 'd': o->deadline = optarg; return 0;
	default: return ab_option(c);
	}
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "message", required_argument, NULL, 'm' },
		{ "strict", no_argument, NULL, 's' },
		{ "max-file", required_argument, NULL, 'M' },
		{ "read", required_argument, NULL, 'r' },
		{ "deadline", required_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 }
	};
	int c, rc;

	memset(o, 0, sizeof *o);
	o->x.message = "agentbox: the agent's change\n";
	o->x.max_file = MAX_FILE;
	while ((c = ab_getopt(argc, argv, "ho:", longopts)) != -1)
		if ((rc = option(c, o)) != 0)
			return rc;
	if (argc - optind != 1)
		return ab_usage();
	o->alloc = argv[optind];
	if (o->x.message[0] == '\0')
		return ab_usage_error("--message must not be empty");
	return 0;
}

/* The agent names the paths: quoted as git quotes them, so that none
 * can write control sequences to a terminal, and whole, so that two
 * long names are never told as one. */
static void say(const char *what, const char *path, const char *why)
{
	const unsigned char *p = (const unsigned char *)path;
	size_t n = 0;
	char *q;

	if ((q = malloc(4 * strlen(path) + 1)) == NULL) {
		ab_say("%s an entry (out of memory to name it): %s", what,
		    why);
		return;
	}
	for (; *p != '\0'; p++) {
		if (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\') {
			q[n++] = (char)*p;
			continue;
		}
		/* Room was made for it: cut, the name ends here. */
		if (ab_fmt(q + n, 5, "\\%03o", *p) < 0)
			break;
		n += 4;
	}
	q[n] = '\0';
	ab_say("%s \"%s\": %s", what, q, why);
	free(q);
}

static void skipped(const char *path, const char *why)
{
	say("left out", path, why);
}

/* Exported as it is: a patch cannot be masked without changing the work. */
static void held(const char *path, const char *where)
{
	say("holds the credential an agent was given (--credential-in-agent)",
	    path, where);
}

/* FILE by outfile.h's rule; never renamed into place once the deadline
 * passed, even if all went well. */
static int close_out(struct ab_outfile *of, int rc,
    const struct ab_deadline *dl, struct ab_err *err)
{
	if (rc == 0)
		rc = ab_deadline_check(dl, "ab-export finished", err);
	if (rc == 0)
		return ab_outfile_commit(of, err);
	ab_outfile_abort(of);
	return -1;
}

static int run(void *opts, struct ab_err *err)
{
	static struct ab_outfile of;
	struct opts *o = opts;
	struct ab_export_cred creds[AB_EXPORT_CREDS];
	struct ab_buf held_by[AB_EXPORT_CREDS];
	char tree[41] = "";
	struct ab_deadline dl;
	struct ab_engine e;
	struct ab_handle h;
	struct ab_export_stats st;
	struct ab_alloc a;
	struct ab_state s;
	int rc = -1, i, n = 0;

	memset(&e, 0, sizeof e);
	memset(&st, 0, sizeof st);
	s.dirfd = -1;
	if (ab_handle_parse(&h, o->alloc, "alloc", err) < 0 ||
	    ab_deadline_load(&dl, o->deadline, err) < 0 ||
	    ab_state_open(&s, err) < 0)
		goto out;
	if (ab_alloc_load(&s, &h, &a, err) < 0 ||
	    ab_inject_held(&s, a.id, held_by, AB_EXPORT_CREDS, &n, err) < 0)
		goto out;
	for (i = 0; i < n; i++) {
		creds[i].p = held_by[i].data;
		creds[i].n = held_by[i].len;
	}
	o->x.creds = creds;
	o->x.ncreds = n;
	o->x.held = held;
	/* The allocation's deadline bounds every step on it. */
	if (a.lease.set)
		ab_deadline_shrink(&dl, &a.lease);
	if (ab_deadline_check(&dl, "ab-export started", err) < 0 ||
	    ab_engine_open(&e, &dl, err) < 0 || ab_alloc_on(&e, &a, err) < 0)
		goto out;
	/* A signal ends the read between entries: the temporary goes. */
	if (ab_cancel_catch(err) < 0 ||
	    ab_outfile_open(&of, o->out ? o->out : "-", err) < 0)
		goto out;
	ab_engine_wake_on(&e, ab_cancel_fd());
	o->x.fd = of.fd;
	o->x.skipped = skipped;
	o->x.stats = &st;
	rc = ab_export(&s, &e, &a, &o->x, tree, err);
	rc = close_out(&of, rc, &dl, err);
	if (rc == 0)
		rc = ab_export_note(&s, a.id, tree, &st, err) < 0 ? -1 : 0;
out:
	for (i = 0; i < n; i++) {
		explicit_bzero(held_by[i].data, held_by[i].len);
		ab_buf_free(&held_by[i]);
	}
	ab_engine_close(&e);
	ab_state_close(&s);
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o;

	ab_prog = "ab-export";
	ab_usage_text = usage_text;
	return ab_tool_main(parse(argc, argv, &o), run, &o);
}
