#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally.h"

static void row_init(struct ab_tally_row *r, const char *host, int port)
{
	memset(r, 0, sizeof *r);
	/* As large as a host name: one cut short still reads. */
	(void)ab_fmt(r->host, sizeof r->host, "%s", host);
	r->port = port;
}

void ab_tally_init(struct ab_tally *t, const struct ab_egress_list *l,
    long long start_ms)
{
	int i;

	memset(t, 0, sizeof *t);
	t->start_ms = start_ms;
	for (i = 0; i < l->n; i++)
		row_init(&t->allow[i], l->e[i].host, l->e[i].port);
	t->nallow = l->n;
}

static struct ab_tally_row *find(struct ab_tally_row *rows, int n,
    const char *host, int port)
{
	int i;

	for (i = 0; i < n; i++)
		if (rows[i].port == port && strcmp(rows[i].host, host) == 0)
			return &rows[i];
	return NULL;
}

struct ab_tally_row *ab_tally_allowed(struct ab_tally *t, const char *host,
    int port)
{
	return find(t->allow, t->nallow, host, port);
}

static void add_reason(struct ab_tally_row *r, const char *why)
{
	int i;

	for (i = 0; i < AB_TALLY_REASONS && r->reason[i][0] != '\0'; i++)
		if (strcmp(r->reason[i], why) == 0)
			break;
	/* The proxy's reasons are a short fixed set: a full table drops
	 * only the reason's name, never the refusal's count. */
	if (i == AB_TALLY_REASONS)
		return;
	/* Cut, a reason would count for another: its name stays out. */
	if (ab_fmt(r->reason[i], sizeof r->reason[0], "%s", why) < 0) {
		r->reason[i][0] = '\0';
		return;
	}
	r->nreason[i]++;
}

void ab_tally_refused(struct ab_tally *t, const char *host, int port,
    const char *reason)
{
	struct ab_tally_row *r;

	if (host == NULL) {
		r = &t->unnamed;
	} else if ((r = ab_tally_allowed(t, host, port)) == NULL &&
	    (r = find(t->named, t->nnamed, host, port)) == NULL) {
		if (t->nnamed == AB_TALLY_NAMES) {
			t->names_dropped++;
			return;
		}
		r = &t->named[t->nnamed++];
		row_init(r, host, port);
	}
	r->refused++;
	add_reason(r, reason);
}

static struct ab_tally_inv *inv_of(struct ab_tally *t, const char *who)
{
	int i;

	for (i = 0; i < t->ninv; i++)
		if (strcmp(t->inv[i].who, who) == 0)
			return &t->inv[i];
	return NULL;
}

/* A place for WHO: a free one, or the one idle longest, given up. */
static struct ab_tally_inv *inv_new(struct ab_tally *t, const char *who)
{
	struct ab_tally_inv *v = &t->inv[0];
	int i;

	if (t->ninv < AB_TALLY_INVS) {
		v = &t->inv[t->ninv++];
	} else {
		for (i = 1; i < t->ninv; i++)
			if (t->inv[i].last_ms < v->last_ms)
				v = &t->inv[i];
		t->invs_dropped++;
	}
	memset(v, 0, sizeof *v);
	/* Callers' names are AB_TALLY_WHO long: a bug here when cut. */
	if (ab_fmt(v->who, sizeof v->who, "%s", who) < 0)
		abort();
	return v;
}

void ab_tally_request(struct ab_tally *t, const char *who,
    const struct ab_tally_req *r, long long now_ms)
{
	struct ab_tally_inv *v;

	if ((v = inv_of(t, who)) == NULL)
		v = inv_new(t, who);
	v->last_ms = now_ms;
	v->count++;
	v->up += r->up;
	v->down += r->down;
	if (v->n < AB_TALLY_REQS)
		v->req[v->n++] = *r;
}

/* --- the file ---------------------------------------------------------- */

/* A row as the file and the result both have it: the unnamed row's host
 * and port are null, and a reason no refusal of the row has is left out. */
static void row_write(struct ab_jw *w, const struct ab_tally_row *r)
{
	int i;

	ab_jw_obj(w);
	ab_jw_key(w, "host");
	if (r->host[0])
		ab_jw_str(w, r->host);
	else
		ab_jw_null(w);
	ab_jw_key(w, "port");
	if (r->port > 0)
		ab_jw_int(w, r->port);
	else
		ab_jw_null(w);
	ab_jw_kint(w, "allowed", r->allowed);
	ab_jw_kint(w, "refused", r->refused);
	ab_jw_kint(w, "bytes_up", r->up);
	ab_jw_kint(w, "bytes_down", r->down);
	ab_jw_key(w, "reasons");
	ab_jw_obj(w);
	for (i = 0; i < AB_TALLY_REASONS && r->reason[i][0] != '\0'; i++)
		if (r->nreason[i] > 0)
			ab_jw_kint(w, r->reason[i], r->nreason[i]);
	ab_jw_obj_end(w);
	ab_jw_obj_end(w);
}

/* A listed request, as [method, path, status, up, down, ms]. */
static void req_write(struct ab_jw *w, const struct ab_tally_req *r)
{
	ab_jw_arr(w);
	ab_jw_str(w, r->method);
	ab_jw_str(w, r->path);
	ab_jw_int(w, r->status);
	ab_jw_int(w, r->up);
	ab_jw_int(w, r->down);
	ab_jw_int(w, r->ms);
	ab_jw_arr_end(w);
}

static void inv_write(struct ab_jw *w, const struct ab_tally_inv *v)
{
	int i;

	ab_jw_obj(w);
	ab_jw_kstr(w, "who", v->who);
	ab_jw_kint(w, "last", v->last_ms);
	ab_jw_kint(w, "count", v->count);
	ab_jw_kint(w, "bytes_up", v->up);
	ab_jw_kint(w, "bytes_down", v->down);
	ab_jw_key(w, "req");
	ab_jw_arr(w);
	for (i = 0; i < v->n; i++)
		req_write(w, &v->req[i]);
	ab_jw_arr_end(w);
	ab_jw_obj_end(w);
}

int ab_tally_write(const struct ab_tally *t, struct ab_buf *out)
{
	struct ab_jw w;
	int i;

	ab_jw_init(&w, out);
	ab_jw_obj(&w);
	ab_jw_kint(&w, "v", 2);
	ab_jw_kint(&w, "start", t->start_ms);
	ab_jw_kint(&w, "seq", t->seq);
	ab_jw_kint(&w, "names_dropped", t->names_dropped);
	ab_jw_key(&w, "allow");
	ab_jw_arr(&w);
	for (i = 0; i < t->nallow; i++)
		row_write(&w, &t->allow[i]);
	ab_jw_arr_end(&w);
	ab_jw_key(&w, "named");
	ab_jw_arr(&w);
	for (i = 0; i < t->nnamed; i++)
		row_write(&w, &t->named[i]);
	ab_jw_arr_end(&w);
	ab_jw_key(&w, "unnamed");
	row_write(&w, &t->unnamed);
	ab_jw_kint(&w, "invs_dropped", t->invs_dropped);
	ab_jw_key(&w, "invs");
	ab_jw_arr(&w);
	for (i = 0; i < t->ninv; i++)
		inv_write(&w, &t->inv[i]);
	ab_jw_arr_end(&w);
	ab_jw_obj_end(&w);
	return ab_jw_done(&w);
}

static int count(const struct ab_json *j, int obj, const char *key,
    long long *out)
{
	return ab_json_int(j, ab_json_key(j, obj, key), out) == 0 &&
	    *out >= 0 ? 0 : -1;
}

static int row_parse(const struct ab_json *j, int t, struct ab_tally_row *r)
{
	long long port;
	char *host;
	int rs, m, i;

	memset(r, 0, sizeof *r);
	/* Null for the unnamed row, as row_write writes it. */
	if (ab_json_type(j, ab_json_key(j, t, "host")) == AB_JSON_NULL &&
	    ab_json_type(j, ab_json_key(j, t, "port")) == AB_JSON_NULL) {
		port = 0;
	} else {
		host = ab_json_str(j, ab_json_key(j, t, "host"));
		if (host == NULL || host[0] == '\0' ||
		    strlen(host) > AB_EGRESS_HOST_MAX) {
			free(host);
			return -1;
		}
		memcpy(r->host, host, strlen(host) + 1);
		free(host);
		if (count(j, t, "port", &port) < 0 || port < 1 ||
		    port > 65535)
			return -1;
	}
	if (count(j, t, "allowed", &r->allowed) < 0 ||
	    count(j, t, "refused", &r->refused) < 0 ||
	    count(j, t, "bytes_up", &r->up) < 0 ||
	    count(j, t, "bytes_down", &r->down) < 0)
		return -1;
	r->port = (int)port;
	rs = ab_json_key(j, t, "reasons");
	if (ab_json_type(j, rs) != AB_JSON_OBJECT ||
	    ab_json_count(j, rs) > AB_TALLY_REASONS)
		return -1;
	for (i = 0; (m = ab_json_member(j, rs, i)) >= 0; i++) {
		char *k = ab_json_str(j, m);

		if (k == NULL || k[0] == '\0' || strlen(k) >= AB_TALLY_REASON_MAX ||
		    count(j, rs, k, &r->nreason[i]) < 0) {
			free(k);
			return -1;
		}
		memcpy(r->reason[i], k, strlen(k) + 1);
		free(k);
	}
	return 0;
}

static int rows_parse(const struct ab_json *j, int arr,
    struct ab_tally_row *rows, int max, int *n)
{
	int i, t;

	if (ab_json_type(j, arr) != AB_JSON_ARRAY ||
	    ab_json_count(j, arr) > max)
		return -1;
	for (i = 0; (t = ab_json_elem(j, arr, i)) >= 0; i++)
		if (row_parse(j, t, &rows[i]) < 0)
			return -1;
	*n = i;
	return 0;
}

/* A string of at most CAP - 1 bytes into OUT. */
static int str_in(const struct ab_json *j, int t, char *out, size_t cap)
{
	char *v = ab_json_str(j, t);
	int rc = -1;

	if (v != NULL && strlen(v) < cap) {
		memcpy(out, v, strlen(v) + 1);
		rc = 0;
	}
	free(v);
	return rc;
}

static int num_at(const struct ab_json *j, int arr, int i, long long *out)
{
	return ab_json_int(j, ab_json_elem(j, arr, i), out) == 0 &&
	    *out >= 0 ? 0 : -1;
}

static int req_parse(const struct ab_json *j, int t, struct ab_tally_req *r)
{
	long long status;

	if (ab_json_type(j, t) != AB_JSON_ARRAY || ab_json_count(j, t) != 6 ||
	    str_in(j, ab_json_elem(j, t, 0), r->method, sizeof r->method) < 0 ||
	    str_in(j, ab_json_elem(j, t, 1), r->path, sizeof r->path) < 0 ||
	    num_at(j, t, 2, &status) < 0 || status > 999 ||
	    num_at(j, t, 3, &r->up) < 0 || num_at(j, t, 4, &r->down) < 0 ||
	    num_at(j, t, 5, &r->ms) < 0)
		return -1;
	r->status = (int)status;
	return 0;
}

static int inv_parse(const struct ab_json *j, int t, struct ab_tally_inv *v)
{
	int rq = ab_json_key(j, t, "req"), i;

	memset(v, 0, sizeof *v);
	if (ab_json_type(j, t) != AB_JSON_OBJECT ||
	    str_in(j, ab_json_key(j, t, "who"), v->who, sizeof v->who) < 0 ||
	    v->who[0] == '\0' ||
	    count(j, t, "last", &v->last_ms) < 0 ||
	    count(j, t, "count", &v->count) < 0 ||
	    count(j, t, "bytes_up", &v->up) < 0 ||
	    count(j, t, "bytes_down", &v->down) < 0 ||
	    ab_json_type(j, rq) != AB_JSON_ARRAY ||
	    ab_json_count(j, rq) > AB_TALLY_REQS ||
	    ab_json_count(j, rq) > v->count)
		return -1;
	for (i = 0; i < ab_json_count(j, rq); i++)
		if (req_parse(j, ab_json_elem(j, rq, i), &v->req[i]) < 0)
			return -1;
	v->n = i;
	return 0;
}

static int invs_parse(const struct ab_json *j, struct ab_tally *t)
{
	int arr = ab_json_key(j, 0, "invs"), i;

	if (count(j, 0, "invs_dropped", &t->invs_dropped) < 0 ||
	    ab_json_type(j, arr) != AB_JSON_ARRAY ||
	    ab_json_count(j, arr) > AB_TALLY_INVS)
		return -1;
	for (i = 0; i < ab_json_count(j, arr); i++)
		if (inv_parse(j, ab_json_elem(j, arr, i), &t->inv[i]) < 0)
			return -1;
	t->ninv = i;
	return 0;
}

int ab_tally_parse(struct ab_tally *t, const char *p, size_t n,
    struct ab_err *err)
{
	struct ab_json j;
	long long v;
	int rc = -1;

	memset(t, 0, sizeof *t);
	if (ab_json_parse(&j, p, n, err) < 0)
		return ab_fail(err, AB_EREFUSED, "the proxy's tally is not "
		    "JSON");
	if (count(&j, 0, "v", &v) == 0 && v == 2 &&
	    count(&j, 0, "start", &t->start_ms) == 0 &&
	    count(&j, 0, "seq", &t->seq) == 0 &&
	    count(&j, 0, "names_dropped", &t->names_dropped) == 0 &&
	    rows_parse(&j, ab_json_key(&j, 0, "allow"), t->allow,
	    AB_EGRESS_MAX, &t->nallow) == 0 &&
	    rows_parse(&j, ab_json_key(&j, 0, "named"), t->named,
	    AB_TALLY_NAMES, &t->nnamed) == 0 &&
	    ab_json_type(&j, ab_json_key(&j, 0, "unnamed")) == AB_JSON_OBJECT &&
	    row_parse(&j, ab_json_key(&j, 0, "unnamed"), &t->unnamed) == 0 &&
	    invs_parse(&j, t) == 0)
		rc = 0;
	ab_json_free(&j);
	return rc == 0 ? 0 : ab_fail(err, AB_EREFUSED, "the proxy's tally "
	    "is not one agentbox writes");
}

/* --- a run's share ----------------------------------------------------- */

static long long less(long long end, long long begin)
{
	return end > begin ? end - begin : 0;
}

static long long reason_of(const struct ab_tally_row *r, const char *why)
{
	int i;

	for (i = 0; r != NULL && i < AB_TALLY_REASONS; i++)
		if (strcmp(r->reason[i], why) == 0)
			return r->nreason[i];
	return 0;
}

/* END's row minus BEGIN's (NULL: zero); 1 when anything moved. */
static int row_diff(const struct ab_tally_row *e, const struct ab_tally_row *b,
    struct ab_tally_row *d)
{
	int i;

	*d = *e;
	if (b != NULL) {
		d->allowed = less(e->allowed, b->allowed);
		d->refused = less(e->refused, b->refused);
		d->up = less(e->up, b->up);
		d->down = less(e->down, b->down);
	}
	for (i = 0; i < AB_TALLY_REASONS; i++)
		d->nreason[i] = less(e->nreason[i], reason_of(b, e->reason[i]));
	return d->allowed || d->refused || d->up || d->down;
}

struct sums {
	long long allowed, refused, up, down;
};

static void add(struct sums *s, const struct ab_tally_row *d)
{
	s->allowed += d->allowed;
	s->refused += d->refused;
	s->up += d->up;
	s->down += d->down;
}

void ab_tally_diff_json(const struct ab_tally *end,
    const struct ab_tally *begin, struct ab_jw *w)
{
	struct ab_tally_row d;
	struct sums s = { 0, 0, 0, 0 };
	long long dropped = less(end->names_dropped, begin ?
	    begin->names_dropped : 0);
	int i;

	ab_jw_key(w, "destinations");
	ab_jw_arr(w);
	for (i = 0; i < end->nallow; i++)
		if (row_diff(&end->allow[i], begin ? find((struct ab_tally_row *)
		    begin->allow, begin->nallow, end->allow[i].host,
		    end->allow[i].port) : NULL, &d)) {
			add(&s, &d);
			row_write(w, &d);
		}
	for (i = 0; i < end->nnamed; i++)
		if (row_diff(&end->named[i], begin ? find((struct ab_tally_row *)
		    begin->named, begin->nnamed, end->named[i].host,
		    end->named[i].port) : NULL, &d)) {
			add(&s, &d);
			row_write(w, &d);
		}
	if (row_diff(&end->unnamed, begin ? &begin->unnamed : NULL, &d)) {
		add(&s, &d);
		row_write(w, &d);
	}
	ab_jw_arr_end(w);
	ab_jw_key(w, "totals");
	ab_jw_obj(w);
	ab_jw_kint(w, "allowed", s.allowed);
	ab_jw_kint(w, "refused", s.refused + dropped);
	ab_jw_kint(w, "bytes_up", s.up);
	ab_jw_kint(w, "bytes_down", s.down);
	ab_jw_obj_end(w);
	/* Names past the table are counted, not named. */
	ab_jw_kint(w, "names_dropped", dropped);
	ab_jw_kbool(w, "truncated", dropped > 0);
}

void ab_tally_requests_json(const struct ab_tally *end,
    const struct ab_tally *begin, const char *who, struct ab_jw *w)
{
	const struct ab_tally_inv *e = inv_of((struct ab_tally *)end, who);
	const struct ab_tally_inv *b = begin != NULL ?
	    inv_of((struct ab_tally *)begin, who) : NULL;
	long long from = b != NULL ? b->count : 0;
	int i;

	ab_jw_key(w, "requests");
	/* Given up for another invocation's (or never seen, while some
	 * list was given up): what it held is not known. */
	if ((e == NULL && end->invs_dropped > (begin != NULL ?
	    begin->invs_dropped : 0)) || (e != NULL && e->count < from)) {
		ab_jw_null(w);
		return;
	}
	ab_jw_obj(w);
	ab_jw_kint(w, "count", e != NULL ? e->count - from : 0);
	ab_jw_kint(w, "bytes_up", e != NULL ? less(e->up, b ? b->up : 0) : 0);
	ab_jw_kint(w, "bytes_down", e != NULL ?
	    less(e->down, b ? b->down : 0) : 0);
	ab_jw_key(w, "listed");
	ab_jw_arr(w);
	for (i = (int)(from < AB_TALLY_REQS ? from : AB_TALLY_REQS);
	    e != NULL && i < e->n; i++) {
		ab_jw_obj(w);
		ab_jw_kstr(w, "method", e->req[i].method);
		ab_jw_kstr(w, "path", e->req[i].path);
		ab_jw_kint(w, "status", e->req[i].status);
		ab_jw_kint(w, "bytes_up", e->req[i].up);
		ab_jw_kint(w, "bytes_down", e->req[i].down);
		ab_jw_kint(w, "ms", e->req[i].ms);
		ab_jw_obj_end(w);
	}
	ab_jw_arr_end(w);
	/* Past the first AB_TALLY_REQS: counted, not listed. */
	ab_jw_kint(w, "more", e != NULL ? e->count - from -
	    (e->n > from ? e->n - from : 0) : 0);
	ab_jw_obj_end(w);
}
