/* lockcheck.c: the comparison of an inspect document with a lockdown.
 *
 * Deny by default: the whole document is walked, and every field must be
 * named by a rule below.  A field no rule names is drift, whatever its
 * value, so a field a newer engine adds is refused until it is listed
 * here with what it must hold.  Rules say what a field must equal given
 * the lockdown; the few that may vary (VARY) say why.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockdown.h"

struct ctx {
	const struct ab_json *j;	/* the container's inspect document */
	const struct ab_json *img;	/* the image's, or NULL */
	const struct ab_lock *l;
	char *detail;			/* a check may name a member: ".KEY" */
};

enum how {
	VARY,	/* may hold anything; why says why */
	ZERO,	/* absent, null, false, 0, "", [] or {} */
	STR,	/* exactly the string v */
	TRUE,	/* exactly true */
	CHECK	/* fn decides; it also runs when the field is absent */
};

struct rule {
	const char *path;
	enum how how;
	const char *v;		/* STR: the value; VARY: why */
	int (*fn)(struct ctx *c, int t);	/* CHECK: 1 when right */
};

static const char *const cap_drop[] = { "ALL", NULL };
/* The engine's own masks of /proc and /sys (Engine 20.10's defaults; later
 * engines add more, which only masks more): a container without them sees
 * /proc/kcore, /proc/sys and the like. */
static const char *const masked[] = { "/proc/asound", "/proc/acpi",
    "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
    "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware",
    NULL };
static const char *const readonly_paths[] = { "/proc/bus", "/proc/fs",
    "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL };

/* --- small predicates ----------------------------------------------- */

static int is_zero(const struct ab_json *j, int t)
{
	long long n;
	int b;

	switch (ab_json_type(j, t)) {
	case AB_JSON_ABSENT:
	case AB_JSON_NULL:
	case AB_JSON_FALSE:
		return 1;
	case AB_JSON_STRING:
		return ab_json_str_eq(j, t, "");
	case AB_JSON_ARRAY:
	case AB_JSON_OBJECT:
		return ab_json_count(j, t) == 0;
	case AB_JSON_NUMBER:
		return ab_json_int(j, t, &n) == 0 && n == 0;
	default:
		return ab_json_bool(j, t, &b) == 0 && !b;
	}
}

static int int_is(const struct ab_json *j, int t, long long v)
{
	long long got;

	return ab_json_int(j, t, &got) == 0 && got == v;
}

static int bool_is(const struct ab_json *j, int t, int v)
{
	int got;

	return ab_json_bool(j, t, &got) == 0 && got == v;
}

/* Every key of object T is one of KEYS (NULL-terminated). */
static int keys_within(const struct ab_json *j, int t, const char *const *keys)
{
	const char *const *k;
	int i, n = ab_json_count(j, t), ok;

	if (ab_json_type(j, t) != AB_JSON_OBJECT)
		return 0;
	for (i = 0; i < n; i++) {
		for (ok = 0, k = keys; *k != NULL && !ok; k++)
			ok = ab_json_str_eq(j, ab_json_member(j, t, i), *k);
		if (!ok)
			return 0;
	}
	return 1;
}

/* An exact list, in order when ordered, else as a set without
 * duplicates; NULL or empty v wants an absent, null or empty list. */
static int list_is(const struct ab_json *j, int t, const char *const *v,
    int ordered)
{
	int n = 0, i, k, hits;

	while (v != NULL && v[n] != NULL)
		n++;
	if (n == 0)
		return is_zero(j, t) && ab_json_type(j, t) != AB_JSON_STRING;
	if (ab_json_type(j, t) != AB_JSON_ARRAY || ab_json_count(j, t) != n)
		return 0;
	for (i = 0; i < n; i++) {
		if (ordered) {
			if (!ab_json_str_eq(j, ab_json_elem(j, t, i), v[i]))
				return 0;
			continue;
		}
		for (hits = 0, k = 0; k < n; k++)
			hits += ab_json_str_eq(j, ab_json_elem(j, t, k), v[i]);
		if (hits != 1)
			return 0;
	}
	return 1;
}

/* A list of strings that holds at least every one of v. */
static int superset(const struct ab_json *j, int t, const char *const *v)
{
	int i, found;

	if (ab_json_type(j, t) != AB_JSON_ARRAY)
		return 0;
	for (; *v != NULL; v++) {
		for (found = 0, i = 0; i < ab_json_count(j, t); i++)
			found |= ab_json_str_eq(j, ab_json_elem(j, t, i), *v);
		if (!found)
			return 0;
	}
	return 1;
}

/* --- the lockdown's own values -------------------------------------- */

static const char *user_of(const struct ab_lock *l)
{
	return l->user != NULL ? l->user : AB_AGENT_USER;
}

static int c_image(struct ctx *c, int t)
{
	return ab_json_str_eq(c->j, t, c->l->image);
}

static int c_user(struct ctx *c, int t)
{
	return ab_json_str_eq(c->j, t, user_of(c->l));
}

static int c_workdir(struct ctx *c, int t)
{
	return ab_json_str_eq(c->j, t, AB_LOCK_WORKDIR);
}

static int c_entrypoint(struct ctx *c, int t)
{
	return list_is(c->j, t, c->l->entrypoint, 1);
}

static int c_cmd(struct ctx *c, int t)
{
	return list_is(c->j, t, c->l->cmd, 1);
}

static int c_env(struct ctx *c, int t)
{
	return list_is(c->j, t, c->l->env, 0);
}

/* Path and Args: what the engine execs, the entrypoint then the cmd. */
static int c_path(struct ctx *c, int t)
{
	return c->l->entrypoint != NULL && c->l->entrypoint[0] != NULL &&
	    ab_json_str_eq(c->j, t, c->l->entrypoint[0]);
}

static int c_args(struct ctx *c, int t)
{
	const char *const *p;
	int i = 0;

	if (ab_json_type(c->j, t) != AB_JSON_ARRAY || c->l->entrypoint == NULL ||
	    c->l->entrypoint[0] == NULL)
		return 0;
	for (p = c->l->entrypoint + 1; *p != NULL; p++)
		if (!ab_json_str_eq(c->j, ab_json_elem(c->j, t, i++), *p))
			return 0;
	for (p = c->l->cmd; p != NULL && *p != NULL; p++)
		if (!ab_json_str_eq(c->j, ab_json_elem(c->j, t, i++), *p))
			return 0;
	return ab_json_count(c->j, t) == i;
}

/* The engine's default hostname: the first 12 characters of the ID. */
static int c_hostname(struct ctx *c, int t)
{
	char *id = ab_json_str(c->j, ab_json_key(c->j, 0, "Id"));
	char want[13];
	int ok;

	if (id == NULL || strlen(id) < 12) {
		free(id);
		return 0;
	}
	/* Cut to fit by its precision: cut otherwise, it matches nothing. */
	ok = ab_fmt(want, sizeof want, "%.12s", id) == 0 &&
	    ab_json_str_eq(c->j, t, want);
	free(id);
	return ok;
}

static int c_runtime(struct ctx *c, int t)
{
	return ab_json_str_eq(c->j, t, c->l->runtime ? c->l->runtime :
	    "runc");
}

static int c_netdisabled(struct ctx *c, int t)
{
	return c->l->network ? is_zero(c->j, t) : bool_is(c->j, t, 1);
}

static int c_netmode(struct ctx *c, int t)
{
	return ab_json_str_eq(c->j, t, c->l->network ? c->l->network :
	    "none");
}

/* The engine's aliases on a user network: none, or the short ID. */
static int aliases_ok(struct ctx *c, int t)
{
	char *id = ab_json_str(c->j, ab_json_key(c->j, 0, "Id"));
	char want[13];
	int ok;

	if (is_zero(c->j, t)) {
		free(id);
		return 1;
	}
	ok = ab_fmt(want, sizeof want, "%.12s", id ? id : "") == 0 &&
	    ab_json_type(c->j, t) == AB_JSON_ARRAY &&
	    ab_json_count(c->j, t) == 1 &&
	    ab_json_str_eq(c->j, ab_json_elem(c->j, t, 0), want);
	free(id);
	return ok;
}

/* Exactly the lockdown's network (none: no endpoint at all), joined with
 * nothing of its own: the addresses are the engine's to assign. */
static int c_networks(struct ctx *c, int t)
{
	static const char *const keys[] = { "IPAMConfig", "Links", "Aliases",
	    "NetworkID", "EndpointID", "Gateway", "IPAddress", "IPPrefixLen",
	    "IPv6Gateway", "GlobalIPv6Address", "GlobalIPv6PrefixLen",
	    "MacAddress", "DriverOpts", "DNSNames", NULL };
	const struct ab_json *j = c->j;
	int n = ab_json_key(j, t, c->l->network ? c->l->network : "");

	if (c->l->network == NULL)
		return is_zero(j, t);
	return ab_json_count(j, t) == 1 && keys_within(j, n, keys) &&
	    is_zero(j, ab_json_key(j, n, "IPAMConfig")) &&
	    is_zero(j, ab_json_key(j, n, "Links")) &&
	    aliases_ok(c, ab_json_key(j, n, "Aliases")) &&
	    ab_json_str_eq(j, ab_json_key(j, n, "NetworkID"),
	    c->l->network_id) &&
	    is_zero(j, ab_json_key(j, n, "IPv6Gateway")) &&
	    is_zero(j, ab_json_key(j, n, "GlobalIPv6Address")) &&
	    is_zero(j, ab_json_key(j, n, "GlobalIPv6PrefixLen")) &&
	    is_zero(j, ab_json_key(j, n, "DriverOpts"));
}

static const char *label_of(const struct ab_lock *l, const char *key)
{
	const char *const *p;

	for (p = l->labels; p != NULL && p[0] != NULL; p += 2)
		if (strcmp(p[0], key) == 0)
			return p[1];
	return NULL;
}

/* The lockdown's labels, and the image's for every other key: a
 * container inherits its image's labels, and nothing else may be added. */
static int c_labels(struct ctx *c, int t)
{
	const struct ab_json *j = c->j;
	const char *const *p;
	const char *want;
	int i, n = ab_json_count(j, t), il, ok;
	char *key, *v;

	il = c->img ? ab_json_get(c->img, 0, "Config.Labels") : -1;
	for (p = c->l->labels; p != NULL && p[0] != NULL; p += 2)
		if (!ab_json_str_eq(j, ab_json_key(j, t, p[0]), p[1])) {
			/* A detail cut short still reads. */
			(void)ab_fmt(c->detail, 128, ".%.100s", p[0]);
			return 0;
		}
	for (i = 0; i < n; i++) {
		key = ab_json_str(j, ab_json_member(j, t, i));
		if (key == NULL)
			return 0;
		(void)ab_fmt(c->detail, 128, ".%.100s", key);
		want = label_of(c->l, key);
		if (want != NULL) {
			free(key);
			continue;
		}
		v = ab_json_str(j, ab_json_member(j, t, i) + 1);
		ok = v != NULL && il >= 0 &&
		    ab_json_str_eq(c->img, ab_json_key(c->img, il, key), v);
		free(v);
		free(key);
		if (!ok)
			return 0;
	}
	c->detail[0] = '\0';
	return 1;
}

static int c_capdrop(struct ctx *c, int t)
{
	return list_is(c->j, t, cap_drop, 0);
}

/* An agent's group of its invocation's own, and nothing else; the keeper
 * and the proxy have none. */
static int c_groupadd(struct ctx *c, int t)
{
	return list_is(c->j, t, c->l->group_add, 1);
}

static int c_secopt(struct ctx *c, int t)
{
	return list_is(c->j, t, ab_lock_security_opts(c->l), 0);
}

static int c_memory(struct ctx *c, int t)
{
	return int_is(c->j, t, c->l->memory);
}

static int c_pids(struct ctx *c, int t)
{
	return int_is(c->j, t, c->l->pids);
}

static int c_cpus(struct ctx *c, int t)
{
	return int_is(c->j, t, c->l->nano_cpus);
}

static int c_shm(struct ctx *c, int t)
{
	return int_is(c->j, t, c->l->shm_size);
}

static int c_masked(struct ctx *c, int t)
{
	return superset(c->j, t, masked);
}

static int c_readonly_paths(struct ctx *c, int t)
{
	return superset(c->j, t, readonly_paths);
}

static int c_log_size(struct ctx *c, int t)
{
	return ab_json_str_eq(c->j, t, c->l->log_max_size);
}

static int c_tmpfs(struct ctx *c, int t)
{
	const char *const *p;
	int n = 0;

	if (c->l->tmpfs == NULL)
		return is_zero(c->j, t);
	for (p = c->l->tmpfs; p[0] != NULL; p += 2, n++)
		if (!ab_json_str_eq(c->j, ab_json_key(c->j, t, p[0]), p[1]))
			return 0;
	return ab_json_count(c->j, t) == n;
}

static int c_ulimits(struct ctx *c, int t)
{
	static const char *const keys[] = { "Name", "Soft", "Hard", NULL };
	const struct ab_json *j = c->j;
	int u = ab_json_elem(j, t, 0);

	if (c->l->nofile == 0)
		return is_zero(j, t);
	return ab_json_type(j, t) == AB_JSON_ARRAY &&
	    ab_json_count(j, t) == 1 && keys_within(j, u, keys) &&
	    ab_json_str_eq(j, ab_json_key(j, u, "Name"), "nofile") &&
	    int_is(j, ab_json_key(j, u, "Soft"), c->l->nofile) &&
	    int_is(j, ab_json_key(j, u, "Hard"), c->l->nofile);
}

/* What the API sets when no console size is given. */
static int c_console(struct ctx *c, int t)
{
	return is_zero(c->j, t) || (ab_json_count(c->j, t) == 2 &&
	    int_is(c->j, ab_json_elem(c->j, t, 0), 0) &&
	    int_is(c->j, ab_json_elem(c->j, t, 1), 0));
}

/* AppArmor: none on a host without it, the engine's default profile on
 * a host with it; never "unconfined" nor any other profile. */
static int c_apparmor(struct ctx *c, int t)
{
	return ab_json_str_eq(c->j, t, "") ||
	    ab_json_str_eq(c->j, t, "docker-default");
}

/* SELinux: none, or a label of the engine's confined container type. */
static int selinux_type(const struct ab_json *j, int t, const char *type)
{
	char *v = ab_json_str(j, t), *p;
	size_t k = strlen(type);
	int ok = 0;

	if (v != NULL && *v == '\0')
		ok = 1;
	else if (v != NULL && (p = strchr(v, ':')) != NULL &&
	    (p = strchr(p + 1, ':')) != NULL)
		ok = strncmp(p + 1, type, k) == 0 && p[1 + k] == ':';
	free(v);
	return ok;
}

static int c_process_label(struct ctx *c, int t)
{
	return selinux_type(c->j, t, "container_t");
}

static int c_mount_label(struct ctx *c, int t)
{
	return selinux_type(c->j, t, "container_file_t");
}

/* HostConfig.Mounts is the request as the daemon kept it: exactly the
 * lockdown's volumes, no copy of the image, no other option. */
static int req_mount_is(const struct ab_json *j, int t,
    const struct ab_mount *m)
{
	static const char *const keys[] = { "Type", "Source", "Target",
	    "ReadOnly", "VolumeOptions", "Consistency", NULL };
	static const char *const vopts[] = { "NoCopy", NULL };
	int vo = ab_json_key(j, t, "VolumeOptions");
	int ro = ab_json_key(j, t, "ReadOnly");

	return keys_within(j, t, keys) && keys_within(j, vo, vopts) &&
	    ab_json_str_eq(j, ab_json_key(j, t, "Type"), "volume") &&
	    ab_json_str_eq(j, ab_json_key(j, t, "Source"), m->volume) &&
	    ab_json_str_eq(j, ab_json_key(j, t, "Target"), m->target) &&
	    /* The engine omits a false ReadOnly. */
	    (m->readonly ? bool_is(j, ro, 1) : is_zero(j, ro)) &&
	    bool_is(j, ab_json_key(j, vo, "NoCopy"), 1) &&
	    is_zero(j, ab_json_key(j, t, "Consistency"));
}

/* Mounts is what the engine mounted.  Source is the engine's own path of
 * the volume; Mode "z" is its default for named volumes (an SELinux
 * relabel, nothing without SELinux). */
static int act_mount_is(const struct ab_json *j, int t,
    const struct ab_mount *m)
{
	static const char *const keys[] = { "Type", "Name", "Source",
	    "Destination", "Driver", "Mode", "RW", "Propagation", NULL };
	int mode = ab_json_key(j, t, "Mode");

	return keys_within(j, t, keys) &&
	    ab_json_str_eq(j, ab_json_key(j, t, "Type"), "volume") &&
	    ab_json_str_eq(j, ab_json_key(j, t, "Name"), m->volume) &&
	    ab_json_str_eq(j, ab_json_key(j, t, "Destination"), m->target) &&
	    ab_json_str_eq(j, ab_json_key(j, t, "Driver"), "local") &&
	    (is_zero(j, mode) || ab_json_str_eq(j, mode, "z")) &&
	    bool_is(j, ab_json_key(j, t, "RW"), !m->readonly) &&
	    is_zero(j, ab_json_key(j, t, "Propagation"));
}

/* Each of the lockdown's mounts matched by exactly one entry, and no
 * other entry. */
static int mounts_are(const struct ab_json *j, int t, const struct ab_lock *l,
    int (*is)(const struct ab_json *, int, const struct ab_mount *))
{
	int i, k, e, hits;

	if (l->nmounts == 0)
		return is_zero(j, t);
	if (ab_json_type(j, t) != AB_JSON_ARRAY ||
	    ab_json_count(j, t) != l->nmounts)
		return 0;
	for (i = 0; i < l->nmounts; i++) {
		for (hits = 0, k = 0; (e = ab_json_elem(j, t, k)) >= 0; k++)
			hits += is(j, e, &l->mounts[i]);
		if (hits != 1)
			return 0;
	}
	return 1;
}

static int c_req_mounts(struct ctx *c, int t)
{
	return mounts_are(c->j, t, c->l, req_mount_is);
}

static int c_act_mounts(struct ctx *c, int t)
{
	return mounts_are(c->j, t, c->l, act_mount_is);
}

/* --- the rules ------------------------------------------------------- */

#define V(p, why) { p, VARY, why, NULL }
#define Z(p) { p, ZERO, NULL, NULL }
#define S(p, v) { p, STR, v, NULL }
#define T(p) { p, TRUE, NULL, NULL }
#define C(p, fn) { p, CHECK, NULL, fn }

/* Causes come first, so the drift is named by what was changed: a host
 * PID or IPC namespace makes the engine add "label=disable" to
 * SecurityOpt, and an entrypoint or command changes Path and Args. */
static const struct rule first[] = {
	C("Config.Entrypoint", c_entrypoint), C("Config.Cmd", c_cmd),
	Z("HostConfig.PidMode"), Z("HostConfig.UTSMode"),
	Z("HostConfig.UsernsMode"), S("HostConfig.IpcMode", "private"),
	S("HostConfig.CgroupnsMode", "private"),
	C("HostConfig.NetworkMode", c_netmode), Z("HostConfig.Privileged"),
	{ NULL, VARY, NULL, NULL }
};

static const struct rule rules[] = {
	V("Id", "the engine's name for it; callers compare it with their record"),
	V("Created", "a timestamp"),
	C("Path", c_path), C("Args", c_args),
	V("State", "state, not configuration; callers check what they need"),
	C("Image", c_image),
	V("ResolvConfPath", "the engine's own file for this container"),
	V("HostnamePath", "the engine's own file for this container"),
	V("HostsPath", "the engine's own file for this container"),
	V("LogPath", "the engine's own file for this container"),
	V("Name", "chosen at create; the record keeps the Id"),
	V("RestartCount", "state; the restart policy is compared"),
	V("Driver", "the engine's storage driver"),
	S("Platform", "linux"),
	C("MountLabel", c_mount_label), C("ProcessLabel", c_process_label),
	C("AppArmorProfile", c_apparmor),
	Z("ExecIDs"),
	V("GraphDriver", "the engine's storage paths"),
	V("ImageManifestDescriptor", "the engine's description of Image"),
	C("Mounts", c_act_mounts),

	Z("HostConfig.Binds"), Z("HostConfig.ContainerIDFile"),
	S("HostConfig.LogConfig.Type", "json-file"),
	S("HostConfig.LogConfig.Config.max-file", "1"),
	C("HostConfig.LogConfig.Config.max-size", c_log_size),
	C("HostConfig.NetworkMode", c_netmode), Z("HostConfig.PortBindings"),
	S("HostConfig.RestartPolicy.Name", "no"),
	Z("HostConfig.RestartPolicy.MaximumRetryCount"),
	Z("HostConfig.AutoRemove"), Z("HostConfig.VolumeDriver"),
	Z("HostConfig.VolumesFrom"), Z("HostConfig.CapAdd"),
	C("HostConfig.CapDrop", c_capdrop),
	S("HostConfig.CgroupnsMode", "private"),
	Z("HostConfig.Dns"), Z("HostConfig.DnsOptions"),
	Z("HostConfig.DnsSearch"), Z("HostConfig.ExtraHosts"),
	C("HostConfig.GroupAdd", c_groupadd),
	S("HostConfig.IpcMode", "private"),
	Z("HostConfig.Cgroup"), Z("HostConfig.Links"),
	Z("HostConfig.OomScoreAdj"), Z("HostConfig.PidMode"),
	Z("HostConfig.Privileged"), Z("HostConfig.PublishAllPorts"),
	T("HostConfig.ReadonlyRootfs"),
	C("HostConfig.SecurityOpt", c_secopt), Z("HostConfig.StorageOpt"),
	C("HostConfig.Tmpfs", c_tmpfs), Z("HostConfig.UTSMode"),
	Z("HostConfig.UsernsMode"), C("HostConfig.ShmSize", c_shm),
	Z("HostConfig.Sysctls"), C("HostConfig.Runtime", c_runtime),
	C("HostConfig.ConsoleSize", c_console), Z("HostConfig.Isolation"),
	Z("HostConfig.CpuShares"), C("HostConfig.Memory", c_memory),
	C("HostConfig.NanoCpus", c_cpus), Z("HostConfig.CgroupParent"),
	Z("HostConfig.BlkioWeight"), Z("HostConfig.BlkioWeightDevice"),
	Z("HostConfig.BlkioDeviceReadBps"), Z("HostConfig.BlkioDeviceWriteBps"),
	Z("HostConfig.BlkioDeviceReadIOps"),
	Z("HostConfig.BlkioDeviceWriteIOps"),
	Z("HostConfig.CpuPeriod"), Z("HostConfig.CpuQuota"),
	Z("HostConfig.CpuRealtimePeriod"), Z("HostConfig.CpuRealtimeRuntime"),
	Z("HostConfig.CpusetCpus"), Z("HostConfig.CpusetMems"),
	Z("HostConfig.Devices"), Z("HostConfig.DeviceCgroupRules"),
	Z("HostConfig.DeviceRequests"), Z("HostConfig.KernelMemory"),
	Z("HostConfig.KernelMemoryTCP"), Z("HostConfig.MemoryReservation"),
	C("HostConfig.MemorySwap", c_memory),
	Z("HostConfig.MemorySwappiness"), Z("HostConfig.OomKillDisable"),
	C("HostConfig.PidsLimit", c_pids), C("HostConfig.Ulimits", c_ulimits),
	Z("HostConfig.CpuCount"), Z("HostConfig.CpuPercent"),
	Z("HostConfig.IOMaximumIOps"), Z("HostConfig.IOMaximumBandwidth"),
	C("HostConfig.Mounts", c_req_mounts),
	C("HostConfig.MaskedPaths", c_masked),
	C("HostConfig.ReadonlyPaths", c_readonly_paths),
	Z("HostConfig.Init"), Z("HostConfig.Capabilities"),
	Z("HostConfig.Annotations"),

	C("Config.Hostname", c_hostname), Z("Config.Domainname"),
	C("Config.User", c_user), Z("Config.AttachStdin"),
	Z("Config.AttachStdout"), Z("Config.AttachStderr"), Z("Config.Tty"),
	Z("Config.OpenStdin"), Z("Config.StdinOnce"), C("Config.Env", c_env),
	C("Config.Cmd", c_cmd), C("Config.Image", c_image),
	Z("Config.Volumes"), C("Config.WorkingDir", c_workdir),
	C("Config.Entrypoint", c_entrypoint),
	C("Config.NetworkDisabled", c_netdisabled), Z("Config.OnBuild"),
	C("Config.Labels", c_labels), Z("Config.StopSignal"),
	Z("Config.StopTimeout"), Z("Config.Healthcheck"),
	Z("Config.ExposedPorts"), Z("Config.ArgsEscaped"), Z("Config.Shell"),
	Z("Config.MacAddress"),

	Z("NetworkSettings.Bridge"),
	V("NetworkSettings.SandboxID", "the engine's namespace of this container"),
	V("NetworkSettings.SandboxKey", "the engine's namespace of this container"),
	Z("NetworkSettings.HairpinMode"),
	Z("NetworkSettings.LinkLocalIPv6Address"),
	Z("NetworkSettings.LinkLocalIPv6PrefixLen"), Z("NetworkSettings.Ports"),
	Z("NetworkSettings.SecondaryIPAddresses"),
	Z("NetworkSettings.SecondaryIPv6Addresses"),
	Z("NetworkSettings.EndpointID"), Z("NetworkSettings.Gateway"),
	Z("NetworkSettings.GlobalIPv6Address"),
	Z("NetworkSettings.GlobalIPv6PrefixLen"),
	Z("NetworkSettings.IPAddress"), Z("NetworkSettings.IPPrefixLen"),
	Z("NetworkSettings.IPv6Gateway"), Z("NetworkSettings.MacAddress"),
	C("NetworkSettings.Networks", c_networks),
	{ NULL, VARY, NULL, NULL }
};

/* --- the walk -------------------------------------------------------- */

static int drift(const char *field, struct ab_err *err)
{
	return ab_fail(err, AB_EREFUSED, "lockdown drift: %s", field);
}

static int drift_in(const struct ctx *c, const char *field,
    struct ab_err *err)
{
	return ab_fail(err, AB_EREFUSED, "lockdown drift: %s%s", field,
	    c->detail);
}

static const struct rule *rule_of(const char *path)
{
	const struct rule *r;

	for (r = rules; r->path != NULL; r++)
		if (strcmp(r->path, path) == 0)
			return r;
	return NULL;
}

static int apply(struct ctx *c, const struct rule *r, int t,
    struct ab_err *err)
{
	int ok;

	switch (r->how) {
	case VARY: ok = 1; break;
	case ZERO: ok = is_zero(c->j, t); break;
	case STR: ok = ab_json_str_eq(c->j, t, r->v); break;
	case TRUE: ok = bool_is(c->j, t, 1); break;
	default: ok = r->fn(c, t); break;
	}
	return ok ? 0 : drift_in(c, r->path, err);
}

/* Every member of object T, at PATH, is named by a rule. */
static int walk(struct ctx *c, int t, char *path, size_t len,
    struct ab_err *err)
{
	const struct rule *r;
	int i, n = ab_json_count(c->j, t), m;
	char *key;

	for (i = 0; i < n; i++) {
		m = ab_json_member(c->j, t, i);
		key = ab_json_str(c->j, m);
		if (key == NULL || strchr(key, '.') != NULL ||
		    len + 1 + strlen(key) >= 256 || ab_fmt(path + len,
		    256 - len, "%s%s", len ? "." : "", key) < 0) {
			free(key);
			return drift(path[0] ? path : "(root)", err);
		}
		free(key);
		r = rule_of(path);
		if (r != NULL && apply(c, r, m + 1, err) < 0)
			return -1;
		if (r == NULL && ab_json_type(c->j, m + 1) != AB_JSON_OBJECT)
			return ab_fail(err, AB_EREFUSED, "lockdown drift: %s "
			    "(a field agentbox does not know)", path);
		if (r == NULL && walk(c, m + 1, path, strlen(path), err) < 0)
			return -1;
		path[len] = '\0';
	}
	return 0;
}

int ab_lock_check_doc(const struct ab_json *ins, const struct ab_json *img,
    const struct ab_lock *l, struct ab_err *err)
{
	char detail[128] = "";
	struct ctx c = { ins, img, l, detail };
	const struct rule *r;
	char path[256] = "";
	int t;

	if (ab_json_type(ins, 0) != AB_JSON_OBJECT)
		return drift("(root)", err);
	for (r = first; r->path != NULL; r++)
		if (apply(&c, r, ab_json_get(ins, 0, r->path), err) < 0)
			return -1;
	if (walk(&c, 0, path, 0, err) < 0)
		return -1;
	/* What the lockdown requires must be there, not merely not wrong. */
	for (r = rules; r->path != NULL; r++) {
		t = ab_json_get(ins, 0, r->path);
		if (ab_json_type(ins, t) == AB_JSON_ABSENT &&
		    apply(&c, r, t, err) < 0)
			return -1;
	}
	if (l->running && !bool_is(ins, ab_json_get(ins, 0, "State.Running"), 1))
		return drift("State.Running", err);
	return 0;
}
