/* lockcheck-test.c: unit tests for lib/box/lockcheck.c, TAP output.
 *
 * fixtures/inspect-agent.json is an agent container's inspect document as
 * Engine 20.10 reported it (ab-validate of an execution profile; its
 * invocation's group, GroupAdd and AB_PROBE_GROUP, as the engine reports
 * them, added since), and
 * fixtures/inspect-image.json the labels of its image.  The lockdown is
 * rebuilt from the same values with the production code (ab_profile_lock),
 * then fields are changed the way a host the engine here cannot imitate
 * would change them (AppArmor, SELinux, fields of newer engines).
 *
 * Run with the fixtures directory as the only argument.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"
#include "json.h"
#include "profile.h"
#include "tap.h"

static struct ab_buf doc, image;
static struct ab_profile_lock k;

static void load(const char *dir, const char *name, struct ab_buf *b)
{
	char path[4096];
	struct ab_err err;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	ab_buf_init(b, 1 << 20);
	if (ab_file_read_at(AT_FDCWD, path, b, NULL, &err) < 0) {
		printf("Bail out! %s\n", err.msg);
		exit(1);
	}
}

/* The lockdown the fixture was validated against. */
static void make_lock(struct ab_profile *p, struct ab_alloc *a)
{
	static char *argv[] = { "sh", "-c", "echo hi", NULL };
	int i;

	memset(p, 0, sizeof *p);
	snprintf(p->id, sizeof p->id, "76da2f7c4c4901ce0bc49ac6c8048298");
	snprintf(p->phase, sizeof p->phase, "execution");
	snprintf(p->nonce, sizeof p->nonce, "77f5ce085fb3c330eeaac40132cdeb1e");
	snprintf(p->path_env, sizeof p->path_env, "/usr/bin:/bin");
	p->group = 123456;
	p->memory = 1946157056;
	p->pids = 256;
	p->nano_cpus = 1000000000;
	p->home_bytes = AB_HOME_BYTES;
	p->home_inodes = AB_HOME_INODES;
	p->tmp_bytes = AB_TMP_BYTES;
	p->tmp_inodes = AB_TMP_INODES;
	for (i = 0; argv[i] != NULL; i++)
		p->argv[i] = argv[i];
	p->argc = i;
	ab_alloc_init(a, "e95266f99b0f37934b282aacb9ecbc63",
	    "f1e8a27a9fae69b845ff67e6bd15e7a1");
	ab_profile_lock(p, a, "sha256:fd5a6f74866c2d235c8521574207fb04697d0f"
	    "46bcba05a94d3b28545b2c209c", "f1e8a27a9fae69b845ff67e6bd15e7a1",
	    0, &k);
}

/* Checks the fixture with FROM replaced by TO (both NULL: unchanged).
 * Returns 0, or -1 with the message in msg. */
static int check(const char *from, const char *to, char *msg)
{
	struct ab_json j, img;
	struct ab_buf b;
	struct ab_err err;
	const char *at;
	int rc;

	ab_buf_init(&b, 2u << 20);	/* the fixture (1 MiB at most) edited */
	at = from ? strstr(doc.data, from) : NULL;
	if (from != NULL && at == NULL) {
		printf("# fixture lacks %s\n", from);
		return -2;
	}
	if (at == NULL) {
		ab_buf_add(&b, doc.data, doc.len);
	} else {
		ab_buf_add(&b, doc.data, (size_t)(at - doc.data));
		ab_buf_adds(&b, to);
		ab_buf_adds(&b, at + strlen(from));
	}
	memset(&err, 0, sizeof err);
	if (ab_json_parse(&j, b.data, b.len, &err) < 0 ||
	    ab_json_parse(&img, image.data, image.len, &err) < 0) {
		printf("# %s\n", err.msg);
		ab_buf_free(&b);
		return -2;
	}
	rc = ab_lock_check_doc(&j, &img, &k.l, &err);
	snprintf(msg, 768, "%s", rc < 0 ? err.msg : "");
	ab_json_free(&j);
	ab_json_free(&img);
	ab_buf_free(&b);
	return rc;
}

static void accepted(const char *from, const char *to, const char *desc)
{
	char msg[768];
	int rc = check(from, to, msg);

	if (rc == -1)
		printf("# refused: %s\n", msg);
	ok(rc == 0, desc);
}

static void refused(const char *from, const char *to, const char *want,
    const char *desc)
{
	char msg[768];
	int rc = check(from, to, msg);

	if (rc == 0 || (rc == -1 && strcmp(msg, want) != 0))
		printf("# got \"%s\", wanted \"%s\"\n", rc ? msg : "accepted",
		    want);
	ok(rc == -1 && strcmp(msg, want) == 0, desc);
}

int main(int argc, char **argv)
{
	struct ab_profile p;
	struct ab_alloc a;

	if (argc != 2) {
		fprintf(stderr, "usage: lockcheck-test FIXTURES\n");
		return 2;
	}
	plan(23);
	load(argv[1], "inspect-agent.json", &doc);
	load(argv[1], "inspect-image.json", &image);
	make_lock(&p, &a);

	accepted(NULL, NULL, "the document as the engine made it is accepted");
	refused("\"AppArmorProfile\": \"\"", "\"AppArmorProfile\": "
	    "\"unconfined\"", "lockdown drift: AppArmorProfile",
	    "AppArmor unconfined is refused");
	refused("\"AppArmorProfile\": \"\"", "\"AppArmorProfile\": \"custom\"",
	    "lockdown drift: AppArmorProfile",
	    "an AppArmor profile other than the engine's default is refused");
	accepted("\"AppArmorProfile\": \"\"", "\"AppArmorProfile\": "
	    "\"docker-default\"", "the engine's default AppArmor profile is "
	    "accepted");
	refused("\"ProcessLabel\": \"\"", "\"ProcessLabel\": "
	    "\"system_u:system_r:spc_t:s0\"", "lockdown drift: ProcessLabel",
	    "an unconfined SELinux process type is refused");
	accepted("\"ProcessLabel\": \"\"", "\"ProcessLabel\": "
	    "\"system_u:system_r:container_t:s0:c1,c2\"",
	    "the engine's confined SELinux process type is accepted");
	refused("\"MountLabel\": \"\"", "\"MountLabel\": "
	    "\"system_u:object_r:unlabeled_t:s0\"", "lockdown drift: MountLabel",
	    "a foreign SELinux mount type is refused");
	refused("\"Platform\": \"linux\",", "\"Platform\": \"linux\", "
	    "\"Extra\": false,", "lockdown drift: Extra (a field agentbox "
	    "does not know)", "a field no rule names is refused, even false");
	refused("\"CgroupParent\": \"\",", "\"CgroupParent\": \"\", "
	    "\"NewLimit\": 0,", "lockdown drift: HostConfig.NewLimit (a field "
	    "agentbox does not know)", "an unknown HostConfig field is refused");
	accepted("\"CgroupParent\": \"\",", "\"CgroupParent\": \"\", "
	    "\"Annotations\": null,", "a listed field of newer engines, "
	    "empty, is accepted");
	refused("\"CgroupParent\": \"\",", "\"CgroupParent\": \"\", "
	    "\"Annotations\": {\"a\": \"b\"},",
	    "lockdown drift: HostConfig.Annotations",
	    "a listed field of newer engines, set, is refused");
	refused("\"ReadonlyRootfs\": true,", "",
	    "lockdown drift: HostConfig.ReadonlyRootfs",
	    "a required field that is absent is refused");
	refused("\"ExecIDs\": null", "\"ExecIDs\": [\"e\"]",
	    "lockdown drift: ExecIDs", "an exec into the container is drift");
	refused("\"org.agentbox.version.git\": \"2.39.5\"",
	    "\"org.agentbox.version.git\": \"2.39.6\"",
	    "lockdown drift: Config.Labels.org.agentbox.version.git",
	    "an inherited label that differs from the image's is refused");
	refused("\"Mode\": \"z\"", "\"Mode\": \"Z\"", "lockdown drift: Mounts",
	    "a mount mode other than the engine's default is refused");
	refused("\"NoCopy\": true", "\"NoCopy\": true, \"Subpath\": \"x\"",
	    "lockdown drift: HostConfig.Mounts",
	    "a volume option agentbox does not set is refused");
	refused("\"Hostname\": \"563f58e43c3d\"", "\"Hostname\": \"host\"",
	    "lockdown drift: Config.Hostname",
	    "a hostname other than the engine's default is refused");
	refused("\"max-size\": \"1m\"", "\"max-size\": \"1m\", \"compress\": "
	    "\"true\"", "lockdown drift: HostConfig.LogConfig.Config.compress "
	    "(a field agentbox does not know)",
	    "a log option agentbox does not set is refused");
	refused("\"Networks\": {}", "\"Networks\": {\"bridge\": {}}",
	    "lockdown drift: NetworkSettings.Networks",
	    "a network endpoint is refused");
	refused("\"State\": {", "\"State\": {}, \"X\": {", "lockdown drift: "
	    "X.Status (a field agentbox does not know)",
	    "an unknown object is walked and its fields refused");
	refused("\"GroupAdd\": [\n   \"123456\"\n  ]", "\"GroupAdd\": null",
	    "lockdown drift: HostConfig.GroupAdd",
	    "a container without its invocation's group is refused");
	refused("\"123456\"\n  ]", "\"123457\"\n  ]",
	    "lockdown drift: HostConfig.GroupAdd",
	    "another invocation's group is refused");
	refused("\"123456\"\n  ]", "\"123456\", \"0\"\n  ]",
	    "lockdown drift: HostConfig.GroupAdd",
	    "a group beside the invocation's is refused");
	ab_buf_free(&doc);
	ab_buf_free(&image);
	return done_testing();
}
