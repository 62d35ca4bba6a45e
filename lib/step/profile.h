/* profile.h: one frozen invocation (ab-profile) and its lockdown.
 *
 * A profile records the parameters of an invocation; the container-create
 * body and everything validation expects are rebuilt from them by the same
 * code every time (ab_profile_lock), and the body stored with the record
 * must hash to the same SHA-256, so a record damaged or edited by hand
 * without care is refused.  That hash is not a seal against the state
 * directory's owner, who can recompute it: a record is trusted as its
 * owner's (the directory is 0700 and theirs), every value read from it is
 * re-checked against the bounds the command line has (profile_bounded in
 * profile.c), and everything the engine knows is compared with the engine
 * itself.
 *
 * Every agent runs as the same uid (10001) on volumes every agent of the
 * allocation mounts, so owner bits keep nothing from another agent.  Each
 * invocation gets a group of its own instead: a random GID no image uses,
 * which its container alone is given (HostConfig.GroupAdd, validated
 * exactly).  Its files on the shared volumes (prompt, schema, trust
 * anchors, Codex's rules, the credential's snapshot, a sign-in's copy)
 * are in a directory of its own there, owned by root and that group,
 * 0750, each file 0440 (a sign-in's 0660: Codex rewrites it), so no
 * other agent can open, or even name, them.
 */
#ifndef AB_PROFILE_H
#define AB_PROFILE_H

#include "adapter.h"
#include "alloc.h"
#include "deadline.h"
#include "err.h"
#include "keeper.h"
#include "lockdown.h"
#include "runtime.h"
#include "signin.h"
#include "state.h"

/* What the agent's TLS clients trust with --ca: the image's anchors and
 * the given ones, which the probe puts together. */
#define AB_CA_BUNDLE "/tmp/agentbox-ca.pem"
#define AB_CA_EXTRA "/tmp/agentbox-ca-extra.pem"	/* the added ones */
#define AB_RELAY_URL "http://127.0.0.1:3128"
#define AB_MAX_ARGV 256

/* HOME and /tmp of every agent container (tmpfs), fixed. */
#define AB_HOME_BYTES (64LL << 20)
#define AB_HOME_INODES 10000
#define AB_TMP_BYTES (256LL << 20)
#define AB_TMP_INODES 20000
/* What an agent needs beyond its writable ceilings (agentbox(7),
 * "LOCKDOWN": tmpfs pages count against the memory limit). */
#define AB_WORKING_SET (256LL << 20)
/* The default pids limit.  Under runsc the cgroup counts gVisor's own
 * host tasks (its sentry's threads, its gofer, the ptrace platform's
 * stubs), not the agent's processes: 44 idle, about 8 more for each
 * process alive at once, and stubs kept for reuse (162 after 100 short
 * processes one after another), so the default holds 768 more
 * (ab-profile(1)).  Reaching the limit there ends the whole sandbox. */
#define AB_PIDS_DEFAULT 256
#define AB_PIDS_RUNSC_OWN 768
/* The bounds of --memory, --pids and --cpus (in nano-CPUs). */
#define AB_MEMORY_MAX (1LL << 40)
#define AB_PIDS_MAX (1LL << 20)
#define AB_NANO_CPUS_MIN 10000000LL
#define AB_NANO_CPUS_MAX 64000000000LL
/* An invocation's group: above every ID an image or a host hands out
 * (system, users, nobody, agentbox's 10001 and 10002) and far below what
 * the kernel and runc refuse or read as "none" (2^31 - 1, 2^32 - 1). */
#define AB_GROUP_MIN 100000LL
#define AB_GROUP_MAX ((1LL << 30) - 1)

/* An invocation's files on the allocation's volumes. */
enum ab_input {
	AB_IN_PROMPT,	/* the agent's standard input (ab-profile) */
	AB_IN_SCHEMA,	/* --schema (ab-profile) */
	AB_IN_CA,	/* --ca (ab-profile) */
	AB_IN_RULES,	/* Codex's approvals (ab-profile) */
	AB_IN_SECRET,	/* the credential's snapshot (ab-validate, ab-run) */
	AB_IN_AUTH	/* a sign-in's copy, on the auth volume */
};

struct ab_profile {
	char id[AB_ID_LEN + 1];
	char alloc[AB_ID_LEN + 1];
	char phase[16];
	char attempt[65];
	char nonce[AB_ID_LEN + 1];
	char path_env[256];
	char schema_sha[65];
	char ca_sha[65];		/* --ca: "" when none */
	/* --provider: the adapter's parameters (adapter.h); argv is built
	 * from them.  "" when the argv is the caller's own. */
	char provider[16];
	char model[128];
	char prompt_sha[65];
	char cred_var[32];		/* ANTHROPIC_API_KEY, ...; "" none */
	char cred_path[4096];		/* read by ab-validate, never kept */
	/* --credential-in-agent: the credential in the agent's environment,
	 * not put in by the proxy (inject.h); only when asked. */
	int cred_in_agent;
	/* --codex-auth: a ChatGPT sign-in's auth.json; --claude-auth: a
	 * Claude sign-in's .credentials.json.  Read by ab-validate, which
	 * gives the agent placeholders and the proxy the tokens, and
	 * written back by ab-run when the proxy refreshed them (inject.h);
	 * "" none. */
	char codex_auth[4096];
	char claude_auth[4096];
	/* --runtime: the OCI runtime the agent runs under (runtime.h);
	 * "runc" in records made before there was a choice. */
	char runtime[AB_RUNTIME_NAME_MAX];
	char *schema;			/* the schema's text, or NULL */
	struct ab_deadline dl;
	long long group;		/* the invocation's own GID */
	long long memory, pids, nano_cpus;
	long long home_bytes, home_inodes, tmp_bytes, tmp_inodes;
	char *argv[AB_MAX_ARGV + 1];
	int argc;
	char *allow[AB_MAX_ARGV + 1];
	int nallow;
};

#define AB_PROFILE_ENV_MAX 48

struct ab_profile_lock {
	struct ab_lock l;
	char env_text[AB_PROFILE_ENV_MAX][600];
	const char *env[AB_PROFILE_ENV_MAX + 1];
	int env_cut;		/* a NAME=VALUE did not fit: refused */
	const char *labels[9];
	char tmpfs_text[2][200];
	const char *tmpfs[5];
	/* and egress, sign-in; under runsc HOME and /tmp */
	struct ab_mount mounts[AB_NVOL + 4];
	/* Under runsc, HOME and /tmp are volumes of the invocation's own
	 * (made by ab-validate), not tmpfs mounts: gVisor's own tmpfs keeps
	 * no inode ceiling, a tmpfs volume is the host kernel's. */
	struct ab_volume vols[2];
	int nvols;
	const char *entry[2];
	char name[96];
	char group_text[24];
	const char *group_add[2];
};

/* Where input IN of profile p goes on the keeper's volumes, and its path
 * inside a container (the keeper's and the agent's are the same). */
void ab_profile_input(const struct ab_profile *p, enum ab_input in,
    struct ab_keeper_file *f);
/* NAME=VALUE as the agent's environment's next entry (*N of them so
 * far): the one writer of the list, which refuses (env_cut, then
 * ab_profile_body) a value it would otherwise cut. */
void ab_profile_env(struct ab_profile_lock *k, int *n, const char *name,
    const char *value);
void ab_profile_env_int(struct ab_profile_lock *k, int *n, const char *name,
    long long value);
/* P's sign-in file and its kind, or NULL when it has none. */
const char *ab_profile_signin(const struct ab_profile *p,
    enum ab_oauth_kind *kind);
void ab_profile_input_path(const struct ab_profile *p, enum ab_input in,
    char *out, size_t cap);
/* P as its adapter reads it: C points into P and into PC's paths. */
struct ab_profile_call {
	struct ab_invocation c;
	char prompt[256], schema[256], rules[256], secret[256], auth[256];
};
void ab_profile_call(const struct ab_profile *p, struct ab_profile_call *pc);
/* Draws p->group: random in AB_GROUP_MIN..AB_GROUP_MAX, and no other
 * profile of the allocation's in this state directory. */
int ab_profile_group_new(struct ab_state *s, struct ab_profile *p,
    struct ab_err *err);

/* 1 when S is an attempt ID: 1 to 64 of [A-Za-z0-9._-]. */
int ab_attempt_ok(const char *s);
/* The memory a profile of this phase needs on allocation a: its writable
 * ceilings plus a working set; below it "disk full" would be an OOM. */
long long ab_profile_memory_need(const struct ab_profile *p,
    const struct ab_alloc *a);

/* The lockdown for profile p on allocation a. */
void ab_profile_lock(const struct ab_profile *p, const struct ab_alloc *a,
    const char *digest, const char *sid, int seccomp_keyword,
    struct ab_profile_lock *k);
int ab_profile_save(struct ab_state *s, const struct ab_profile *p,
    const char *body, const char *body_sha, struct ab_err *err);
/* Loads a profile; body_sha (65 bytes) receives the stored hash. */
int ab_profile_load(struct ab_state *s, const struct ab_handle *h,
    struct ab_profile *p, char *body_sha, struct ab_err *err);
void ab_profile_free(struct ab_profile *p);
/* The create body of k and its SHA-256. */
int ab_profile_body(const struct ab_profile_lock *k, struct ab_buf *body,
    char sha[65], struct ab_err *err);
/* Loads profile H and its allocation, and refuses a record whose stored
 * body is not what the code makes of its parameters: a record edited to
 * relax anything no longer hashes the same.  body_sha: 65 bytes. */
int ab_profile_open(struct ab_state *s, const struct ab_handle *h,
    struct ab_profile *p, struct ab_alloc *a, char *body_sha,
    struct ab_err *err);

/* The engine side of the chain: the registered image, a host that can
 * enforce the lockdown, the keeper running and locked.  Then k is the
 * profile's lockdown for this engine. */
int ab_profile_engine_check(struct ab_state *s, struct ab_engine *e,
    const struct ab_profile *p, const struct ab_alloc *a,
    struct ab_profile_lock *k, struct ab_err *err);

/* Appends ATTEMPT to the state's ledger; refuses one already there. */
int ab_attempt_claim(struct ab_state *s, const char *attempt,
    struct ab_err *err);

#endif
