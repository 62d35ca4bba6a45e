#include <string.h>

#include "json.h"
#include "jwt.h"
#include "secret.h"

#define SIG_MIN 16

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    "0123456789-_";

static int b64_val(char c)
{
	const char *p = c != '\0' ? strchr(b64, c) : NULL;

	return p != NULL ? (int)(p - b64) : -1;
}

/* Base64url without padding, N bytes at P, appended to OUT. */
static void b64_put(struct ab_buf *out, const unsigned char *p, size_t n)
{
	char q[4];
	unsigned v;
	size_t i, k;

	for (i = 0; i < n; i += 3) {
		k = n - i < 3 ? n - i : 3;
		v = (unsigned)p[i] << 16 | (k > 1 ? (unsigned)p[i + 1] << 8 : 0) |
		    (k > 2 ? p[i + 2] : 0);
		q[0] = b64[v >> 18 & 63];
		q[1] = b64[v >> 12 & 63];
		q[2] = b64[v >> 6 & 63];
		q[3] = b64[v & 63];
		ab_buf_add(out, q, k + 1);
	}
}

/* Decodes base64url (no padding) into OUT; -1 on a byte outside it or a
 * length no encoding has. */
static int b64_get(const char *p, size_t n, struct ab_buf *out)
{
	unsigned v = 0;
	int bits = 0, c;
	size_t i;
	char o;

	if (n % 4 == 1)
		return -1;
	for (i = 0; i < n; i++) {
		if ((c = b64_val(p[i])) < 0)
			return -1;
		v = (v << 6 | (unsigned)c) & 0xffffff;
		if ((bits += 6) >= 8) {
			bits -= 8;
			o = (char)(v >> bits & 0xff);
			if (ab_buf_add(out, &o, 1) < 0)
				return -1;
		}
	}
	return 0;
}

/* The three parts of TOK: the payload's offset and length. */
static int split(const char *tok, size_t n, size_t *off, size_t *len)
{
	const char *d1 = memchr(tok, '.', n), *d2;

	if (d1 == NULL || d1 == tok)
		return -1;
	d2 = memchr(d1 + 1, '.', (size_t)(tok + n - d1 - 1));
	if (d2 == NULL || d2 == d1 + 1 || d2 + 1 == tok + n ||
	    memchr(d2 + 1, '.', (size_t)(tok + n - d2 - 1)) != NULL)
		return -1;
	*off = (size_t)(d1 + 1 - tok);
	*len = (size_t)(d2 - d1 - 1);
	return 0;
}

int ab_jwt_claims(const char *tok, size_t n, struct ab_buf *out,
    struct ab_err *err)
{
	struct ab_json j;
	size_t off, len;
	int ok;

	ab_buf_init(out, AB_JWT_MAX);
	if (n > AB_JWT_MAX || split(tok, n, &off, &len) < 0 ||
	    b64_get(tok + off, len, out) < 0 || out->len == 0) {
		ab_buf_free(out);
		return ab_fail(err, AB_EREFUSED, "not a JWT");
	}
	ok = ab_json_parse(&j, out->data, out->len, err) == 0 &&
	    ab_json_type(&j, 0) == AB_JSON_OBJECT;
	if (j.text != NULL)
		explicit_bzero(j.text, j.len);
	ab_json_free(&j);
	if (!ok) {
		explicit_bzero(out->data, out->len);
		ab_buf_free(out);
		return ab_fail(err, AB_EREFUSED, "not a JWT: its claims are not "
		    "a JSON object");
	}
	return 0;
}

int ab_jwt_is(const char *tok, size_t n)
{
	struct ab_buf b;
	struct ab_err err;

	if (ab_jwt_claims(tok, n, &b, &err) < 0)
		return 0;
	explicit_bzero(b.data, b.len);
	ab_buf_free(&b);
	return 1;
}

/* The claims the client reads, copied from CLAIMS into W. */
static void kept_claims(const struct ab_json *j, struct ab_jw *w)
{
	static const char *const keep[] = { "exp", "iat", "nbf", "iss",
	    "aud", "email", "email_verified", "https://api.openai.com/auth",
	    "https://api.openai.com/profile", NULL };
	const char *const *k;
	const char *p;
	size_t n;
	int t;

	ab_jw_obj(w);
	for (k = keep; *k != NULL; k++) {
		if ((t = ab_json_key(j, 0, *k)) < 0)
			continue;
		ab_json_span(j, t, &p, &n);
		ab_jw_key(w, *k);
		ab_jw_raw(w, p, n);
	}
	ab_jw_obj_end(w);
}

/* header.payload of the placeholder into OUT. */
static int head_payload(const struct ab_buf *claims, struct ab_buf *out,
    struct ab_err *err)
{
	static const char head[] = "{\"alg\":\"none\",\"typ\":\"JWT\"}";
	struct ab_json j;
	struct ab_buf kept;
	struct ab_jw w;
	int rc;

	ab_buf_init(&kept, AB_JWT_MAX);
	if (ab_json_parse(&j, claims->data, claims->len, err) < 0)
		return -1;
	ab_jw_init(&w, &kept);
	kept_claims(&j, &w);
	rc = ab_jw_done(&w);
	ab_json_free(&j);
	if (rc == 0) {
		b64_put(out, (const unsigned char *)head, sizeof head - 1);
		ab_buf_add(out, ".", 1);
		b64_put(out, (const unsigned char *)kept.data, kept.len);
		rc = ab_buf_add(out, ".", 1);
	}
	ab_buf_free(&kept);
	return rc < 0 ? ab_fail(err, AB_EREFUSED, "a JWT's claims do not "
	    "fit its placeholder") : 0;
}

int ab_jwt_placeholder(const char *real, size_t n, char *out,
    struct ab_err *err)
{
	struct ab_buf claims, hp;
	int rc;

	if (ab_jwt_claims(real, n, &claims, err) < 0)
		return -1;
	ab_buf_init(&hp, AB_JWT_MAX);
	rc = head_payload(&claims, &hp, err);
	explicit_bzero(claims.data, claims.len);
	ab_buf_free(&claims);
	if (rc == 0 && hp.len + SIG_MIN > n)
		rc = ab_fail(err, AB_EREFUSED, "a JWT of %zu bytes is too short "
		    "for a placeholder of its claims", n);
	if (rc == 0) {
		memcpy(out, hp.data, hp.len);
		rc = ab_random_b64url(out + hp.len, n - hp.len, err);
	}
	/* Equal only if the real token were unsigned and this drawn. */
	if (rc == 0 && memcmp(out, real, n) == 0)
		rc = ab_fail(err, AB_EREFUSED, "a JWT its placeholder equals");
	ab_buf_free(&hp);
	return rc;
}
