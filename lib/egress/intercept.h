/* intercept.h: one connection of the egress proxy to a provider's API
 * host, with TLS ended at the proxy (agentbox(7), "CREDENTIALS").
 *
 * The agent holds a placeholder; the vault (vault.h) holds the real
 * credential.  Each request on the connection, not only the first, is
 * parsed (httpmsg.h): the one credential header it must carry
 * (x-api-key, or Authorization: Bearer) must be a placeholder the vault
 * holds for this host and port, and is replaced by the credential, and
 * nothing else of the request is touched (a placeholder in a body, a
 * query or another header stays as it is); anything else is refused,
 * 403 "credential", and nothing of it goes upstream.  The upstream is a
 * TLS connection of the proxy's own, verified against the image's
 * anchors and the invocation's --ca, opened for the first good request.
 * Answers stream back as they come, the real credential replaced by the
 * placeholder wherever it appears (secret.h), across reads and chunks.
 */
#ifndef AB_INTERCEPT_H
#define AB_INTERCEPT_H

#include <stddef.h>

#include "tlsca.h"

/* Bounds of one connection, beside httpmsg.h's. */
#define AB_ICEPT_HANDSHAKE_MS 10000
#define AB_ICEPT_HEAD_MS 10000
#define AB_ICEPT_IO 16384
/* In a tunnel past a 101, bytes the replacement holds back (they could
 * begin the credential) go to the agent once the vendor is this quiet,
 * as far as they are the placeholder's too. */
#define AB_ICEPT_HOLD_MS 50

struct ab_icept_request {
	char method[16];
	char path[256];		/* without its query, cut at 255 bytes */
	char who[17];		/* its placeholder's hash, cut (vault.h); "" */
	int status;		/* given to the agent; 0: none */
	const char *reason;	/* why the proxy refused or failed; NULL */
	char detail[160];	/* a TLS failure's words, for the log */
	long long up, down, ms;
};

struct ab_icept {
	struct ab_tlsca *ca;
	const char *vault;	/* the vault directory */
	const char *anchors;	/* the image's PEM bundle */
	long idle_ms;
	volatile int *stop;
	/* Each request as it ends, and a refusal before any request. */
	void (*report)(void *ctx, const char *host, int port,
	    const struct ab_icept_request *r);
	void *ctx;
};

/* 1 when the vault holds a file for HOST:PORT, its credential live or
 * forgotten: from the first invocation given a credential for it on,
 * every connection to it is intercepted, so that a forgotten placeholder
 * is refused (403) rather than passed on blind.  Before, it is a blind
 * tunnel as any other destination. */
int ab_icept_on(const char *vault, const char *host, int port);
/* Serves the agent's connection CFD, whose CONNECT was answered, against
 * the dialled upstream UFD, until either side ends, an idle spell, a
 * refusal or *stop.  Closes neither descriptor. */
void ab_icept_serve(const struct ab_icept *ic, int cfd, int ufd,
    const char *host, int port);

#endif
