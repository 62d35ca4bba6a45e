/* endpoint.h: which engine to reach, found as the docker CLI finds it.
 *
 * In order: DOCKER_HOST; else the context DOCKER_CONTEXT names; else
 * config.json's currentContext (under DOCKER_CONFIG, default ~/.docker);
 * else the default socket.  A host is unix:///PATH, tcp://HOST[:PORT]
 * (TLS from DOCKER_TLS_VERIFY and DOCKER_CERT_PATH, or from a context's
 * own TLS files), or ssh://[USER@]HOST[:PORT], reached through ssh
 * running `docker system dial-stdio` there.  Whatever cannot be verified
 * is refused: TLS without verification, a context that skips it, an ssh
 * host or user that ssh would read as an option.
 */
#ifndef AB_ENDPOINT_H
#define AB_ENDPOINT_H

#include "err.h"

enum ab_ep_kind { AB_EP_UNIX, AB_EP_TCP, AB_EP_SSH };

struct ab_endpoint {
	enum ab_ep_kind kind;
	char where[400];	/* for messages: the host, and its context */
	char base[300];		/* the URL's scheme://host[:port] */
	char sock[256];		/* unix: the socket's path */
	int tls;
	char cert[512], key[512], ca[512];
	char user[64], host[256], port[8];	/* ssh */
};

/* Fills ep from the environment and the docker CLI's configuration:
 * 0, or -1 with AB_EUSAGE naming what is wrong and where. */
int ab_endpoint_find(struct ab_endpoint *ep, struct ab_err *err);

#endif
