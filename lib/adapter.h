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

struct ab_profile;
struct ab_profile_lock;

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
/* Builds p->argv (malloc'd strings) from the provider's parameters;
 * -1 with AB_EUSAGE when it would be too long, AB_EENGINE when memory
 * runs out, and p->argv empty either way. */
int ab_adapter_argv(struct ab_profile *p, struct ab_err *err);
/* 1 when p->argv is exactly what ab_adapter_argv builds, 0 when it is
 * not or no argv can be built from p's parameters; -1 (AB_EENGINE) when
 * memory runs out. */
int ab_adapter_argv_is(const struct ab_profile *p, struct ab_err *err);
/* Adds the provider's pinned variables to the environment being built. */
void ab_adapter_env(const struct ab_profile *p, struct ab_profile_lock *k,
    int *n);
/* An approved command's program: its first word. */
void ab_adapter_first_word(const char *cmd, char *out, size_t cap);
/* Codex's approvals, the text of its rules file (AB_IN_RULES): prefix
 * rules, and each program pinned to PINS[i], the image's file for
 * allow[i]. */
int ab_adapter_rules(const struct ab_profile *p, char *const *pins,
    struct ab_buf *b);

#endif
