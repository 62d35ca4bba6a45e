#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "engineid.h"
#include "hash.h"
#include "imagereg.h"
#include "json.h"
#include "owned.h"
#include "version.h"

int ab_image_record_write(struct ab_state *s, const struct ab_image_spec *sp,
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

/* The values ab-image writes, as it writes them. */
static int spec_bounded(const struct ab_image_spec *sp)
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
static int root_fields(const struct ab_json *j, struct ab_image_spec *sp)
{
	sp->base[0] = sp->packages[0] = '\0';
	if (ab_json_key(j, 0, "base") >= 0 && (ab_json_copy(j, "base", sp->base,
	    sizeof sp->base) < 0 || (sp->base[0] != '\0' &&
	    (strncmp(sp->base, "sha256:", 7) != 0 ||
	    !ab_is_hex(sp->base + 7, 64)))))
		return -1;
	if (ab_json_key(j, 0, "packages") >= 0 && (ab_json_copy(j, "packages",
	    sp->packages, sizeof sp->packages) < 0 ||
	    !packages_bounded(sp->packages)))
		return -1;
	return 0;
}

/* Records written before engines were recorded have no "engine". */
static int engine_field(const struct ab_json *j, struct ab_image_spec *sp)
{
	sp->engine[0] = '\0';
	if (ab_json_key(j, 0, "engine") < 0)
		return 0;
	return ab_json_copy(j, "engine", sp->engine, sizeof sp->engine) == 0 &&
	    ab_is_id(sp->engine) ? 0 : -1;
}

int ab_image_record_read(struct ab_state *s, const struct ab_handle *h,
    struct ab_image_spec *sp, struct ab_err *err)
{
	struct ab_json j;
	char *n, *v;
	int vs, i, t, rc = 0;

	memset(sp, 0, sizeof *sp);
	if (ab_record_read(s, h, &j, err) < 0)
		return -1;
	memcpy(sp->id, h->id, sizeof sp->id);
	memcpy(sp->sid, s->sid, sizeof sp->sid);
	if (ab_json_copy(&j, "digest", sp->digest, sizeof sp->digest) < 0 ||
	    ab_json_copy(&j, "recipe_kind", sp->kind, sizeof sp->kind) < 0 ||
	    ab_json_copy(&j, "recipe", sp->recipe, sizeof sp->recipe) < 0 ||
	    ab_json_copy(&j, "path", sp->path_env, sizeof sp->path_env) < 0 ||
	    engine_field(&j, sp) < 0 || root_fields(&j, sp) < 0 ||
	    !spec_bounded(sp))
		rc = ab_fail(err, AB_EREFUSED, "record of image:%s is corrupt",
		    h->id);
	vs = ab_json_key(&j, 0, "versions");
	for (i = 0; rc == 0 && (t = ab_json_elem(&j, vs, i)) >= 0; i++) {
		n = ab_json_str(&j, ab_json_elem(&j, t, 0));
		v = ab_json_str(&j, ab_json_elem(&j, t, 1));
		rc = n && v ? ab_image_spec_version(sp, n, v, err) : -1;
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
static int on_engine(struct ab_engine *e, const struct ab_image_spec *sp,
    struct ab_err *err)
{
	char what[48];

	if (sp->engine[0] == '\0')
		return ab_fail(err, AB_EREFUSED, "image:%s was registered "
		    "before agentbox recorded engines: build the image again "
		    "(ab-image build) and remove this one (ab-image remove) on the "
		    "engine that holds it", sp->id);
	if (ab_fmt_err(err, what, sizeof what, "the image's ID", "image:%s",
	    sp->id) < 0)
		return -1;
	return ab_engine_is(e, sp->engine, what, err);
}

int ab_image_verify(struct ab_state *s, struct ab_engine *e,
    const struct ab_handle *h, int probe, char *digest, struct ab_err *err)
{
	struct ab_image_spec sp;

	if (ab_image_record_read(s, h, &sp, err) < 0 ||
	    on_engine(e, &sp, err) < 0 || ab_image_inspect(e, &sp, err) < 0)
		return -1;
	if (probe && ab_image_probe(e, &sp, err) < 0)
		return -1;
	if (digest != NULL)
		return ab_fmt_err(err, digest, 80, "the image's digest", "%s",
		    sp.digest);
	return 0;
}

/* Only an image that carries this state's label is removed (a record
 * edited to name another's image removes nothing). */
int ab_image_remove_owned(struct ab_engine *e, const char *digest,
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
	struct ab_image_spec sp;

	if (ab_image_record_read(s, h, &sp, err) < 0)
		return -1;
	/* An old record is removed where its image is, never proven gone
	 * from an engine that may not be its own. */
	if (sp.engine[0] == '\0') {
		if (ab_image_inspect(e, &sp, err) < 0 &&
		    err->code == AB_EREFUSED)
			return ab_fail(err, AB_EREFUSED, "image:%s was "
			    "registered before agentbox recorded engines, and "
			    "its image is not on the engine at %s: remove it on "
			    "its own", sp.id, e->ep.where);
	} else if (on_engine(e, &sp, err) < 0) {
		return -1;
	}
	if (ab_image_remove_owned(e, sp.digest, s->sid, err) < 0)
		return -1;
	return ab_record_remove(s, h, err);
}

/* --- lookups ------------------------------------------------------- */

/* A registered image of the same recipe and inputs that is still intact
 * in the engine is reused; 1 when one was found. */
int ab_image_find(struct ab_state *s, struct ab_engine *e,
    const struct ab_image_spec *want, char id[AB_ID_LEN + 1],
    struct ab_err *err)
{
	char (*ids)[AB_ID_LEN + 1];
	struct ab_handle h;
	struct ab_err skip;
	struct ab_image_spec sp;
	size_t i, n;
	int found = 0;

	if (ab_record_list(s, "image", &ids, &n, err) < 0)
		return -1;
	for (i = 0; i < n && !found; i++) {
		memcpy(h.kind, "image", sizeof "image");
		memcpy(h.id, ids[i], sizeof h.id);
		if (ab_image_record_read(s, &h, &sp, &skip) < 0 ||
		    strcmp(sp.engine, want->engine) != 0 ||
		    strcmp(sp.kind, want->kind) != 0 ||
		    strcmp(sp.recipe, want->recipe) != 0)
			continue;
		if (ab_image_inspect(e, &sp, &skip) == 0) {
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

int ab_image_version(struct ab_state *s, const char *id,
    const char *component, char *out, size_t cap, struct ab_err *err)
{
	struct ab_handle h;
	struct ab_image_spec sp;
	int i;

	if (ab_fmt_err(err, h.kind, sizeof h.kind, "a kind", "image") < 0 ||
	    ab_fmt_err(err, h.id, sizeof h.id, "an image's ID", "%s",
	    id) < 0 || ab_image_record_read(s, &h, &sp, err) < 0)
		return -1;
	for (i = 0; i < sp.nv; i++)
		if (strcmp(sp.vname[i], component) == 0) {
			if (out != NULL && ab_fmt_err(err, out, cap,
			    "a pinned version", "%s", sp.vvalue[i]) < 0)
				return -1;
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
	struct ab_image_spec sp;

	if (ab_fmt_err(err, h.kind, sizeof h.kind, "a kind", "image") < 0 ||
	    ab_fmt_err(err, h.id, sizeof h.id, "an image's ID", "%s",
	    id) < 0 || ab_image_record_read(s, &h, &sp, err) < 0)
		return -1;
	return ab_fmt_err(err, path, cap, "the image's PATH", "%s",
	    sp.path_env);
}

/* --- leftovers ----------------------------------------------------- */

/* Whether image ID of this state is being made by a live ab-image, or is
 * registered as DIGEST on engine MARK (or in an old record, which names
 * none): either way not a leftover. */
static int kept(struct ab_state *s, const char *id, const char *digest,
    const char *mark)
{
	struct ab_handle h;
	struct ab_err skip;
	struct ab_image_spec sp;

	if (!ab_is_id(id))
		return 0;
	if (ab_inflight_any(s, "image", id, AB_INFLIGHT_LIVE))
		return 1;
	memcpy(h.kind, "image", sizeof "image");
	memcpy(h.id, id, sizeof h.id);
	return digest != NULL && ab_image_record_read(s, &h, &sp, &skip) == 0 &&
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

	/* Containers first: an image in use cannot go. */
	if (ab_fmt_err(err, state, sizeof state, "the state's ID",
	    "org.agentbox.state=%s", s->sid) < 0 ||
	    sweep_list(s, e, AB_CONTAINER, probes, mark, n, err) < 0 ||
	    sweep_list(s, e, AB_CONTAINER, exports, mark, n, err) < 0)
		return -1;
	return sweep_list(s, e, AB_IMAGE, images, mark, n, err);
}
