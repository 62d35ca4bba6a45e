/* runtime.h: the OCI runtime an agent container runs under.
 *
 * runc is the engine's own.  gVisor's runsc is one the operator registers
 * on the engine ("runtimes" in its configuration): the engine's /info
 * shows each registered runtime's path and arguments, and that is all
 * agentbox can see of it, so a runtime is taken only when those show
 * everything its guarantees need.  Deny by default: an argument agentbox
 * does not know is a refusal, and so is a path that is not runsc itself
 * (a wrapper script's own arguments cannot be seen).
 *
 *   --network=none   no network stack of gVisor's own: the container's
 *                    namespace (only lo, or the egress bridge) is all.
 *                    runsc also refuses to start without it on kernels
 *                    that show net.core.rmem_default in every namespace.
 *   --oci-seccomp    the engine's seccomp profile applied inside the
 *                    sandbox too (the probe then reads Seccomp: 2).
 *   --host-uds=open  only with egress: connecting to the proxy's socket
 *                    on the egress volume; create and all never.
 */
#ifndef AB_RUNTIME_H
#define AB_RUNTIME_H

#include "err.h"
#include "json.h"

#define AB_RUNTIME_DEFAULT "runc"
#define AB_RUNTIME_NAME_MAX 64
#define AB_RUNTIME_ARGS_MAX 16

/* What /info shows of one registered runtime. */
struct ab_runtime {
	char name[AB_RUNTIME_NAME_MAX];
	int found;			/* registered under that name */
	char path[256];
	char args[AB_RUNTIME_ARGS_MAX][128];
	int nargs;			/* -1: more than agentbox reads */
	char names[256];		/* every registered name, for a message */
};

/* 1 when NAME is a plain runtime name: 1 to 63 of [A-Za-z0-9._-]. */
int ab_runtime_name_ok(const char *name);
/* 1 when NAME is the engine's own runc. */
int ab_runtime_is_runc(const char *name);
/* Fills rt with runtime NAME of the /info document j. */
void ab_runtime_read(const struct ab_json *j, const char *name,
    struct ab_runtime *rt);
/* Refuses (AB_EREFUSED) a runtime the lockdown cannot be proven under:
 * not registered, not runsc, or arguments short of the guarantees.  EGRESS:
 * the allocation has a proxy socket the agent must reach.  WHERE names the
 * engine in the message. */
int ab_runtime_check(const struct ab_runtime *rt, int egress,
    const char *where, struct ab_err *err);

#endif
