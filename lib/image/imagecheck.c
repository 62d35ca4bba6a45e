#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ctr.h"
#include "imagecheck.h"
#include "json.h"
#include "lockdown.h"
#include "oneshot.h"

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

int ab_image_spec_version(struct ab_image_spec *sp, const char *n,
    const char *v, struct ab_err *err)
{
	if (sp->nv == AB_IMAGE_SPEC_VERSIONS ||
	    strlen(n) >= sizeof sp->vname[0] ||
	    strlen(v) >= sizeof sp->vvalue[0] || !plain(n) || !plain(v))
		return ab_fail(err, AB_EUSAGE, "bad pinned version %.60s=%.60s",
		    n, v);
	if (ab_fmt_err(err, sp->vname[sp->nv], sizeof sp->vname[0],
	    "a pinned version's name", "%s", n) < 0 ||
	    ab_fmt_err(err, sp->vvalue[sp->nv], sizeof sp->vvalue[0],
	    "a pinned version", "%s", v) < 0)
		return -1;
	sp->nv++;
	return 0;
}

/* --- the labels ---------------------------------------------------- */

static void labels_json(struct ab_jw *w, const struct ab_image_spec *sp)
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
		/* Fits: a name is under 64 bytes; a label not written
		 * fails the image's check. */
		if (ab_fmt(key, sizeof key, "org.agentbox.version.%s",
		    sp->vname[i]) == 0)
			ab_jw_kstr(w, key, sp->vvalue[i]);
	}
	ab_jw_obj_end(w);
}

/* Every org.agentbox.* label exactly as the spec says, and no other. */
static int check_labels(const struct ab_json *j, int labels,
    const struct ab_image_spec *sp, struct ab_err *err)
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

static int check_config(const struct ab_json *j, const struct ab_image_spec *sp,
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
	if (ab_fmt_err(err, want, sizeof want, "the image's PATH", "PATH=%s",
	    sp->path_env) < 0)
		return -1;
	n = ab_json_count(j, env);
	for (i = 0; i < n; i++)
		path_ok += ab_json_str_eq(j, ab_json_elem(j, env, i), want);
	if (path_ok != 1)
		return ab_fail(err, AB_EREFUSED, "image PATH is not %s",
		    sp->path_env);
	return check_labels(j, ab_json_get(j, 0, "Config.Labels"), sp, err);
}

int ab_image_inspect(struct ab_engine *e, const struct ab_image_spec *sp,
    struct ab_err *err)
{
	struct ab_resp r;
	struct ab_json j;
	char path[160];
	int rc = -1;

	if (ab_fmt_err(err, path, sizeof path, "the image's digest",
	    "/images/%s/json", sp->digest) < 0 ||
	    ab_engine_json(e, "GET", path, NULL, "inspect the image", &r,
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

static int probe_output(const struct ab_oneshot *o,
    const struct ab_image_spec *sp, struct ab_err *err)
{
	const char *p = o->out.data ? o->out.data : "";
	char want[256];
	size_t k;
	int i;

	if (o->out.over)
		return ab_fail(err, AB_EREFUSED, "version probe said too much");
	for (i = 0; i < sp->nv; i++) {
		if (ab_fmt_err(err, want, sizeof want, "a pinned version",
		    "%s %s\n", sp->vname[i], sp->vvalue[i]) < 0)
			return -1;
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

int ab_image_probe(struct ab_engine *e, const struct ab_image_spec *sp,
    struct ab_err *err)
{
	const char *entry[] = { AB_IMAGE_VERSIONS, NULL };
	const char *cmd[AB_IMAGE_SPEC_VERSIONS + 1], *env[2], *labels[7];
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
	if (ab_fmt_err(err, pathvar, sizeof pathvar, "the image's PATH",
	    "PATH=%s", sp->path_env) < 0 ||
	    ab_fmt_err(err, name, sizeof name, "the probe's name",
	    "agentbox-probe-%s", rnd) < 0)
		return -1;
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
