/* jwt.h: a placeholder for a sign-in's JWT (ab-profile --codex-auth).
 *
 * Codex reads claims from its ChatGPT tokens without checking their
 * signature: the account, the plan and the expiry, from the id_token and
 * the access token.  The agent is given, for each, a token the client
 * decodes the same way: header {"alg":"none","typ":"JWT"}, the claims it
 * reads copied from the real token (below), and a random signature of
 * no one's, so the token is the real one's length (the proxy swaps one
 * for the other in a stream, secret.h) and useless anywhere but through
 * the allocation's proxy, which knows it.
 */
#ifndef AB_JWT_H
#define AB_JWT_H

#include <stddef.h>

#include "buf.h"
#include "err.h"

#define AB_JWT_MAX 4096		/* a token's bytes (AB_SECRET_LEN_MAX) */

/* 1 when TOK (N bytes) is three base64url parts, the middle one a JSON
 * object. */
int ab_jwt_is(const char *tok, size_t n);
/* The claims TOK carries, decoded, into OUT (ab_buf_init'd here, bounded
 * by AB_JWT_MAX).  AB_EREFUSED when TOK is not a JWT. */
int ab_jwt_claims(const char *tok, size_t n, struct ab_buf *out,
    struct ab_err *err);
/* A placeholder for the JWT REAL (N bytes) into OUT (N bytes, no NUL):
 * the claims exp, iat, nbf, iss, aud, email, email_verified and the
 * "https://api.openai.com/auth" and ".../profile" objects copied, nothing
 * else.  AB_EREFUSED when REAL is not a JWT or too short to carry them
 * and a signature of 16 characters. */
int ab_jwt_placeholder(const char *real, size_t n, char *out,
    struct ab_err *err);

#endif
