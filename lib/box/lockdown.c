#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "lockdown.h"

static const char *const cap_drop[] = { "ALL", NULL };
/* Under runsc, the seccomp profile applied inside the sandbox (runsc
 * --oci-seccomp) is agentbox's own: the engine's builtin one answers
 * clone3 with ENOSYS through "errnoRet", which runsc 0.0~20221219 does not
 * honour (it answers EPERM), and glibc's pthread_create falls back to
 * clone only on ENOSYS, so no threaded program could start a thread.
 * This one allows what it does not name, so clone3 reaches gVisor's
 * kernel, which answers ENOSYS itself, and refuses (EPERM) what a
 * container without capabilities has no use for: mounts, namespaces
 * (unshare, setns, clone with a CLONE_NEW* flag), keyrings, bpf,
 * perf_event_open, ptrace, modules, kexec, clocks, swap, reboot.  gVisor's
 * kernel stands between the agent and the host's either way; this is the
 * defence behind it.  One compact JSON text: the engine keeps it as sent,
 * and validation compares it exactly. */
static const char runsc_seccomp[] =
    "seccomp={\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"a"
    "cct\",\"add_key\",\"bpf\",\"clock_adjtime\",\"clock_settime\",\"delete_modul"
    "e\",\"finit_module\",\"get_mempolicy\",\"init_module\",\"ioperm\",\"iopl\",\"k"
    "cmp\",\"kexec_file_load\",\"kexec_load\",\"keyctl\",\"lookup_dcookie\",\"mbi"
    "nd\",\"mount\",\"move_pages\",\"name_to_handle_at\",\"open_by_handle_at\",\""
    "perf_event_open\",\"pivot_root\",\"process_vm_readv\",\"process_vm_write"
    "v\",\"ptrace\",\"quotactl\",\"reboot\",\"request_key\",\"set_mempolicy\",\"set"
    "ns\",\"settimeofday\",\"swapoff\",\"swapon\",\"syslog\",\"umount2\",\"unshare\""
    ",\"userfaultfd\",\"vhangup\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":1},"
    "{\"names\":[\"clone\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":1,\"args\":["
    "{\"index\":0,\"value\":131072,\"valueTwo\":131072,\"op\":\"SCMP_CMP_MASKED_"
    "EQ\"}]},{\"names\":[\"clone\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":1,\""
    "args\":[{\"index\":0,\"value\":33554432,\"valueTwo\":33554432,\"op\":\"SCMP_"
    "CMP_MASKED_EQ\"}]},{\"names\":[\"clone\"],\"action\":\"SCMP_ACT_ERRNO\",\"er"
    "rnoRet\":1,\"args\":[{\"index\":0,\"value\":67108864,\"valueTwo\":67108864,"
    "\"op\":\"SCMP_CMP_MASKED_EQ\"}]},{\"names\":[\"clone\"],\"action\":\"SCMP_ACT"
    "_ERRNO\",\"errnoRet\":1,\"args\":[{\"index\":0,\"value\":134217728,\"valueTw"
    "o\":134217728,\"op\":\"SCMP_CMP_MASKED_EQ\"}]},{\"names\":[\"clone\"],\"acti"
    "on\":\"SCMP_ACT_ERRNO\",\"errnoRet\":1,\"args\":[{\"index\":0,\"value\":26843"
    "5456,\"valueTwo\":268435456,\"op\":\"SCMP_CMP_MASKED_EQ\"}]},{\"names\":[\""
    "clone\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":1,\"args\":[{\"index\":0,"
    "\"value\":536870912,\"valueTwo\":536870912,\"op\":\"SCMP_CMP_MASKED_EQ\"}]"
    "},{\"names\":[\"clone\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":1,\"args\""
    ":[{\"index\":0,\"value\":1073741824,\"valueTwo\":1073741824,\"op\":\"SCMP_C"
    "MP_MASKED_EQ\"}]}]}";

static const char *const sec_runsc[] = { "no-new-privileges", runsc_seccomp,
    NULL };
static const char *const sec_nnp[] = { "no-new-privileges", NULL };
static const char *const sec_builtin[] = { "no-new-privileges",
    "seccomp=builtin", NULL };

/* On engines before API 1.42 the value of "seccomp=" is read as a profile
 * file, so "builtin" cannot be named: there the daemon's default profile
 * applies when no seccomp option is given, ab_lock_host_check requires
 * that default to be the builtin one, and the in-container probe checks
 * Seccomp: 2. */
const char *const *ab_lock_security_opts(const struct ab_lock *l)
{
	if (l->runtime != NULL && strcmp(l->runtime, "runc") != 0)
		return sec_runsc;
	return l->seccomp_keyword ? sec_builtin : sec_nnp;
}

const char *ab_lock_label(const struct ab_lock *l, const char *key)
{
	const char *const *p;

	for (p = l->labels; p != NULL && p[0] != NULL; p += 2)
		if (strcmp(p[0], key) == 0)
			return p[1];
	return "";
}

int ab_lock_host_check(const struct ab_info *info, struct ab_err *err)
{
	if (!info->memory_limit)
		return ab_fail(err, AB_EREFUSED,
		    "the host cannot enforce memory limits");
	if (!info->swap_limit)
		return ab_fail(err, AB_EREFUSED,
		    "the host cannot enforce swap limits");
	if (!info->pids_limit)
		return ab_fail(err, AB_EREFUSED,
		    "the host cannot enforce pids limits");
	if (!info->seccomp_builtin)
		return ab_fail(err, AB_EREFUSED,
		    "the engine does not apply its builtin seccomp profile");
	return 0;
}

static void str_list(struct ab_jw *w, const char *key,
    const char *const *v)
{
	ab_jw_key(w, key);
	if (v == NULL) {
		ab_jw_null(w);
		return;
	}
	ab_jw_arr(w);
	for (; *v != NULL; v++)
		ab_jw_str(w, *v);
	ab_jw_arr_end(w);
}

static void mounts_json(struct ab_jw *w, const struct ab_lock *l)
{
	int i;

	ab_jw_key(w, "Mounts");
	ab_jw_arr(w);
	for (i = 0; i < l->nmounts; i++) {
		ab_jw_obj(w);
		ab_jw_kstr(w, "Type", "volume");
		ab_jw_kstr(w, "Source", l->mounts[i].volume);
		ab_jw_kstr(w, "Target", l->mounts[i].target);
		ab_jw_kbool(w, "ReadOnly", l->mounts[i].readonly);
		/* Nothing of the image is copied into a fresh volume. */
		ab_jw_key(w, "VolumeOptions");
		ab_jw_obj(w);
		ab_jw_kbool(w, "NoCopy", 1);
		ab_jw_obj_end(w);
		ab_jw_obj_end(w);
	}
	ab_jw_arr_end(w);
}

static void agent_json(struct ab_jw *w, const struct ab_lock *l)
{
	const char *const *p;

	if (l->tmpfs != NULL) {
		ab_jw_key(w, "Tmpfs");
		ab_jw_obj(w);
		for (p = l->tmpfs; p[0] != NULL; p += 2)
			ab_jw_kstr(w, p[0], p[1]);
		ab_jw_obj_end(w);
	}
	ab_jw_kint(w, "ShmSize", l->shm_size);
	if (l->nofile > 0) {
		ab_jw_key(w, "Ulimits");
		ab_jw_arr(w);
		ab_jw_obj(w);
		ab_jw_kstr(w, "Name", "nofile");
		ab_jw_kint(w, "Soft", l->nofile);
		ab_jw_kint(w, "Hard", l->nofile);
		ab_jw_obj_end(w);
		ab_jw_arr_end(w);
	}
}

static void host_config(struct ab_jw *w, const struct ab_lock *l)
{
	ab_jw_key(w, "HostConfig");
	ab_jw_obj(w);
	ab_jw_kstr(w, "NetworkMode", l->network ? l->network : "none");
	ab_jw_kbool(w, "ReadonlyRootfs", 1);
	ab_jw_kbool(w, "Privileged", 0);
	str_list(w, "CapDrop", cap_drop);
	if (l->group_add != NULL)
		str_list(w, "GroupAdd", l->group_add);
	str_list(w, "SecurityOpt", ab_lock_security_opts(l));
	ab_jw_kint(w, "Memory", l->memory);
	ab_jw_kint(w, "MemorySwap", l->memory);
	ab_jw_kint(w, "PidsLimit", l->pids);
	ab_jw_kint(w, "NanoCpus", l->nano_cpus);
	ab_jw_kstr(w, "IpcMode", "private");
	ab_jw_kstr(w, "CgroupnsMode", "private");
	ab_jw_kstr(w, "Runtime", l->runtime ? l->runtime : "runc");
	ab_jw_kbool(w, "Init", 0);
	mounts_json(w, l);
	agent_json(w, l);
	ab_jw_key(w, "RestartPolicy");
	ab_jw_obj(w);
	ab_jw_kstr(w, "Name", "no");
	ab_jw_obj_end(w);
	ab_jw_key(w, "LogConfig");
	ab_jw_obj(w);
	ab_jw_kstr(w, "Type", "json-file");
	ab_jw_key(w, "Config");
	ab_jw_obj(w);
	ab_jw_kstr(w, "max-size", l->log_max_size);
	ab_jw_kstr(w, "max-file", "1");
	ab_jw_obj_end(w);
	ab_jw_obj_end(w);
	ab_jw_obj_end(w);
}

int ab_lock_body(const struct ab_lock *l, struct ab_buf *out,
    struct ab_err *err)
{
	const char *const *p;
	struct ab_jw w;

	ab_jw_init(&w, out);
	ab_jw_obj(&w);
	ab_jw_kstr(&w, "Image", l->image);
	ab_jw_kstr(&w, "User", l->user != NULL ? l->user : AB_AGENT_USER);
	ab_jw_kstr(&w, "WorkingDir", AB_LOCK_WORKDIR);
	str_list(&w, "Entrypoint", l->entrypoint);
	str_list(&w, "Cmd", l->cmd);
	str_list(&w, "Env", l->env);
	ab_jw_kbool(&w, "NetworkDisabled", l->network == NULL);
	ab_jw_kbool(&w, "AttachStdin", 0);
	ab_jw_kbool(&w, "OpenStdin", 0);
	ab_jw_kbool(&w, "Tty", 0);
	ab_jw_key(&w, "Labels");
	ab_jw_obj(&w);
	for (p = l->labels; p != NULL && p[0] != NULL; p += 2)
		ab_jw_kstr(&w, p[0], p[1]);
	ab_jw_obj_end(&w);
	host_config(&w, l);
	ab_jw_obj_end(&w);
	if (ab_jw_done(&w) < 0 && out->over)
		return ab_buf_fail(out, AB_EUSAGE, "the container's request",
		    err);
	if (ab_jw_done(&w) < 0)
		return ab_fail(err, AB_EUSAGE,
		    "cannot encode the container (invalid UTF-8 in an "
		    "argument or label?)");
	return 0;
}
