/* sshdial.h: an engine reached through ssh, as the docker CLI reaches
 * ssh://[USER@]HOST[:PORT]: ssh runs `docker system dial-stdio` on the
 * host and carries one HTTP connection over its stdin and stdout.
 *
 * ssh reads its own configuration and keys, but never prompts (BatchMode)
 * and never accepts a host key it does not already know
 * (StrictHostKeyChecking=yes), whatever that configuration says.
 */
#ifndef AB_SSHDIAL_H
#define AB_SSHDIAL_H

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "endpoint.h"
#include "err.h"

struct ab_ssh {
	int fd;			/* our end of the connection, or -1 */
	int errfd;		/* ssh's stderr */
	pid_t pid;
	char said[256];		/* the last line ssh wrote on stderr */
	char dir[100];		/* where the socket's name is, until used */
};

/* Starts ssh to EP with CONNECT_S as its connect timeout, once s->fd
 * (close on exec, not yet connected) is connected to ADDR, a name only
 * this process's connection is taken from: libcurl (7.88) insists on
 * calling connect itself.  ssh runs in a session of its own, so a terminal's
 * signals leave its end to the caller. */
int ab_ssh_dial(const struct ab_endpoint *ep, long connect_s,
    struct ab_ssh *s, struct sockaddr_un *addr, socklen_t *len,
    struct ab_err *err);
/* Reads what ssh wrote on stderr so far into s->said (no wait). */
void ab_ssh_listen(struct ab_ssh *s);
/* Closes the connection, ends ssh and reaps it. */
void ab_ssh_end(struct ab_ssh *s);

#endif
