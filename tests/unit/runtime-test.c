/* runtime-test.c: unit tests for lib/engine/runtime.c, TAP output: what the
 * engine's /info shows of a registered runtime, and which registrations
 * agentbox takes.  The engine tests (tests/gvisor.bats) register these
 * on a real engine; here every argument rule is taken one at a time. */
#include <stdio.h>
#include <string.h>

#include "runtime.h"

#include "tap.h"

/* /info's Runtimes with runtime "x" registered at PATH with ARGS (a JSON
 * array's inside, or NULL for no runtimeArgs at all). */
static int check(const char *path, const char *args, int egress,
    struct ab_err *err)
{
	char doc[2048];
	struct ab_runtime rt;
	struct ab_json j;

	snprintf(doc, sizeof doc, "{\"Runtimes\": {\"runc\": {\"path\": "
	    "\"runc\"}, \"x\": {\"path\": \"%s\"%s%s%s}}}", path,
	    args ? ", \"runtimeArgs\": [" : "", args ? args : "",
	    args ? "]" : "");
	if (ab_json_parse(&j, doc, strlen(doc), err) < 0) {
		printf("Bail out! %s\n", err->msg);
		return -2;
	}
	ab_runtime_read(&j, "x", &rt);
	ab_json_free(&j);
	return ab_runtime_check(&rt, egress, "E", err);
}

static const char *const good = "\"--network=none\", \"--oci-seccomp\"";

static void test_taken(void)
{
	struct ab_err err;

	ok(check("/usr/bin/runsc", good, 0, &err) == 0,
	    "runsc with --network=none and --oci-seccomp");
	ok(check("runsc", "\"--network=none\", \"--oci-seccomp\", "
	    "\"--platform=ptrace\", \"--host-uds=open\"", 1, &err) == 0,
	    "a platform, and --host-uds=open with egress");
	ok(check("/usr/bin/runsc", "\"-network=none\", \"-oci-seccomp=true\"",
	    0, &err) == 0, "one dash and =true are runsc's spellings too");
}

static void refused(const char *path, const char *args, int egress,
    const char *says, const char *desc)
{
	struct ab_err err;

	memset(&err, 0, sizeof err);
	ok(check(path, args, egress, &err) == -1 && err.code == AB_EREFUSED &&
	    strstr(err.msg, says) != NULL, desc);
	if (strstr(err.msg, says) == NULL)
		printf("# said: %s\n", err.msg);
}

static void test_refused(void)
{
	struct ab_runtime rt;
	struct ab_json j;
	struct ab_err err;
	const char *doc = "{\"Runtimes\": {\"runc\": {\"path\": \"runc\"}}}";

	refused("/usr/local/bin/runsc-wrap.sh", good, 0, "wrapper",
	    "a wrapper script: its arguments cannot be seen");
	refused("/usr/bin/runsc", NULL, 0, "--network=none",
	    "no runtimeArgs at all");
	refused("/usr/bin/runsc", "\"--oci-seccomp\"", 0, "--network=none",
	    "no --network=none");
	refused("/usr/bin/runsc", "\"--network=none\"", 0, "--oci-seccomp",
	    "no --oci-seccomp");
	refused("/usr/bin/runsc", "\"--network=none\", \"--oci-seccomp\", "
	    "\"--network=sandbox\"", 0, "network of its own",
	    "a later --network=sandbox");
	refused("/usr/bin/runsc", "\"--network=none\", "
	    "\"--oci-seccomp=false\"", 0, "seccomp profile off",
	    "--oci-seccomp=false");
	refused("/usr/bin/runsc", good, 1, "--host-uds=open",
	    "egress without --host-uds=open");
	refused("/usr/bin/runsc", "\"--network=none\", \"--oci-seccomp\", "
	    "\"--host-uds=all\"", 0, "create host sockets", "--host-uds=all");
	refused("/usr/bin/runsc", "\"--network=none\", \"--oci-seccomp\", "
	    "\"--host-uds=create\"", 1, "create host sockets",
	    "--host-uds=create");
	refused("/usr/bin/runsc", "\"--network=none\", \"--oci-seccomp\", "
	    "\"--debug-log=/tmp/x\"", 0, "not one agentbox knows",
	    "an argument agentbox does not know (a debug log)");
	refused("/usr/bin/runsc", "\"--network\", \"none\", \"--oci-seccomp\"",
	    0, "network of its own", "a value as an argument of its own");
	refused("/usr/bin/runsc", "\"--network=none\", \"--oci-seccomp\", "
	    "\"-a\", \"-a\", \"-a\", \"-a\", \"-a\", \"-a\", \"-a\", \"-a\", "
	    "\"-a\", \"-a\", \"-a\", \"-a\", \"-a\", \"-a\", \"-a\"", 0,
	    "more, or longer, arguments", "17 arguments: more than are read");
	if (ab_json_parse(&j, doc, strlen(doc), &err) < 0) {
		printf("Bail out! %s\n", err.msg);
		return;
	}
	ab_runtime_read(&j, "runsc", &rt);
	ok(ab_runtime_check(&rt, 0, "E", &err) == -1 &&
	    strstr(err.msg, "not registered on the engine at E (it has: "
	    "runc)") != NULL, "an unregistered name, with the names there are");
	ab_runtime_read(&j, "runc", &rt);
	ok(ab_runtime_check(&rt, 1, "E", &err) == 0, "runc is always taken");
	ab_json_free(&j);
}

static void test_names(void)
{
	ok(ab_runtime_name_ok("runsc") && ab_runtime_name_ok("runsc-ptrace.1"),
	    "plain names");
	ok(!ab_runtime_name_ok("") && !ab_runtime_name_ok("a b") &&
	    !ab_runtime_name_ok("a/b") && !ab_runtime_name_ok(
	    "0123456789012345678901234567890123456789012345678901234567890123"),
	    "empty, spaces, slashes and 64 characters are not");
}

int main(void)
{
	plan(19);
	test_taken();
	test_refused();
	test_names();
	return done_testing();
}
