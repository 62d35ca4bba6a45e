#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "buf.h"
#include "debroot.h"
#include "engineid.h"
#include "file.h"
#include "git.h"
#include "hash.h"
#include "image.h"
#include "json.h"
#include "lockdown.h"
#include "oneshot.h"
#include "owned.h"
#include "rootfs.h"
#include "roottar.h"
#include "testhook.h"
#include "tarstream.h"
#include "version.h"

#define MAX_VERSIONS 16
#define LINE_MAX_BYTES (1 << 20)
#define PACKAGES_MAX (32 * 1024)
/* What agentbox needs of a root made from Debian packages: git, a shell
 * (bash and dash are Essential), the trust anchors. */
#define DEBROOT_NEEDS "git,ca-certificates"
/* The engine's PATH for an image that sets none, and Debian's. */
#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* What a registered image must be: the record, and the labels it implies. */
struct spec {
	char id[AB_ID_LEN + 1];
	char sid[AB_ID_LEN + 1];
	char kind[16];
	char recipe[65];
	char path_env[256];
	char digest[80];
	char engine[AB_ID_LEN + 1];	/* its engine's mark; "" in old records */
	int nv;
	char vname[MAX_VERSIONS][64];
	char vvalue[MAX_VERSIONS][128];
	/* On another root: the user's base image ID, or every Debian
	 * package of the root with its version ("NAME=V NAME=V"). */
	char base[80];
	char packages[PACKAGES_MAX];
};

/* A label value goes into a Dockerfile-syntax change and a shell-free
 * argv: keep it to characters that need no quoting anywhere. */
static int plain(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || strchr("._+~-", *s)))
			return 0;
	return 1;
}

static int spec_add_version(struct spec *sp, const char *n, const char *v,
    struct ab_err *err)
{
	if (sp->nv == MAX_VERSIONS || strlen(n) >= sizeof sp->vname[0] ||
	    strlen(v) >= sizeof sp->vvalue[0] || !plain(n) || !plain(v))
		return ab_fail(err, AB_EUSAGE, "bad pinned version %.60s=%.60s",
		    n, v);
	snprintf(sp->vname[sp->nv], sizeof sp->vname[0], "%s", n);
	snprintf(sp->vvalue[sp->nv], sizeof sp->vvalue[0], "%s", v);
	sp->nv++;
	return 0;
}

/* --- the labels ---------------------------------------------------- */

static void labels_json(struct ab_jw *w, const struct spec *sp)
{
	char key[128];
	int i;

	ab_jw_obj(w);
	ab_jw_kstr(w, "org.agentbox.image", sp->id);
	ab_jw_kstr(w, "org.agentbox.state", sp->sid);
	ab_jw_kstr(w, "org.agentbox.recipe", sp->recipe);
	ab_jw_kstr(w, "org.agentbox.recipe-kind", sp->kind);
	if (sp->base[0] != '\0')
		ab_jw_kstr(w, "org.agentbox.base", sp->base);
	if (sp->packages[0] != '\0')
		ab_jw_kstr(w, "org.agentbox.packages", sp->packages);
	for (i = 0; i < sp->nv; i++) {
		snprintf(key, sizeof key, "org.agentbox.version.%s",
		    sp->vname[i]);
		ab_jw_kstr(w, key, sp->vvalue[i]);
	}
	ab_jw_obj_end(w);
}

/* Every org.agentbox.* label exactly as the spec says, and no other. */
static int check_labels(const struct ab_json *j, int labels,
    const struct spec *sp, struct ab_err *err)
{
	struct ab_buf b;
	struct ab_jw w;
	struct ab_json want;
	int i, k, n, ours = 0, rc = 0;
	char *key;

	ab_buf_init(&b, AB_QUERY_MAX);	/* as the import's query held them */
	ab_jw_init(&w, &b);
	labels_json(&w, sp);
	if (ab_jw_done(&w) < 0 || ab_json_parse(&want, b.data, b.len, err) < 0) {
		ab_buf_fail(&b, AB_EREFUSED, "the image's labels", err);
		ab_buf_free(&b);
		return -1;
	}
	n = ab_json_count(j, labels);
	for (i = 0; rc == 0 && i < n; i++) {
		k = ab_json_member(j, labels, i);
		key = ab_json_str(j, k);
		if (key != NULL && strncmp(key, "org.agentbox.", 13) == 0) {
			char *v = ab_json_str(j, k + 1);

			ours++;
			if (v == NULL || !ab_json_str_eq(&want,
			    ab_json_key(&want, 0, key), v))
				rc = ab_fail(err, AB_EREFUSED,
				    "image label %.100s does not match its "
				    "record", key);
			free(v);
		}
		free(key);
	}
	if (rc == 0 && ours != ab_json_count(&want, 0))
		rc = ab_fail(err, AB_EREFUSED,
		    "image lacks labels its record requires");
	ab_json_free(&want);
	ab_buf_free(&b);
	return rc;
}

/* --- inspect ------------------------------------------------------- */

static int check_config(const struct ab_json *j, const struct spec *sp,
    struct ab_err *err)
{
	int env = ab_json_get(j, 0, "Config.Env"), ep, i, n, path_ok = 0;
	char want[300];

	if (!ab_json_str_eq(j, ab_json_get(j, 0, "Id"), sp->digest))
		return ab_fail(err, AB_EREFUSED,
		    "engine image is not %s", sp->digest);
	if (!ab_json_str_eq(j, ab_json_get(j, 0, "Config.User"),
	    AB_AGENT_USER))
		return ab_fail(err, AB_EREFUSED, "image user is not %s",
		    AB_AGENT_USER);
	ep = ab_json_get(j, 0, "Config.Entrypoint");
	if (ab_json_count(j, ep) != 1 || !ab_json_str_eq(j,
	    ab_json_elem(j, ep, 0), AB_IMAGE_ENTRYPOINT))
		return ab_fail(err, AB_EREFUSED, "image entrypoint is not %s",
		    AB_IMAGE_ENTRYPOINT);
	snprintf(want, sizeof want, "PATH=%s", sp->path_env);
	n = ab_json_count(j, env);
	for (i = 0; i < n; i++)
		path_ok += ab_json_str_eq(j, ab_json_elem(j, env, i), want);
	if (path_ok != 1)
		return ab_fail(err, AB_EREFUSED, "image PATH is not %s",
		    sp->path_env);
	return check_labels(j, ab_json_get(j, 0, "Config.Labels"), sp, err);
}

static int inspect_image(struct ab_engine *e, const struct spec *sp,
    struct ab_err *err)
{
	struct ab_resp r;
	struct ab_json j;
	char path[160];
	int rc = -1;

	snprintf(path, sizeof path, "/images/%s/json", sp->digest);
	if (ab_engine_json(e, "GET", path, NULL, "inspect the image", &r,
	    err) < 0)
		goto out;
	if (r.status == 404) {
		ab_fail(err, AB_EREFUSED, "image %s is gone from the engine",
		    sp->digest);
		goto out;
	}
	if (r.status != 200) {
		ab_engine_fail(&r, AB_EENGINE, "inspect the image", err);
		goto out;
	}
	if (ab_json_parse(&j, r.body.data, r.body.len, err) < 0) {
		err->code = AB_EENGINE;
		goto out;
	}
	rc = check_config(&j, sp, err);
	if (rc == 0)
		ab_image_keep(e, sp->digest, r.body.data, r.body.len);
	ab_json_free(&j);
out:
	ab_resp_free(&r);
	return rc;
}

/* --- the version probe --------------------------------------------- */

static int probe_output(const struct ab_oneshot *o, const struct spec *sp,
    struct ab_err *err)
{
	const char *p = o->out.data ? o->out.data : "";
	char want[256];
	size_t k;
	int i;

	if (o->out.over)
		return ab_fail(err, AB_EREFUSED, "version probe said too much");
	for (i = 0; i < sp->nv; i++) {
		snprintf(want, sizeof want, "%s %s\n", sp->vname[i],
		    sp->vvalue[i]);
		k = strlen(want);
		if (strncmp(p, want, k) != 0)
			return ab_fail(err, AB_EREFUSED,
			    "version probe does not report %s %s as the label "
			    "claims", sp->vname[i], sp->vvalue[i]);
		p += k;
	}
	if (*p != '\0')
		return ab_fail(err, AB_EREFUSED,
		    "version probe reports more than the labels claim");
	return 0;
}

static int version_probe(struct ab_engine *e, const struct spec *sp,
    struct ab_err *err)
{
	const char *entry[] = { AB_IMAGE_VERSIONS, NULL };
	const char *cmd[MAX_VERSIONS + 1], *env[2], *labels[7];
	char pathvar[300], name[80], rnd[AB_ID_LEN + 1];
	struct ab_lock l;
	struct ab_info info;
	struct ab_oneshot o;
	int i, rc;

	if (ab_engine_info(e, &info, err) < 0 ||
	    ab_lock_host_check(&info, err) < 0 || ab_new_id(rnd, err) < 0)
		return -1;
	for (i = 0; i < sp->nv; i++)
		cmd[i] = sp->vname[i];
	cmd[i] = NULL;
	snprintf(pathvar, sizeof pathvar, "PATH=%s", sp->path_env);
	env[0] = pathvar;
	env[1] = NULL;
	labels[0] = "org.agentbox.state";
	labels[1] = sp->sid;
	labels[2] = "org.agentbox.image";
	labels[3] = sp->id;
	labels[4] = "org.agentbox.role";
	labels[5] = "version-probe";
	labels[6] = NULL;
	memset(&l, 0, sizeof l);
	l.image = sp->digest;
	l.entrypoint = entry;
	l.cmd = cmd;
	l.env = env;
	l.labels = labels;
	ab_oneshot_limits(&l);
	l.seccomp_keyword = info.seccomp_keyword;
	snprintf(name, sizeof name, "agentbox-probe-%s", rnd);
	rc = ab_oneshot_run(e, &l, name, &o, err);
	if (rc == 0 && o.status != 0)
		rc = ab_fail(err, AB_EREFUSED,
		    "version probe exited %lld: %.200s", o.status,
		    o.err.data ? o.err.data : "");
	if (rc == 0)
		rc = probe_output(&o, sp, err);
	ab_oneshot_free(&o);
	return rc;
}

/* --- records ------------------------------------------------------- */

static int write_record(struct ab_state *s, const struct spec *sp,
    struct ab_err *err)
{
	struct ab_buf b;
	struct ab_jw w;
	int i, rc;

	ab_buf_init(&b, AB_RECORD_MAX);	/* what a record may be read back */
	ab_jw_init(&w, &b);
	ab_record_begin(&w, s, "image", sp->id);
	ab_jw_kstr(&w, "digest", sp->digest);
	ab_jw_kstr(&w, "engine", sp->engine);
	ab_jw_kstr(&w, "recipe_kind", sp->kind);
	ab_jw_kstr(&w, "recipe", sp->recipe);
	ab_jw_kstr(&w, "path", sp->path_env);
	ab_jw_kstr(&w, "base", sp->base);
	ab_jw_kstr(&w, "packages", sp->packages);
	ab_jw_kstr(&w, "agentbox", AB_VERSION);
	ab_jw_kint(&w, "created_ms", ab_now_ms());
	ab_jw_key(&w, "versions");
	ab_jw_arr(&w);
	for (i = 0; i < sp->nv; i++) {
		ab_jw_arr(&w);
		ab_jw_str(&w, sp->vname[i]);
		ab_jw_str(&w, sp->vvalue[i]);
		ab_jw_arr_end(&w);
	}
	ab_jw_arr_end(&w);
	ab_jw_obj_end(&w);
	rc = ab_jw_done(&w) < 0 ? ab_buf_fail(&b, AB_EREFUSED, "the image "
	    "record", err) : ab_record_write(s, "image", sp->id, b.data, b.len,
	    err);
	ab_buf_free(&b);
	return rc;
}

static int copy_field(const struct ab_json *j, const char *key, char *dst,
    size_t cap)
{
	char *v = ab_json_str(j, ab_json_key(j, 0, key));
	int rc = -1;

	if (v != NULL && strlen(v) < cap) {
		snprintf(dst, cap, "%s", v);
		rc = 0;
	}
	free(v);
	return rc;
}

/* The values ab-image writes, as it writes them. */
static int spec_bounded(const struct spec *sp)
{
	const char *p;

	if (strncmp(sp->digest, "sha256:", 7) != 0 ||
	    !ab_is_hex(sp->digest + 7, 64) ||
	    (strcmp(sp->kind, "default") != 0 &&
	    strcmp(sp->kind, "agents") != 0 &&
	    strcmp(sp->kind, "production") != 0) ||
	    !ab_is_hex(sp->recipe, 64) || sp->path_env[0] != '/')
		return 0;
	for (p = sp->path_env; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("/:._-", *p)))
			return 0;
	return 1;
}

/* "NAME=V NAME=V": Debian package names and versions, as debroot.c
 * writes them; "" for none. */
static int packages_bounded(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || strchr("=+.~:- ", *s)))
			return 0;
	return 1;
}

/* The fields of records written before images had other roots. */
static int root_fields(const struct ab_json *j, struct spec *sp)
{
	sp->base[0] = sp->packages[0] = '\0';
	if (ab_json_key(j, 0, "base") >= 0 && (copy_field(j, "base", sp->base,
	    sizeof sp->base) < 0 || (sp->base[0] != '\0' &&
	    (strncmp(sp->base, "sha256:", 7) != 0 ||
	    !ab_is_hex(sp->base + 7, 64)))))
		return -1;
	if (ab_json_key(j, 0, "packages") >= 0 && (copy_field(j, "packages",
	    sp->packages, sizeof sp->packages) < 0 ||
	    !packages_bounded(sp->packages)))
		return -1;
	return 0;
}

/* Records written before engines were recorded have no "engine". */
static int engine_field(const struct ab_json *j, struct spec *sp)
{
	sp->engine[0] = '\0';
	if (ab_json_key(j, 0, "engine") < 0)
		return 0;
	return copy_field(j, "engine", sp->engine, sizeof sp->engine) == 0 &&
	    ab_is_id(sp->engine) ? 0 : -1;
}

static int read_spec(struct ab_state *s, const struct ab_handle *h,
    struct spec *sp, struct ab_err *err)
{
	struct ab_json j;
	char *n, *v;
	int vs, i, t, rc = 0;

	memset(sp, 0, sizeof *sp);
	if (ab_record_read(s, h, &j, err) < 0)
		return -1;
	memcpy(sp->id, h->id, sizeof sp->id);
	memcpy(sp->sid, s->sid, sizeof sp->sid);
	if (copy_field(&j, "digest", sp->digest, sizeof sp->digest) < 0 ||
	    copy_field(&j, "recipe_kind", sp->kind, sizeof sp->kind) < 0 ||
	    copy_field(&j, "recipe", sp->recipe, sizeof sp->recipe) < 0 ||
	    copy_field(&j, "path", sp->path_env, sizeof sp->path_env) < 0 ||
	    engine_field(&j, sp) < 0 || root_fields(&j, sp) < 0 ||
	    !spec_bounded(sp))
		rc = ab_fail(err, AB_EREFUSED, "record of image:%s is corrupt",
		    h->id);
	vs = ab_json_key(&j, 0, "versions");
	for (i = 0; rc == 0 && (t = ab_json_elem(&j, vs, i)) >= 0; i++) {
		n = ab_json_str(&j, ab_json_elem(&j, t, 0));
		v = ab_json_str(&j, ab_json_elem(&j, t, 1));
		rc = n && v ? spec_add_version(sp, n, v, err) : -1;
		if (rc < 0)
			ab_fail(err, AB_EREFUSED,
			    "record of image:%s is corrupt", h->id);
		free(n);
		free(v);
	}
	ab_json_free(&j);
	return rc;
}

/* Each engine builds its own image (there is no registry): a record is
 * good on the engine it names alone. */
static int on_engine(struct ab_engine *e, const struct spec *sp,
    struct ab_err *err)
{
	char what[48];

	if (sp->engine[0] == '\0')
		return ab_fail(err, AB_EREFUSED, "image:%s was registered "
		    "before agentbox recorded engines: build the image again "
		    "(ab-image build) and remove this one (ab-image remove) on the "
		    "engine that holds it", sp->id);
	snprintf(what, sizeof what, "image:%s", sp->id);
	return ab_engine_is(e, sp->engine, what, err);
}

int ab_image_verify(struct ab_state *s, struct ab_engine *e,
    const struct ab_handle *h, int probe, char *digest, struct ab_err *err)
{
	struct spec sp;

	if (read_spec(s, h, &sp, err) < 0 || on_engine(e, &sp, err) < 0 ||
	    inspect_image(e, &sp, err) < 0)
		return -1;
	if (probe && version_probe(e, &sp, err) < 0)
		return -1;
	if (digest != NULL)
		snprintf(digest, 80, "%s", sp.digest);
	return 0;
}

/* Only an image that carries this state's label is removed (a record
 * edited to name another's image removes nothing). */
static int remove_image(struct ab_engine *e, const char *digest,
    const char *sid, struct ab_err *err)
{
	int rc = ab_owned_remove(e, AB_IMAGE, digest, sid, NULL, err);

	if (rc == AB_FOREIGN)
		return ab_fail(err, AB_EREFUSED, "image %.80s is not this state "
		    "directory's: left alone", digest);
	return rc;
}

int ab_image_remove(struct ab_state *s, struct ab_engine *e,
    const struct ab_handle *h, struct ab_err *err)
{
	struct spec sp;

	if (read_spec(s, h, &sp, err) < 0)
		return -1;
	/* An old record is removed where its image is, never proven gone
	 * from an engine that may not be its own. */
	if (sp.engine[0] == '\0') {
		if (inspect_image(e, &sp, err) < 0 && err->code == AB_EREFUSED)
			return ab_fail(err, AB_EREFUSED, "image:%s was "
			    "registered before agentbox recorded engines, and "
			    "its image is not on the engine at %s: remove it on "
			    "its own", sp.id, e->ep.where);
	} else if (on_engine(e, &sp, err) < 0) {
		return -1;
	}
	if (remove_image(e, sp.digest, s->sid, err) < 0)
		return -1;
	return ab_record_remove(s, h, err);
}

/* --- the engine's JSON progress stream (import and build) ---------- */

struct progress {
	struct ab_buf line;
	char id[80];
	char msg[400];	/* an error reply's message */
	ab_progress show;
};

static void set_id(struct progress *pg, const char *v)
{
	if (v != NULL && strncmp(v, "sha256:", 7) == 0 && strlen(v) == 71)
		snprintf(pg->id, sizeof pg->id, "%s", v);
}

static void show_stream(struct progress *pg, const char *s)
{
	char line[512];
	size_t n;

	/* One stderr line per build step, so a user sees it moving. */
	if (pg->show == NULL || strncmp(s, "Step ", 5) != 0)
		return;
	n = strcspn(s, "\r\n");
	snprintf(line, sizeof line, "%.*s", (int)(n < 400 ? n : 400), s);
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
	if ((v = ab_json_str(&j, ab_json_key(&j, 0, "message"))) != NULL)
		snprintf(pg->msg, sizeof pg->msg, "%s", v);
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
	char *nl;
	size_t k;

	if (ab_buf_add(&pg->line, p, n) < 0)
		return ab_fail(err, AB_EENGINE,
		    "engine sent a progress line over %d bytes", LINE_MAX_BYTES);
	while ((nl = memchr(pg->line.data, '\n', pg->line.len)) != NULL) {
		k = (size_t)(nl - pg->line.data);
		if (progress_line(pg, pg->line.data, k, err) < 0)
			return -1;
		ab_buf_consume(&pg->line, k + 1);
	}
	return 0;
}

/* Sends a tar body and follows the progress stream to the image ID. */
static int send_body(struct ab_engine *e, const char *path, ab_reader rd,
    void *ctx, const char *what, ab_progress show, char digest[80],
    struct ab_err *err)
{
	struct progress pg;
	struct ab_req q;
	struct ab_resp r;
	int rc;

	memset(&pg, 0, sizeof pg);
	pg.show = show;
	ab_buf_init(&pg.line, LINE_MAX_BYTES);
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
	if (rc == 0 && pg.line.len > 0)
		rc = progress_line(&pg, pg.line.data, pg.line.len, err);
	if (rc == 0 && pg.id[0] == '\0')
		rc = ab_fail(err, AB_EENGINE, "cannot %s: engine named no image",
		    what);
	if (rc == 0)
		snprintf(digest, 80, "%s", pg.id);
	ab_resp_free(&r);
	ab_buf_free(&pg.line);
	return rc;
}

static int send_tar(struct ab_engine *e, const char *path,
    const struct ab_tar_source *src, const char *what, ab_progress show,
    char digest[80], struct ab_err *err)
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
    const struct spec *sp, struct ab_err *err)
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
	return rc < 0 ? -1 : 0;
}

static int import_default(struct ab_engine *e, struct ab_rootfs *rf,
    const struct spec *sp, ab_progress show, char digest[80],
    struct ab_err *err)
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
static int import_layered(struct ab_engine *e, struct ab_rootfs *rf,
    int fd, const struct spec *sp, ab_progress show, char digest[80],
    struct ab_err *err)
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

/* --- the base's reference ------------------------------------------ */

/* The name part of a pinned reference: registry, path and tag characters. */
static int plain_ref(const char *base, const char *at)
{
	const char *p;

	for (p = base; p < at; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		    strchr("._-/:", *p)))
			return 0;
	return 1;
}

int ab_image_check_base(const char *base, struct ab_err *err)
{
	const char *at = base ? strstr(base, "@sha256:") : NULL;
	int i;

	/* An image ID names one image, as the engine has it. */
	if (base != NULL && strncmp(base, "sha256:", 7) == 0 &&
	    strlen(base) == 71 && ab_is_hex(base + 7, 64))
		return 0;
	if (at == NULL || at == base)
		return ab_fail(err, AB_EUSAGE,
		    "base %s is not pinned: give an image ID (sha256:HEX) or "
		    "NAME@sha256:DIGEST", base ? base : "(none)");
	for (i = 0; i < 64; i++)
		if (!((at[8 + i] >= '0' && at[8 + i] <= '9') ||
		    (at[8 + i] >= 'a' && at[8 + i] <= 'f')))
			break;
	if (i != 64 || at[72] != '\0' || !plain_ref(base, at))
		return ab_fail(err, AB_EUSAGE,
		    "base %s is not pinned: give an image ID (sha256:HEX) or "
		    "NAME@sha256:DIGEST", base);
	return 0;
}

/* --- another root: the user's base, or Debian packages -------------- */

/* The user's base, as the engine has it (never pulled): its ID and its
 * PATH, which the image keeps after agentbox's own directories. */
static int resolve_base(struct ab_engine *e, const char *ref, char id[80],
    char path[256], struct ab_err *err)
{
	struct ab_resp r;
	struct ab_json j;
	char url[600], *v = NULL;
	int env, i, rc = -1;

	if (snprintf(url, sizeof url, "/images/%s/json", ref) >=
	    (int)sizeof url)
		return ab_fail(err, AB_EUSAGE, "base %.100s...: name too long",
		    ref);
	if (ab_engine_json(e, "GET", url, NULL, "inspect the base image", &r,
	    err) < 0)
		return -1;
	if (r.status == 404) {
		ab_fail(err, AB_EREFUSED, "base image %s is not on the engine "
		    "(agentbox never pulls: load or build it there first)", ref);
		goto out;
	}
	if (r.status != 200) {
		ab_engine_fail(&r, AB_EENGINE, "inspect the base image", err);
		goto out;
	}
	if (ab_json_parse(&j, r.body.data, r.body.len, err) < 0) {
		err->code = AB_EENGINE;
		goto out;
	}
	if (copy_field(&j, "Id", id, 80) < 0 || strncmp(id, "sha256:", 7) ||
	    !ab_is_hex(id + 7, 64)) {
		ab_fail(err, AB_EENGINE, "the engine names base %s oddly", ref);
	} else {
		snprintf(path, 256, "%s", DEFAULT_PATH);
		env = ab_json_get(&j, 0, "Config.Env");
		for (i = 0; (v = ab_json_str(&j, ab_json_elem(&j, env, i)));
		    i++) {
			if (strncmp(v, "PATH=", 5) == 0 &&
			    snprintf(path, 256, "%s", v + 5) >= 256)
				path[0] = '\0';
			free(v);
		}
		rc = 0;
	}
	ab_json_free(&j);
out:
	ab_resp_free(&r);
	return rc;
}

static int write_sink(void *ctx, const char *p, size_t n, struct ab_err *err)
{
	int fd = *(int *)ctx;
	ssize_t k;

	while (n > 0) {
		k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return ab_fail_errno(err, AB_EENGINE, "cannot keep the "
			    "base's filesystem");
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* A file for a root's tar, gone when closed: TMPDIR's, else /var/tmp's. */
static int root_file(struct ab_err *err)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	if (dir == NULL || *dir != '/')
		dir = "/var/tmp";
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot make a file in "
		    "%s for the root filesystem", dir);
	return fd;
}

/* The base's filesystem, whole (a container created from it, never
 * started, and exported), into FD. */
static int export_base(struct ab_engine *e, const struct spec *sp, int fd,
    struct ab_err *err)
{
	struct ab_buf body;
	struct ab_jw w;
	struct ab_req q;
	struct ab_resp r;
	struct ab_json j;
	struct ab_err cerr;
	char url[200], cid[80] = "", rnd[AB_ID_LEN + 1];
	int rc = -1;

	if (ab_new_id(rnd, err) < 0)
		return -1;
	ab_buf_init(&body, AB_REQUEST_MAX);
	ab_jw_init(&w, &body);
	ab_jw_obj(&w);
	ab_jw_kstr(&w, "Image", sp->base);
	ab_jw_key(&w, "Entrypoint");
	ab_jw_arr(&w);
	ab_jw_str(&w, "/nonexistent");
	ab_jw_arr_end(&w);
	ab_jw_kbool(&w, "NetworkDisabled", 1);
	ab_jw_key(&w, "Labels");
	ab_jw_obj(&w);
	ab_jw_kstr(&w, "org.agentbox.state", sp->sid);
	ab_jw_kstr(&w, "org.agentbox.image", sp->id);
	ab_jw_kstr(&w, "org.agentbox.role", "image-export");
	ab_jw_obj_end(&w);
	ab_jw_key(&w, "HostConfig");
	ab_jw_obj(&w);
	ab_jw_kstr(&w, "NetworkMode", "none");
	ab_jw_obj_end(&w);
	ab_jw_obj_end(&w);
	if (ab_jw_done(&w) < 0) {
		ab_buf_fail(&body, AB_EREFUSED, "the export container's "
		    "request", err);
		ab_buf_free(&body);
		return -1;
	}
	snprintf(url, sizeof url, "/containers/create?name=agentbox-export-%s",
	    rnd);
	rc = ab_engine_json(e, "POST", url, body.data,
	    "create the base's export container", &r, err);
	ab_buf_free(&body);
	if (rc < 0)
		return -1;
	rc = -1;
	if (r.status != 201) {
		ab_engine_fail(&r, AB_EENGINE, "create the base's export "
		    "container", err);
	} else if (ab_json_parse(&j, r.body.data, r.body.len, err) == 0) {
		if (copy_field(&j, "Id", cid, sizeof cid) == 0)
			rc = 0;
		ab_json_free(&j);
	}
	ab_resp_free(&r);
	if (rc < 0)
		return ab_fail(err, AB_EENGINE, "cannot create the base's "
		    "export container");
	memset(&q, 0, sizeof q);
	snprintf(url, sizeof url, "/containers/%s/export", cid);
	q.method = "GET";
	q.path = url;
	q.sink = write_sink;
	q.sink_ctx = &fd;
	q.what = "export the base's filesystem";
	rc = ab_engine_call(e, &q, &r, err);
	if (rc == 0 && r.status != 200)
		rc = ab_fail(err, AB_EENGINE, "cannot export the base's "
		    "filesystem: engine said %ld", r.status);
	ab_resp_free(&r);
	if (ab_owned_remove(e, AB_CONTAINER, cid, sp->sid, NULL, &cerr) < 0 &&
	    rc == 0) {
		*err = cerr;
		rc = -1;
	}
	return rc;
}

/* The root made by mmdebstrap, into a file of its own whose name is gone
 * once it is open. */
static int debian_root(struct ab_debroot *d, int *fdp, struct ab_err *err)
{
	const char *tmp = getenv("TMPDIR");
	char dir[PATH_MAX], out[PATH_MAX + 16];
	int rc;

	if (tmp == NULL || *tmp != '/')
		tmp = "/var/tmp";
	snprintf(dir, sizeof dir, "%s/agentbox-root.XXXXXX", tmp);
	if (mkdtemp(dir) == NULL)
		return ab_fail_errno(err, AB_EENGINE, "cannot make a directory "
		    "in %s", tmp);
	snprintf(out, sizeof out, "%s/root.tar", dir);
	rc = ab_debroot_build(d, out, err);
	if (rc == 0 && (*fdp = open(out, O_RDONLY | O_CLOEXEC)) < 0)
		rc = ab_fail_errno(err, AB_EENGINE, "cannot open %s", out);
	unlink(out);
	rmdir(dir);
	return rc;
}

/* --- build, or reuse ----------------------------------------------- */

/* An import or build whose reply was lost may still have made the image:
 * find it by its handle label and remove it, within a budget of its own. */
static void remove_by_label(struct ab_engine *e, const char *sid,
    const char *id)
{
	char label[64], state[64];
	const char *labels[3] = { label, state, NULL };
	struct ab_budget saved;
	struct ab_json j;
	struct ab_err err;
	int i, t, list;
	char *v;

	snprintf(label, sizeof label, "org.agentbox.image=%s", id);
	snprintf(state, sizeof state, "org.agentbox.state=%s", sid);
	ab_engine_budget_begin(e, AB_CLEANUP_MS, &saved);
	if (ab_engine_list(e, "images", labels, &j, &list, &err) == 0) {
		for (i = 0; (t = ab_json_elem(&j, list, i)) >= 0; i++) {
			v = ab_json_str(&j, ab_json_key(&j, t, "Id"));
			if (v != NULL)
				remove_image(e, v, sid, &err);
			free(v);
		}
		ab_json_free(&j);
	}
	ab_engine_budget_end(e, &saved);
}

/* A registered image of the same recipe and inputs that is still intact
 * in the engine is reused; 1 when one was found. */
static int find_registered(struct ab_state *s, struct ab_engine *e,
    const struct spec *want, char id[AB_ID_LEN + 1], struct ab_err *err)
{
	char (*ids)[AB_ID_LEN + 1];
	struct ab_handle h;
	struct ab_err skip;
	struct spec sp;
	size_t i, n;
	int found = 0;

	if (ab_record_list(s, "image", &ids, &n, err) < 0)
		return -1;
	for (i = 0; i < n && !found; i++) {
		snprintf(h.kind, sizeof h.kind, "image");
		memcpy(h.id, ids[i], sizeof h.id);
		if (read_spec(s, &h, &sp, &skip) < 0 ||
		    strcmp(sp.engine, want->engine) != 0 ||
		    strcmp(sp.kind, want->kind) != 0 ||
		    strcmp(sp.recipe, want->recipe) != 0)
			continue;
		if (inspect_image(e, &sp, &skip) == 0) {
			memcpy(id, sp.id, AB_ID_LEN + 1);
			found = 1;
		} else if (skip.code != AB_EREFUSED) {
			*err = skip;
			free(ids);
			return -1;
		}
	}
	free(ids);
	return found;
}

/* The default and agents recipes: a root filesystem assembled on the
 * host from the recipe's manifest (and, for agents, its wheel lock). */
static int rootfs_spec(const struct ab_image_opts *o, struct ab_rootfs *rf,
    struct spec *sp, struct ab_hashcache *hc, struct ab_err *err)
{
	int agents = strcmp(o->recipe, "agents") == 0;
	int layer = o->base != NULL || o->packages != NULL;
	const char *manifest = agents ? (layer ? "agents.layer" :
	    "agents.manifest") : (layer ? "default.layer" : "default.manifest");
	struct ab_wheels *w = NULL;
	char lock[PATH_MAX];
	size_t i;
	int rc;

	if (agents) {
		if ((w = malloc(sizeof *w)) == NULL)
			return ab_fail(err, AB_EENGINE, "out of memory");
		snprintf(lock, sizeof lock, "%s/agents.lock", o->dir);
		if (ab_wheels_init(w, lock, o->wheels, &o->dl, err) < 0) {
			free(w);
			return -1;
		}
		w->progress = o->progress;
		w->hc = hc;
	}
	rc = ab_rootfs_load(rf, o->dir, manifest, w, hc, err);
	free(w);
	if (rc < 0)
		return -1;
	if (strcmp(rf->user, AB_AGENT_USER) != 0 ||
	    strcmp(rf->entrypoint, AB_IMAGE_ENTRYPOINT) != 0)
		return ab_fail(err, AB_EUSAGE, "%s/%s: user must be %s and "
		    "entrypoint %s", o->dir, manifest, AB_AGENT_USER,
		    AB_IMAGE_ENTRYPOINT);
	for (i = 0; i < rf->nv; i++)
		if (spec_add_version(sp, rf->v[i].name, rf->v[i].value,
		    err) < 0)
			return -1;
	snprintf(sp->kind, sizeof sp->kind, "%s", o->recipe);
	snprintf(sp->recipe, sizeof sp->recipe, "%s", rf->recipe);
	snprintf(sp->path_env, sizeof sp->path_env, "%s", rf->path_env);
	return 0;
}

static void say(ab_progress show, const char *fmt, const char *a,
    long long n)
{
	char line[512];

	if (show == NULL)
		return;
	snprintf(line, sizeof line, fmt, a, n);
	show(line);
}

/* Checks a freshly made image, then registers it; removes it on refusal. */
static int register_new(struct ab_state *s, struct ab_engine *e,
    struct spec *sp, ab_progress show, struct ab_err *err)
{
	struct ab_err cerr;

	say(show, "checking %s and running its version probe", sp->digest, 0);
	if (inspect_image(e, sp, err) == 0 && version_probe(e, sp, err) == 0 &&
	    inspect_image(e, sp, err) == 0 && write_record(s, sp, err) == 0)
		return 0;
	remove_image(e, sp->digest, sp->sid, &cerr);
	return -1;
}

struct ab_image_plan {
	struct spec sp;
	struct ab_rootfs rf;
	int cached;	/* some input's hash came from the cache */
	/* agentbox's layer on another root */
	int layered;
	char root_path[256];	/* the root's own PATH */
	struct ab_debroot deb;	/* --packages, resolved */
};

/* What a layered image is made of, in its recipe hash: the layer's
 * manifest and inputs, and the root (the base's engine ID, or the
 * resolved package set and release).  Its PATH: agentbox's directories,
 * then the root's own. */
static int root_key(struct ab_image_plan *p, struct ab_err *err)
{
	struct spec *sp = &p->sp;
	struct ab_sha256 h;
	const char *set = p->deb.set ? p->deb.set : "";
	const char *c;

	if (strlen(set) >= sizeof sp->packages)
		return ab_fail(err, AB_EUSAGE, "--packages: %zu packages are "
		    "more than an image's record holds", p->deb.count);
	snprintf(sp->packages, sizeof sp->packages, "%s", set);
	if (p->root_path[0] != '/' || strlen(p->rf.path_env) +
	    strlen(p->root_path) + 2 > sizeof sp->path_env)
		return ab_fail(err, AB_EUSAGE, "the root's PATH %.200s is not "
		    "one agentbox can pin", p->root_path);
	for (c = p->root_path; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		    (*c >= '0' && *c <= '9') || strchr("/:._-", *c)))
			return ab_fail(err, AB_EUSAGE, "the root's PATH %.200s "
			    "is not one agentbox can pin", p->root_path);
	if (snprintf(sp->path_env, sizeof sp->path_env, "%s:%s",
	    p->rf.path_env, p->root_path) >= (int)sizeof sp->path_env)
		return ab_fail(err, AB_EUSAGE, "the root's PATH is too long");
	if (ab_sha256_init(&h, err) < 0)
		return -1;
	ab_sha256_add(&h, "agentbox layered image 1\n", 25);
	ab_sha256_add(&h, p->rf.recipe, 65);
	ab_sha256_add(&h, sp->base, strlen(sp->base) + 1);
	ab_sha256_add(&h, p->root_path, strlen(p->root_path) + 1);
	ab_sha256_add(&h, set, strlen(set) + 1);
	ab_sha256_add(&h, p->deb.suite, strlen(p->deb.suite) + 1);
	return ab_sha256_hex(&h, sp->recipe, err);
}

/* Reuse may take inputs' hashes from the state's cache (hashcache.h);
 * what a new image is made of is hashed whole. */
static int rootfs_plan(const struct ab_state *s, const struct ab_image_opts *o,
    struct ab_image_plan *p, struct ab_err *err)
{
	struct ab_hashcache hc;
	struct ab_err serr;
	int rc;

	if (o->rebuild)
		return rootfs_spec(o, &p->rf, &p->sp, NULL, err);
	ab_hc_load(&hc, s->dirfd);
	rc = rootfs_spec(o, &p->rf, &p->sp, &hc, err);
	p->cached = hc.hits > 0;
	/* A cache that cannot be written costs a hash next time. */
	if (rc == 0)
		(void)ab_hc_save(&hc, &serr);
	ab_hc_free(&hc);
	return rc;
}

/* Before making an image from a plan that took hashes from the cache. */
static int full_pass(struct ab_image_plan *p, const struct ab_image_opts *o,
    struct ab_err *err)
{
	struct spec sp;

	memset(&sp, 0, sizeof sp);
	memcpy(sp.sid, p->sp.sid, sizeof sp.sid);
	memcpy(sp.engine, p->sp.engine, sizeof sp.engine);
	memcpy(sp.base, p->sp.base, sizeof sp.base);
	ab_rootfs_free(&p->rf);
	if (rootfs_spec(o, &p->rf, &sp, NULL, err) < 0)
		return -1;
	p->sp = sp;
	p->cached = 0;
	return p->layered ? root_key(p, err) : 0;
}

int ab_image_plan(const struct ab_state *s, const struct ab_image_opts *o,
    struct ab_image_plan **pp, struct ab_err *err)
{
	struct ab_image_plan *p;
	int rc;

	p = calloc(1, sizeof *p);
	if (p == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	p->rf.fd = -1;
	memcpy(p->sp.sid, s->sid, sizeof p->sp.sid);
	p->layered = o->base != NULL || o->packages != NULL;
	rc = o->base != NULL ? ab_image_check_base(o->base, err) : 0;
	if (rc == 0)
		rc = rootfs_plan(s, o, p, err);
	/* The package set is known before any engine is asked, so a package
	 * that does not exist is refused before anything is made. */
	if (rc == 0 && o->packages != NULL) {
		if (o->progress != NULL)
			o->progress("resolving the packages with mmdebstrap");
		rc = ab_debroot_resolve(&p->deb, o->packages, DEBROOT_NEEDS,
		    &o->dl, err);
		snprintf(p->root_path, sizeof p->root_path, "%s",
		    DEFAULT_PATH);
		if (rc == 0)
			rc = root_key(p, err);
	}
	if (rc < 0) {
		ab_image_plan_free(p);
		return -1;
	}
	*pp = p;
	return 0;
}

void ab_image_plan_free(struct ab_image_plan *p)
{
	if (p == NULL)
		return;
	ab_rootfs_free(&p->rf);
	ab_debroot_free(&p->deb);
	free(p);
}

/* The root's tar into a file of the host's, then one import of it with
 * the layer on top. */
static int make_layered(struct ab_engine *e, struct ab_image_plan *p,
    const struct ab_image_opts *o, struct ab_err *err)
{
	struct spec *sp = &p->sp;
	int fd = -1, rc;

	if (sp->base[0] != '\0') {
		say(o->progress, "exporting the base %s", sp->base, 0);
		if ((fd = root_file(err)) < 0)
			return -1;
		rc = export_base(e, sp, fd, err);
	} else {
		say(o->progress, "making the root%s of %lld Debian packages with "
		    "mmdebstrap", "", (long long)p->deb.count);
		rc = debian_root(&p->deb, &fd, err);
	}
	if (rc == 0) {
		say(o->progress, "importing the %s image on that root",
		    o->recipe, 0);
		rc = import_layered(e, &p->rf, fd, sp, o->progress,
		    sp->digest, err);
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

static int make_and_register(struct ab_state *s, struct ab_engine *e,
    struct ab_image_plan *p, const struct ab_image_opts *o,
    struct ab_err *err)
{
	struct spec *sp = &p->sp;
	int rc;

	if (p->layered) {
		rc = make_layered(e, p, o, err);
	} else {
		say(o->progress, "importing the %s image: %lld bytes",
		    o->recipe, p->rf.bytes);
		rc = import_default(e, &p->rf, sp, o->progress, sp->digest,
		    err);
	}
	if (rc < 0) {
		remove_by_label(e, sp->sid, sp->id);
		return -1;
	}
	ab_test_pause("image-made");
	return register_new(s, e, sp, o->progress, err);
}

int ab_image_build(struct ab_state *s, struct ab_engine *e,
    struct ab_image_plan *p, const struct ab_image_opts *o,
    char id[AB_ID_LEN + 1], struct ab_err *err)
{
	struct spec *sp = &p->sp;
	int rc = 0;

	/* The image and its record are this engine's: marked on first use. */
	if (ab_engine_mark(e, 1, sp->engine, err) < 0)
		return -1;
	if (o->base != NULL && (resolve_base(e, o->base, sp->base,
	    p->root_path, err) < 0 || root_key(p, err) < 0))
		return -1;
	if (!o->rebuild)
		rc = find_registered(s, e, sp, id, err);
	/* No image for what the cache said: what is made is hashed whole,
	 * and a cache that was wrong costs a look, not a second image. */
	if (rc == 0 && p->cached && (rc = full_pass(p, o, err)) == 0)
		rc = find_registered(s, e, sp, id, err);
	if (rc == 1) {
		say(o->progress, "reusing image:%s: recipe unchanged", id, 0);
		return 1;
	}
	if (rc == 0)
		rc = ab_new_id(sp->id, err);
	/* From here until the record exists, a sweep leaves this build's
	 * objects alone while this process lives, and removes them once it
	 * is gone (ab_image_sweep).  An engine that failed the look for a
	 * registered image builds nothing. */
	if (rc < 0 || ab_inflight_begin(s, "image", sp->id, err) < 0)
		return -1;
	rc = make_and_register(s, e, p, o, err);
	ab_inflight_end(s, "image", sp->id);
	if (rc == 0)
		memcpy(id, sp->id, AB_ID_LEN + 1);
	return rc;
}

/* Whether image ID of this state is being made by a live ab-image, or is
 * registered as DIGEST on engine MARK (or in an old record, which names
 * none): either way not a leftover. */
static int kept(struct ab_state *s, const char *id, const char *digest,
    const char *mark)
{
	struct ab_handle h;
	struct ab_err skip;
	struct spec sp;

	if (!ab_is_id(id))
		return 0;
	if (ab_inflight_any(s, "image", id, AB_INFLIGHT_LIVE))
		return 1;
	snprintf(h.kind, sizeof h.kind, "image");
	memcpy(h.id, id, sizeof h.id);
	return digest != NULL && read_spec(s, &h, &sp, &skip) == 0 &&
	    strcmp(sp.digest, digest) == 0 &&
	    (sp.engine[0] == '\0' || strcmp(sp.engine, mark) == 0);
}

/* Removes the listed objects of KIND that are not kept; counts them. */
static int sweep_list(struct ab_state *s, struct ab_engine *e,
    enum ab_kind kind, const char *const *labels, const char *mark, int *n,
    struct ab_err *err)
{
	struct ab_json j;
	int list, i, t, rc = 0;
	char *id, *img;

	if (ab_engine_list(e, kind == AB_IMAGE ? "images" : "containers",
	    labels, &j, &list, err) < 0)
		return -1;
	for (i = 0; (t = ab_json_elem(&j, list, i)) >= 0; i++) {
		id = ab_json_str(&j, ab_json_key(&j, t, "Id"));
		img = ab_json_str(&j, ab_json_key(&j, ab_json_key(&j, t,
		    "Labels"), "org.agentbox.image"));
		if (id != NULL && !kept(s, img ? img : "", kind == AB_IMAGE ?
		    id : NULL, mark)) {
			if (ab_owned_remove(e, kind, id, s->sid, NULL, err) < 0)
				rc = -1;
			else
				(*n)++;
		}
		free(id);
		free(img);
	}
	ab_json_free(&j);
	return rc;
}

int ab_image_sweep(struct ab_state *s, struct ab_engine *e, const char *mark,
    int *n, struct ab_err *err)
{
	char state[64];
	const char *probes[3] = { state, "org.agentbox.role=version-probe",
	    NULL };
	const char *exports[3] = { state, "org.agentbox.role=image-export",
	    NULL };
	const char *images[2] = { state, NULL };

	snprintf(state, sizeof state, "org.agentbox.state=%s", s->sid);
	/* Containers first: an image in use cannot go. */
	if (sweep_list(s, e, AB_CONTAINER, probes, mark, n, err) < 0 ||
	    sweep_list(s, e, AB_CONTAINER, exports, mark, n, err) < 0)
		return -1;
	return sweep_list(s, e, AB_IMAGE, images, mark, n, err);
}

int ab_image_version(struct ab_state *s, const char *id,
    const char *component, char *out, size_t cap, struct ab_err *err)
{
	struct ab_handle h;
	struct spec sp;
	int i;

	snprintf(h.kind, sizeof h.kind, "image");
	snprintf(h.id, sizeof h.id, "%s", id);
	if (read_spec(s, &h, &sp, err) < 0)
		return -1;
	for (i = 0; i < sp.nv; i++)
		if (strcmp(sp.vname[i], component) == 0) {
			if (out != NULL)
				snprintf(out, cap, "%s", sp.vvalue[i]);
			return 1;
		}
	return 0;
}

int ab_image_has(struct ab_state *s, const char *id, const char *component,
    struct ab_err *err)
{
	return ab_image_version(s, id, component, NULL, 0, err);
}

int ab_image_path(struct ab_state *s, const char *id, char *path, size_t cap,
    struct ab_err *err)
{
	struct ab_handle h;
	struct spec sp;

	snprintf(h.kind, sizeof h.kind, "image");
	snprintf(h.id, sizeof h.id, "%s", id);
	if (read_spec(s, &h, &sp, err) < 0)
		return -1;
	snprintf(path, cap, "%s", sp.path_env);
	return 0;
}

/* --- which program a name runs --------------------------------------- */

/* Go's os.FileMode type bits, as the engine reports a path's mode. */
#define GO_MODE_TYPE 0xfff00000u
#define GO_MODE_SYMLINK (1u << 27)

/* The engine's stat of PATH in container CTR: 0 with *mode and the
 * symbolic link's resolved target (or ""), 1 when there is no such path,
 * -1 on failure. */
static int ctr_stat(struct ab_engine *e, const char *ctr, const char *path,
    unsigned long long *mode, char *target, size_t cap, struct ab_err *err)
{
	unsigned char raw[sizeof ((struct ab_resp *)0)->header];
	struct ab_req q;
	struct ab_resp r;
	struct ab_json j;
	struct ab_buf url;
	long long m;
	char *t;
	int n, rc = -1;

	ab_buf_init(&url, AB_URL_MAX);
	if (ab_buf_addf(&url, "/containers/%s/archive?path=", ctr) < 0 ||
	    ab_url_escape(&url, path) < 0) {
		ab_buf_fail(&url, AB_EREFUSED, "a program's path", err);
		ab_buf_free(&url);
		return -1;
	}
	memset(&q, 0, sizeof q);
	q.method = "HEAD";
	q.path = url.data;
	q.what = "look up a program in the image";
	q.header = "X-Docker-Container-Path-Stat";
	if (ab_engine_call(e, &q, &r, err) < 0)
		goto out;
	if (r.status == 404) {
		rc = 1;
		goto out;
	}
	if (r.status != 200) {
		rc = ab_engine_fail(&r, AB_EENGINE, q.what, err);
		goto out;
	}
	n = EVP_DecodeBlock(raw, (const unsigned char *)r.header,
	    (int)strlen(r.header));
	while (n > 0 && raw[n - 1] == '\0')
		n--;	/* the decoder's padding */
	if (n <= 0 || ab_json_parse(&j, (const char *)raw, (size_t)n,
	    err) < 0) {
		ab_fail(err, AB_EENGINE, "the engine's stat of %s is not "
		    "readable", path);
		goto out;
	}
	t = ab_json_str(&j, ab_json_key(&j, 0, "linkTarget"));
	if (ab_json_int(&j, ab_json_key(&j, 0, "mode"), &m) == 0 && m >= 0 &&
	    t != NULL && strlen(t) < cap) {
		*mode = (unsigned long long)m;
		memcpy(target, t, strlen(t) + 1);
		rc = 0;
	} else {
		ab_fail(err, AB_EENGINE, "the engine's stat of %s is not "
		    "readable", path);
	}
	free(t);
	ab_json_free(&j);
out:
	ab_resp_free(&r);
	ab_buf_free(&url);
	return rc;
}

/* 1 when PATH in CTR is, through its symbolic links (which the engine
 * resolves within the container), a regular file someone may execute. */
static int ctr_executable(struct ab_engine *e, const char *ctr,
    const char *path, struct ab_err *err)
{
	char cur[1024], target[1024];
	unsigned long long mode = 0;
	int hops, rc;

	snprintf(cur, sizeof cur, "%s", path);
	for (hops = 0; hops < 8; hops++) {
		rc = ctr_stat(e, ctr, cur, &mode, target, sizeof target, err);
		if (rc != 0)
			return rc < 0 ? -1 : 0;
		if (!(mode & GO_MODE_SYMLINK))
			return (mode & GO_MODE_TYPE) == 0 && (mode & 0111) != 0;
		if (target[0] != '/')
			return 0;
		snprintf(cur, sizeof cur, "%s", target);
	}
	return 0;
}

int ab_image_which(struct ab_engine *e, const char *ctr,
    const char *path_env, const char *name, char *out, size_t cap,
    struct ab_err *err)
{
	const char *d, *end;
	int rc;

	for (d = path_env; *d != '\0'; d = *end ? end + 1 : end) {
		end = strchr(d, ':');
		if (end == NULL)
			end = d + strlen(d);
		if (*d != '/')
			continue;	/* a relative entry names no file */
		if (snprintf(out, cap, "%.*s/%s", (int)(end - d), d, name) >=
		    (int)cap)
			continue;
		rc = ctr_executable(e, ctr, out, err);
		if (rc != 0)
			return rc;
	}
	out[0] = '\0';
	return 0;
}
