/* oauth.h: a subscription sign-in held by the egress proxy (ab-profile
 * --codex-auth, --claude-auth).
 *
 * The agent's copy of the sign-in holds placeholders of its tokens, of
 * their shapes (secret.h, jwt.h); the vault (vault.h) holds the real
 * ones, in three kinds of file:
 *
 *   HOST:443.HASH   for each of the CLI's API hosts (egress.h), the
 *                   access token, put in for its placeholder as a key is;
 *   TOKEN:443.HASH  at its token host, the refresh token, for the
 *                   refresh placeholder (header "refresh");
 *   signin.NAME     the sign-in's state: the host's file as it was read,
 *                   the newest real tokens, how often they were
 *                   refreshed, the files above.
 *
 * The agent's refresh (a POST of the refresh placeholder to the token
 * path) is answered by the proxy: it refreshes upstream with the real
 * refresh token, keeps the new real tokens (state first, then the new
 * files; the spent refresh token's file and the access files two
 * refreshes old are emptied), and gives the agent the vendor's answer
 * with placeholders of the same shapes and expiry in place of the
 * tokens.  Anything else sent to the token host is refused.  When the
 * run ends, ab-run writes the state's tokens back over the host's file
 * (signin.h) and empties every file.
 */
#ifndef AB_OAUTH_H
#define AB_OAUTH_H

#include <pthread.h>
#include <stddef.h>

#include "buf.h"
#include "egress.h"
#include "err.h"
#include "vault.h"

#define AB_OAUTH_BODY_MAX (64 * 1024)	/* a refresh's request or answer */
#define AB_OAUTH_DOC_MAX (64 * 1024)	/* a sign-in's file (signin.h) */
#define AB_OAUTH_TOKEN_MAX 4096		/* AB_SECRET_LEN_MAX */
#define AB_OAUTH_STATE_MAX (AB_OAUTH_DOC_MAX * 2 + 8 * AB_OAUTH_TOKEN_MAX)
#define AB_OAUTH_FILES 4		/* vault files of one set of tokens */
#define AB_OAUTH_NAME_MAX 128

enum ab_oauth_kind {
	AB_OAUTH_CODEX,		/* auth.json, a ChatGPT sign-in */
	AB_OAUTH_CLAUDE		/* .credentials.json's claudeAiOauth */
};

/* A sign-in's tokens, malloc'd C strings (ab_oauth_tokens_free wipes
 * them). */
struct ab_oauth_tokens {
	char *access, *refresh;
	char *id;		/* Codex's id_token; NULL for Claude */
	long long expires_ms;	/* Claude's expiresAt; 0: not known */
};

void ab_oauth_tokens_free(struct ab_oauth_tokens *t);

struct ab_oauth_state {
	enum ab_oauth_kind kind;
	char *doc;			/* the host's file as it was read */
	size_t doc_len;
	struct ab_oauth_tokens t;	/* the newest real tokens */
	int refreshes;
	char problem[200];		/* the last refresh refused, or "" */
	char who[17];
	char live[AB_OAUTH_FILES][AB_OAUTH_NAME_MAX];	/* of t */
	char prev[AB_OAUTH_FILES][AB_OAUTH_NAME_MAX];	/* of the tokens before */
	int nlive, nprev;
};

/* The state's file name for sign-in NAME ("signin.NAME"). */
int ab_oauth_state_name(const char *name, char *out, size_t cap,
    struct ab_err *err);
int ab_oauth_state_encode(const struct ab_oauth_state *st,
    struct ab_buf *out, struct ab_err *err);
int ab_oauth_state_decode(const char *p, size_t n, struct ab_oauth_state *st,
    struct ab_err *err);
void ab_oauth_state_free(struct ab_oauth_state *st);

/* Placeholders for the real tokens R into PH: a JWT's of its claims
 * (jwt.h), an opaque token's of its shape (secret.h); the same expiry. */
int ab_oauth_placeholders(const struct ab_oauth_tokens *r,
    struct ab_oauth_tokens *ph, struct ab_err *err);

/* The vault's files for real tokens R and their placeholders PH of
 * sign-in SI, state NAME, listed under WHO, verified upstream against CA
 * (NULL: the image's anchors alone): names, and bytes (ab_buf_init'd
 * here; ab_oauth_files_free wipes them).  *N files. */
struct ab_oauth_file {
	char name[AB_OAUTH_NAME_MAX];
	struct ab_buf data;
};
int ab_oauth_files(const struct ab_egress_signin *si, const char *name,
    const char *who, const struct ab_oauth_tokens *r,
    const struct ab_oauth_tokens *ph, const char *ca, size_t ca_len,
    struct ab_oauth_file *f, int *n, struct ab_err *err);
void ab_oauth_files_free(struct ab_oauth_file *f, int n);

/* -- In the proxy: one refresh, between ab_oauth_begin and
 * ab_oauth_end, one at a time (a lock held between them). */
struct ab_oauth_op {
	const char *vault;
	const struct ab_egress_signin *si;
	char entry[AB_OAUTH_NAME_MAX];	/* the refresh placeholder's file */
	struct ab_vault_entry ent;	/* its real refresh token, anchors */
	char *ph;			/* the refresh placeholder */
	size_t ph_len;
	struct ab_oauth_state st;
	int locked;
};

/* The agent's refresh request's body (N bytes at BODY, JSON) sent to
 * the token host of SI: the body to send upstream into UP (ab_buf_init'd
 * here, to be wiped), its refresh placeholder replaced by the real
 * token.  AB_EREFUSED when it is no refresh of a placeholder the vault
 * holds (the agent is answered 403). */
int ab_oauth_begin(const char *vault, const struct ab_egress_signin *si,
    const char *body, size_t n, struct ab_oauth_op *op, struct ab_buf *up,
    struct ab_err *err);
/* The vendor's answer (STATUS, N bytes at BODY): on a 200 with tokens,
 * they are kept as above; AGENT (ab_buf_init'd here) gets what the agent
 * is to be answered.  -1 when the answer cannot be kept (the agent is
 * answered 502; the state says why). */
int ab_oauth_end(struct ab_oauth_op *op, int status, const char *body,
    size_t n, struct ab_buf *agent, struct ab_err *err);
/* Ends the refresh: the lock released, every token wiped. */
void ab_oauth_op_free(struct ab_oauth_op *op);

#endif
