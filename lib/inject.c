#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter.h"
#include "file.h"
#include "json.h"
#include "inject.h"
#include "secret.h"
#include "tally.h"
#include "seed.h"
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
	snprintf(f->sub, sizeof f->sub, "%s", AB_VAULT_NAME);
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
	snprintf(who, cap, "%.*s", AB_TALLY_WHO, strrchr(f.name, '.') + 1);
	return 0;
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

	snprintf(h.kind, sizeof h.kind, "result");
	snprintf(h.id, sizeof h.id, "%s", id);
	if (ab_record_read(s, &h, &j, err) < 0)
		return 0;	/* another's to judge: ab-run --show says */
	if (ab_json_str_eq(&j, ab_json_key(&j, 0, "alloc"), alloc) &&
	    ab_json_str_eq(&j, ab_json_key(&j, 0, "credential"), "in-agent"))
		prof = ab_json_str(&j, ab_json_key(&j, 0, "profile"));
	ab_json_free(&j);
	if (prof == NULL)
		return 0;
	snprintf(h.kind, sizeof h.kind, "profile");
	if (!ab_is_id(prof))
		rc = ab_fail(err, AB_EREFUSED, "result:%s names no profile", id);
	else
		snprintf(h.id, sizeof h.id, "%s", prof);
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
