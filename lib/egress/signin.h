/* signin.h: a subscription sign-in's file on the host (ab-profile
 * --codex-auth, --claude-auth): read, given to the agent as placeholders,
 * and its refresh written back.
 *
 * The agent's copy holds placeholders of the tokens (oauth.h); the real
 * ones go to the proxy alone, which refreshes them.  When the run ends,
 * the tokens the proxy holds are written over FILE, never what the agent
 * left in its copy, and only if FILE is still exactly what was read when
 * the copy was made (device, inode, size, mtime, SHA-256), under flock,
 * by an atomic rename.  Otherwise someone else changed FILE meanwhile (a
 * refresh of the user's own CLI, a new sign-in): FILE is kept, and the
 * refreshed sign-in goes to the state directory for the user to choose.
 */
#ifndef AB_SIGNIN_H
#define AB_SIGNIN_H

#include <stddef.h>

#include "buf.h"
#include "err.h"
#include "oauth.h"
#include "state.h"

#define AB_SIGNIN_MAX AB_OAUTH_DOC_MAX
/* How long a write-back waits for another holder of FILE's lock. */
#define AB_SIGNIN_LOCK_MS 5000

/* What FILE was when it was read. */
struct ab_signin {
	long long dev, ino, size, mtime_ns;
	char sha[65];		/* SHA-256 of its bytes */
	char account[65];	/* SHA-256 of tokens.account_id */
};

/* Checks DATA is a sign-in of KIND as its CLI writes it: for Codex,
 * auth_mode "chatgpt" (or none), tokens with id, access and refresh
 * tokens and an account ID, whose SHA-256 goes to account; for Claude,
 * claudeAiOauth with accessToken and refreshToken (account: the SHA-256
 * of nothing).  AB_EREFUSED. */
int ab_signin_parse(enum ab_oauth_kind kind, const char *data, size_t len,
    char account[65], struct ab_err *err);
/* Reads PATH (O_NOFOLLOW, a regular file, at most AB_SIGNIN_MAX bytes)
 * into b (its max set here), checks it and describes it in *sn. */
int ab_signin_read(enum ab_oauth_kind kind, const char *path,
    struct ab_buf *b, struct ab_signin *sn, struct ab_err *err);
/* The tokens of DATA into T, each 1 to AB_OAUTH_TOKEN_MAX bytes, no
 * NUL.  AB_EREFUSED. */
int ab_signin_tokens_get(enum ab_oauth_kind kind, const char *data,
    size_t len, struct ab_oauth_tokens *t, struct ab_err *err);
void ab_oauth_tokens_free(struct ab_oauth_tokens *t);
/* DATA with its tokens replaced by T's into OUT (ab_buf_init'd here),
 * every other byte as it was: Claude's expiresAt set to T's when known;
 * with STAMP, Codex's last_refresh set to now.  The caller wipes OUT. */
int ab_signin_splice(enum ab_oauth_kind kind, const char *data, size_t len,
    const struct ab_oauth_tokens *t, int stamp, struct ab_buf *out,
    struct ab_err *err);
/* Writes DATA over PATH (mode 0600) if PATH is still what *sn describes.
 * 0 written; 1 not written, PATH having changed (err->msg says how); -1
 * on error. */
int ab_signin_write_back(const char *path, const struct ab_signin *sn,
    const char *data, size_t len, struct ab_err *err);
/* What became of the sign-in when the run ended. */
struct ab_signin_back {
	int refreshed;		/* the proxy refreshed its tokens */
	int written;		/* and they were written over FILE */
	char problem[300];	/* why they were not; "" when they were */
};

/* Keeps DATA as STATE/signin/NAME (0600); its path in out. */
int ab_signin_keep(struct ab_state *s, const char *name, const char *data,
    size_t len, char *out, size_t cap, struct ab_err *err);

#endif
