/* ab-privs: asks the kernel the agent runs on whether this process holds
 * any privilege, for the probe.  Under gVisor, /proc/self/status shows
 * no NoNewPrivs or CapAmb line, so the probe cannot read them there; the
 * kernel answers the calls themselves: prctl(PR_GET_NO_NEW_PRIVS),
 * prctl(PR_GET_SECCOMP), capget(2), and each capability's bounding and
 * ambient bit.  Engine inspect shows what was asked for, never what the
 * kernel enforces; this is the enforcing kernel's own answer.
 *
 * Last, it tries to make a user namespace, both ways a sandbox does
 * (unshare(2), and clone(2) as bubblewrap does): each must fail.  A user
 * namespace is where an unprivileged sandbox gets the capabilities it
 * needs; without one, Codex's bubblewrap cannot start, so no command runs
 * in Codex's own sandbox instead of going through agentbox's approval.
 *
 * Silent and 0 when no_new_privs is set, a seccomp filter is in force,
 * every capability set is empty and no user namespace can be made;
 * otherwise it prints the first check that failed, as the probe names it,
 * and exits 1.
 */
#include <errno.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "version.h"

/* Far past CAP_LAST_CAP of any kernel: the kernel says EINVAL first. */
#define CAP_PROBE_MAX 64

static int fail(const char *what)
{
	printf("%s\n", what);
	return 1;
}

static int sets_empty(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	int i;

	memset(d, 0xff, sizeof d);
	if (syscall(SYS_capget, &h, d) != 0)
		return fail("capget");
	for (i = 0; i < 2; i++) {
		if (d[i].effective != 0)
			return fail("CapEff");
		if (d[i].permitted != 0)
			return fail("CapPrm");
		if (d[i].inheritable != 0)
			return fail("CapInh");
	}
	return 0;
}

/* A capability the kernel does not know ends the walk (EINVAL); one it
 * knows must be out of both the bounding and the ambient set. */
static int bits_empty(void)
{
	int cap, r;

	for (cap = 0; cap < CAP_PROBE_MAX; cap++) {
		r = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
		if (r < 0 && errno == EINVAL && cap > 0)
			return 0;
		if (r != 0)
			return fail("CapBnd");
		r = prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0);
		if (r != 0 && !(r < 0 && errno == EINVAL))
			return fail("CapAmb");
	}
	return fail("CapBnd");
}

/* Neither call may make a user namespace.  Run last: a namespace made
 * would hold every capability, in it, for the rest of this process.  The
 * clone's child, in its namespace, ends at once. */
static int userns_closed(void)
{
	long pid;

	if (unshare(CLONE_NEWUSER) == 0)
		return fail("user namespace");
	pid = syscall(SYS_clone, (long)(CLONE_NEWUSER | SIGCHLD), 0L, 0L, 0L,
	    0L);
	if (pid == 0)
		_exit(0);
	if (pid > 0) {
		waitpid((pid_t)pid, NULL, 0);
		return fail("user namespace");
	}
	return 0;
}

static const char usage_text[] = "usage: ab-privs [--version | --help]\n";

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		printf("%s\n", AB_VERSION);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (argc != 1) {
		fputs(usage_text, stderr);
		return 2;
	}
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		return fail("NoNewPrivs");
	/* 2: SECCOMP_MODE_FILTER. */
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 2)
		return fail("Seccomp");
	if (sets_empty() != 0 || bits_empty() != 0 || userns_closed() != 0)
		return 1;
	return 0;
}
