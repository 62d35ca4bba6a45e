#include <archive.h>
#include <archive_entry.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "tarread.h"

/* What one pump of the stream may hand over at most. */
#define PENDING_MAX (16u << 20)

struct ab_tarread {
	struct ab_engine *e;
	struct ab_stream s;
	struct archive *a;
	struct ab_buf pending;	/* what the stream delivered, not yet read */
	struct ab_buf out;	/* what libarchive holds now */
	long long got, max;
	const char *what;
	struct ab_err err;	/* the first failure inside a callback */
	int failed;
};

static int on_bytes(void *ctx, const char *p, size_t n, struct ab_err *err)
{
	struct ab_tarread *t = ctx;

	t->got += (long long)n;
	if (t->got > t->max)
		return ab_fail(err, AB_EREFUSED, "%s: more than %lld bytes",
		    t->what, t->max);
	if (ab_buf_add(&t->pending, p, n) < 0)
		return ab_fail(err, AB_EENGINE, "%s: out of memory", t->what);
	return 0;
}

static la_ssize_t on_read(struct archive *a, void *ctx, const void **block)
{
	struct ab_tarread *t = ctx;
	struct ab_buf swap;

	(void)a;
	while (t->pending.len == 0 && !t->s.done)
		if (ab_stream_pump(t->e, 1000, &t->err) < 0) {
			t->failed = 1;
			return -1;
		}
	if (t->s.done && ab_stream_result(&t->s, &t->err) < 0) {
		t->failed = 1;
		return -1;
	}
	/* Hand out what came; the stream fills the other buffer next. */
	swap = t->out;
	t->out = t->pending;
	t->pending = swap;
	ab_buf_reset(&t->pending);
	*block = t->out.data;
	return (la_ssize_t)t->out.len;
}

static int fail(struct ab_tarread *t, struct ab_err *err)
{
	if (t->failed || t->s.sink_failed) {
		*err = t->failed ? t->err : t->s.sink_err;
		return -1;
	}
	return ab_fail(err, AB_EENGINE, "%s: not a tar archive: %s", t->what,
	    archive_error_string(t->a) ? archive_error_string(t->a) : "?");
}

int ab_tarread_open(struct ab_tarread **tp, struct ab_engine *e,
    const char *path, long long max, const char *what, struct ab_err *err)
{
	struct ab_tarread *t;

	*tp = t = calloc(1, sizeof *t);
	if (t == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	t->e = e;
	t->max = max;
	t->what = what;
	ab_buf_init(&t->pending, PENDING_MAX);
	ab_buf_init(&t->out, PENDING_MAX);
	if (ab_stream_open(e, &t->s, "GET", path, on_bytes, t, what, err) < 0)
		return -1;
	if (t->s.status != 200)
		return ab_fail(err, t->s.status == 404 ? AB_EREFUSED :
		    AB_EENGINE, "%s: engine said %ld", what, t->s.status);
	t->a = archive_read_new();
	if (t->a == NULL || archive_read_support_format_tar(t->a) != ARCHIVE_OK)
		return ab_fail(err, AB_EENGINE, "out of memory");
	if (archive_read_open(t->a, t, NULL, on_read, NULL) != ARCHIVE_OK)
		return fail(t, err);
	return 0;
}

int ab_tarread_next(struct ab_tarread *t, struct archive_entry **ent,
    struct ab_err *err)
{
	int rc = archive_read_next_header(t->a, ent);

	if (rc == ARCHIVE_EOF)
		return 0;
	/* The engine writes a path that is not ASCII as a pax record, and
	 * libarchive fails to turn it into the C locale's charset, warns, and
	 * keeps the record's bytes: what git wants, since a path is bytes
	 * (ab_path_check judges them).  Any other warning is a failure. */
	if (rc == ARCHIVE_WARN && !t->failed && !t->s.sink_failed &&
	    archive_error_string(t->a) != NULL &&
	    strstr(archive_error_string(t->a), "can't be converted") != NULL)
		return 1;
	if (rc != ARCHIVE_OK)
		return fail(t, err);
	return 1;
}

long ab_tarread_data(struct ab_tarread *t, char *p, size_t n,
    struct ab_err *err)
{
	la_ssize_t got = archive_read_data(t->a, p, n);

	if (got < 0)
		return fail(t, err);
	return (long)got;
}

void ab_tarread_close(struct ab_tarread *t)
{
	if (t == NULL)
		return;
	if (t->a != NULL)
		archive_read_free(t->a);
	ab_stream_close(&t->s);
	ab_buf_free(&t->pending);
	ab_buf_free(&t->out);
	free(t);
}
