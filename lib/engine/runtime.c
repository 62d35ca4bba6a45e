#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

int ab_runtime_name_ok(const char *name)
{
	size_t n = strlen(name), i;

	if (n == 0 || n >= AB_RUNTIME_NAME_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') ||
		    (name[i] >= 'A' && name[i] <= 'Z') ||
		    (name[i] >= '0' && name[i] <= '9') ||
		    strchr("._-", name[i]) != NULL))
			return 0;
	return 1;
}

int ab_runtime_is_runc(const char *name)
{
	return strcmp(name, AB_RUNTIME_DEFAULT) == 0;
}

static void add_name(struct ab_runtime *rt, const struct ab_json *j, int k)
{
	char *s = ab_json_str(j, k);
	size_t len = strlen(rt->names);

	/* A list cut short still reads: a name that does not fit is left
	 * out. */
	if (s != NULL && ab_fmt(rt->names + len, sizeof rt->names - len,
	    "%s%s", len ? ", " : "", s) < 0)
		rt->names[len] = '\0';
	free(s);
}

static void read_one(const struct ab_json *j, int t, struct ab_runtime *rt)
{
	char *s;
	int args, i, a;

	rt->found = 1;
	s = ab_json_str(j, ab_json_key(j, t, "path"));
	if (ab_fmt(rt->path, sizeof rt->path, "%s", s ? s : "") < 0) {
		free(s);
		rt->nargs = -1;	/* longer than is read */
		return;
	}
	free(s);
	args = ab_json_key(j, t, "runtimeArgs");
	for (i = 0; (a = ab_json_elem(j, args, i)) >= 0; i++) {
		s = i < AB_RUNTIME_ARGS_MAX ? ab_json_str(j, a) : NULL;
		if (s == NULL || ab_fmt(rt->args[i], sizeof rt->args[i], "%s",
		    s) < 0) {
			free(s);
			rt->nargs = -1;	/* more, or longer, than is read */
			return;
		}
		free(s);
		rt->nargs = i + 1;
	}
}

void ab_runtime_read(const struct ab_json *j, const char *name,
    struct ab_runtime *rt)
{
	int all = ab_json_key(j, 0, "Runtimes"), i, k;

	memset(rt, 0, sizeof *rt);
	if (ab_fmt(rt->name, sizeof rt->name, "%s", name) < 0)
		return;	/* no runtime is found under a cut name */
	for (i = 0; (k = ab_json_member(j, all, i)) >= 0; i++) {
		add_name(rt, j, k);
		if (ab_json_str_eq(j, k, name) &&
		    ab_json_type(j, k + 1) == AB_JSON_OBJECT)
			read_one(j, k + 1, rt);
	}
}

/* One argument, as runsc reads it: -NAME or --NAME, then =VALUE or
 * nothing.  A value given as the next argument is not taken apart: it
 * reads as an argument of its own, which no rule knows. */
static int split(const char *arg, char *name, size_t cap, const char **value)
{
	const char *eq;
	size_t len;

	if (arg[0] != '-')
		return -1;
	arg += arg[1] == '-' ? 2 : 1;
	eq = strchr(arg, '=');
	len = eq ? (size_t)(eq - arg) : strlen(arg);
	if (len >= cap)
		return -1;
	memcpy(name, arg, len);
	name[len] = '\0';
	*value = eq ? eq + 1 : NULL;
	return 0;
}

struct seen {
	int network, seccomp, uds_open;
};

static int bad_arg(const struct ab_runtime *rt, const char *arg,
    const char *why, struct ab_err *err)
{
	return ab_fail(err, AB_EREFUSED, "runtime %s: argument %.100s %s",
	    rt->name, arg, why);
}

static int one_arg(const struct ab_runtime *rt, const char *arg,
    struct seen *s, struct ab_err *err)
{
	const char *v;
	char name[32];

	if (split(arg, name, sizeof name, &v) < 0)
		return bad_arg(rt, arg, "is not one agentbox knows (give "
		    "each as --NAME=VALUE)", err);
	if (strcmp(name, "network") == 0) {
		if (v == NULL || strcmp(v, "none") != 0)
			return bad_arg(rt, arg, "gives the sandbox a network "
			    "of its own (--network=none is needed)", err);
		s->network = 1;
	} else if (strcmp(name, "oci-seccomp") == 0) {
		if (v != NULL && strcmp(v, "true") != 0)
			return bad_arg(rt, arg, "turns the seccomp profile "
			    "off", err);
		s->seccomp = 1;
	} else if (strcmp(name, "host-uds") == 0) {
		if (v == NULL || (strcmp(v, "none") != 0 &&
		    strcmp(v, "open") != 0))
			return bad_arg(rt, arg, "lets the agent create host "
			    "sockets (only --host-uds=open, to reach the "
			    "egress proxy)", err);
		s->uds_open = strcmp(v, "open") == 0;
	} else if (strcmp(name, "platform") == 0) {
		if (v == NULL || (strcmp(v, "ptrace") != 0 &&
		    strcmp(v, "kvm") != 0 && strcmp(v, "systrap") != 0))
			return bad_arg(rt, arg, "names no platform agentbox "
			    "knows (ptrace, kvm, systrap)", err);
	} else {
		return bad_arg(rt, arg, "is not one agentbox knows to keep "
		    "its guarantees", err);
	}
	return 0;
}

int ab_runtime_check(const struct ab_runtime *rt, int egress,
    const char *where, struct ab_err *err)
{
	struct seen s = { 0, 0, 0 };
	const char *base;
	int i;

	if (ab_runtime_is_runc(rt->name))
		return 0;
	if (!rt->found)
		return ab_fail(err, AB_EREFUSED, "runtime %s is not registered "
		    "on the engine at %s (it has: %s)", rt->name, where,
		    rt->names[0] ? rt->names : "none");
	base = strrchr(rt->path, '/');
	base = base ? base + 1 : rt->path;
	if (strcmp(base, "runsc") != 0)
		return ab_fail(err, AB_EREFUSED, "runtime %s runs %.100s: "
		    "agentbox proves its lockdown under runc and gVisor's "
		    "runsc only, registered with its arguments in the "
		    "engine's runtimes (a wrapper's own cannot be seen)",
		    rt->name, rt->path);
	if (rt->nargs < 0)
		return ab_fail(err, AB_EREFUSED, "runtime %s: more, or longer, "
		    "arguments than agentbox reads (16 of 127 bytes)", rt->name);
	for (i = 0; i < rt->nargs; i++)
		if (one_arg(rt, rt->args[i], &s, err) < 0)
			return -1;
	if (!s.network || !s.seccomp)
		return ab_fail(err, AB_EREFUSED, "runtime %s lacks %s among "
		    "its runtimeArgs", rt->name, !s.network ?
		    "--network=none" : "--oci-seccomp");
	if (egress && !s.uds_open)
		return ab_fail(err, AB_EREFUSED, "runtime %s lacks "
		    "--host-uds=open among its runtimeArgs: an agent with "
		    "egress reaches the proxy through its socket", rt->name);
	return 0;
}
