#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter.h"
#include "alloc.h"
#include "profile.h"

static const char *const read_tools[] = { "Read", "Grep", "Glob", NULL };
static const char *const write_tools[] = { "Edit", "Write", NULL };

int ab_adapter_known(const char *name)
{
	return strcmp(name, "claude") == 0;
}

/* "Bash(CMD)" and "Bash(CMD *)" must mean CMD and nothing wider: no
 * wildcard, no parenthesis, nothing that is not a plain printable line. */
int ab_adapter_allow_ok(const char *cmd, struct ab_err *err)
{
	const char *c;

	if (*cmd == '\0' || strlen(cmd) > AB_ALLOW_MAX || cmd[0] == ' ' ||
	    cmd[strlen(cmd) - 1] == ' ')
		return ab_fail(err, AB_EUSAGE, "--allow-command: 1 to %d "
		    "bytes, no space at either end", AB_ALLOW_MAX);
	for (c = cmd; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f || strchr("()*",
		    *c) != NULL)
			return ab_fail(err, AB_EUSAGE, "--allow-command %.60s: "
			    "no wildcard, parenthesis or control character: "
			    "an approval is one exact command", cmd);
	return 0;
}

static int push(struct ab_profile *p, const char *s)
{
	if (p->argc == AB_MAX_ARGV || (p->argv[p->argc] = strdup(s)) == NULL)
		return -1;
	p->argv[++p->argc] = NULL;
	return 0;
}

static int push_list(struct ab_profile *p, const char *const *v)
{
	for (; *v != NULL; v++)
		if (push(p, *v) < 0)
			return -1;
	return 0;
}

/* Bash is offered only when a command is approved: with none, every call
 * would be refused anyway. */
static int claude_tools(struct ab_profile *p, int allowed)
{
	char rule[AB_ALLOW_MAX + 16];
	int exec = strcmp(p->phase, "execution") == 0, i;

	if (push(p, allowed ? "--allowedTools" : "--tools") < 0 ||
	    push_list(p, read_tools) < 0 ||
	    (exec && push_list(p, write_tools) < 0))
		return -1;
	if (!exec || p->nallow == 0)
		return 0;
	if (!allowed)
		return push(p, "Bash");
	for (i = 0; i < p->nallow; i++) {
		snprintf(rule, sizeof rule, "Bash(%s)", p->allow[i]);
		if (push(p, rule) < 0)
			return -1;
		snprintf(rule, sizeof rule, "Bash(%s *)", p->allow[i]);
		if (push(p, rule) < 0)
			return -1;
	}
	return 0;
}

static int claude_argv(struct ab_profile *p)
{
	static const char *const fixed[] = { AB_CLAUDE, "-p",
	    "--output-format", "stream-json", "--verbose",
	    /* No settings file is read: the repository's and HOME's are
	     * the agent's to write. */
	    "--setting-sources=", "--strict-mcp-config",
	    "--permission-mode", "dontAsk", NULL };

	if (push_list(p, fixed) < 0)
		return -1;
	if (p->model[0] != '\0' && (push(p, "--model") < 0 ||
	    push(p, p->model) < 0))
		return -1;
	if (p->schema != NULL && (push(p, "--json-schema") < 0 ||
	    push(p, p->schema) < 0))
		return -1;
	/* The lists take every word up to the next option: last. */
	return claude_tools(p, 0) < 0 || claude_tools(p, 1) < 0 ? -1 : 0;
}

int ab_adapter_argv(struct ab_profile *p, struct ab_err *err)
{
	p->argc = 0;
	p->argv[0] = NULL;
	if (claude_argv(p) < 0)
		return ab_fail(err, AB_EUSAGE, "the agent's command line is too "
		    "long");
	return 0;
}

int ab_adapter_argv_is(const struct ab_profile *p)
{
	struct ab_profile q;
	struct ab_err err;
	int i, same;

	memcpy(&q, p, sizeof q);
	memset(q.argv, 0, sizeof q.argv);
	if (ab_adapter_argv(&q, &err) < 0)
		return 0;
	same = q.argc == p->argc;
	for (i = 0; same && i < q.argc; i++)
		same = strcmp(q.argv[i], p->argv[i]) == 0;
	for (i = 0; i < q.argc; i++)
		free(q.argv[i]);
	return same;
}

void ab_adapter_prompt_name(const struct ab_profile *p, char *out,
    size_t cap)
{
	snprintf(out, cap, "prompt-%s.txt", p->id);
}

void ab_adapter_secret_name(const struct ab_profile *p, char *out,
    size_t cap)
{
	snprintf(out, cap, "secret-%s", p->id);
}

static void env(struct ab_profile_lock *k, int *n, const char *name,
    const char *value)
{
	/* The list is fixed by this code: a full table is a bug here. */
	if (*n >= AB_PROFILE_ENV_MAX)
		abort();
	snprintf(k->env_text[*n], sizeof k->env_text[0], "%s=%s", name, value);
	k->env[*n] = k->env_text[*n];
	(*n)++;
}

void ab_adapter_env(const struct ab_profile *p, struct ab_profile_lock *k,
    int *n)
{
	char path[160], name[80];

	if (p->provider[0] == '\0')
		return;
	ab_adapter_prompt_name(p, name, sizeof name);
	snprintf(path, sizeof path, "%s/%s", AB_INPUTS_DIR, name);
	env(k, n, "AB_PROBE_STDIN", path);
	if (p->cred_var[0] != '\0') {
		ab_adapter_secret_name(p, name, sizeof name);
		snprintf(path, sizeof path, "%s/%s", AB_INPUTS_DIR, name);
		env(k, n, "AB_PROBE_SECRET", path);
		env(k, n, "AB_PROBE_SECRET_VAR", p->cred_var);
	}
	/* A failing vendor ends the run in seconds, not in minutes of
	 * retries; nothing but the vendor's API is called. */
	env(k, n, "CLAUDE_CODE_MAX_RETRIES", "2");
	/* The vendor can serve "managed settings" (permissions, hooks) that
	 * this CLI applies over its flags; as a sandboxed entrypoint it
	 * fetches none (2.1.332; a test serves permissive ones). */
	env(k, n, "CLAUDE_CODE_ENTRYPOINT", "local-agent");
	/* Its Bash tool wants bash; exactly the listed tools, none deferred
	 * behind a tool search. */
	env(k, n, "SHELL", "/bin/bash");
	env(k, n, "ENABLE_TOOL_SEARCH", "false");
	env(k, n, "DISABLE_AUTOUPDATER", "1");
	env(k, n, "DISABLE_TELEMETRY", "1");
	env(k, n, "DISABLE_ERROR_REPORTING", "1");
	env(k, n, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
}
