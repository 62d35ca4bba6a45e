#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "clean.h"
#include "engineid.h"
#include "file.h"
#include "json.h"
#include "oneshot.h"
#include "owned.h"
#include "proxy.h"
#include "side.h"
#include "testhook.h"

#define SETTLE_MS 500
#define PASSES 4
/* How long after a killed tool is gone a create it sent may still land:
 * the engine finishes a request whose client died, on its own time, and
 * nothing tells when.  Half a second was seen too short under make asan
 * ("ab-alloc --egress killed at each pause point"); an engine's create
 * takes well under a second unless the host is starved. */
#define LATE_MS 2000

/* The containers or volumes of this state, and of allocation ID when it
 * is not NULL. */
static int by_label(struct ab_state *s, struct ab_engine *e, const char *what,
    const char *id, struct ab_json *j, int *list, struct ab_err *err)
{
	char state[64], alloc[64];
	const char *labels[3] = { state, NULL, NULL };

	if (ab_fmt_err(err, state, sizeof state, "the state's ID",
	    "org.agentbox.state=%s", s->sid) < 0)
		return -1;
	if (id != NULL) {
		if (ab_fmt_err(err, alloc, sizeof alloc, "an allocation's ID",
		    "org.agentbox.alloc=%s", id) < 0)
			return -1;
		labels[1] = alloc;
	}
	return ab_engine_list(e, what, labels, j, list, err);
}

/* One object's removal, beside others (side.h). */
struct removal {
	struct ab_state *s;
	enum ab_kind kind;
	const char *id;
	char *ref;
	struct ab_side side;
};

static int remove_one(struct ab_engine *e, void *arg, struct ab_err *err)
{
	struct removal *r = arg;

	return ab_owned_remove(e, r->kind, r->ref, r->s->sid, r->id, err);
}

/* Up to AT_ONCE objects removed at the same time, each on a connection
 * of its own: a running container's removal is the engine stopping it
 * and tearing its mounts and network down, which for the keeper, the
 * proxy and an agent need not wait for each other. */
#define AT_ONCE 4

static int remove_together(struct removal *r, int n, struct ab_engine *e,
    struct ab_err *err)
{
	struct ab_err one;
	int i, rc = 0;

	for (i = 1; i < n; i++)
		ab_side_start(&r[i].side, e, remove_one, &r[i]);
	if (n > 0 && remove_one(e, &r[0], err) < 0)
		rc = -1;
	for (i = 1; i < n; i++)
		if (ab_side_join(&r[i].side, &one) < 0 && rc == 0) {
			*err = one;
			rc = -1;
		}
	return rc;
}

/* Removes every container or volume labelled with this state and
 * allocation ID; with left, names them there instead.  Each is inspected
 * again right before it goes (ab_owned_remove). */
static int each_labelled(struct ab_state *s, struct ab_engine *e,
    enum ab_kind kind, const char *id, struct ab_buf *left,
    struct ab_err *err)
{
	const char *what = kind == AB_CONTAINER ? "containers" : "volumes";
	const char *key = kind == AB_CONTAINER ? "Id" : "Name";
	struct removal r[AT_ONCE];
	struct ab_json j;
	int list, i, t, n = 0, rc = 0;
	char *v;

	if (by_label(s, e, what, id, &j, &list, err) < 0)
		return -1;
	for (i = 0; (t = ab_json_elem(&j, list, i)) >= 0; i++) {
		v = ab_json_str(&j, ab_json_key(&j, t, key));
		if (v == NULL)
			continue;
		if (left != NULL) {
			ab_buf_addf(left, "%s %s\n", ab_kind_name(kind), v);
			free(v);
			continue;
		}
		r[n] = (struct removal){ s, kind, id, v, { 0 } };
		if (++n < AT_ONCE)
			continue;
		if (remove_together(r, n, e, err) < 0)
			rc = -1;
		while (n > 0)
			free(r[--n].ref);
	}
	if (remove_together(r, n, e, err) < 0)
		rc = -1;
	while (n > 0)
		free(r[--n].ref);
	ab_json_free(&j);
	return rc;
}

/* Containers before volumes: a referenced volume cannot go (409).  The
 * derived names are tried too, for an object whose listing lags its
 * create; each goes only if it carries this state's and ID's labels. */
static int remove_pass(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, struct ab_err *err)
{
	const char *ctrs[2] = { a->keeper, a->eg.proxy };
	const struct ab_volume *v[AB_NVOL + 2];
	int i, n, rc = 0;

	if (each_labelled(s, e, AB_CONTAINER, a->id, NULL, err) < 0)
		rc = -1;
	for (i = 0; i < 2; i++)
		if (ab_owned_remove(e, AB_CONTAINER, ctrs[i], s->sid, a->id,
		    err) < 0)
			rc = -1;
	n = ab_alloc_volumes(a, v);
	for (i = 0; i < n; i++)
		if (ab_owned_remove(e, AB_VOLUME, v[i]->name, s->sid, a->id,
		    err) < 0)
			rc = -1;
	if (each_labelled(s, e, AB_VOLUME, a->id, NULL, err) < 0)
		rc = -1;
	return rc;
}

/* One derived name: named in left when an object of ours holds it. */
static int still(struct ab_state *s, struct ab_engine *e, enum ab_kind kind,
    const char *name, const char *id, struct ab_buf *left, struct ab_err *err)
{
	int k = ab_owned_lookup(e, kind, name, s->sid, id, NULL, err);

	if (k == AB_OURS)
		ab_buf_addf(left, "%s %s\n", ab_kind_name(kind), name);
	return k < 0 ? -1 : 0;
}

/* Absence: no derived name is held by an object of ours, and nothing
 * carries the labels.  An object of another owner under a derived name
 * is not ours to remove, nor a remainder of this allocation. */
static int prove(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, struct ab_buf *left, struct ab_err *err)
{
	const struct ab_volume *v[AB_NVOL + 2];
	int i, n = ab_alloc_volumes(a, v);

	if (still(s, e, AB_CONTAINER, a->keeper, a->id, left, err) < 0 ||
	    still(s, e, AB_CONTAINER, a->eg.proxy, a->id, left, err) < 0)
		return -1;
	for (i = 0; i < n; i++)
		if (still(s, e, AB_VOLUME, v[i]->name, a->id, left, err) < 0)
			return -1;
	if (left->len > 0)
		return 0;
	if (each_labelled(s, e, AB_CONTAINER, a->id, left, err) < 0 ||
	    each_labelled(s, e, AB_VOLUME, a->id, left, err) < 0)
		return -1;
	return 0;
}

/* The profile and ctr records that name the allocation. */
static int remove_children(struct ab_state *s, const char *kind,
    const char *id, struct ab_err *err)
{
	char (*ids)[AB_ID_LEN + 1];
	struct ab_handle h;
	struct ab_json j;
	struct ab_err skip;
	size_t i, n;
	int mine, rc = 0;

	if (ab_record_list(s, kind, &ids, &n, err) < 0)
		return -1;
	rc = ab_fmt_err(err, h.kind, sizeof h.kind, "a kind", "%s", kind);
	for (i = 0; i < n && rc == 0; i++) {
		memcpy(h.id, ids[i], sizeof h.id);
		if (ab_record_read(s, &h, &j, &skip) < 0)
			continue;
		mine = ab_json_str_eq(&j, ab_json_key(&j, 0, "alloc"), id);
		ab_json_free(&j);
		if (mine && (rc = ab_tombstone_set(s, kind, h.id, err)) == 0)
			rc = ab_record_remove(s, &h, err);
	}
	free(ids);
	return rc;
}

static int remove_local(struct ab_state *s, const struct ab_alloc *a,
    struct ab_err *err)
{
	struct ab_handle h;
	int fd;

	if (remove_children(s, "ctr", a->id, err) < 0 ||
	    remove_children(s, "profile", a->id, err) < 0)
		return -1;

	fd = openat(s->dirfd, "stage", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd >= 0) {
		if (ab_remove_tree(fd, a->id) < 0) {
			close(fd);
			return ab_fail_errno(err, AB_EENGINE,
			    "cannot remove the staging clone of alloc:%s", a->id);
		}
		close(fd);
	}
	ab_inflight_any(s, "alloc", a->id, 1);
	memcpy(h.id, a->id, sizeof h.id);
	if (ab_fmt_err(err, h.kind, sizeof h.kind, "a kind", "alloc") < 0 ||
	    ab_tombstone_set(s, "alloc", a->id, err) < 0)
		return -1;
	return ab_record_remove(s, &h, err);
}

/* One line naming everything that remains. */
static int remains(const char *id, struct ab_buf *left, struct ab_err *err)
{
	size_t i;

	while (left->len > 0 && left->data[left->len - 1] == '\n')
		left->data[--left->len] = '\0';
	for (i = 0; i < left->len; i++)
		if (left->data[i] == '\n')
			left->data[i] = ',';
	return ab_fail(err, AB_EREFUSED, "alloc:%s: still there, record kept: "
	    "%.500s", id, left->data);
}

static void settle(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Until when a create a tool that is gone sent may still land: LATE_MS
 * from now, or from ID's lease when that is sooner, for every tool that
 * works on an allocation shrinks its deadline to the lease and sends
 * nothing after it (a sweep after the lease waits for nothing). */
static long long late_until(struct ab_state *s, const char *id)
{
	long long until = ab_now_ms() + LATE_MS;
	struct ab_handle h;
	struct ab_alloc a;
	struct ab_err skip;

	memcpy(h.kind, "alloc", sizeof "alloc");
	memcpy(h.id, id, sizeof h.id);
	if (ab_alloc_load(s, &h, &a, &skip) == 0 && a.lease.set &&
	    a.lease.at_ms + LATE_MS < until)
		until = a.lease.at_ms + LATE_MS;
	return until;
}

static int budget_out(const char *id, struct ab_err *err)
{
	return ab_fail(err, AB_EDEADLINE, "alloc:%s: cleanup budget ran out "
	    "waiting for the creates of the tool that was making it", id);
}

/* A tool that left ID's in-flight marker may still create: any time while
 * it runs, and once it is gone until the engine finished the request it
 * sent last.  Waits for both, within the cleanup budget; a budget too
 * short for them proves nothing. */
static int await_creates(struct ab_state *s, const struct ab_engine *e,
    const char *id, struct ab_err *err)
{
	long long wait;

	ab_test_pause("clean-awaiting");
	while (ab_inflight_any(s, "alloc", id, AB_INFLIGHT_LIVE)) {
		if (ab_deadline_left_ms(&e->dl) <= SETTLE_MS)
			return budget_out(id, err);
		settle(SETTLE_MS);
	}
	if ((wait = late_until(s, id) - ab_now_ms()) <= 0)
		return 0;
	if (ab_deadline_left_ms(&e->dl) <= wait)
		return budget_out(id, err);
	settle((long)wait);
	return 0;
}

/* Removes and looks, and looks again after the settle window while a
 * pass leaves something: a container whose removal the engine finished
 * only after its volumes were tried (409, in use) is gone by then (seen
 * in CI: a killed ab-alloc's volumes, kept). */
static int passes(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, struct ab_buf *left, struct ab_err *err)
{
	int pass;

	for (pass = 0; pass < PASSES; pass++) {
		if (pass > 0)
			settle(SETTLE_MS);
		ab_buf_reset(left);
		remove_pass(s, e, a, err);
		if (prove(s, e, a, left, err) < 0)
			return -1;
		if (left->len == 0)
			break;
	}
	return 0;
}

/* Whether ID is this state's to clean: its record is here and bound to
 * this state, or objects carry this state's and ID's labels.  1: clean
 * it; 0: cleaned here before (a tombstone, nothing labelled); -1: refused,
 * nothing removed. */
static int ours(struct ab_state *s, struct ab_engine *e, const char *id,
    struct ab_buf *seen, struct ab_err *err)
{
	struct ab_handle h;
	struct ab_json j;

	memcpy(h.id, id, sizeof h.id);
	if (ab_fmt_err(err, h.kind, sizeof h.kind, "a kind", "alloc") < 0)
		return -1;
	if (ab_record_exists(s, &h)) {
		if (ab_record_read(s, &h, &j, err) < 0)
			return -1;
		ab_json_free(&j);
		return 1;
	}
	if (each_labelled(s, e, AB_CONTAINER, id, seen, err) < 0 ||
	    each_labelled(s, e, AB_VOLUME, id, seen, err) < 0)
		return -1;
	if (seen->len > 0)
		return 1;
	if (ab_tombstone_has(s, "alloc", id))
		return 0;
	return ab_fail(err, AB_EREFUSED, "alloc:%s is not an allocation of "
	    "state directory %s", id, s->path);
}

/* Whether anything labelled with ID is on the engine reached. */
static int anything_here(struct ab_state *s, struct ab_engine *e,
    const char *id, struct ab_err *err)
{
	struct ab_buf seen;
	int rc;

	ab_buf_init(&seen, 1 << 16);
	rc = each_labelled(s, e, AB_CONTAINER, id, &seen, err) < 0 ||
	    each_labelled(s, e, AB_VOLUME, id, &seen, err) < 0 ? -1 :
	    seen.len > 0;
	ab_buf_free(&seen);
	return rc;
}

int ab_clean_here(struct ab_state *s, struct ab_engine *e, const char *mark,
    const char *id, struct ab_err *err)
{
	struct ab_handle h;
	char engine[AB_ID_LEN + 1];

	memcpy(h.id, id, sizeof h.id);
	if (ab_fmt_err(err, h.kind, sizeof h.kind, "a kind", "alloc") < 0)
		return -1;
	if (!ab_record_exists(s, &h))
		return 1;	/* found by its labels, on this engine */
	if (ab_alloc_engine_of(s, &h, engine, err) < 0)
		return -1;
	if (engine[0] != '\0' && strcmp(engine, mark) == 0)
		return 1;
	return anything_here(s, e, id, err);
}

/* Absence is proven on the allocation's own engine alone: the one its
 * record names, or the one where something of it is.  Alloc IDs are
 * random, so objects of it here mean it lives here, even when the marks
 * disagree (the engine's mark was removed, by hand or by a prune, and a
 * later allocation made a new one); a record made before engines were
 * marked names none.  Refused, the message names both engines. */
static int its_engine(struct ab_state *s, struct ab_engine *e, const char *id,
    struct ab_err *err)
{
	char mark[AB_ID_LEN + 1];
	struct ab_handle h;
	struct ab_alloc a;
	int k;

	if (ab_engine_mark(e, 0, mark, err) < 0 ||
	    (k = ab_clean_here(s, e, mark, id, err)) < 0)
		return -1;
	if (k > 0)
		return 0;
	memcpy(h.id, id, sizeof h.id);
	ab_alloc_init(&a, id, s->sid);
	if (ab_fmt_err(err, h.kind, sizeof h.kind, "a kind", "alloc") < 0 ||
	    ab_alloc_engine_of(s, &h, a.engine, err) < 0)
		return -1;
	if (a.engine[0] != '\0')
		return ab_alloc_on(e, &a, err);
	return ab_fail(err, AB_EREFUSED, "alloc:%s was made before agentbox "
	    "recorded engines, and nothing of it is on the engine at %s: its "
	    "absence cannot be proven here (run ab-clean where it was made; "
	    "if that engine is gone, remove %s/alloc/%s)", id, e->ep.where,
	    s->path, id);
}

static int release_network(struct ab_engine *e, void *arg,
    struct ab_err *err)
{
	(void)err;
	ab_egress_network_release(arg, e);
	return 0;
}

static int clean_locked(struct ab_state *s, struct ab_engine *e, const char *id,
    struct ab_buf *left, struct ab_err *err)
{
	struct ab_side side;
	struct ab_alloc a;
	int rc;

	if ((rc = ours(s, e, id, left, err)) <= 0)
		return rc;
	if (its_engine(s, e, id, err) < 0)
		return -1;
	ab_alloc_init(&a, id, s->sid);
	/* A create can land late only while its request is in flight, so
	 * when a tool left its in-flight marker (it was killed, or still
	 * runs) absence is proven only by a look after its creates can no
	 * longer land; otherwise every create has had its reply and the
	 * passes are the proof. */
	if (passes(s, e, &a, left, err) < 0)
		return -1;
	if (ab_inflight_any(s, "alloc", id, 0) &&
	    (await_creates(s, e, id, err) < 0 ||
	    passes(s, e, &a, left, err) < 0))
		return -1;
	if (left->len > 0)
		return remains(id, left, err);
	/* An older agentbox's egress network of this state goes with its
	 * last proxy, beside the local removals (the engine takes some
	 * 150 ms over a network); the engine's stays (proxy.h). */
	ab_side_start(&side, e, release_network, s);
	/* Staged inputs and the clone go only once the filesystems are. */
	rc = remove_local(s, &a, err);
	ab_side_join(&side, NULL);
	return rc < 0 ? -1 : 1;
}

/* Cleaners of one allocation take turns.  Two at once each saw objects
 * the other was removing and said "still there", keeping the records (seen
 * in the gate: run-task's own clean and another trial's sweep, and the
 * allocation was left).  The later one finds it cleaned. */
static int clean_lock(struct ab_state *s, const struct ab_engine *e,
    const char *id, char *name, size_t cap, struct ab_err *err)
{
	long long left = ab_deadline_left_ms(&e->dl);
	int fd;

	if (ab_fmt_err(err, name, cap, "an allocation's ID",
	    "alloc/.clean-%s", id) < 0)
		return -1;
	if (mkdirat(s->dirfd, "alloc", 0700) < 0 && errno != EEXIST)
		return ab_fail_errno(err, AB_EENGINE, "cannot make %s/alloc",
		    s->path);
	fd = ab_flock_name(s->dirfd, name, left > 0 ? (long)left : 0);
	if (fd < 0 && errno == EWOULDBLOCK)
		return ab_fail(err, AB_EDEADLINE, "alloc:%s: cleanup budget "
		    "ran out while another ab-clean was cleaning it", id);
	if (fd < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot lock %s/%s",
		    s->path, name);
	return fd;
}

int ab_clean_alloc(struct ab_state *s, struct ab_engine *e, const char *id,
    struct ab_buf *left, struct ab_err *err)
{
	char name[AB_ID_LEN + 16];
	int fd, rc;

	/* A handle that is not ours leaves the state directory as it was; one
	 * that is is asked again under the lock. */
	if ((rc = ours(s, e, id, left, err)) <= 0)
		return rc;
	ab_buf_reset(left);
	if ((fd = clean_lock(s, e, id, name, sizeof name, err)) < 0)
		return -1;
	ab_test_pause("clean-locked");
	rc = clean_locked(s, e, id, left, err);
	ab_flock_drop(s->dirfd, name, fd);
	return rc;
}

static int add_id(char (**ids)[AB_ID_LEN + 1], size_t *n, size_t *cap,
    const char *id)
{
	char (*v)[AB_ID_LEN + 1];
	size_t i;

	if (!ab_is_id(id))
		return 0;
	for (i = 0; i < *n; i++)
		if (strcmp((*ids)[i], id) == 0)
			return 0;
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		v = realloc(*ids, *cap * sizeof *v);
		if (v == NULL)
			return -1;
		*ids = v;
	}
	memcpy((*ids)[(*n)++], id, AB_ID_LEN + 1);
	return 0;
}

static int labelled_ids(struct ab_state *s, struct ab_engine *e,
    const char *what, char (**ids)[AB_ID_LEN + 1], size_t *n, size_t *cap,
    struct ab_err *err)
{
	struct ab_json j;
	int list, i, t, rc = 0;
	char *v;

	if (by_label(s, e, what, NULL, &j, &list, err) < 0)
		return -1;
	for (i = 0; rc == 0 && (t = ab_json_elem(&j, list, i)) >= 0; i++) {
		v = ab_json_str(&j, ab_json_key(&j, ab_json_key(&j, t,
		    "Labels"), "org.agentbox.alloc"));
		if (v != NULL && add_id(ids, n, cap, v) < 0)
			rc = ab_fail(err, AB_EENGINE, "out of memory");
		free(v);
	}
	ab_json_free(&j);
	return rc;
}

int ab_clean_known(struct ab_state *s, struct ab_engine *e,
    char (**ids)[AB_ID_LEN + 1], size_t *n, struct ab_err *err)
{
	char (*rec)[AB_ID_LEN + 1];
	size_t i, nrec, cap = 0;
	int rc = 0;

	*ids = NULL;
	*n = 0;
	if (ab_record_list(s, "alloc", &rec, &nrec, err) < 0)
		return -1;
	for (i = 0; rc == 0 && i < nrec; i++)
		if (add_id(ids, n, &cap, rec[i]) < 0)
			rc = ab_fail(err, AB_EENGINE, "out of memory");
	free(rec);
	if (rc == 0)
		rc = labelled_ids(s, e, "containers", ids, n, &cap, err);
	if (rc == 0)
		rc = labelled_ids(s, e, "volumes", ids, n, &cap, err);
	if (rc < 0) {
		free(*ids);
		*ids = NULL;
	}
	return rc;
}

int ab_clean_expired(struct ab_state *s, const char *id, long long grace_ms)
{
	struct ab_handle h;
	struct ab_alloc a;
	struct ab_err err;

	memset(&err, 0, sizeof err);
	memcpy(h.id, id, sizeof h.id);
	/* No record (or one that is not ours): the objects belong to nobody. */
	if (ab_fmt_err(&err, h.kind, sizeof h.kind, "a kind", "alloc") < 0 ||
	    ab_alloc_load(s, &h, &a, &err) < 0)
		return err.code == AB_EREFUSED;
	return a.lease.set && a.lease.at_ms + grace_ms < ab_now_ms();
}
