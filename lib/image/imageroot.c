#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "hash.h"
#include "imageroot.h"
#include "json.h"
#include "owned.h"

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
int ab_image_resolve_base(struct ab_engine *e, const char *ref, char id[80],
    char path[256], struct ab_err *err)
{
	struct ab_resp r;
	struct ab_json j;
	char url[600], *v = NULL;
	int env, i, rc = -1;

	if (ab_fmt(url, sizeof url, "/images/%s/json", ref) < 0)
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
	if (ab_json_copy(&j, "Id", id, 80) < 0 || strncmp(id, "sha256:", 7) ||
	    !ab_is_hex(id + 7, 64)) {
		ab_fail(err, AB_EENGINE, "the engine names base %s oddly", ref);
	} else if (ab_fmt_err(err, path, 256, "the default PATH", "%s",
	    AB_IMAGE_DEFAULT_PATH) == 0) {
		env = ab_json_get(&j, 0, "Config.Env");
		for (i = 0; (v = ab_json_str(&j, ab_json_elem(&j, env, i)));
		    i++) {
			if (strncmp(v, "PATH=", 5) == 0 &&
			    ab_fmt(path, 256, "%s", v + 5) < 0)
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
int ab_image_root_file(struct ab_err *err)
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
int ab_image_export_base(struct ab_engine *e,
    const struct ab_image_spec *sp, int fd, struct ab_err *err)
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
	rc = ab_fmt_err(err, url, sizeof url, "the export container's name",
	    "/containers/create?name=agentbox-export-%s", rnd);
	if (rc == 0)
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
		if (ab_json_copy(&j, "Id", cid, sizeof cid) == 0)
			rc = 0;
		ab_json_free(&j);
	}
	ab_resp_free(&r);
	if (rc < 0)
		return ab_fail(err, AB_EENGINE, "cannot create the base's "
		    "export container");
	memset(&q, 0, sizeof q);
	if (ab_fmt_err(err, url, sizeof url, "the export container's ID",
	    "/containers/%s/export", cid) < 0)
		return -1;
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
int ab_image_debian_root(struct ab_debroot *d, int *fdp, struct ab_err *err)
{
	const char *tmp = getenv("TMPDIR");
	char dir[PATH_MAX], out[PATH_MAX + 16];
	int rc;

	if (tmp == NULL || *tmp != '/')
		tmp = "/var/tmp";
	if (ab_fmt_err(err, dir, sizeof dir, "TMPDIR",
	    "%s/agentbox-root.XXXXXX", tmp) < 0)
		return -1;
	if (mkdtemp(dir) == NULL)
		return ab_fail_errno(err, AB_EENGINE, "cannot make a directory "
		    "in %s", tmp);
	if (ab_fmt_err(err, out, sizeof out, "TMPDIR", "%s/root.tar",
	    dir) < 0) {
		rmdir(dir);
		return -1;
	}
	rc = ab_debroot_build(d, out, err);
	if (rc == 0 && (*fdp = open(out, O_RDONLY | O_CLOEXEC)) < 0)
		rc = ab_fail_errno(err, AB_EENGINE, "cannot open %s", out);
	unlink(out);
	rmdir(dir);
	return rc;
}
