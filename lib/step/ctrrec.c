#include <stdlib.h>
#include <string.h>

#include "ctrrec.h"
#include "hash.h"
#include "json.h"

int ab_ctr_save(struct ab_state *s, const struct ab_ctr *c,
    struct ab_err *err)
{
	struct ab_buf b;
	struct ab_jw w;
	int rc;

	ab_buf_init(&b, AB_RECORD_MAX);	/* what a record may be read back */
	ab_jw_init(&w, &b);
	ab_record_begin(&w, s, "ctr", c->id);
	ab_jw_kstr(&w, "profile", c->profile);
	ab_jw_kstr(&w, "alloc", c->alloc);
	ab_jw_kstr(&w, "name", c->name);
	ab_jw_kstr(&w, "container", c->container);
	ab_jw_key(&w, "sign_in");
	if (c->sign_in) {
		ab_jw_obj(&w);
		ab_jw_kint(&w, "dev", c->sn.dev);
		ab_jw_kint(&w, "ino", c->sn.ino);
		ab_jw_kint(&w, "size", c->sn.size);
		ab_jw_kint(&w, "mtime_ns", c->sn.mtime_ns);
		ab_jw_kstr(&w, "sha256", c->sn.sha);
		ab_jw_kstr(&w, "account_sha256", c->sn.account);
		ab_jw_obj_end(&w);
	} else
		ab_jw_null(&w);
	ab_jw_obj_end(&w);
	rc = ab_jw_done(&w) < 0 ? ab_buf_fail(&b, AB_EENGINE, "the ctr "
	    "record", err) : ab_record_write(s, "ctr", c->id, b.data, b.len,
	    err);
	ab_buf_free(&b);
	return rc;
}

static int sn_str(const struct ab_json *j, int obj, const char *key,
    char out[65])
{
	char *v = ab_json_str(j, ab_json_key(j, obj, key));
	int rc = v != NULL && ab_is_hex(v, 64) ? 0 : -1;

	if (rc == 0)
		memcpy(out, v, 65);
	free(v);
	return rc;
}

/* Absent or null: no sign-in. */
static int ctr_sign_in(const struct ab_json *j, struct ab_ctr *c)
{
	int t = ab_json_key(j, 0, "sign_in");

	if (t < 0 || ab_json_type(j, t) == AB_JSON_NULL)
		return 0;
	c->sign_in = 1;
	return ab_json_int(j, ab_json_key(j, t, "dev"), &c->sn.dev) ||
	    ab_json_int(j, ab_json_key(j, t, "ino"), &c->sn.ino) ||
	    ab_json_int(j, ab_json_key(j, t, "size"), &c->sn.size) ||
	    ab_json_int(j, ab_json_key(j, t, "mtime_ns"), &c->sn.mtime_ns) ||
	    sn_str(j, t, "sha256", c->sn.sha) ||
	    sn_str(j, t, "account_sha256", c->sn.account) ? -1 : 0;
}

int ab_ctr_load(struct ab_state *s, const struct ab_handle *h,
    struct ab_ctr *c, struct ab_err *err)
{
	struct ab_json j;
	int rc = 0;

	memset(c, 0, sizeof *c);
	if (ab_record_read(s, h, &j, err) < 0)
		return -1;
	memcpy(c->id, h->id, sizeof c->id);
	if (ab_json_copy(&j, "profile", c->profile, sizeof c->profile) ||
	    ab_json_copy(&j, "alloc", c->alloc, sizeof c->alloc) ||
	    ab_json_copy(&j, "name", c->name, sizeof c->name) ||
	    ab_json_copy(&j, "container", c->container, sizeof c->container) ||
	    !ab_is_id(c->profile) || !ab_is_id(c->alloc) ||
	    strlen(c->container) != 64 || ctr_sign_in(&j, c) < 0)
		rc = ab_fail(err, AB_EREFUSED, "record of ctr:%s is corrupt",
		    h->id);
	ab_json_free(&j);
	return rc;
}
