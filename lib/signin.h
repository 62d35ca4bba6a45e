/* signin.h: a ChatGPT sign-in (ab-profile --codex-auth FILE) and its
 * refresh written back.
 *
 * Codex rewrites its auth.json when it refreshes the tokens, and the old
 * refresh token is then spent: a refreshed copy that is dropped locks the
 * user out.  So the copy the agent leaves is read back, and written over
 * FILE only if FILE is still exactly what was read when the copy was made
 * (device, inode, size, mtime, SHA-256), under flock, by an atomic rename.
 * Otherwise, someone else changed FILE meanwhile (a refresh of their own,
 * a new sign-in): it is kept, and the new copy goes to the state
 * directory for the user to choose.
 */
#ifndef AB_SIGNIN_H
#define AB_SIGNIN_H

#include <stddef.h>

#include "buf.h"
#include "err.h"
#include "state.h"

#define AB_SIGNIN_MAX (64 * 1024)
/* How long a write-back waits for another holder of FILE's lock. */
#define AB_SIGNIN_LOCK_MS 5000

/* What FILE was when it was read. */
struct ab_signin {
	long long dev, ino, size, mtime_ns;
	char sha[65];		/* SHA-256 of its bytes */
	char account[65];	/* SHA-256 of tokens.account_id */
};

/* Checks DATA is a ChatGPT sign-in as Codex writes it (auth_mode
 * "chatgpt", tokens with string id, access and refresh tokens and an
 * account ID); account gets its account ID's SHA-256.  AB_EREFUSED. */
int ab_signin_parse(const char *data, size_t len, char account[65],
    struct ab_err *err);
/* Reads PATH (O_NOFOLLOW, a regular file, at most AB_SIGNIN_MAX bytes)
 * into b (its max set here), checks it and describes it in *sn. */
int ab_signin_read(const char *path, struct ab_buf *b, struct ab_signin *sn,
    struct ab_err *err);
/* Writes DATA over PATH (mode 0600) if PATH is still what *sn describes.
 * 0 written; 1 not written, PATH having changed (err->msg says how); -1
 * on error. */
int ab_signin_write_back(const char *path, const struct ab_signin *sn,
    const char *data, size_t len, struct ab_err *err);
/* What became of the copy the agent left. */
struct ab_signin_back {
	int refreshed;		/* it differs from what was copied in */
	int written;		/* and it was written over FILE */
	char problem[300];	/* why it was not; "" when it was */
};

/* Decides about DATA, the copy read back: nothing when it is what was
 * copied in (*was); written over PATH when it is a sign-in of the same
 * account and PATH is still what was read; otherwise o->problem says why
 * not, and the caller keeps DATA (ab_signin_keep). */
void ab_signin_back(const char *path, const struct ab_signin *was,
    const char *data, size_t len, struct ab_signin_back *o);
/* Keeps DATA as STATE/signin/NAME (0600); its path in out. */
int ab_signin_keep(struct ab_state *s, const char *name, const char *data,
    size_t len, char *out, size_t cap, struct ab_err *err);

#endif
