#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctr.h"
#include "lockdown.h"
#include "oneshot.h"
#include "owned.h"
#include "testhook.h"
#include "worktar.h"

#define ERR_MAX (64 * 1024)
#define FIXED_ARGS 7

static const char *const env[] = { "PATH=/usr/bin:/bin", NULL };

/* Standard output is the archive; standard error is kept, bounded, and
 * past the bound dropped: what tar could not read is found absent. */
static int demux(void *ctx, int stream, const char *p, size_t n,
    struct ab_err *err)
{
	struct ab_worktar *w = ctx;

	if (stream == 1)
		return ab_tarread_feed(w->tr, p, n, err);
	if (ab_buf_add(&w->errb, p, n) < 0 && !w->errb.over)
		return ab_fail(err, AB_EENGINE, "out of memory");
	return 0;
}

/* The reader's source: the attach, pumped until it ends between
 * frames. */
static int pull(void *ctx, struct ab_err *err)
{
	struct ab_worktar *w = ctx;

	if (!w->att.done && ab_stream_pump(w->e, 1000, err) < 0)
		return -1;
	if (w->att.sink_failed) {
		*err = w->att.sink_err;
		return -1;
	}
	if (!w->att.done)
		return 0;
	if (ab_stream_result(&w->att, err) < 0)
		return -1;
	if (!ab_mux_clean_end(&w->mux))
		return ab_fail(err, AB_EENGINE, "the archive of /work's "
		    "entries was cut");
	return 1;
}

/* busybox tar -c -f - -C / work/PATH...: argv, its strings but the
 * fixed ones owned. */
static char **tar_argv(char *const *paths, size_t n)
{
	static const char *const fixed[FIXED_ARGS] = {
		"/usr/lib/agentbox/busybox", "tar", "-c", "-f", "-", "-C", "/"
	};
	char **v = calloc(FIXED_ARGS + n + 1, sizeof *v);
	size_t i;

	if (v == NULL)
		return NULL;
	memcpy(v, fixed, sizeof fixed);
	for (i = 0; i < n; i++)
		if (asprintf(&v[FIXED_ARGS + i], "work/%s", paths[i]) < 0) {
			v[FIXED_ARGS + i] = NULL;
			while (i-- > 0)
				free(v[FIXED_ARGS + i]);
			free(v);
			return NULL;
		}
	return v;
}

static void free_argv(char **v, size_t n)
{
	size_t i;

	if (v == NULL)
		return;
	for (i = 0; i < n; i++)
		free(v[FIXED_ARGS + i]);
	free(v);
}

static int create(struct ab_worktar *w, struct ab_state *s,
    const struct ab_alloc *a, char **argv, struct ab_err *err)
{
	const char *labels[] = { "org.agentbox.alloc", a->id,
	    "org.agentbox.state", s->sid, "org.agentbox.role", "work-archive",
	    NULL };
	struct ab_mount m = { a->vol[AB_VOL_TASK].name, "/work", 1 };
	char id[80], rnd[AB_ID_LEN + 1];
	struct ab_lock l;
	int conflict = 0;

	if (ab_new_id(rnd, err) < 0)
		return -1;
	memset(&l, 0, sizeof l);
	l.image = a->digest;
	l.entrypoint = (const char *const *)argv;
	l.env = env;
	l.labels = labels;
	ab_oneshot_limits(&l);
	l.seccomp_keyword = ab_engine_seccomp_keyword(w->e);
	l.mounts = &m;
	l.nmounts = 1;
	if (ab_fmt_err(err, w->name, sizeof w->name, "the archive's name",
	    "agentbox-%s-archive-%.8s", a->id, rnd) < 0)
		return -1;
	if (ab_ctr_create(w->e, &l, w->name, "create the archive container",
	    id, &conflict, err) < 0) {
		/* A name held by another is not ours to remove. */
		w->created = !conflict;
		return -1;
	}
	w->created = 1;
	if (ab_ctr_check(w->e, &l, id, err) < 0)
		return -1;
	ab_test_pause("export-archive-created");
	return 0;
}

/* The attach before the start, so no byte is missed. */
static int start(struct ab_worktar *w, struct ab_err *err)
{
	struct ab_resp r;
	char path[160];
	int rc;

	ab_mux_init(&w->mux, demux, w);
	if (ab_fmt_err(err, path, sizeof path, "the archive's name",
	    "/containers/%s/attach?stream=1&stdout=1&stderr=1", w->name) < 0 ||
	    ab_stream_open(w->e, &w->att, "POST", path, ab_mux_feed, &w->mux,
	    "read the archive of /work's entries", err) < 0)
		return -1;
	if (ab_fmt_err(err, path, sizeof path, "the archive's name",
	    "/containers/%s/start", w->name) < 0)
		return -1;
	rc = ab_engine_json(w->e, "POST", path, NULL,
	    "start the archive container", &r, err);
	if (rc == 0 && r.status != 204)
		rc = ab_engine_fail(&r, AB_EENGINE,
		    "start the archive container", err);
	ab_resp_free(&r);
	return rc;
}

int ab_worktar_open(struct ab_worktar *w, struct ab_state *s,
    struct ab_engine *e, const struct ab_alloc *a, char *const *paths,
    size_t n, long long max, struct ab_err *err)
{
	struct ab_err cerr;
	char **argv;
	int rc = -1;

	memset(w, 0, sizeof *w);
	w->e = e;
	w->sid = s->sid;
	w->alloc = a->id;
	ab_buf_init(&w->errb, ERR_MAX);
	if ((argv = tar_argv(paths, n)) == NULL) {
		ab_buf_free(&w->errb);
		return ab_fail(err, AB_EENGINE, "out of memory");
	}
	if (ab_tarread_open_fed(&w->tr, pull, w, max,
	    "read /work's changed entries", err) == 0 &&
	    create(w, s, a, argv, err) == 0 && start(w, err) == 0)
		rc = 0;
	free_argv(argv, n);
	/* The first failure is the one told; a container the engine would
	 * not remove carries the state's label, for ab-clean --sweep. */
	if (rc < 0)
		(void)ab_worktar_close(w, &cerr);
	return rc;
}

int ab_worktar_close(struct ab_worktar *w, struct ab_err *err)
{
	int rc = 0;

	ab_stream_close(&w->att);
	ab_tarread_close(w->tr);
	w->tr = NULL;
	ab_buf_free(&w->errb);
	/* Removed by name, running or not: it also finds a create whose
	 * reply never came. */
	if (w->created && ab_owned_remove(w->e, AB_CONTAINER, w->name, w->sid,
	    w->alloc, err) < 0)
		rc = -1;
	w->created = 0;
	return rc;
}
