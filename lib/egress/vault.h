/* vault.h: an invocation's credential, held for its allocation's proxy
 * alone (agentbox(7), "CREDENTIALS").
 *
 * The agent holds a placeholder of the credential's shape (secret.h); the
 * real credential is one file of the vault, a directory of the egress
 * volume (tmpfs: memory, never disk) that is the proxy's uid's alone,
 * 0700: agents mount that volume read-only and, another uid without
 * capabilities, cannot open the directory, list it or name a file in it.
 * ab-validate writes the file through the proxy's container; ab-run
 * empties it when the agent settles, and the proxy, which reads it again
 * for every request, forgets the credential then.
 *
 * A file is named HOST:PORT.HASH, HASH the SHA-256 of the placeholder:
 * the proxy finds the credential from the header the agent sent and the
 * destination it asked for, so a placeholder is bound to its host and
 * port, and a placeholder of another host, another invocation's once
 * emptied, or any other value finds nothing and is refused.
 */
#ifndef AB_VAULT_H
#define AB_VAULT_H

#include <stddef.h>

#include "buf.h"
#include "err.h"

#define AB_VAULT_NAME "vault"		/* under AB_EGRESS_DIR */
#define AB_VAULT_CA_NAME "ca.pem"	/* the proxy's CA, public */
#define AB_VAULT_FILE_MAX (640 * 1024)	/* --ca holds 512 KiB */
#define AB_VAULT_CRED_MAX 4096

/* Which request header carries the credential; or a sign-in's refresh
 * token, which the proxy alone sends, in a refresh it makes (oauth.h). */
enum ab_vault_header {
	AB_VAULT_X_API_KEY,	/* x-api-key: CRED */
	AB_VAULT_BEARER,	/* Authorization: Bearer CRED */
	AB_VAULT_REFRESH	/* a refresh token, at a sign-in's token host */
};

struct ab_vault_entry {
	enum ab_vault_header header;
	const char *cred;	/* the real credential */
	size_t cred_len;
	const char *ca;		/* PEM anchors for the upstream, or NULL */
	size_t ca_len;
	/* A sign-in's: the invocation its requests are listed under
	 * (tally.h), and its state file (oauth.h); "" otherwise. */
	char who[17];
	char signin[40];
};

/* "HOST:PORT.HASH" for the placeholder PH (N bytes). */
int ab_vault_name(const char *host, int port, const char *ph, size_t n,
    char *out, size_t cap, struct ab_err *err);
/* The file's bytes for E. */
int ab_vault_encode(const struct ab_vault_entry *e, struct ab_buf *out,
    struct ab_err *err);
/* Reads a file's bytes (N at P) into E, whose credential and anchors are
 * malloc'd copies (ab_vault_entry_free).  An empty file is a credential
 * forgotten: AB_EREFUSED. */
int ab_vault_decode(const char *p, size_t n, struct ab_vault_entry *e,
    struct ab_err *err);
/* Wipes the credential and frees what ab_vault_decode made. */
void ab_vault_entry_free(struct ab_vault_entry *e);

#endif
