#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockdown.h"

static const char *const cap_drop[] = { "ALL", NULL };
/* The engine's own masks of /proc and /sys (Engine 20.10's defaults; later
 * engines add more, which is fine): a container without them sees
 * /proc/kcore, /proc/sys and the like. */
static const char *const masked[] = { "/proc/asound", "/proc/acpi",
    "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
    "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware",
    NULL };
static const char *const readonly_paths[] = { "/proc/bus", "/proc/fs",
    "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL };
static const char *const sec_nnp[] = { "no-new-privileges", NULL };
static const char *const sec_builtin[] = { "no-new-privileges",
    "seccomp=builtin", NULL };

/* On engines before API 1.42 the value of "seccomp=" is read as a profile
 * file, so "builtin" cannot be named: there the daemon's default profile
 * applies when no seccomp option is given, ab_lock_host_check requires
 * that default to be the builtin one, and the in-container probe checks
 * Seccomp: 2. */
static const char *const *security_opts(const struct ab_lock *l)
{
	return l->seccomp_keyword ? sec_builtin : sec_nnp;
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
	if (l->shm_size > 0)
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
	ab_jw_kstr(w, "NetworkMode", "none");
	ab_jw_kbool(w, "ReadonlyRootfs", 1);
	ab_jw_kbool(w, "Privileged", 0);
	str_list(w, "CapDrop", cap_drop);
	str_list(w, "SecurityOpt", security_opts(l));
	ab_jw_kint(w, "Memory", l->memory);
	ab_jw_kint(w, "MemorySwap", l->memory);
	ab_jw_kint(w, "PidsLimit", l->pids);
	ab_jw_kint(w, "NanoCpus", l->nano_cpus);
	ab_jw_kstr(w, "IpcMode", "private");
	ab_jw_kstr(w, "CgroupnsMode", "private");
	ab_jw_kstr(w, "Runtime", "runc");
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
	ab_jw_kstr(&w, "User", AB_AGENT_USER);
	str_list(&w, "Entrypoint", l->entrypoint);
	str_list(&w, "Cmd", l->cmd);
	str_list(&w, "Env", l->env);
	ab_jw_kbool(&w, "NetworkDisabled", 1);
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
	if (ab_jw_done(&w) < 0)
		return ab_fail(err, AB_EUSAGE,
		    "cannot encode the container (invalid UTF-8 in an "
		    "argument or label?)");
	return 0;
}

static int drift(const char *field, struct ab_err *err)
{
	return ab_fail(err, AB_EREFUSED, "lockdown drift: %s", field);
}

static int want_str(const struct ab_json *j, const char *path,
    const char *v, struct ab_err *err)
{
	return ab_json_str_eq(j, ab_json_get(j, 0, path), v) ? 0 :
	    drift(path, err);
}

static int want_int(const struct ab_json *j, const char *path, long long v,
    struct ab_err *err)
{
	long long got;

	if (ab_json_int(j, ab_json_get(j, 0, path), &got) < 0 || got != v)
		return drift(path, err);
	return 0;
}

static int want_bool(const struct ab_json *j, const char *path, int v,
    struct ab_err *err)
{
	int got;

	if (ab_json_bool(j, ab_json_get(j, 0, path), &got) < 0 || got != v)
		return drift(path, err);
	return 0;
}

/* Absent, null, "", [] and {} all mean "nothing"; anything else is set. */
static int want_empty(const struct ab_json *j, const char *path,
    struct ab_err *err)
{
	int t = ab_json_get(j, 0, path);

	switch (ab_json_type(j, t)) {
	case AB_JSON_ABSENT:
	case AB_JSON_NULL:
		return 0;
	case AB_JSON_STRING:
		return ab_json_str_eq(j, t, "") ? 0 : drift(path, err);
	case AB_JSON_ARRAY:
	case AB_JSON_OBJECT:
		return ab_json_count(j, t) == 0 ? 0 : drift(path, err);
	default:
		return drift(path, err);
	}
}

/* An exact list, in order when ordered, as a set without duplicates
 * otherwise; NULL expects null or []. */
static int want_list(const struct ab_json *j, const char *path,
    const char *const *v, int ordered, struct ab_err *err)
{
	int t = ab_json_get(j, 0, path), n = 0, i, k, hits;

	if (v == NULL)
		return want_empty(j, path, err);
	while (v[n] != NULL)
		n++;
	if (ab_json_type(j, t) != AB_JSON_ARRAY || ab_json_count(j, t) != n)
		return drift(path, err);
	for (i = 0; i < n; i++) {
		if (ordered) {
			if (!ab_json_str_eq(j, ab_json_elem(j, t, i), v[i]))
				return drift(path, err);
			continue;
		}
		for (hits = 0, k = 0; k < n; k++)
			hits += ab_json_str_eq(j, ab_json_elem(j, t, k), v[i]);
		if (hits != 1)
			return drift(path, err);
	}
	return 0;
}

static int bool_is(const struct ab_json *j, int t, int v)
{
	int got;

	return ab_json_bool(j, t, &got) == 0 && got == v;
}

/* The engine omits a false ReadOnly from HostConfig.Mounts. */
static int readonly_is(const struct ab_json *j, int t, int v)
{
	if (ab_json_type(j, t) == AB_JSON_ABSENT)
		return v == 0;
	return bool_is(j, t, v);
}

/* HostConfig.Mounts is the request as the daemon kept it; the top-level
 * Mounts is what it actually mounted.  Both must be exactly l->mounts. */
static int check_mounts(const struct ab_json *j, const struct ab_lock *l,
    struct ab_err *err)
{
	int req = ab_json_get(j, 0, "HostConfig.Mounts");
	int act = ab_json_get(j, 0, "Mounts");
	int i, k, t, hits;

	if (l->nmounts == 0)
		return want_empty(j, "HostConfig.Mounts", err) < 0 ||
		    want_empty(j, "Mounts", err) < 0 ? -1 : 0;
	if (ab_json_count(j, req) != l->nmounts)
		return drift("HostConfig.Mounts", err);
	if (ab_json_count(j, act) != l->nmounts)
		return drift("Mounts", err);
	for (i = 0; i < l->nmounts; i++) {
		const struct ab_mount *m = &l->mounts[i];

		for (hits = 0, k = 0; (t = ab_json_elem(j, req, k)) >= 0; k++)
			hits += ab_json_str_eq(j, ab_json_key(j, t, "Type"),
			    "volume") &&
			    ab_json_str_eq(j, ab_json_key(j, t, "Source"),
			    m->volume) &&
			    ab_json_str_eq(j, ab_json_key(j, t, "Target"),
			    m->target) &&
			    readonly_is(j, ab_json_key(j, t, "ReadOnly"), m->readonly) &&
			    bool_is(j, ab_json_get(j, t, "VolumeOptions.NoCopy"), 1);
		if (hits != 1)
			return drift("HostConfig.Mounts", err);
		for (hits = 0, k = 0; (t = ab_json_elem(j, act, k)) >= 0; k++)
			hits += ab_json_str_eq(j, ab_json_key(j, t, "Type"),
			    "volume") &&
			    ab_json_str_eq(j, ab_json_key(j, t, "Name"),
			    m->volume) &&
			    ab_json_str_eq(j, ab_json_key(j, t, "Destination"),
			    m->target) &&
			    ab_json_str_eq(j, ab_json_key(j, t, "Driver"),
			    "local") &&
			    bool_is(j, ab_json_key(j, t, "RW"), !m->readonly);
		if (hits != 1)
			return drift("Mounts", err);
	}
	return 0;
}

static int int_is(const struct ab_json *j, int t, long long v)
{
	long long got;

	return ab_json_int(j, t, &got) == 0 && got == v;
}

/* A list that holds at least every one of v. */
static int want_superset(const struct ab_json *j, const char *path,
    const char *const *v, struct ab_err *err)
{
	int t = ab_json_get(j, 0, path), i, found;

	for (; *v != NULL; v++) {
		for (found = 0, i = 0; i < ab_json_count(j, t); i++)
			found |= ab_json_str_eq(j, ab_json_elem(j, t, i), *v);
		if (!found)
			return drift(path, err);
	}
	return 0;
}

/* Absent, null or false. */
static int want_false(const struct ab_json *j, const char *path,
    struct ab_err *err)
{
	int t = ab_json_get(j, 0, path);

	if (ab_json_type(j, t) == AB_JSON_ABSENT ||
	    ab_json_type(j, t) == AB_JSON_NULL || bool_is(j, t, 0))
		return 0;
	return drift(path, err);
}

static int check_agent(const struct ab_json *j, const struct ab_lock *l,
    struct ab_err *err)
{
	int t = ab_json_get(j, 0, "HostConfig.Tmpfs"), u, n = 0;
	const char *const *p;

	if (l->tmpfs == NULL)
		return want_empty(j, "HostConfig.Tmpfs", err);
	for (p = l->tmpfs; p[0] != NULL; p += 2, n++)
		if (!ab_json_str_eq(j, ab_json_key(j, t, p[0]), p[1]))
			return drift("HostConfig.Tmpfs", err);
	if (ab_json_count(j, t) != n)
		return drift("HostConfig.Tmpfs", err);
	if (want_int(j, "HostConfig.ShmSize", l->shm_size, err) < 0)
		return -1;
	u = ab_json_get(j, 0, "HostConfig.Ulimits");
	u = ab_json_elem(j, u, 0);
	if (ab_json_count(j, ab_json_get(j, 0, "HostConfig.Ulimits")) != 1 ||
	    !ab_json_str_eq(j, ab_json_key(j, u, "Name"), "nofile") ||
	    !int_is(j, ab_json_key(j, u, "Soft"), l->nofile) ||
	    !int_is(j, ab_json_key(j, u, "Hard"), l->nofile))
		return drift("HostConfig.Ulimits", err);
	return 0;
}

static int check_labels(const struct ab_json *j, const struct ab_lock *l,
    struct ab_err *err)
{
	int t = ab_json_get(j, 0, "Config.Labels");
	const char *const *p;

	for (p = l->labels; p != NULL && p[0] != NULL; p += 2)
		if (!ab_json_str_eq(j, ab_json_key(j, t, p[0]), p[1]))
			return ab_fail(err, AB_EREFUSED,
			    "lockdown drift: Config.Labels.%s", p[0]);
	return 0;
}

static int check_config(const struct ab_json *j, const struct ab_lock *l,
    struct ab_err *err)
{
	if (want_str(j, "Image", l->image, err) < 0 ||
	    want_str(j, "Config.User", AB_AGENT_USER, err) < 0 ||
	    want_list(j, "Config.Entrypoint", l->entrypoint, 1, err) < 0 ||
	    want_list(j, "Config.Cmd", l->cmd, 1, err) < 0 ||
	    want_list(j, "Config.Env", l->env, 0, err) < 0 ||
	    want_bool(j, "Config.Tty", 0, err) < 0 ||
	    want_bool(j, "Config.OpenStdin", 0, err) < 0 ||
	    want_bool(j, "Config.NetworkDisabled", 1, err) < 0 ||
	    want_empty(j, "Config.ExposedPorts", err) < 0 ||
	    want_empty(j, "Config.Volumes", err) < 0)
		return -1;
	return check_labels(j, l, err);
}

static int check_namespaces(const struct ab_json *j, struct ab_err *err)
{
	/* Empty means private for these three; "host" or "container:" not. */
	if (want_empty(j, "HostConfig.PidMode", err) < 0 ||
	    want_empty(j, "HostConfig.UTSMode", err) < 0 ||
	    want_empty(j, "HostConfig.UsernsMode", err) < 0 ||
	    want_str(j, "HostConfig.IpcMode", "private", err) < 0 ||
	    want_str(j, "HostConfig.CgroupnsMode", "private", err) < 0 ||
	    want_str(j, "HostConfig.NetworkMode", "none", err) < 0)
		return -1;
	return 0;
}

static int check_host(const struct ab_json *j, const struct ab_lock *l,
    struct ab_err *err)
{
	/* Namespaces first: a host PID or IPC namespace makes the engine add
	 * "label=disable" to SecurityOpt, and the cause is the better name. */
	if (check_namespaces(j, err) < 0)
		return -1;
	if (want_bool(j, "HostConfig.ReadonlyRootfs", 1, err) < 0 ||
	    want_bool(j, "HostConfig.Privileged", 0, err) < 0 ||
	    want_empty(j, "HostConfig.CapAdd", err) < 0 ||
	    want_list(j, "HostConfig.CapDrop", cap_drop, 0, err) < 0 ||
	    want_list(j, "HostConfig.SecurityOpt", security_opts(l), 0,
	    err) < 0 ||
	    want_str(j, "HostConfig.Runtime", "runc", err) < 0 ||
	    want_str(j, "HostConfig.RestartPolicy.Name", "no", err) < 0 ||
	    want_int(j, "HostConfig.Memory", l->memory, err) < 0 ||
	    want_int(j, "HostConfig.MemorySwap", l->memory, err) < 0 ||
	    want_int(j, "HostConfig.PidsLimit", l->pids, err) < 0 ||
	    want_int(j, "HostConfig.NanoCpus", l->nano_cpus, err) < 0 ||
	    want_str(j, "HostConfig.LogConfig.Type", "json-file", err) < 0 ||
	    want_str(j, "HostConfig.LogConfig.Config.max-size",
	    l->log_max_size, err) < 0 ||
	    want_empty(j, "HostConfig.Binds", err) < 0 ||
	    check_mounts(j, l, err) < 0 ||
	    check_agent(j, l, err) < 0 ||
	    want_superset(j, "HostConfig.MaskedPaths", masked, err) < 0 ||
	    want_superset(j, "HostConfig.ReadonlyPaths", readonly_paths,
	    err) < 0 ||
	    want_empty(j, "HostConfig.Capabilities", err) < 0 ||
	    want_empty(j, "HostConfig.DeviceCgroupRules", err) < 0 ||
	    want_false(j, "HostConfig.Init", err) < 0 ||
	    want_false(j, "HostConfig.OomKillDisable", err) < 0 ||
	    want_false(j, "HostConfig.PublishAllPorts", err) < 0 ||
	    want_empty(j, "HostConfig.Devices", err) < 0 ||
	    want_empty(j, "HostConfig.DeviceRequests", err) < 0 ||
	    want_empty(j, "HostConfig.GroupAdd", err) < 0 ||
	    want_empty(j, "HostConfig.Sysctls", err) < 0 ||
	    want_empty(j, "HostConfig.VolumesFrom", err) < 0 ||
	    want_empty(j, "HostConfig.Links", err) < 0 ||
	    want_empty(j, "HostConfig.PortBindings", err) < 0 ||
	    want_empty(j, "HostConfig.ExtraHosts", err) < 0)
		return -1;
	return 0;
}

int ab_lock_check(const struct ab_json *ins, const struct ab_lock *l,
    struct ab_err *err)
{
	if (check_config(ins, l, err) < 0 || check_host(ins, l, err) < 0)
		return -1;
	if (l->running && want_bool(ins, "State.Running", 1, err) < 0)
		return -1;
	return 0;
}
