#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debroot.h"
#include "engineid.h"
#include "file.h"
#include "git.h"
#include "hash.h"
#include "image.h"
#include "imagecheck.h"
#include "imageimport.h"
#include "imagereg.h"
#include "imageroot.h"
#include "json.h"
#include "lockdown.h"
#include "rootfs.h"
#include "testhook.h"

/* What agentbox needs of a root made from Debian packages: git, a shell
 * (bash and dash are Essential), the trust anchors. */
#define DEBROOT_NEEDS "git,ca-certificates"

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

	/* Fits: IDs are AB_ID_LEN; a cut label would match others'. */
	if (ab_fmt(label, sizeof label, "org.agentbox.image=%s", id) < 0 ||
	    ab_fmt(state, sizeof state, "org.agentbox.state=%s", sid) < 0)
		return;
	ab_engine_budget_begin(e, AB_CLEANUP_MS, &saved);
	if (ab_engine_list(e, "images", labels, &j, &list, &err) == 0) {
		for (i = 0; (t = ab_json_elem(&j, list, i)) >= 0; i++) {
			v = ab_json_str(&j, ab_json_key(&j, t, "Id"));
			if (v != NULL)
				ab_image_remove_owned(e, v, sid, &err);
			free(v);
		}
		ab_json_free(&j);
	}
	ab_engine_budget_end(e, &saved);
}

/* The default and agents recipes: a root filesystem assembled on the
 * host from the recipe's manifest (and, for agents, its wheel lock). */
static int rootfs_spec(const struct ab_image_opts *o, struct ab_rootfs *rf,
    struct ab_image_spec *sp, struct ab_hashcache *hc, struct ab_err *err)
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
		if (ab_fmt_err(err, lock, sizeof lock, "the recipe's path",
		    "%s/agents.lock", o->dir) < 0 ||
		    ab_wheels_init(w, lock, o->wheels, &o->dl, err) < 0) {
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
		if (ab_image_spec_version(sp, rf->v[i].name, rf->v[i].value,
		    err) < 0)
			return -1;
	if (ab_fmt_err(err, sp->kind, sizeof sp->kind, "the recipe's name",
	    "%s", o->recipe) < 0 || ab_fmt_err(err, sp->recipe,
	    sizeof sp->recipe, "the recipe's hash", "%s", rf->recipe) < 0)
		return -1;
	return ab_fmt_err(err, sp->path_env, sizeof sp->path_env,
	    "the recipe's PATH", "%s", rf->path_env);
}

static void say(ab_progress show, const char *fmt, const char *a,
    long long n)
{
	char line[512];

	if (show == NULL)
		return;
	/* A cut line still shows progress. */
	(void)ab_fmt(line, sizeof line, fmt, a, n);
	show(line);
}

/* Checks a freshly made image, then registers it; removes it on refusal. */
static int register_new(struct ab_state *s, struct ab_engine *e,
    struct ab_image_spec *sp, ab_progress show, struct ab_err *err)
{
	struct ab_err cerr;

	say(show, "checking %s and running its version probe", sp->digest, 0);
	if (ab_image_inspect(e, sp, err) == 0 &&
	    ab_image_probe(e, sp, err) == 0 &&
	    ab_image_inspect(e, sp, err) == 0 &&
	    ab_image_record_write(s, sp, err) == 0)
		return 0;
	ab_image_remove_owned(e, sp->digest, sp->sid, &cerr);
	return -1;
}

struct ab_image_plan {
	struct ab_image_spec sp;
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
	struct ab_image_spec *sp = &p->sp;
	struct ab_sha256 h;
	const char *set = p->deb.set ? p->deb.set : "";
	const char *c;

	if (strlen(set) >= sizeof sp->packages)
		return ab_fail(err, AB_EUSAGE, "--packages: %zu packages are "
		    "more than an image's record holds", p->deb.count);
	if (ab_fmt_err(err, sp->packages, sizeof sp->packages, "--packages",
	    "%s", set) < 0)
		return -1;
	if (p->root_path[0] != '/' || strlen(p->rf.path_env) +
	    strlen(p->root_path) + 2 > sizeof sp->path_env)
		return ab_fail(err, AB_EUSAGE, "the root's PATH %.200s is not "
		    "one agentbox can pin", p->root_path);
	for (c = p->root_path; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		    (*c >= '0' && *c <= '9') || strchr("/:._-", *c)))
			return ab_fail(err, AB_EUSAGE, "the root's PATH %.200s "
			    "is not one agentbox can pin", p->root_path);
	if (ab_fmt(sp->path_env, sizeof sp->path_env, "%s:%s",
	    p->rf.path_env, p->root_path) < 0)
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
	struct ab_image_spec sp;

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
		if (rc == 0)
			rc = ab_fmt_err(err, p->root_path, sizeof p->root_path,
			    "the root's PATH", "%s", AB_IMAGE_DEFAULT_PATH);
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
	struct ab_image_spec *sp = &p->sp;
	int fd = -1, rc;

	if (sp->base[0] != '\0') {
		say(o->progress, "exporting the base %s", sp->base, 0);
		if ((fd = ab_image_root_file(err)) < 0)
			return -1;
		rc = ab_image_export_base(e, sp, fd, err);
	} else {
		say(o->progress, "making the root%s of %lld Debian packages with "
		    "mmdebstrap", "", (long long)p->deb.count);
		rc = ab_image_debian_root(&p->deb, &fd, err);
	}
	if (rc == 0) {
		say(o->progress, "importing the %s image on that root",
		    o->recipe, 0);
		rc = ab_image_import_layered(e, &p->rf, fd, sp, o->progress,
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
	struct ab_image_spec *sp = &p->sp;
	int rc;

	if (p->layered) {
		rc = make_layered(e, p, o, err);
	} else {
		say(o->progress, "importing the %s image: %lld bytes",
		    o->recipe, p->rf.bytes);
		rc = ab_image_import(e, &p->rf, sp, o->progress, sp->digest,
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
	struct ab_image_spec *sp = &p->sp;
	int rc = 0;

	/* The image and its record are this engine's: marked on first use. */
	if (ab_engine_mark(e, 1, sp->engine, err) < 0)
		return -1;
	if (o->base != NULL && (ab_image_resolve_base(e, o->base, sp->base,
	    p->root_path, err) < 0 || root_key(p, err) < 0))
		return -1;
	if (!o->rebuild)
		rc = ab_image_find(s, e, sp, id, err);
	/* No image for what the cache said: what is made is hashed whole,
	 * and a cache that was wrong costs a look, not a second image. */
	if (rc == 0 && p->cached && (rc = full_pass(p, o, err)) == 0)
		rc = ab_image_find(s, e, sp, id, err);
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
