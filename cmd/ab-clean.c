/* ab-clean: remove allocations and prove they are gone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "clean.h"
#include "engine.h"
#include "engineid.h"
#include "image.h"
#include "imagereg.h"
#include "proxy.h"
#include "size.h"
#include "state.h"
#include "tool.h"

static const char usage_text[] =
    "usage: ab-clean HANDLE... [--within SECONDS]\n"
    "       ab-clean --sweep [--all [--images]] [--within SECONDS]\n"
    "       ab-clean --version | --help\n";

struct opts {
	int sweep, all, images;
	long long within_ms;
	char **handles;
	int nhandles;
};

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "sweep", no_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'a' },
		{ "images", no_argument, NULL, 'i' },
		{ "within", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 }
	};
	struct ab_err err;
	long long secs;
	int c;

	memset(o, 0, sizeof *o);
	o->within_ms = 30000;
	while ((c = ab_getopt(argc, argv, "h", longopts)) != -1) {
		switch (c) {
		case 's': o->sweep = 1; break;
		case 'a': o->all = 1; break;
		case 'i': o->images = 1; break;
		case 'w':
			if (ab_parse_size(optarg, 3600, "--within", &secs,
			    &err) < 0 || strpbrk(optarg, "kKmMgG") != NULL)
				return ab_usage_error("--within takes 1 to 3600 "
				    "seconds: %.40s", optarg);
			o->within_ms = secs * 1000;
			break;
		default: return ab_option(c);
		}
	}
	o->handles = argv + optind;
	o->nhandles = argc - optind;
	if (o->all && !o->sweep)
		return ab_usage_error("--all goes with --sweep");
	if (o->images && !o->all)
		return ab_usage_error("--images goes with --sweep --all");
	if (o->sweep == (o->nhandles > 0))
		return ab_usage();
	return 0;
}

/* Cleans one allocation within a budget of its own: 1 when something of
 * it was removed, 0 when nothing was left. */
static int clean_one(struct ab_state *s, struct ab_engine *e, const char *id,
    long long within_ms, struct ab_err *err)
{
	struct ab_buf left;
	int rc;

	ab_engine_cleanup_budget(e, within_ms);
	ab_buf_init(&left, 1 << 16);
	rc = ab_clean_alloc(s, e, id, &left, err);
	ab_buf_free(&left);
	return rc;
}

/* An alloc handle, or a profile or ctr handle that leads to one: 1 with
 * id set; 0 for a profile or ctr handle cleaned here before. */
static int alloc_of(struct ab_state *s, const char *text,
    char id[AB_ID_LEN + 1], struct ab_err *err)
{
	struct ab_handle h;
	struct ab_json j;
	char *v;

	if (ab_handle_parse(&h, text, NULL, err) < 0)
		return -1;
	if (strcmp(h.kind, "alloc") == 0) {
		memcpy(id, h.id, AB_ID_LEN + 1);
		return 1;
	}
	if (strcmp(h.kind, "profile") != 0 && strcmp(h.kind, "ctr") != 0)
		return ab_fail(err, AB_EREFUSED, "%.80s does not lead to an "
		    "allocation", text);
	if (!ab_record_exists(s, &h) && ab_tombstone_has(s, h.kind, h.id))
		return 0;
	if (ab_record_read(s, &h, &j, err) < 0)
		return -1;
	v = ab_json_str(&j, ab_json_key(&j, 0, "alloc"));
	ab_json_free(&j);
	if (v == NULL || !ab_is_id(v)) {
		free(v);
		return ab_fail(err, AB_EREFUSED, "record of %.80s is corrupt",
		    text);
	}
	memcpy(id, v, AB_ID_LEN + 1);
	free(v);
	return 1;
}

static int handles(const struct opts *o, struct ab_state *s,
    struct ab_engine *e, int *removed, struct ab_err *err)
{
	char (*ids)[AB_ID_LEN + 1];
	struct ab_err one;
	int i, k, rc = 0;

	ids = calloc((size_t)o->nhandles, sizeof *ids);
	if (ids == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	/* Every handle is resolved before anything is removed. */
	for (i = 0; i < o->nhandles; i++)
		if ((k = alloc_of(s, o->handles[i], ids[i], err)) < 0) {
			free(ids);
			return -1;
		} else if (k == 0) {
			ids[i][0] = '\0';	/* cleaned before */
		}
	for (i = 0; i < o->nhandles; i++) {
		if (ids[i][0] == '\0')
			continue;
		if ((k = clean_one(s, e, ids[i], o->within_ms, &one)) < 0) {
			if (rc == 0 || one.code == AB_EENGINE)
				*err = one;
			rc = -1;
			if (i + 1 < o->nhandles)
				ab_report(&one);
		}
		*removed += k > 0;
	}
	free(ids);
	return rc;
}

static int sweep(const struct opts *o, struct ab_state *s,
    struct ab_engine *e, int *removed, struct ab_err *err)
{
	char (*ids)[AB_ID_LEN + 1];
	char mark[AB_ID_LEN + 1];
	struct ab_err one;
	size_t i, n, elsewhere = 0;
	int k, rc = 0, tmps = 0, runs = 0, built = 0;

	/* Half-written records of crashed tools first: no handle names them;
	 * then what killed run-tasks and builds left. */
	if (ab_state_sweep_tmp(s, &tmps, err) < 0 ||
	    ab_state_sweep_runs(s, o->within_ms, &runs, err) < 0)
		return -1;
	ab_engine_cleanup_budget(e, o->within_ms);
	if (ab_engine_mark(e, 0, mark, err) < 0 ||
	    ab_image_sweep(s, e, mark, &built, err) < 0 ||
	    ab_clean_known(s, e, &ids, &n, err) < 0)
		return -1;
	if (tmps > 0)
		ab_say("removed %d half-written record%s of crashed tools",
		    tmps, tmps == 1 ? "" : "s");
	if (runs > 0)
		ab_say("removed %d director%s of killed run-tasks", runs,
		    runs == 1 ? "y" : "ies");
	if (built > 0)
		ab_say("removed %d image%s or probe container%s left by "
		    "killed builds", built, built == 1 ? "" : "s",
		    built == 1 ? "" : "s");
	for (i = 0; i < n; i++) {
		if (!o->all && !ab_clean_expired(s, ids[i], o->within_ms))
			continue;
		/* A sweep proves absence on the engine it reached alone. */
		if ((k = ab_clean_here(s, e, mark, ids[i], &one)) <= 0) {
			if (k == 0) {
				elsewhere++;
			} else {
				*err = one;
				rc = -1;
			}
			continue;
		}
		if ((k = clean_one(s, e, ids[i], o->within_ms, &one)) < 0) {
			*err = one;
			rc = -1;
			continue;
		}
		*removed += k;
		printf("alloc:%s\n", ids[i]);
	}
	free(ids);
	if (elsewhere > 0)
		ab_say("left %zu allocation%s of other engines to a sweep "
		    "there", elsewhere, elsewhere == 1 ? "" : "s");
	/* An older agentbox's network of this state, once nothing is on it. */
	*removed += tmps + runs + built + ab_egress_network_release(s, e);
	fflush(stdout);
	return rc;
}

/* --images: every image the state directory registered, once no
 * allocation of it is left to use one.  A failure is named and the rest
 * still go; the last failure is the error. */
static int images(struct ab_state *s, struct ab_engine *e, int *removed,
    struct ab_err *err)
{
	char (*ids)[AB_ID_LEN + 1];
	struct ab_handle h;
	struct ab_err one;
	size_t i, n;
	int rc = 0;

	if (ab_record_list(s, "image", &ids, &n, err) < 0)
		return -1;
	for (i = 0; i < n; i++) {
		memset(&h, 0, sizeof h);
		memcpy(h.id, ids[i], sizeof h.id);
		if (ab_fmt_err(&one, h.kind, sizeof h.kind, "a kind",
		    "image") < 0 || ab_image_remove(s, e, &h, &one) < 0) {
			if (rc < 0)
				ab_report(err);
			*err = one;
			rc = -1;
			continue;
		}
		printf("image:%s\n", h.id);
		(*removed)++;
	}
	free(ids);
	fflush(stdout);
	return rc;
}

static int run(void *opts, struct ab_err *err)
{
	const struct opts *o = opts;
	struct ab_deadline budget;
	struct ab_engine e;
	struct ab_state s;
	int rc, removed = 0;

	if (ab_state_open(&s, err) < 0)
		return -1;
	/* Cleanup has its own budget: it must still run after the task's
	 * deadline passed. */
	budget.set = 1;
	budget.at_ms = ab_now_ms() + o->within_ms;
	if (ab_engine_open(&e, &budget, err) < 0) {
		ab_state_close(&s);
		return -1;
	}
	e.cleanup = 1;
	rc = o->sweep ? sweep(o, &s, &e, &removed, err) :
	    handles(o, &s, &e, &removed, err);
	if (rc == 0 && o->images)
		rc = images(&s, &e, &removed, err);
	ab_engine_close(&e);
	ab_state_close(&s);
	/* The last stderr line's word says whether anything changed
	 * (Ansible's changed_when reads it); stdout keeps the handles. */
	if (rc == 0)
		ab_progress_line(removed > 0 ? "removed" : "absent");
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o;

	ab_prog = "ab-clean";
	ab_usage_text = usage_text;
	return ab_tool_main(parse(argc, argv, &o), run, &o);
}
