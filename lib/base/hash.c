#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "hash.h"

int ab_sha256_init(struct ab_sha256 *h, struct ab_err *err)
{
	h->ctx = EVP_MD_CTX_new();
	if (h->ctx == NULL || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
		ab_sha256_free(h);
		return ab_fail(err, AB_EENGINE, "cannot start SHA-256");
	}
	return 0;
}

void ab_sha256_add(struct ab_sha256 *h, const void *p, size_t n)
{
	if (h->ctx != NULL && EVP_DigestUpdate(h->ctx, p, n) != 1) {
		EVP_MD_CTX_free(h->ctx);
		h->ctx = NULL;	/* ab_sha256_hex then fails */
	}
}

int ab_sha256_hex(struct ab_sha256 *h, char out[65], struct ab_err *err)
{
	unsigned char md[32];
	unsigned int n = 0, i;

	if (h->ctx == NULL || EVP_DigestFinal_ex(h->ctx, md, &n) != 1 ||
	    n != sizeof md) {
		ab_sha256_free(h);
		return ab_fail(err, AB_EENGINE, "SHA-256 failed");
	}
	for (i = 0; i < n; i++)
		if (ab_fmt(out + 2 * i, 3, "%02x", md[i]) < 0) {
			ab_sha256_free(h);
			return ab_fail(err, AB_EENGINE, "SHA-256 failed");
		}
	ab_sha256_free(h);
	return 0;
}

void ab_sha256_free(struct ab_sha256 *h)
{
	if (h->ctx != NULL)
		EVP_MD_CTX_free(h->ctx);
	h->ctx = NULL;
}

/* SHA-1, for git's object names only. */
int ab_sha1_init(struct ab_sha1 *h, struct ab_err *err)
{
	h->ctx = EVP_MD_CTX_new();
	if (h->ctx == NULL || EVP_DigestInit_ex(h->ctx, EVP_sha1(), NULL) != 1) {
		ab_sha1_free(h);
		return ab_fail(err, AB_EENGINE, "cannot start SHA-1");
	}
	return 0;
}

void ab_sha1_add(struct ab_sha1 *h, const void *p, size_t n)
{
	if (h->ctx != NULL && EVP_DigestUpdate(h->ctx, p, n) != 1) {
		EVP_MD_CTX_free(h->ctx);
		h->ctx = NULL;	/* ab_sha1_is then fails */
	}
}

int ab_sha1_out(struct ab_sha1 *h, unsigned char md[AB_OID_RAW])
{
	unsigned int n = 0;
	int ok;

	ok = h->ctx != NULL && EVP_DigestFinal_ex(h->ctx, md, &n) == 1 &&
	    n == AB_OID_RAW;
	ab_sha1_free(h);
	return ok ? 0 : -1;
}

int ab_sha1_is(struct ab_sha1 *h, const unsigned char want[AB_OID_RAW])
{
	unsigned char md[AB_OID_RAW];

	return ab_sha1_out(h, md) == 0 && memcmp(md, want, sizeof md) == 0;
}

void ab_sha1_free(struct ab_sha1 *h)
{
	if (h->ctx != NULL)
		EVP_MD_CTX_free(h->ctx);
	h->ctx = NULL;
}

int ab_is_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[n] == '\0';
}
