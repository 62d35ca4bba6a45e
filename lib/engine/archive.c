#include <stdlib.h>

#include "archive.h"

struct archive {
	struct ab_engine *e;
	struct ab_stream s;
	struct ab_tarread *t;
};

static int on_bytes(void *ctx, const char *p, size_t n, struct ab_err *err)
{
	struct archive *a = ctx;

	return ab_tarread_feed(a->t, p, n, err);
}

/* A pump of at most a second: what came was fed on the way.  At the
 * stream's end, its result. */
static int pull(void *ctx, struct ab_err *err)
{
	struct archive *a = ctx;

	if (!a->s.sink_failed && !a->s.done &&
	    ab_stream_pump(a->e, 1000, err) < 0)
		return -1;
	if (a->s.sink_failed) {
		*err = a->s.sink_err;
		return -1;
	}
	if (a->s.done)
		return ab_stream_result(&a->s, err) < 0 ? -1 : 1;
	return 0;
}

static void release(void *ctx)
{
	struct archive *a = ctx;

	ab_stream_close(&a->s);
	free(a);
}

static int open_get(struct ab_tarread **tp, struct ab_engine *e,
    const char *path, long long max, const char *what, long *refused,
    struct ab_err *err)
{
	struct archive *a = calloc(1, sizeof *a);

	*tp = NULL;
	if (a == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	a->e = e;
	if (ab_tarread_open_fed(&a->t, pull, a, max, what, err) < 0) {
		free(a);
		return -1;
	}
	ab_tarread_owns(a->t, release);
	*tp = a->t;
	if (ab_stream_open(e, &a->s, "GET", path, on_bytes, a, what,
	    err) == 0) {
		if (a->s.status == 200)
			return 0;
		if (refused != NULL) {
			*refused = a->s.status;
			ab_tarread_close(*tp);
			*tp = NULL;
			return 0;
		}
		ab_fail(err, a->s.status == 404 ? AB_EREFUSED : AB_EENGINE,
		    "%s: engine said %ld", what, a->s.status);
	}
	/* Nothing is left open for the caller to close. */
	ab_tarread_close(*tp);
	*tp = NULL;
	return -1;
}

int ab_archive_open(struct ab_tarread **tp, struct ab_engine *e,
    const char *path, long long max, const char *what, struct ab_err *err)
{
	return open_get(tp, e, path, max, what, NULL, err);
}

int ab_archive_open_if(struct ab_tarread **tp, struct ab_engine *e,
    const char *path, long long max, const char *what, long *refused,
    struct ab_err *err)
{
	return open_get(tp, e, path, max, what, refused, err);
}
