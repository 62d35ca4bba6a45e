#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "engineid.h"
#include "json.h"

/* How long a mark read by ab_engine_is stands for the next check. */
#define MARK_FRESH_MS 1000

/* The mark's label, from the volume's inspect reply. */
static int read_mark(struct ab_resp *r, char id[AB_ID_LEN + 1],
    struct ab_err *err)
{
	struct ab_json j;
	char *v;
	int ok;

	if (ab_json_parse(&j, r->body.data, r->body.len, err) < 0) {
		err->code = AB_EENGINE;
		return -1;
	}
	v = ab_json_str(&j, ab_json_key(&j, ab_json_key(&j, 0, "Labels"),
	    AB_ENGINE_LABEL));
	ok = v != NULL && ab_is_id(v);
	if (ok)
		memcpy(id, v, AB_ID_LEN + 1);
	free(v);
	ab_json_free(&j);
	return ok ? 1 : ab_fail(err, AB_EREFUSED, "the engine's volume "
	    AB_ENGINE_MARK " has no usable " AB_ENGINE_LABEL " label");
}

static int make_mark(struct ab_engine *e, struct ab_err *err)
{
	char id[AB_ID_LEN + 1], body[200];
	struct ab_resp r;
	int rc;

	if (ab_new_id(id, err) < 0)
		return -1;
	/* Two tools making it at once: the engine hands the second the
	 * first one's volume, whose label is then read back. */
	if (ab_fmt_err(err, body, sizeof body, "the engine's mark",
	    "{\"Name\":\"" AB_ENGINE_MARK "\","
	    "\"Labels\":{\"" AB_ENGINE_LABEL "\":\"%s\"}}", id) < 0)
		return -1;
	rc = ab_engine_json(e, "POST", "/volumes/create", body,
	    "mark the engine", &r, err);
	if (rc == 0 && r.status != 201)
		rc = ab_engine_fail(&r, AB_EENGINE, "mark the engine", err);
	ab_resp_free(&r);
	return rc;
}

int ab_engine_mark(struct ab_engine *e, int make, char id[AB_ID_LEN + 1],
    struct ab_err *err)
{
	struct ab_resp r;
	long status;
	int pass, rc = 0;

	id[0] = '\0';
	for (pass = 0; pass < 2; pass++) {
		if (ab_engine_json(e, "GET", "/volumes/" AB_ENGINE_MARK, NULL,
		    "read the engine's mark", &r, err) < 0) {
			ab_resp_free(&r);
			return -1;
		}
		status = r.status;
		if (status == 200)
			rc = read_mark(&r, id, err);
		else if (status != 404)
			rc = ab_engine_fail(&r, AB_EENGINE,
			    "read the engine's mark", err);
		ab_resp_free(&r);
		if (status != 404)
			return rc;
		if (!make || pass == 1)
			return 0;
		if (make_mark(e, err) < 0)
			return -1;
	}
	return 0;
}

int ab_engine_is(struct ab_engine *e, const char *recorded, const char *what,
    struct ab_err *err)
{
	char here[AB_ID_LEN + 1];
	int k;

	if (recorded[0] == '\0')
		return ab_fail(err, AB_EREFUSED, "%s was made before agentbox "
		    "recorded engines: clean it with ab-clean on the engine "
		    "that holds it", what);
	/* ab-validate and ab-run check the allocation's engine and then the
	 * image's, a millisecond apart, on one connection: a mark that
	 * matched within MARK_FRESH_MS is that same answer. */
	if (e->mark[0] != '\0' && strcmp(e->mark, recorded) == 0 &&
	    ab_now_ms() - e->mark_ms < MARK_FRESH_MS)
		return 0;
	if ((k = ab_engine_mark(e, 0, here, err)) < 0)
		return -1;
	if (k == 0)
		return ab_fail(err, AB_EREFUSED, "%s lives on engine %s; the "
		    "engine at %s has no agentbox mark (if it is that engine, "
		    "its mark was removed: docker volume create --label "
		    AB_ENGINE_LABEL "=%s " AB_ENGINE_MARK ")", what, recorded,
		    e->ep.where, recorded);
	if (strcmp(here, recorded) != 0)
		return ab_fail(err, AB_EREFUSED, "%s lives on engine %s, not "
		    "on engine %s at %s", what, recorded, here, e->ep.where);
	if (ab_fmt_err(err, e->mark, sizeof e->mark, "the engine's mark",
	    "%s", here) < 0)
		return -1;
	e->mark_ms = ab_now_ms();
	return 0;
}
