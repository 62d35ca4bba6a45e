#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "ctr.h"
#include "hash.h"
#include "json.h"

/* Any warning means the engine dropped or changed part of the request. */
int ab_ctr_create(struct ab_engine *e, const struct ab_lock *l,
    const char *name, const char *what, char id[80], int *conflict,
    struct ab_err *err)
{
	struct ab_buf body, path;
	struct ab_resp r;
	struct ab_json j;
	char *s = NULL;
	int rc = -1, w;

	ab_buf_init(&body, AB_REQUEST_MAX);
	ab_buf_init(&path, AB_QUERY_MAX);
	memset(&j, 0, sizeof j);
	if (ab_lock_body(l, &body, err) < 0)
		goto out;
	if (ab_buf_addf(&path, "/containers/create?name=%s", name) < 0) {
		ab_buf_fail(&path, AB_EUSAGE, "the container's name", err);
		goto out;
	}
	if (ab_engine_json(e, "POST", path.data, body.data, what, &r, err) < 0)
		goto resp;
	if (r.status != 201) {
		*conflict = r.status == 409;
		ab_engine_fail(&r, *conflict ? AB_EREFUSED : AB_EENGINE, what,
		    err);
		goto resp;
	}
	if (ab_json_parse(&j, r.body.data, r.body.len, err) < 0) {
		err->code = AB_EENGINE;
		goto resp;
	}
	w = ab_json_key(&j, 0, "Warnings");
	if (ab_json_type(&j, w) == AB_JSON_ARRAY && ab_json_count(&j, w) > 0) {
		s = ab_json_str(&j, ab_json_elem(&j, w, 0));
		ab_fail(err, AB_EREFUSED, "engine warned on create: %.300s",
		    s ? s : "?");
		goto resp;
	}
	s = ab_json_str(&j, ab_json_key(&j, 0, "Id"));
	if (s == NULL || strlen(s) != 64) {
		ab_fail(err, AB_EENGINE, "engine sent no container id");
		goto resp;
	}
	if (ab_fmt_err(err, id, 80, "the container's ID", "%s", s) == 0)
		rc = 0;
resp:
	ab_resp_free(&r);
out:
	free(s);
	ab_json_free(&j);
	ab_buf_free(&body);
	ab_buf_free(&path);
	return rc;
}

int ab_ctr_inspect(struct ab_engine *e, const char *id, struct ab_json *j,
    struct ab_err *err)
{
	struct ab_resp r;
	char path[160];
	int rc = -1;

	memset(j, 0, sizeof *j);
	if (ab_fmt_err(err, path, sizeof path, "the container's ID",
	    "/containers/%s/json", id) < 0)
		return -1;
	if (ab_engine_json(e, "GET", path, NULL, "inspect a container", &r,
	    err) < 0)
		goto out;
	if (r.status != 200) {
		ab_engine_fail(&r, r.status == 404 ? AB_EREFUSED : AB_EENGINE,
		    "inspect a container", err);
		goto out;
	}
	if ((rc = ab_json_parse(j, r.body.data, r.body.len, err)) < 0)
		err->code = AB_EENGINE;
out:
	ab_resp_free(&r);
	return rc;
}

/* sha256: and 64 hex digits: an image ID, which is the hash of the
 * image's configuration, labels included. */
static int content_addressed(const char *id)
{
	size_t i;

	if (strncmp(id, "sha256:", 7) != 0 || strlen(id) != 71)
		return 0;
	for (i = 7; i < 71; i++)
		if (strchr("0123456789abcdef", id[i]) == NULL)
			return 0;
	return 1;
}

void ab_image_keep(struct ab_engine *e, const char *id, const char *body,
    size_t len)
{
	ab_buf_free(&e->img);
	ab_buf_init(&e->img, AB_REPLY_MAX);	/* the inspect reply it was */
	e->img_id[0] = '\0';
	if (!content_addressed(id) || strlen(id) >= sizeof e->img_id ||
	    ab_buf_add(&e->img, body, len) < 0)
		return;
	if (ab_fmt(e->img_id, sizeof e->img_id, "%s", id) < 0)
		e->img_id[0] = '\0';	/* not kept */
}

/* The image by its ID.  Its configuration cannot change under that ID,
 * so the one this process inspected last (ab_image_verify's, or a check's
 * before) is read again from memory, not from the engine: each container
 * check of ab-validate and ab-run asked for it anew. */
static int image_inspect(struct ab_engine *e, const char *digest,
    struct ab_json *j, struct ab_err *err)
{
	struct ab_resp r;
	char path[160];
	int rc = -1;

	memset(j, 0, sizeof *j);
	if (e->img_id[0] != '\0' && strcmp(e->img_id, digest) == 0) {
		if ((rc = ab_json_parse(j, e->img.data, e->img.len, err)) < 0)
			err->code = AB_EENGINE;
		return rc;
	}
	if (ab_fmt_err(err, path, sizeof path, "the image's ID",
	    "/images/%s/json", digest) < 0)
		return -1;
	if (ab_engine_json(e, "GET", path, NULL, "inspect the image", &r,
	    err) < 0)
		goto out;
	if (r.status != 200) {
		ab_engine_fail(&r, r.status == 404 ? AB_EREFUSED : AB_EENGINE,
		    "inspect the image", err);
		goto out;
	}
	if ((rc = ab_json_parse(j, r.body.data, r.body.len, err)) < 0)
		err->code = AB_EENGINE;
	else
		ab_image_keep(e, digest, r.body.data, r.body.len);
out:
	ab_resp_free(&r);
	return rc;
}

int ab_ctr_check_doc(struct ab_engine *e, const struct ab_lock *l,
    const struct ab_json *ins, struct ab_err *err)
{
	struct ab_json img;
	int rc;

	/* The image by the lockdown's digest: what the container must run,
	 * and whose labels it inherits. */
	if (image_inspect(e, l->image, &img, err) < 0)
		return -1;
	rc = ab_lock_check_doc(ins, &img, l, err);
	ab_json_free(&img);
	return rc;
}

int ab_ctr_check(struct ab_engine *e, const struct ab_lock *l,
    const char *id, struct ab_err *err)
{
	struct ab_json j;
	int rc;

	if (ab_ctr_inspect(e, id, &j, err) < 0)
		return -1;
	rc = ab_ctr_check_doc(e, l, &j, err);
	ab_json_free(&j);
	return rc;
}

/* --- which program a name runs ------------------------------------- */

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

	if (ab_fmt(cur, sizeof cur, "%s", path) < 0)
		return 0;	/* no such file in the image */
	for (hops = 0; hops < 8; hops++) {
		rc = ctr_stat(e, ctr, cur, &mode, target, sizeof target, err);
		if (rc != 0)
			return rc < 0 ? -1 : 0;
		if (!(mode & GO_MODE_SYMLINK))
			return (mode & GO_MODE_TYPE) == 0 && (mode & 0111) != 0;
		if (target[0] != '/' ||
		    ab_fmt(cur, sizeof cur, "%s", target) < 0)
			return 0;
	}
	return 0;
}

int ab_ctr_which(struct ab_engine *e, const char *ctr,
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
		if (ab_fmt(out, cap, "%.*s/%s", (int)(end - d), d, name) < 0)
			continue;
		rc = ctr_executable(e, ctr, out, err);
		if (rc != 0)
			return rc;
	}
	out[0] = '\0';
	return 0;
}
