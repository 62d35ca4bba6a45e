#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "imageimport.h"
#include "json.h"
#include "lines.h"
#include "roottar.h"
#include "tarstream.h"

#define LINE_MAX_BYTES (1 << 20)

struct progress {
	struct ab_lines lines;	/* a longer line is refused */
	char id[80];
	char msg[400];	/* an error reply's message */
	void (*show)(const char *line);
};

static void set_id(struct progress *pg, const char *v)
{
	/* A cut ID is none: the build then fails as naming no image. */
	if (v != NULL && strncmp(v, "sha256:", 7) == 0 && strlen(v) == 71 &&
	    ab_fmt(pg->id, sizeof pg->id, "%s", v) < 0)
		pg->id[0] = '\0';
}

static void show_stream(struct progress *pg, const char *s)
{
	char line[512];
	size_t n;

	/* One stderr line per build step, so a user sees it moving. */
	if (pg->show == NULL || strncmp(s, "Step ", 5) != 0)
		return;
	n = strcspn(s, "\r\n");
	if (ab_fmt(line, sizeof line, "%.*s", (int)(n < 400 ? n : 400),
	    s) == 0)
		pg->show(line);
}

static int progress_line(struct progress *pg, const char *p, size_t n,
    struct ab_err *err)
{
	struct ab_json j;
	char *v;
	int t;

	while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' '))
		n--;
	if (n == 0)
		return 0;
	if (ab_json_parse(&j, p, n, err) < 0)
		return ab_fail(err, AB_EENGINE,
		    "engine sent an unreadable progress line");
	if ((t = ab_json_key(&j, 0, "error")) >= 0) {
		v = ab_json_str(&j, t);
		ab_fail(err, AB_EENGINE, "engine failed the build: %.400s",
		    v ? v : "?");
		free(v);
		ab_json_free(&j);
		return -1;
	}
	if ((v = ab_json_str(&j, ab_json_key(&j, 0, "stream"))) != NULL)
		show_stream(pg, v);
	free(v);
	/* The engine's message, cut if need be: it is only shown. */
	if ((v = ab_json_str(&j, ab_json_key(&j, 0, "message"))) != NULL)
		(void)ab_fmt(pg->msg, sizeof pg->msg, "%s", v);
	free(v);
	v = ab_json_str(&j, ab_json_key(&j, 0, "status"));
	set_id(pg, v);
	free(v);
	v = ab_json_str(&j, ab_json_get(&j, 0, "aux.ID"));
	set_id(pg, v);
	free(v);
	ab_json_free(&j);
	return 0;
}

static int progress_sink(void *ctx, const char *p, size_t n,
    struct ab_err *err)
{
	struct progress *pg = ctx;
	const char *line;
	size_t k;
	int rc;

	ab_lines_feed(&pg->lines, p, n);
	while ((rc = ab_lines_next(&pg->lines, &line, &k)) != AB_LINE_NONE) {
		if (rc < 0)
			return ab_fail(err, AB_EENGINE, "out of memory");
		if (rc == AB_LINE_OVER)
			return ab_fail(err, AB_EENGINE, "engine sent a "
			    "progress line over %d bytes", LINE_MAX_BYTES);
		if (progress_line(pg, line, k, err) < 0)
			return -1;
	}
	return 0;
}

/* Sends a tar body and follows the progress stream to the image ID. */
static int send_body(struct ab_engine *e, const char *path, ab_reader rd,
    void *ctx, const char *what, void (*show)(const char *line),
    char digest[80], struct ab_err *err)
{
	struct progress pg;
	struct ab_req q;
	struct ab_resp r;
	const char *last;
	size_t n;
	int rc;

	memset(&pg, 0, sizeof pg);
	pg.show = show;
	ab_lines_init(&pg.lines, LINE_MAX_BYTES);
	memset(&q, 0, sizeof q);
	q.method = "POST";
	q.path = path;
	q.content_type = "application/x-tar";
	q.reader = rd;
	q.reader_ctx = ctx;
	q.sink = progress_sink;
	q.sink_ctx = &pg;
	q.what = what;
	rc = ab_engine_call(e, &q, &r, err);
	/* A refusal's reply went through the progress sink. */
	if (rc == 0 && r.status != 200)
		rc = ab_fail(err, AB_EENGINE, "cannot %s: engine said %ld%s%s",
		    what, r.status, pg.msg[0] ? ": " : "", pg.msg);
	if (rc == 0 && ab_lines_end(&pg.lines, &last, &n) == AB_LINE_OK)
		rc = progress_line(&pg, last, n, err);
	if (rc == 0 && pg.id[0] == '\0')
		rc = ab_fail(err, AB_EENGINE, "cannot %s: engine named no image",
		    what);
	if (rc == 0)
		rc = ab_fmt_err(err, digest, 80, "the image's ID", "%s", pg.id);
	ab_resp_free(&r);
	ab_lines_free(&pg.lines);
	return rc;
}

static int send_tar(struct ab_engine *e, const char *path,
    const struct ab_tar_source *src, const char *what,
    void (*show)(const char *line), char digest[80], struct ab_err *err)
{
	struct ab_tar *t;
	int rc;

	if (ab_tar_open(&t, src, err) < 0)
		return -1;
	rc = send_body(e, path, ab_tar_read, t, what, show, digest, err);
	ab_tar_close(t);
	return rc;
}

/* CHANGE NULL: its own append failed. */
static int add_change(struct ab_buf *q, const char *change)
{
	return change == NULL || ab_buf_adds(q, "&changes=") < 0 ||
	    ab_url_escape(q, change) < 0 ? -1 : 0;
}

/* The import's query: the image's whole configuration (nothing of a
 * root's own, whose USER, ENTRYPOINT, CMD, ENV and WORKDIR are not
 * carried over: the lockdown compares a container's exactly). */
static int import_query(struct ab_buf *q, const struct ab_rootfs *rf,
    const struct ab_image_spec *sp, struct ab_err *err)
{
	struct ab_buf c;
	int i, rc = 0;

	ab_buf_init(&c, AB_QUERY_MAX);	/* a change, escaped into q */
	/* The tag only keeps the image from being pruned as dangling (as the
	 * untagged parent of some other image, say); it is never trusted.
	 * Every append's -1 is kept in rc: no change goes missing. */
	rc |= ab_buf_addf(q, "/images/create?fromSrc=-&repo=agentbox&tag=%s",
	    sp->id);
	rc |= ab_buf_addf(&c, "USER %s", rf->user);
	rc |= add_change(q, c.data);
	ab_buf_reset(&c);
	rc |= ab_buf_addf(&c, "ENV PATH=%s", sp->path_env);
	rc |= add_change(q, c.data);
	ab_buf_reset(&c);
	rc |= ab_buf_addf(&c, "ENTRYPOINT [\"%s\"]", rf->entrypoint);
	rc |= add_change(q, c.data);
	rc |= add_change(q, "WORKDIR /work");
	ab_buf_reset(&c);
	rc |= ab_buf_addf(&c, "LABEL org.agentbox.image=%s "
	    "org.agentbox.state=%s org.agentbox.recipe=%s "
	    "org.agentbox.recipe-kind=%s", sp->id, sp->sid, sp->recipe,
	    sp->kind);
	for (i = 0; i < sp->nv; i++)
		rc |= ab_buf_addf(&c, " org.agentbox.version.%s=%s",
		    sp->vname[i], sp->vvalue[i]);
	if (sp->base[0] != '\0')
		rc |= ab_buf_addf(&c, " org.agentbox.base=%s", sp->base);
	/* Names, versions and spaces: quoted, nothing to escape. */
	if (sp->packages[0] != '\0')
		rc |= ab_buf_addf(&c, " org.agentbox.packages=\"%s\"",
		    sp->packages);
	if (rc == 0)
		rc = add_change(q, c.data);
	if (rc < 0)
		ab_buf_fail(c.over ? &c : q, AB_EREFUSED, "the import's query",
		    err);
	ab_buf_free(&c);
	return rc;
}

int ab_image_import(struct ab_engine *e, struct ab_rootfs *rf,
    const struct ab_image_spec *sp, void (*show)(const char *line),
    char digest[80], struct ab_err *err)
{
	struct ab_tar_source src;
	struct ab_buf q;
	int rc;

	ab_buf_init(&q, AB_QUERY_MAX);
	rc = import_query(&q, rf, sp, err);
	ab_rootfs_source(rf, &src);
	if (rc == 0)
		rc = send_tar(e, q.data, &src, "import the image", show,
		    digest, err);
	ab_buf_free(&q);
	return rc;
}

/* A root's tar (FD) with the layer on top, as one import. */
int ab_image_import_layered(struct ab_engine *e, struct ab_rootfs *rf,
    int fd, const struct ab_image_spec *sp, void (*show)(const char *line),
    char digest[80], struct ab_err *err)
{
	struct ab_roottar *t;
	struct ab_buf q;
	int rc;

	if (lseek(fd, 0, SEEK_SET) != 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot read the root "
		    "filesystem back");
	ab_buf_init(&q, AB_QUERY_MAX);
	rc = import_query(&q, rf, sp, err);
	if (rc == 0)
		rc = ab_roottar_open(&t, fd, rf, err);
	if (rc == 0) {
		rc = send_body(e, q.data, ab_roottar_read, t,
		    "import the image", show, digest, err);
		ab_roottar_close(t);
	}
	ab_buf_free(&q);
	return rc;
}
