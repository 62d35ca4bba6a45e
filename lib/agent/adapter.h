/* adapter.h: a provider's invocation (ab-profile --provider): the exact
 * argv and the pinned environment that drive an agent CLI for one phase.
 *
 * Phase enforcement never rests on a mode the vendor's server decides:
 * the tools the CLI may use are listed (--tools), every approval is
 * explicit (dontAsk and --allowedTools), the CLI reads no settings file
 * (--setting-sources empty: the repository's and HOME's settings are
 * the agent's to write), no MCP server is started, and the mounts enforce
 * the rest (/work read-only in planning and questions).
 *
 * The prompt, the schema and the credential reach the CLI through files
 * on the read-only inputs volume, in the invocation's own directory that
 * no other agent can open (profile.h), named in the environment: the
 * prompt on its standard input, the credential exported by the probe just
 * before it execs the CLI.  No secret is ever in the argv, the
 * environment the engine stores, or a record.
 */
#ifndef AB_ADAPTER_H
#define AB_ADAPTER_H

#include "buf.h"
#include "err.h"

/* What the adapter reads of an invocation: the profile's parameters and
 * where the probe finds its inputs.  The profile fills it in
 * (ab_profile_call); the adapter knows nothing else of profiles, so it
 * sits below them. */
struct ab_invocation {
	const char *id;			/* the profile's, named in the rules */
	const char *provider;		/* "" when the argv is the caller's */
	const char *phase, *model;	/* model: "" for the CLI's default */
	const char *schema;		/* the schema's text, or NULL */
	const char *cred_var;		/* "" when none */
	int codex_signin, claude_signin;
	char *const *allow;
	int nallow;
	/* The inputs on the read-only volume (profile.h, enum ab_input). */
	const char *prompt_file, *schema_file, *rules_file, *secret_file,
	    *auth_file;
};

/* Takes the next NAME=VALUE of the agent's environment. */
typedef void ab_adapter_put(void *ctx, const char *name, const char *value);


/* The agent's HOME, in every image. */
#define AB_HOME "/home/agent"
#define AB_CLAUDE "/usr/local/bin/claude"
#define AB_CODEX "/usr/local/bin/codex"
/* The shell both CLIs run commands with: bash, agentbox's own in an image
 * on another root (agents.layer), the image's /bin/bash otherwise. */
#define AB_SHELL "/usr/lib/agentbox/cli/bash"
/* agentbox's approval client for Codex (cmd/ab-codex.c), in the image. */
#define AB_CODEX_CLIENT "/usr/lib/agentbox/ab-codex"
#define AB_PROMPT_MAX (256 * 1024)
#define AB_SECRET_MAX (64 * 1024)
#define AB_ALLOW_MAX 200	/* bytes of one approved command */

/* 1 when NAME is a provider agentbox drives. */
int ab_adapter_known(const char *name);
/* The image's version label (component) of the provider's CLI, and the
 * one version whose flags and behaviour the adapter was built on. */
void ab_adapter_cli(const char *provider, const char **component,
    const char **version);
/* Refuses an approved command a rule could not hold exactly (AB_EUSAGE). */
int ab_adapter_allow_ok(const char *provider, const char *cmd,
    struct ab_err *err);
/* Builds V[0..*N] (malloc'd strings, NULL-terminated; V holds MAX + 1)
 * from the provider's parameters; -1 with AB_EUSAGE when it would take
 * more than MAX words, AB_EENGINE when memory runs out, and V empty
 * either way. */
int ab_adapter_argv(const struct ab_invocation *c, char **v, int *n, int max,
    struct ab_err *err);
/* 1 when V[0..N] is exactly what ab_adapter_argv builds, 0 when it is
 * not or no argv of MAX words can be built from C; -1 (AB_EENGINE) when
 * memory runs out. */
int ab_adapter_argv_is(const struct ab_invocation *c, char *const *v, int n,
    int max, struct ab_err *err);
/* Gives PUT the provider's pinned variables, in order. */
void ab_adapter_env(const struct ab_invocation *c, ab_adapter_put *put,
    void *ctx);
/* An approved command's program: its first word. */
void ab_adapter_first_word(const char *cmd, char *out, size_t cap);
/* Codex's approvals, the text of its rules file (AB_IN_RULES): prefix
 * rules, and each program pinned to PINS[i], the image's file for
 * allow[i]. */
int ab_adapter_rules(const struct ab_invocation *c, char *const *pins,
    struct ab_buf *b);

#endif
