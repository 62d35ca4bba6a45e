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
#include "err.h"
#include "json.h"

struct ab_info;

#define AB_AGENT_UID 10001
#define AB_AGENT_USER "10001:10001"
/* Every container's working directory. */
#define AB_LOCK_WORKDIR "/work"

/* A volume as the engine makes it (its ceilings, its root's owner and
 * mode) and where a container mounts it. */
struct ab_volume {
	char name[96];
	const char *role;	/* "task", "git", "inputs", "egress" */
	const char *target;	/* its mount point */
	long long bytes, inodes;
	int uid;		/* its owner: the agents', the proxy's or root's */
	int mode;		/* of its root; 0: 0755 */
};

/* A named volume mounted into the container, nothing copied into it. */
struct ab_mount {
	const char *volume;
	const char *target;
	int readonly;
};

struct ab_lock {
	const char *image;		/* sha256:..., never a tag */
	const char *runtime;		/* NULL: runc (runtime.h) */
	const char *user;		/* NULL: AB_AGENT_USER */
	/* The one network it joins, by name and engine ID; NULL: none (no
	 * network at all, only lo). */
	const char *network, *network_id;
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
	/* HostConfig.Tmpfs (path, options pairs; none when NULL), the shm
	 * size (always given) and the open-files limit (none when 0). */
	const char *const *tmpfs;
	long long shm_size;
	long long nofile;
	/* HostConfig.GroupAdd, exactly (NULL: none): an agent's one group of
	 * its invocation's own, which alone opens that invocation's files on
	 * the allocation's shared volumes (profile.h). */
	const char *const *group_add;
};

/* The value of label KEY in l, or "" (never NULL). */
const char *ab_lock_label(const struct ab_lock *l, const char *key);
/* Refuses a host that cannot enforce the lockdown (memory, swap, pids,
 * the builtin seccomp profile) rather than running weaker. */
int ab_lock_host_check(const struct ab_info *info, struct ab_err *err);
/* Writes the create body. */
int ab_lock_body(const struct ab_lock *l, struct ab_buf *out,
    struct ab_err *err);
/* The SecurityOpt list the lockdown sets. */
const char *const *ab_lock_security_opts(const struct ab_lock *l);
/* Compares a container's whole inspect document with l, deny by default
 * (lockcheck.c): every field must be what l implies, but for a commented
 * few that may vary.  IMG is the image's inspect document (a container
 * inherits its labels), or NULL.  Refusal naming the first field that
 * differs ("lockdown drift: HostConfig.CapDrop"). */
int ab_lock_check_doc(const struct ab_json *ins, const struct ab_json *img,
    const struct ab_lock *l, struct ab_err *err);

#endif
