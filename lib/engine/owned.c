#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "owned.h"

struct kind_api {
	const char *name;
	const char *inspect;	/* printf format of the inspect path */
	const char *remove;	/* printf format of the removal path */
	const char *labels;	/* where inspect keeps the labels */
	const char *id;		/* the key that names it for removal */
	long removed;		/* the removal's success status */
};

static const struct kind_api api[] = {
	[AB_CONTAINER] = { "container", "/containers/%s/json",
	    "/containers/%s?force=1&v=1", "Config.Labels", "Id", 204 },
	[AB_VOLUME] = { "volume", "/volumes/%s", "/volumes/%s?force=1",
	    "Labels", "Name", 204 },
	[AB_IMAGE] = { "image", "/images/%s/json", "/images/%s?force=1",
	    "Config.Labels", "Id", 200 },
	[AB_NETWORK] = { "network", "/networks/%s", "/networks/%s",
	    "Labels", "Id", 204 },
};

const char *ab_kind_name(enum ab_kind kind)
{
	return api[kind].name;
}

/* A name, an ID or a digest: nothing that could change the request path. */
static int plain_ref(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 200)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || strchr("_.:-", *s)))
			return 0;
	return 1;
}

static int owner_is(const struct ab_json *j, int labels, const char *sid,
    const char *alloc)
{
	return ab_json_str_eq(j, ab_json_key(j, labels, "org.agentbox.state"),
	    sid) && (alloc == NULL || ab_json_str_eq(j, ab_json_key(j, labels,
	    "org.agentbox.alloc"), alloc));
}

int ab_owned_lookup(struct ab_engine *e, enum ab_kind kind, const char *ref,
    const char *sid, const char *alloc, char *id, struct ab_err *err)
{
	const struct kind_api *k = &api[kind];
	struct ab_resp r;
	struct ab_json j;
	char path[300], *v;
	int rc;

	if (!plain_ref(ref))
		return ab_fail(err, AB_EREFUSED, "%s name %.80s is not one "
		    "agentbox makes", k->name, ref);
	if (ab_fmt_err(err, path, sizeof path, "an object's name", k->inspect,
	    ref) < 0)
		return -1;
	if (ab_engine_json(e, "GET", path, NULL, "inspect an object", &r,
	    err) < 0) {
		ab_resp_free(&r);
		return -1;
	}
	if (r.status == 404) {
		ab_resp_free(&r);
		return AB_ABSENT;
	}
	if (r.status != 200) {
		rc = ab_engine_fail(&r, AB_EENGINE, "inspect an object", err);
		ab_resp_free(&r);
		return rc;
	}
	rc = ab_json_parse(&j, r.body.data, r.body.len, err);
	ab_resp_free(&r);
	if (rc < 0) {
		err->code = AB_EENGINE;
		return -1;
	}
	rc = owner_is(&j, ab_json_get(&j, 0, k->labels), sid, alloc) ?
	    AB_OURS : AB_FOREIGN;
	v = ab_json_str(&j, ab_json_key(&j, 0, k->id));
	if (rc == AB_OURS && (v == NULL || !plain_ref(v) || strlen(v) >= 80))
		rc = ab_fail(err, AB_EENGINE, "engine's %s has no usable %s",
		    k->name, k->id);
	else if (rc == AB_OURS && id != NULL)
		memcpy(id, v, strlen(v) + 1);
	free(v);
	ab_json_free(&j);
	return rc;
}

static int remove_id(struct ab_engine *e, const struct kind_api *k,
    const char *id, struct ab_err *err)
{
	struct ab_resp r;
	char path[300], what[40];
	int rc;

	if (ab_fmt_err(err, path, sizeof path, "an object's ID", k->remove,
	    id) < 0 || ab_fmt_err(err, what, sizeof what, "a kind's name",
	    "remove a %s", k->name) < 0)
		return -1;
	rc = ab_engine_json(e, "DELETE", path, NULL, what, &r, err);
	/* 409: still in use (a volume by a container); the caller names
	 * what remains. */
	if (rc == 0 && r.status != k->removed && r.status != 404)
		rc = ab_engine_fail(&r, r.status == 409 ? AB_EREFUSED :
		    AB_EENGINE, what, err);
	ab_resp_free(&r);
	return rc;
}

int ab_owned_remove(struct ab_engine *e, enum ab_kind kind, const char *ref,
    const char *sid, const char *alloc, struct ab_err *err)
{
	struct ab_budget saved;
	char id[80];
	int rc;

	ab_engine_budget_begin(e, AB_CLEANUP_MS, &saved);
	rc = ab_owned_lookup(e, kind, ref, sid, alloc, id, err);
	if (rc == AB_OURS)
		rc = remove_id(e, &api[kind], id, err);
	ab_engine_budget_end(e, &saved);
	return rc;
}
