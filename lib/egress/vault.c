#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "json.h"
#include "vault.h"

int ab_vault_name(const char *host, int port, const char *ph, size_t n,
    char *out, size_t cap, struct ab_err *err)
{
	struct ab_sha256 h;
	char hex[65];

	if (ab_sha256_init(&h, err) < 0)
		return -1;
	ab_sha256_add(&h, ph, n);
	if (ab_sha256_hex(&h, hex, err) < 0)
		return -1;
	if (ab_fmt(out, cap, "%s:%d.%s", host, port, hex) < 0)
		return ab_fail(err, AB_EUSAGE, "a vault name too long");
	return 0;
}

int ab_vault_encode(const struct ab_vault_entry *e, struct ab_buf *out,
    struct ab_err *err)
{
	struct ab_jw w;

	ab_jw_init(&w, out);
	ab_jw_obj(&w);
	ab_jw_kstr(&w, "header", e->header == AB_VAULT_BEARER ? "bearer" :
	    e->header == AB_VAULT_REFRESH ? "refresh" : "x-api-key");
	ab_jw_kstrn(&w, "credential", e->cred, e->cred_len);
	if (e->ca != NULL)
		ab_jw_kstrn(&w, "ca", e->ca, e->ca_len);
	if (e->who[0] != '\0')
		ab_jw_kstr(&w, "who", e->who);
	if (e->signin[0] != '\0')
		ab_jw_kstr(&w, "signin", e->signin);
	ab_jw_obj_end(&w);
	if (ab_jw_done(&w) < 0)
		return ab_fail(err, AB_EUSAGE, "the credential or its anchors "
		    "are not text");
	return 0;
}

/* String T (absent: "") into OUT, which it must fit. */
static int short_str(const struct ab_json *j, int t, char *out, size_t cap)
{
	char *v;
	int rc;

	out[0] = '\0';
	if (t < 0)
		return 0;
	v = ab_json_str(j, t);
	rc = v != NULL && *v != '\0' && strlen(v) < cap ? 0 : -1;
	if (rc == 0)
		memcpy(out, v, strlen(v) + 1);
	free(v);
	return rc;
}

int ab_vault_decode(const char *p, size_t n, struct ab_vault_entry *e,
    struct ab_err *err)
{
	struct ab_json j;
	char *cred = NULL, *ca = NULL;
	int hd, cr, an, wh, si, ok;

	memset(e, 0, sizeof *e);
	if (n == 0)
		return ab_fail(err, AB_EREFUSED, "the credential was forgotten");
	if (ab_json_parse(&j, p, n, err) < 0)
		return ab_fail(err, AB_EREFUSED, "a vault file is not JSON");
	hd = ab_json_key(&j, 0, "header");
	cr = ab_json_key(&j, 0, "credential");
	an = ab_json_key(&j, 0, "ca");
	wh = ab_json_key(&j, 0, "who");
	si = ab_json_key(&j, 0, "signin");
	e->header = ab_json_str_eq(&j, hd, "bearer") ? AB_VAULT_BEARER :
	    ab_json_str_eq(&j, hd, "refresh") ? AB_VAULT_REFRESH :
	    AB_VAULT_X_API_KEY;
	ok = (ab_json_str_eq(&j, hd, "bearer") ||
	    ab_json_str_eq(&j, hd, "refresh") ||
	    ab_json_str_eq(&j, hd, "x-api-key")) &&
	    ab_json_count(&j, 0) == 2 + (an >= 0) + (wh >= 0) + (si >= 0) &&
	    short_str(&j, wh, e->who, sizeof e->who) == 0 &&
	    short_str(&j, si, e->signin, sizeof e->signin) == 0 &&
	    (e->header == AB_VAULT_REFRESH) == (si >= 0) &&
	    (cred = ab_json_strn(&j, cr, &e->cred_len)) != NULL &&
	    e->cred_len > 0 && e->cred_len <= AB_VAULT_CRED_MAX &&
	    memchr(cred, '\0', e->cred_len) == NULL &&
	    (an < 0 || (ca = ab_json_strn(&j, an, &e->ca_len)) != NULL);
	explicit_bzero(j.text, j.len);
	ab_json_free(&j);
	e->cred = cred;
	e->ca = ca;
	if (!ok) {
		ab_vault_entry_free(e);
		return ab_fail(err, AB_EREFUSED, "a vault file is not one "
		    "the proxy can use");
	}
	return 0;
}

void ab_vault_entry_free(struct ab_vault_entry *e)
{
	if (e->cred != NULL) {
		explicit_bzero((char *)e->cred, e->cred_len);
		free((char *)e->cred);
	}
	free((char *)e->ca);
	memset(e, 0, sizeof *e);
}
