/* hash.h: SHA-256 and SHA-1, from libcrypto. */
#ifndef AB_HASH_H
#define AB_HASH_H

#include <stddef.h>

#include "err.h"

/* A SHA-1 digest, which is how git names an object: its raw bytes, and
 * the lowercase hex digits that spell it. */
#define AB_OID_RAW 20
#define AB_OID_HEX 40

struct ab_sha256 {
	void *ctx;	/* EVP_MD_CTX * */
};

int ab_sha256_init(struct ab_sha256 *h, struct ab_err *err);
void ab_sha256_add(struct ab_sha256 *h, const void *p, size_t n);
/* Writes 64 lowercase hex characters and a NUL; frees the context. */
int ab_sha256_hex(struct ab_sha256 *h, char out[65], struct ab_err *err);
void ab_sha256_free(struct ab_sha256 *h);

struct ab_sha1 {
	void *ctx;	/* EVP_MD_CTX * */
};

int ab_sha1_init(struct ab_sha1 *h, struct ab_err *err);
void ab_sha1_add(struct ab_sha1 *h, const void *p, size_t n);
/* Writes the digest: 0, or -1 when a step of it failed.  Both free the
 * context either way. */
int ab_sha1_out(struct ab_sha1 *h, unsigned char md[AB_OID_RAW]);
/* 1 when the digest is want. */
int ab_sha1_is(struct ab_sha1 *h, const unsigned char want[AB_OID_RAW]);
void ab_sha1_free(struct ab_sha1 *h);

/* 1 when S is exactly N lowercase hex digits: an object name, a digest,
 * an ID.  Here, not in git.h: checking an ID needs no libgit2. */
int ab_is_hex(const char *s, size_t n);

#endif
