/* lockdown.h: the container lockdown, as a create body and as a check.
 *
 * One description (struct ab_lock) yields both the exact create request
 * and the exact comparison of what the engine then reports (inspect), so
 * the two can never disagree.  The check compares the daemon-resolved
 * configuration, never the request: the engine ignores unknown fields and
 * may drop a limit it cannot enforce.
 */
#ifndef AB_LOCKDOWN_H
#define AB_LOCKDOWN_H

#include "buf.h"
#include "engine.h"
#include "err.h"
#include "json.h"

#define AB_AGENT_UID 10001
#define AB_AGENT_USER "10001:10001"

/* A named volume mounted into the container, nothing copied into it. */
struct ab_mount {
	const char *volume;
	const char *target;
	int readonly;
};

struct ab_lock {
	const char *image;		/* sha256:..., never a tag */
	const char *const *entrypoint;	/* NULL-terminated */
	const char *const *cmd;		/* NULL-terminated, or NULL */
	const char *const *env;		/* NAME=VALUE, NULL-terminated */
	const char *const *labels;	/* key, value, ..., NULL */
	long long memory;		/* bytes; swap is pinned equal */
	long long pids;
	long long nano_cpus;
	const char *log_max_size;	/* "1m" */
	int seccomp_keyword;		/* engine accepts seccomp=builtin */
	const struct ab_mount *mounts;	/* the exact set; none when NULL */
	int nmounts;
	int running;			/* State.Running must be true */
	/* Agent containers: HostConfig.Tmpfs (path, options pairs), the shm
	 * size and the open-files limit; none when NULL / 0. */
	const char *const *tmpfs;
	long long shm_size;
	long long nofile;
};

/* Refuses a host that cannot enforce the lockdown (memory, swap, pids,
 * the builtin seccomp profile) rather than running weaker. */
int ab_lock_host_check(const struct ab_info *info, struct ab_err *err);
/* Writes the create body. */
int ab_lock_body(const struct ab_lock *l, struct ab_buf *out,
    struct ab_err *err);
/* Compares an inspect reply with l; refusal naming the first field that
 * differs ("lockdown drift: HostConfig.CapDrop"). */
int ab_lock_check(const struct ab_json *ins, const struct ab_lock *l,
    struct ab_err *err);

#endif
