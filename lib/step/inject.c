#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter.h"
#include "file.h"
#include "hash.h"
#include "json.h"
#include "inject.h"
#include "keeper.h"
#include "oauth.h"
#include "secret.h"
#include "tally.h"
#include "vault.h"

#define CA_MAX (512 * 1024)

int ab_inject_on(const struct ab_profile *p, const struct ab_alloc *a)
{
	return p->cred_var[0] != '\0' && !p->cred_in_agent &&
	    ab_egress_injects(&a->eg.list, p->provider);
}

static void wipe(struct ab_buf *b)
{
	if (b->data != NULL)
		explicit_bzero(b->data, b->len);
	ab_buf_free(b);
}

/* The vault's file for placeholder PH (N bytes) of P. */
static int vault_file(const struct ab_profile *p, const char *ph, size_t n,
    struct ab_keeper_file *f, struct ab_err *err)
{
	const char *host;
	int port;

	memset(f, 0, sizeof *f);
	if ((host = ab_egress_api(p->provider, &port)) == NULL)
		return ab_fail(err, AB_EUSAGE, "provider %s has no API host",
		    p->provider);
	f->dir = AB_EGRESS_DIR;
	if (ab_fmt_err(err, f->sub, sizeof f->sub, "the vault's name", "%s",
	    AB_VAULT_NAME) < 0)
		return -1;
	f->uid = f->gid = AB_PROXY_UID;
	f->sub_mode = 0700;
	f->mode = 0400;
	return ab_vault_name(host, port, ph, n, f->name, sizeof f->name, err);
}

/* The credential to the vault, bound to the placeholder PH, with the
 * invocation's --ca for the proxy's upstream. */
static int to_vault(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_profile *p,
    const struct ab_buf *cred, const char *ph, struct ab_err *err)
{
	struct ab_vault_entry v;
	struct ab_keeper_file f;
	struct ab_buf ca, out;
	char path[200];
	int rc = 0;

	ab_buf_init(&ca, CA_MAX);
	ab_buf_init(&out, AB_VAULT_FILE_MAX);
	memset(&v, 0, sizeof v);
	v.header = strcmp(p->cred_var, "ANTHROPIC_API_KEY") == 0 ?
	    AB_VAULT_X_API_KEY : AB_VAULT_BEARER;
	v.cred = cred->data;
	v.cred_len = cred->len;
	if (p->ca_sha[0] != '\0') {
		ab_profile_input_path(p, AB_IN_CA, path, sizeof path);
		rc = ab_keeper_get(s, e, a, path, &ca, err);
		v.ca = ca.data;
		v.ca_len = ca.len;
	}
	if (rc == 0)
		rc = vault_file(p, ph, cred->len, &f, err);
	if (rc == 0)
		rc = ab_vault_encode(&v, &out, err);
	if (rc == 0)
		rc = ab_proxy_put(s, e, a, &f, out.data, out.len, err);
	wipe(&out);
	ab_buf_free(&ca);
	return rc;
}

int ab_inject_read(const struct ab_profile *p, struct ab_buf *b,
    struct ab_err *err)
{
	int rc;

	ab_buf_init(b, AB_SECRET_MAX);
	rc = ab_file_read_at(AT_FDCWD, p->cred_path, b, NULL, err);
	/* As the probe's $(cat) read it: without its last newlines. */
	while (rc == 0 && b->len > 0 && b->data[b->len - 1] == '\n')
		b->len--;
	if (rc < 0)
		wipe(b);
	return rc;
}

int ab_inject_give(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_profile *p,
    struct ab_err *err)
{
	struct ab_keeper_file f;
	char ph[AB_SECRET_LEN_MAX];
	struct ab_buf b;
	int rc;

	rc = ab_inject_read(p, &b, err);
	if (rc == 0 && b.len == 0)
		rc = ab_fail(err, AB_EREFUSED, "the credential file is empty");
	ab_profile_input(p, AB_IN_SECRET, &f);
	if (rc == 0 && !ab_inject_on(p, a))
		rc = ab_keeper_put(s, e, a, &f, b.data, b.len, err);
	else if (rc == 0 && (rc = ab_placeholder(b.data, b.len, ph,
	    err)) == 0 && (rc = to_vault(s, e, a, p, &b, ph, err)) == 0)
		rc = ab_keeper_put(s, e, a, &f, ph, b.len, err);
	if (rc < 0)
		ab_err_wrap(err, "credential %s", p->cred_var);
	explicit_bzero(ph, sizeof ph);
	wipe(&b);
	return rc;
}

int ab_inject_who(const struct ab_profile *p, const char *ph, size_t n,
    char *who, size_t cap, struct ab_err *err)
{
	struct ab_keeper_file f;

	if (vault_file(p, ph, n, &f, err) < 0)
		return -1;
	return ab_fmt_err(err, who, cap, "a vault name", "%.*s", AB_TALLY_WHO,
	    strrchr(f.name, '.') + 1);
}

int ab_inject_forget(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_profile *p,
    struct ab_err *err)
{
	struct ab_keeper_file f;
	struct ab_err skip;
	struct ab_buf ph;
	char path[200];
	int rc = 0;

	/* The placeholder names the vault's file: read it back first. */
	if (ab_inject_on(p, a)) {
		ab_profile_input_path(p, AB_IN_SECRET, path, sizeof path);
		ab_buf_init(&ph, AB_SECRET_MAX);
		rc = ab_keeper_get(s, e, a, path, &ph, err);
		if (rc == 0 && ph.len > 0 && vault_file(p, ph.data, ph.len,
		    &f, err) == 0)
			rc = ab_proxy_put(s, e, a, &f, "", 0, err);
		ab_buf_free(&ph);
	}
	ab_profile_input(p, AB_IN_SECRET, &f);
	if (ab_keeper_put(s, e, a, &f, "", 0, rc < 0 ? &skip : err) < 0)
		rc = -1;
	return rc;
}

/* The profile of result ID when its agent held the credential itself. */
static int held_by(struct ab_state *s, const char *alloc, const char *id,
    struct ab_profile *p, struct ab_err *err)
{
	struct ab_handle h;
	struct ab_json j;
	char *prof = NULL, body[65];
	int rc = 0;

	if (ab_fmt_err(err, h.kind, sizeof h.kind, "a kind", "result") < 0 ||
	    ab_fmt_err(err, h.id, sizeof h.id, "a result's ID", "%s", id) < 0)
		return -1;
	if (ab_record_read(s, &h, &j, err) < 0)
		return 0;	/* another's to judge: ab-run --show says */
	if (ab_json_str_eq(&j, ab_json_key(&j, 0, "alloc"), alloc) &&
	    ab_json_str_eq(&j, ab_json_key(&j, 0, "credential"), "in-agent"))
		prof = ab_json_str(&j, ab_json_key(&j, 0, "profile"));
	ab_json_free(&j);
	if (prof == NULL)
		return 0;
	if (!ab_is_id(prof))
		rc = ab_fail(err, AB_EREFUSED, "result:%s names no profile", id);
	else if (ab_fmt_err(err, h.kind, sizeof h.kind, "a kind",
	    "profile") < 0 || ab_fmt_err(err, h.id, sizeof h.id,
	    "a profile's ID", "%s", prof) < 0)
		rc = -1;
	free(prof);
	if (rc == 0 && ab_profile_load(s, &h, p, body, err) < 0)
		return ab_err_wrap(err, "the profile of result:%s", id), -1;
	return rc < 0 ? -1 : 1;
}

int ab_inject_held(struct ab_state *s, const char *alloc, struct ab_buf *b,
    int max, int *n, struct ab_err *err)
{
	char (*ids)[AB_ID_LEN + 1];
	struct ab_profile p;
	struct ab_buf c;
	size_t i, k;
	int rc = 0, got, dup;

	*n = 0;
	if (ab_record_list(s, "result", &ids, &k, err) < 0)
		return -1;
	for (i = 0; rc == 0 && i < k; i++) {
		if ((got = held_by(s, alloc, ids[i], &p, err)) <= 0) {
			rc = got;
			continue;
		}
		/* Not looked for, the work could carry it unnamed. */
		if ((rc = ab_inject_read(&p, &c, err)) < 0) {
			err->code = AB_EREFUSED;
			ab_err_wrap(err, "the credential profile:%s gave its "
			    "agent, to look for it", p.id);
		}
		for (dup = rc < 0 || c.len == 0, got = 0; rc == 0 && got < *n;
		    got++)
			dup |= b[got].len == c.len && memcmp(b[got].data,
			    c.data, c.len) == 0;
		if (rc == 0 && !dup && *n == max)
			rc = ab_fail(err, AB_EREFUSED, "more than %d credentials "
			    "held by agents of alloc:%s", max, alloc);
		if (rc < 0 || dup)
			wipe(&c);
		else
			b[(*n)++] = c;
		ab_profile_free(&p);
	}
	free(ids);
	return rc;
}

/* -- A subscription sign-in (oauth.h). */

static void vault_put(struct ab_keeper_item *k, const char *name,
    const char *data, size_t len)
{
	memset(k, 0, sizeof *k);
	k->f.dir = AB_EGRESS_DIR;
	/* Fixed, and cut to fit by its precision: a bug here. */
	if (ab_fmt(k->f.sub, sizeof k->f.sub, "%s", AB_VAULT_NAME) < 0 ||
	    ab_fmt(k->f.name, sizeof k->f.name, "%.*s",
	    (int)sizeof k->f.name - 1, name) < 0)
		abort();
	k->f.uid = k->f.gid = AB_PROXY_UID;
	k->f.sub_mode = 0700;
	k->f.mode = 0400;
	k->data = data;
	k->len = len;
}

int ab_inject_signin_who(const struct ab_profile *p, char *who, size_t cap,
    struct ab_err *err)
{
	struct ab_sha256 h;
	char hex[65];

	if (ab_sha256_init(&h, err) < 0)
		return -1;
	ab_sha256_add(&h, "signin:", 7);
	ab_sha256_add(&h, p->id, strlen(p->id));
	if (ab_sha256_hex(&h, hex, err) < 0)
		return -1;
	return ab_fmt_err(err, who, cap, "a sign-in's name", "%.*s",
	    AB_TALLY_WHO, hex);
}

/* The state of a sign-in just read: DOC, its real tokens R, the files
 * F[0..N). */
static int first_state(enum ab_oauth_kind kind, const struct ab_buf *doc, struct ab_oauth_tokens *r,
    const struct ab_oauth_file *f, int n, const char *who,
    struct ab_buf *out, struct ab_err *err)
{
	struct ab_oauth_state st;
	int i, rc;

	memset(&st, 0, sizeof st);
	st.kind = kind;
	st.doc = doc->data;
	st.doc_len = doc->len;
	st.t = *r;
	rc = ab_fmt_err(err, st.who, sizeof st.who, "a sign-in's name", "%s",
	    who);
	for (i = 0; i < n && rc == 0; i++)
		rc = ab_fmt_err(err, st.live[st.nlive++], sizeof st.live[0],
		    "a vault name", "%.*s", AB_OAUTH_NAME_MAX - 1, f[i].name);
	if (rc == 0)
		rc = ab_oauth_state_encode(&st, out, err);
	explicit_bzero(&st, sizeof st);
	return rc;
}

/* The real tokens R of DOC and their placeholders PH to the vault, with
 * the state; the invocation's --ca for the proxy's upstream. */
static int signin_vault(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_profile *p,
    enum ab_oauth_kind kind, const struct ab_buf *doc,
    struct ab_oauth_tokens *r, const struct ab_oauth_tokens *ph,
    struct ab_err *err)
{
	struct ab_keeper_item k[AB_OAUTH_FILES + 1];
	struct ab_oauth_file f[AB_OAUTH_FILES];
	char who[AB_TALLY_WHO + 1], state[AB_OAUTH_NAME_MAX], path[200];
	struct ab_buf ca, st;
	int n = 0, i, rc = 0;

	ab_buf_init(&ca, CA_MAX);
	memset(&st, 0, sizeof st);
	if (p->ca_sha[0] != '\0') {
		ab_profile_input_path(p, AB_IN_CA, path, sizeof path);
		rc = ab_keeper_get(s, e, a, path, &ca, err);
	}
	if (rc == 0)
		rc = ab_inject_signin_who(p, who, sizeof who, err);
	if (rc == 0 && (rc = ab_oauth_files(ab_egress_signin(p->provider),
	    p->id, who, r, ph, ca.data, ca.len, f, &n, err)) < 0)
		n = 0;
	if (rc == 0)
		rc = first_state(kind, doc, r, f, n, who, &st, err);
	if (rc == 0)
		rc = ab_oauth_state_name(p->id, state, sizeof state, err);
	for (i = 0; rc == 0 && i < n; i++)
		vault_put(&k[i], f[i].name, f[i].data.data, f[i].data.len);
	if (rc == 0) {
		vault_put(&k[n], state, st.data, st.len);
		rc = ab_proxy_put_all(s, e, a, k, n + 1, err);
	}
	ab_oauth_files_free(f, n);
	wipe(&st);
	ab_buf_free(&ca);
	return rc;
}

int ab_inject_signin_give(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_profile *p,
    struct ab_signin *sn, struct ab_err *err)
{
	struct ab_oauth_tokens r, ph;
	struct ab_keeper_file f;
	enum ab_oauth_kind kind;
	struct ab_buf doc, copy;
	const char *path = ab_profile_signin(p, &kind);
	int rc;

	memset(&r, 0, sizeof r);
	memset(&ph, 0, sizeof ph);
	memset(&copy, 0, sizeof copy);
	rc = ab_signin_read(kind, path, &doc, sn, err);
	if (rc == 0)
		rc = ab_signin_tokens_get(kind, doc.data, doc.len, &r, err);
	if (rc == 0)
		rc = ab_oauth_placeholders(&r, &ph, err);
	if (rc == 0)
		rc = ab_signin_splice(kind, doc.data, doc.len, &ph, 0, &copy,
		    err);
	if (rc == 0)
		rc = signin_vault(s, e, a, p, kind, &doc, &r, &ph, err);
	ab_profile_input(p, AB_IN_AUTH, &f);
	if (rc == 0)
		rc = ab_keeper_put(s, e, a, &f, copy.data, copy.len, err);
	if (rc < 0)
		ab_err_wrap(err, "%s %s", kind == AB_OAUTH_CODEX ?
		    "--codex-auth" : "--claude-auth", path);
	ab_oauth_tokens_free(&r);
	ab_oauth_tokens_free(&ph);
	wipe(&copy);
	wipe(&doc);
	return rc;
}

/* The sign-in's state in the proxy's vault into ST. */
static int signin_state(struct ab_engine *e, const struct ab_alloc *a,
    const struct ab_profile *p, struct ab_oauth_state *st,
    struct ab_err *err)
{
	char name[AB_OAUTH_NAME_MAX], path[300];
	struct ab_buf b;
	int rc;

	if (ab_oauth_state_name(p->id, name, sizeof name, err) < 0)
		return -1;
	if (ab_fmt_err(err, path, sizeof path, "the vault's path", "%s/%s/%s",
	    AB_EGRESS_DIR, AB_VAULT_NAME, name) < 0)
		return -1;
	ab_buf_init(&b, AB_OAUTH_STATE_MAX);
	rc = ab_proxy_get(e, a, path, &b, err);
	if (rc == 0 && b.len == 0)
		rc = ab_fail(err, AB_EREFUSED, "the sign-in was forgotten");
	if (rc == 0)
		rc = ab_oauth_state_decode(b.data, b.len, st, err);
	wipe(&b);
	return rc;
}

/* The write-back of ST's tokens when the proxy refreshed them (o). */
static void write_back(struct ab_state *s, const struct ab_profile *p,
    const struct ab_signin *sn, const struct ab_oauth_state *st,
    struct ab_signin_back *o, char *kept, size_t cap)
{
	enum ab_oauth_kind kind;
	const char *path = ab_profile_signin(p, &kind);
	struct ab_err err;
	struct ab_buf doc;
	char name[80];

	memset(&doc, 0, sizeof doc);
	o->refreshed = st->refreshes > 0;
	if (o->refreshed && ab_signin_splice(kind, st->doc, st->doc_len,
	    &st->t, 1, &doc, &err) < 0)
		(void)ab_fmt(o->problem, sizeof o->problem, "%.250s",
		    err.msg);	/* a reason cut short still reads */
	else if (o->refreshed && ab_signin_write_back(path, sn, doc.data,
	    doc.len, &err) != 0)
		(void)ab_fmt(o->problem, sizeof o->problem, "not written "
		    "back: %.250s", err.msg);
	else
		o->written = o->refreshed;
	if (o->refreshed && !o->written && doc.len > 0 &&
	    (ab_fmt(name, sizeof name, "%s.json", p->id) < 0 ||
	    ab_signin_keep(s, name, doc.data, doc.len, kept, cap, &err) < 0))
		kept[0] = '\0';
	if (!o->refreshed && st->problem[0] != '\0')
		(void)ab_fmt(o->problem, sizeof o->problem, "%s",
		    st->problem);
	wipe(&doc);
}

/* Empties the files ST names, the state itself and the agent's copy;
 * with no state (ST NULL: it could not be read), the copy alone: the
 * vault keeps the rest, tokens and all, on the proxy's tmpfs, for
 * ab-clean to take with the volume. */
static int empty(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_profile *p,
    const struct ab_oauth_state *st, struct ab_err *err)
{
	struct ab_keeper_item k[2 * AB_OAUTH_FILES + 1];
	char name[AB_OAUTH_NAME_MAX];
	struct ab_keeper_file f;
	struct ab_err skip;
	int n = 0, i, rc = 0;

	for (i = 0; st != NULL && i < st->nlive; i++)
		vault_put(&k[n++], st->live[i], "", 0);
	for (i = 0; st != NULL && i < st->nprev; i++)
		vault_put(&k[n++], st->prev[i], "", 0);
	if (st != NULL && (rc = ab_oauth_state_name(p->id, name, sizeof name,
	    err)) == 0) {
		vault_put(&k[n++], name, "", 0);
		rc = ab_proxy_put_all(s, e, a, k, n, err);
	}
	ab_profile_input(p, AB_IN_AUTH, &f);
	if (ab_keeper_put(s, e, a, &f, "", 0, rc < 0 ? &skip : err) < 0)
		rc = -1;
	return rc;
}

int ab_inject_signin_settle(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_profile *p,
    const struct ab_signin *sn, struct ab_signin_back *o, char *kept,
    size_t cap, struct ab_err *err)
{
	struct ab_oauth_state st;
	struct ab_err rerr;
	int rc;

	memset(o, 0, sizeof *o);
	kept[0] = '\0';
	if (signin_state(e, a, p, &st, &rerr) < 0) {
		(void)ab_fmt(o->problem, sizeof o->problem, "the proxy's "
		    "tokens could not be read back: %.220s", rerr.msg);
		return empty(s, e, a, p, NULL, err);
	}
	write_back(s, p, sn, &st, o, kept, cap);
	rc = empty(s, e, a, p, &st, err);
	ab_oauth_state_free(&st);
	return rc;
}

int ab_inject_signin_forget(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_profile *p,
    struct ab_err *err)
{
	struct ab_oauth_state st;
	struct ab_err skip;
	int rc;

	if (signin_state(e, a, p, &st, err) < 0) {
		empty(s, e, a, p, NULL, &skip);
		return -1;
	}
	rc = empty(s, e, a, p, &st, err);
	ab_oauth_state_free(&st);
	return rc;
}
