#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "jwt.h"
#include "oauth.h"
#include "secret.h"

static pthread_mutex_t refresh_lock = PTHREAD_MUTEX_INITIALIZER;

static void wipe(struct ab_buf *b)
{
	if (b->data != NULL)
		explicit_bzero(b->data, b->len);
	ab_buf_free(b);
}

static void wipe_str(char **p)
{
	if (*p != NULL) {
		explicit_bzero(*p, strlen(*p));
		free(*p);
		*p = NULL;
	}
}

void ab_oauth_tokens_free(struct ab_oauth_tokens *t)
{
	wipe_str(&t->access);
	wipe_str(&t->refresh);
	wipe_str(&t->id);
	t->expires_ms = 0;
}

/* -- The state. */

int ab_oauth_state_name(const char *name, char *out, size_t cap,
    struct ab_err *err)
{
	if (ab_fmt(out, cap, "signin.%s", name) < 0)
		return ab_fail(err, AB_EUSAGE, "a sign-in's name is too long");
	return 0;
}

static void names(struct ab_jw *w, const char *key,
    char (*v)[AB_OAUTH_NAME_MAX], int n)
{
	int i;

	ab_jw_key(w, key);
	ab_jw_arr(w);
	for (i = 0; i < n; i++)
		ab_jw_str(w, v[i]);
	ab_jw_arr_end(w);
}

int ab_oauth_state_encode(const struct ab_oauth_state *st,
    struct ab_buf *out, struct ab_err *err)
{
	struct ab_jw w;

	ab_buf_init(out, AB_OAUTH_STATE_MAX);
	ab_jw_init(&w, out);
	ab_jw_obj(&w);
	ab_jw_kstr(&w, "kind", st->kind == AB_OAUTH_CODEX ? "codex" :
	    "claude");
	ab_jw_kstrn(&w, "doc", st->doc, st->doc_len);
	ab_jw_kstr(&w, "access", st->t.access);
	ab_jw_kstr(&w, "refresh", st->t.refresh);
	if (st->t.id != NULL)
		ab_jw_kstr(&w, "id", st->t.id);
	ab_jw_kint(&w, "expires_ms", st->t.expires_ms);
	ab_jw_kint(&w, "refreshes", st->refreshes);
	ab_jw_kstr(&w, "problem", st->problem);
	ab_jw_kstr(&w, "who", st->who);
	names(&w, "live", (char (*)[AB_OAUTH_NAME_MAX])st->live, st->nlive);
	names(&w, "prev", (char (*)[AB_OAUTH_NAME_MAX])st->prev, st->nprev);
	ab_jw_obj_end(&w);
	if (ab_jw_done(&w) < 0) {
		wipe(out);
		return ab_fail(err, AB_EREFUSED, "a sign-in's state does not "
		    "fit %d bytes", AB_OAUTH_STATE_MAX);
	}
	return 0;
}

/* Array KEY of names into V. */
static int names_get(const struct ab_json *j, const char *key,
    char (*v)[AB_OAUTH_NAME_MAX], int *n)
{
	int a = ab_json_key(j, 0, key), i, k = ab_json_count(j, a);
	char *s;

	*n = 0;
	if (ab_json_type(j, a) != AB_JSON_ARRAY || k > AB_OAUTH_FILES)
		return -1;
	for (i = 0; i < k; i++) {
		s = ab_json_str(j, ab_json_elem(j, a, i));
		if (s == NULL || *s == '\0' || strlen(s) >= AB_OAUTH_NAME_MAX ||
		    strchr(s, '/') != NULL || s[0] == '.') {
			free(s);
			return -1;
		}
		memcpy(v[i], s, strlen(s) + 1);
		free(s);
	}
	*n = k;
	return 0;
}

int ab_oauth_state_decode(const char *p, size_t n, struct ab_oauth_state *st,
    struct ab_err *err)
{
	struct ab_json j;
	long long r = -1;
	int kind, ok;

	memset(st, 0, sizeof *st);
	if (ab_json_parse(&j, p, n, err) < 0)
		return ab_fail(err, AB_EREFUSED, "a sign-in's state is not "
		    "JSON");
	kind = ab_json_key(&j, 0, "kind");
	st->kind = ab_json_str_eq(&j, kind, "codex") ? AB_OAUTH_CODEX :
	    AB_OAUTH_CLAUDE;
	st->doc = ab_json_strn(&j, ab_json_key(&j, 0, "doc"), &st->doc_len);
	st->t.access = ab_json_str(&j, ab_json_key(&j, 0, "access"));
	st->t.refresh = ab_json_str(&j, ab_json_key(&j, 0, "refresh"));
	st->t.id = ab_json_str(&j, ab_json_key(&j, 0, "id"));
	ok = (ab_json_str_eq(&j, kind, "codex") ||
	    ab_json_str_eq(&j, kind, "claude")) && st->doc != NULL &&
	    st->t.access != NULL && st->t.refresh != NULL &&
	    ab_json_int(&j, ab_json_key(&j, 0, "expires_ms"),
	    &st->t.expires_ms) == 0 &&
	    ab_json_int(&j, ab_json_key(&j, 0, "refreshes"), &r) == 0 &&
	    r >= 0 && r < 1000000 &&
	    ab_json_copy(&j, "problem", st->problem, sizeof st->problem) == 0 &&
	    ab_json_copy(&j, "who", st->who, sizeof st->who) == 0 &&
	    names_get(&j, "live", st->live, &st->nlive) == 0 &&
	    names_get(&j, "prev", st->prev, &st->nprev) == 0;
	st->refreshes = (int)r;
	explicit_bzero(j.text, j.len);
	ab_json_free(&j);
	if (!ok) {
		ab_oauth_state_free(st);
		return ab_fail(err, AB_EREFUSED, "a sign-in's state is not one "
		    "agentbox wrote");
	}
	return 0;
}

void ab_oauth_state_free(struct ab_oauth_state *st)
{
	if (st->doc != NULL)
		explicit_bzero(st->doc, st->doc_len);
	free(st->doc);
	ab_oauth_tokens_free(&st->t);
	memset(st, 0, sizeof *st);
}

/* -- Placeholders and the vault's files. */

static int ph_one(const char *real, char **out, struct ab_err *err)
{
	size_t n = strlen(real);
	int rc;

	if ((*out = malloc(n + 1)) == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	rc = ab_jwt_is(real, n) ? ab_jwt_placeholder(real, n, *out, err) :
	    ab_placeholder(real, n, *out, err);
	(*out)[n] = '\0';
	if (rc < 0)
		wipe_str(out);
	return rc;
}

int ab_oauth_placeholders(const struct ab_oauth_tokens *r,
    struct ab_oauth_tokens *ph, struct ab_err *err)
{
	memset(ph, 0, sizeof *ph);
	ph->expires_ms = r->expires_ms;
	if (ph_one(r->access, &ph->access, err) < 0 ||
	    ph_one(r->refresh, &ph->refresh, err) < 0 ||
	    (r->id != NULL && ph_one(r->id, &ph->id, err) < 0)) {
		ab_oauth_tokens_free(ph);
		return -1;
	}
	return 0;
}

static int one_file(struct ab_oauth_file *f, const char *host,
    const char *ph, const struct ab_vault_entry *v, struct ab_err *err)
{
	ab_buf_init(&f->data, AB_VAULT_FILE_MAX);
	if (ab_vault_name(host, 443, ph, strlen(ph), f->name, sizeof f->name,
	    err) < 0)
		return -1;
	return ab_vault_encode(v, &f->data, err);
}

int ab_oauth_files(const struct ab_egress_signin *si, const char *name,
    const char *who, const struct ab_oauth_tokens *r,
    const struct ab_oauth_tokens *ph, const char *ca, size_t ca_len,
    struct ab_oauth_file *f, int *n, struct ab_err *err)
{
	struct ab_vault_entry v;
	int i, rc = 0;

	memset(&v, 0, sizeof v);
	memset(f, 0, sizeof *f * AB_OAUTH_FILES);
	v.ca = ca;
	v.ca_len = ca_len;
	rc = ab_fmt_err(err, v.who, sizeof v.who, "a sign-in's name", "%s",
	    who);
	v.header = AB_VAULT_BEARER;
	v.cred = r->access;
	v.cred_len = strlen(r->access);
	for (*n = 0, i = 0; rc == 0 && si->api[i] != NULL; i++)
		rc = one_file(&f[(*n)++], si->api[i], ph->access, &v, err);
	v.header = AB_VAULT_REFRESH;
	v.cred = r->refresh;
	v.cred_len = strlen(r->refresh);
	if (rc == 0 && ab_fmt(v.signin, sizeof v.signin, "%s", name) < 0)
		rc = ab_fail(err, AB_EUSAGE, "a sign-in's name is too long");
	if (rc == 0)
		rc = one_file(&f[(*n)++], si->token_host, ph->refresh, &v, err);
	if (rc < 0)
		ab_oauth_files_free(f, *n);
	return rc;
}

void ab_oauth_files_free(struct ab_oauth_file *f, int n)
{
	int i;

	for (i = 0; i < n; i++)
		wipe(&f[i].data);
}

/* -- In the proxy: the vault's directory. */

static int vault_read(const char *vault, const char *name, struct ab_buf *b,
    size_t max)
{
	char path[512], piece[4096];
	ssize_t k;
	int fd, rc = 0;

	ab_buf_init(b, max);
	if (ab_fmt(path, sizeof path, "%s/%s", vault, name) < 0 ||
	    (fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return -1;
	while (rc == 0 && (k = read(fd, piece, sizeof piece)) != 0)
		rc = k < 0 || ab_buf_add(b, piece, (size_t)k) < 0 ? -1 : 0;
	explicit_bzero(piece, sizeof piece);
	close(fd);
	if (rc < 0)
		wipe(b);
	return rc;
}

/* NAME's bytes, replaced whole (a temporary file renamed over it). */
static int vault_write(const char *vault, const char *name, const char *p,
    size_t n)
{
	char tmp[512], path[512];
	ssize_t k;
	int fd, rc = 0;

	if (ab_fmt(path, sizeof path, "%s/%s", vault, name) < 0 ||
	    ab_fmt(tmp, sizeof tmp, "%s/.oauth.tmp", vault) < 0)
		return -1;
	unlink(tmp);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0400)) < 0)
		return -1;
	while (rc == 0 && n > 0) {
		k = write(fd, p, n);
		rc = k <= 0 ? -1 : 0;
		p += k > 0 ? k : 0;
		n -= k > 0 ? (size_t)k : 0;
	}
	if (close(fd) < 0 || rc < 0 || rename(tmp, path) < 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

static int state_write(const struct ab_oauth_op *op, struct ab_err *err)
{
	char name[AB_OAUTH_NAME_MAX];
	struct ab_buf b;
	int rc;

	if (ab_oauth_state_name(op->ent.signin, name, sizeof name, err) < 0 ||
	    ab_oauth_state_encode(&op->st, &b, err) < 0)
		return -1;
	rc = vault_write(op->vault, name, b.data, b.len);
	wipe(&b);
	return rc < 0 ? ab_fail_errno(err, AB_EENGINE, "the sign-in's state "
	    "could not be written") : 0;
}

/* -- In the proxy: one refresh. */

/* The refresh placeholder's file and its state, both checked. */
static int find(struct ab_oauth_op *op, struct ab_err *err)
{
	char name[AB_OAUTH_NAME_MAX];
	struct ab_buf b;
	int rc;

	if (ab_vault_name(op->si->token_host, 443, op->ph, op->ph_len,
	    op->entry, sizeof op->entry, err) < 0 ||
	    vault_read(op->vault, op->entry, &b, AB_VAULT_FILE_MAX) < 0)
		return ab_fail(err, AB_EREFUSED, "no such refresh placeholder");
	rc = ab_vault_decode(b.data, b.len, &op->ent, err);
	wipe(&b);
	if (rc < 0 || op->ent.header != AB_VAULT_REFRESH ||
	    op->ent.cred_len != op->ph_len)
		return ab_fail(err, AB_EREFUSED, "no such refresh placeholder");
	if (ab_oauth_state_name(op->ent.signin, name, sizeof name, err) < 0 ||
	    vault_read(op->vault, name, &b, AB_OAUTH_STATE_MAX) < 0)
		return ab_fail(err, AB_EREFUSED, "the sign-in's state is gone");
	rc = ab_oauth_state_decode(b.data, b.len, &op->st, err);
	wipe(&b);
	if (rc == 0 && strcmp(op->st.t.refresh, op->ent.cred) != 0)
		rc = ab_fail(err, AB_EREFUSED, "a spent refresh placeholder");
	return rc;
}

int ab_oauth_begin(const char *vault, const struct ab_egress_signin *si,
    const char *body, size_t n, struct ab_oauth_op *op, struct ab_buf *up,
    struct ab_err *err)
{
	struct ab_json_edit e;
	struct ab_json j;
	int t, rc = 0;

	memset(op, 0, sizeof *op);
	op->vault = vault;
	op->si = si;
	ab_buf_init(up, AB_OAUTH_BODY_MAX);
	pthread_mutex_lock(&refresh_lock);
	op->locked = 1;
	if (ab_json_parse(&j, body, n, err) < 0)
		return ab_fail(err, AB_EREFUSED, "a refresh whose body is not "
		    "JSON");
	t = ab_json_key(&j, 0, "refresh_token");
	if (!ab_json_str_eq(&j, ab_json_key(&j, 0, "grant_type"),
	    "refresh_token") || (op->ph = ab_json_str(&j, t)) == NULL ||
	    (op->ph_len = strlen(op->ph)) == 0)
		rc = ab_fail(err, AB_EREFUSED, "not a refresh of a token");
	if (rc == 0)
		rc = find(op, err);
	e = (struct ab_json_edit){ .t = t, .s = op->ent.cred };
	if (rc == 0 && ab_json_splice(&j, &e, 1, up) < 0)
		rc = ab_fail(err, AB_EREFUSED, "a refresh past %d bytes",
		    AB_OAUTH_BODY_MAX);
	explicit_bzero(j.text, j.len);
	ab_json_free(&j);
	if (rc < 0)
		wipe(up);
	return rc;
}

/* The agent's answer: the vendor's, tokens replaced by PH's. */
static int agent_answer(const struct ab_json *j, const struct ab_oauth_tokens
    *ph, struct ab_buf *agent)
{
	static const char *const keys[] = { "access_token", "refresh_token",
	    "id_token" };
	const char *v[3] = { ph->access, ph->refresh, ph->id };
	struct ab_json_edit e[3];
	int i, n = 0;

	for (i = 0; i < 3; i++)
		if (v[i] != NULL && ab_json_type(j, ab_json_key(j, 0, keys[i]))
		    == AB_JSON_STRING)
			e[n++] = (struct ab_json_edit){ .t = ab_json_key(j, 0,
			    keys[i]), .s = v[i] };
	return ab_json_splice(j, e, n, agent);
}

/* Wherever else the answer holds a token REAL (a vendor's echo), its
 * placeholder PH instead: the same length.  Not for a token shorter than
 * 16 bytes, which a word of the JSON could be. */
static void mask(struct ab_buf *b, const char *real, const char *ph)
{
	size_t n = real != NULL ? strlen(real) : 0;
	char *p, *at;

	if (n < 16 || ph == NULL || strlen(ph) != n)
		return;
	for (p = b->data; b->len - (size_t)(p - b->data) >= n && (at =
	    memmem(p, b->len - (size_t)(p - b->data), real, n)) != NULL;
	    p = at + n)
		memcpy(at, ph, n);
}

static char *dup_or(const struct ab_json *j, const char *key,
    const char *old)
{
	char *s = ab_json_str(j, ab_json_key(j, 0, key));

	if (s != NULL && *s != '\0' && strlen(s) <= AB_OAUTH_TOKEN_MAX)
		return s;
	wipe_str(&s);
	return old != NULL ? strdup(old) : NULL;
}

/* The new real tokens of the vendor's answer J, into R. */
static int new_tokens(const struct ab_oauth_op *op, const struct ab_json *j,
    struct ab_oauth_tokens *r)
{
	long long in = 0;
	struct timespec ts;

	memset(r, 0, sizeof *r);
	r->access = dup_or(j, "access_token", NULL);
	r->refresh = dup_or(j, "refresh_token", op->st.t.refresh);
	r->id = dup_or(j, "id_token", op->st.t.id);
	clock_gettime(CLOCK_REALTIME, &ts);
	if (ab_json_int(j, ab_json_key(j, 0, "expires_in"), &in) == 0 &&
	    in > 0 && in < 100LL * 365 * 86400)
		r->expires_ms = (long long)ts.tv_sec * 1000 + in * 1000;
	if (r->access == NULL || r->refresh == NULL ||
	    (op->st.t.id != NULL && r->id == NULL)) {
		ab_oauth_tokens_free(r);
		return -1;
	}
	return 0;
}

/* The new state: tokens R in; the files of the tokens before, and the
 * spent refresh token's, to empty into OLD. */
static int rotate(struct ab_oauth_op *op, struct ab_oauth_tokens *r,
    const struct ab_oauth_file *f, int nf,
    char (*old)[AB_OAUTH_NAME_MAX], int *nold)
{
	int i, cut = 0;

	/* Names from arrays of the same size: a cut is a bug here. */
	*nold = 0;
	for (i = 0; i < op->st.nprev; i++)
		cut |= ab_fmt(old[(*nold)++], AB_OAUTH_NAME_MAX, "%s",
		    op->st.prev[i]);
	op->st.nprev = 0;
	for (i = 0; i < op->st.nlive; i++)
		if (strcmp(op->st.live[i], op->entry) != 0)
			cut |= ab_fmt(op->st.prev[op->st.nprev++],
			    AB_OAUTH_NAME_MAX, "%s", op->st.live[i]);
		else if (strcmp(op->entry, f[nf - 1].name) != 0)
			cut |= ab_fmt(old[(*nold)++], AB_OAUTH_NAME_MAX, "%s",
			    op->entry);
	for (op->st.nlive = 0; op->st.nlive < nf; op->st.nlive++)
		cut |= ab_fmt(op->st.live[op->st.nlive], AB_OAUTH_NAME_MAX,
		    "%s", f[op->st.nlive].name);
	if (cut)
		abort();
	ab_oauth_tokens_free(&op->st.t);
	op->st.t = *r;
	memset(r, 0, sizeof *r);
	op->st.refreshes++;
	op->st.problem[0] = '\0';
	return 0;
}

/* Keeps tokens R, placeholders PH: the state first (no real token is
 * lost), then the new files, then the old emptied. */
static int keep(struct ab_oauth_op *op, struct ab_oauth_tokens *r,
    const struct ab_oauth_tokens *ph, struct ab_err *err)
{
	char old[2 * AB_OAUTH_FILES][AB_OAUTH_NAME_MAX];
	struct ab_oauth_file f[AB_OAUTH_FILES];
	int nf, nold, i, rc;

	if (ab_oauth_files(op->si, op->ent.signin, op->ent.who, r, ph,
	    op->ent.ca, op->ent.ca_len, f, &nf, err) < 0)
		return -1;
	rotate(op, r, f, nf, old, &nold);
	rc = state_write(op, err);
	for (i = 0; rc == 0 && i < nf; i++)
		if (vault_write(op->vault, f[i].name, f[i].data.data,
		    f[i].data.len) < 0)
			rc = ab_fail_errno(err, AB_EENGINE, "a vault file could "
			    "not be written");
	for (i = 0; rc == 0 && i < nold; i++)
		vault_write(op->vault, old[i], "", 0);
	ab_oauth_files_free(f, nf);
	return rc;
}

/* Tokens R into the state alone, the agent answered 502: ab-run writes
 * them back; the agent's placeholders are spent. */
static void kept_alone(struct ab_oauth_op *op, struct ab_oauth_tokens *r,
    struct ab_err *err)
{
	struct ab_err skip;

	ab_oauth_tokens_free(&op->st.t);
	op->st.t = *r;
	memset(r, 0, sizeof *r);
	op->st.refreshes++;
	/* A reason cut short still reads. */
	(void)ab_fmt(op->st.problem, sizeof op->st.problem, "a refresh was "
	    "kept, but its placeholders could not be made: %.120s", err->msg);
	state_write(op, &skip);
}

/* The vendor refused: its answer to the agent, the refresh token (were
 * it echoed) as its placeholder. */
static int refused(struct ab_oauth_op *op, int status, const char *body,
    size_t n, struct ab_buf *agent, struct ab_err *err)
{
	char *at;

	/* A reason cut short still reads. */
	(void)ab_fmt(op->st.problem, sizeof op->st.problem, "the vendor "
	    "refused a refresh: HTTP %d", status);
	if (ab_buf_add(agent, body, n) < 0)
		return ab_fail(err, AB_EREFUSED, "an answer past %d bytes",
		    AB_OAUTH_BODY_MAX);
	while (agent->len > 0 && (at = memmem(agent->data, agent->len,
	    op->ent.cred, op->ent.cred_len)) != NULL)
		memcpy(at, op->ph, op->ph_len);
	return state_write(op, err);
}

int ab_oauth_end(struct ab_oauth_op *op, int status, const char *body,
    size_t n, struct ab_buf *agent, struct ab_err *err)
{
	struct ab_oauth_tokens r, ph;
	struct ab_json j;
	int rc;

	ab_buf_init(agent, AB_OAUTH_BODY_MAX + 4 * AB_OAUTH_TOKEN_MAX);
	if (status != 200)
		return refused(op, status, body, n, agent, err);
	if (ab_json_parse(&j, body, n, err) < 0 || new_tokens(op, &j, &r) < 0) {
		ab_json_free(&j);
		/* A reason cut short still reads. */
		(void)ab_fmt(op->st.problem, sizeof op->st.problem, "a "
		    "refresh answered without tokens");
		state_write(op, err);
		return ab_fail(err, AB_EREFUSED, "a refresh answered without "
		    "tokens");
	}
	/* The vendor has spent the old refresh token: the new real tokens
	 * are kept even when no placeholder can be made of them. */
	if ((rc = ab_oauth_placeholders(&r, &ph, err)) < 0)
		kept_alone(op, &r, err);
	/* Not rotated, the agent keeps the placeholder it holds. */
	if (rc == 0 && strcmp(r.refresh, op->ent.cred) == 0) {
		wipe_str(&ph.refresh);
		ph.refresh = strdup(op->ph);
		rc = ph.refresh == NULL ? ab_fail(err, AB_EENGINE, "out of "
		    "memory") : 0;
	}
	if (rc == 0)
		rc = agent_answer(&j, &ph, agent) < 0 ? ab_fail(err,
		    AB_EREFUSED, "the answer could not carry placeholders") : 0;
	if (rc == 0) {
		mask(agent, r.access, ph.access);
		mask(agent, r.refresh, ph.refresh);
		mask(agent, r.id, ph.id);
		mask(agent, op->ent.cred, op->ph);
	}
	if (rc == 0)
		rc = keep(op, &r, &ph, err);
	if (rc < 0)
		wipe(agent);
	ab_oauth_tokens_free(&r);
	ab_oauth_tokens_free(&ph);
	explicit_bzero(j.text, j.len);
	ab_json_free(&j);
	return rc;
}

void ab_oauth_op_free(struct ab_oauth_op *op)
{
	wipe_str(&op->ph);
	ab_vault_entry_free(&op->ent);
	ab_oauth_state_free(&op->st);
	if (op->locked)
		pthread_mutex_unlock(&refresh_lock);
	memset(op, 0, sizeof *op);
}
