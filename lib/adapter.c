#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter.h"
#include "alloc.h"
#include "buf.h"
#include "profile.h"

static const char *const read_tools[] = { "Read", "Grep", "Glob", NULL };
static const char *const write_tools[] = { "Edit", "Write", NULL };

int ab_adapter_known(const char *name)
{
	return strcmp(name, "claude") == 0 || strcmp(name, "codex") == 0;
}

void ab_adapter_cli(const char *provider, const char **component,
    const char **version)
{
	int codex = strcmp(provider, "codex") == 0;

	*component = codex ? "codex" : "claude-code";
	*version = codex ? "0.163.0" : "2.1.332";
}

static int is_codex(const struct ab_profile *p)
{
	return strcmp(p->provider, "codex") == 0;
}

/* Codex's rule is a list of words that a command's own words must start
 * with, after Codex's shell parsing: each word must be one a shell reads
 * as itself, or the rule would match something other than what was
 * approved (or nothing at all). */
static int codex_words_ok(const char *cmd, struct ab_err *err)
{
	const char *c, *sp = strchr(cmd, ' ');

	/* A first word with "=" is an assignment to the shell. */
	if (memchr(cmd, '=', sp ? (size_t)(sp - cmd) : strlen(cmd)) != NULL)
		return ab_fail(err, AB_EUSAGE, "--allow-command %.60s: the "
		    "first word is a variable assignment", cmd);
	for (c = cmd; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		    (*c >= '0' && *c <= '9') || strchr(" ._/:=+,@%-", *c)) ||
		    (c[0] == ' ' && c[1] == ' '))
			return ab_fail(err, AB_EUSAGE, "--allow-command %.60s: "
			    "for codex, words of [A-Za-z0-9._/:=+,@%%-] "
			    "separated by one space: an approval is one exact "
			    "command", cmd);
	return 0;
}

/* "Bash(CMD)" and "Bash(CMD *)" must mean CMD and nothing wider: no
 * wildcard, no parenthesis, nothing that is not a plain printable line. */
int ab_adapter_allow_ok(const char *provider, const char *cmd,
    struct ab_err *err)
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
	return strcmp(provider, "codex") == 0 ? codex_words_ok(cmd, err) : 0;
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
		if (ab_fmt(rule, sizeof rule, "Bash(%s)", p->allow[i]) < 0 ||
		    push(p, rule) < 0 ||
		    ab_fmt(rule, sizeof rule, "Bash(%s *)", p->allow[i]) < 0 ||
		    push(p, rule) < 0)
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

/* Codex reads nothing it was not given here: no user or project config
 * or rules (the agent can write both), no login shell or shell snapshot
 * (HOME's profile is the agent's to write), no hook, plugin, app or web
 * search.  Its API is a provider of our own naming on the vendor's URL:
 * the built-in one first tries a WebSocket and discovers models, seconds
 * of retries through a proxy.  Retries are bounded, or a vendor that is
 * down would hold the run until the deadline. */
static int codex_config(struct ab_profile *p)
{
	static const char *const config[] = {
	    "model_provider=agentbox",
	    "model_providers.agentbox.name=OpenAI",
	    "model_providers.agentbox.wire_api=responses",
	    "model_providers.agentbox.supports_websockets=false",
	    "model_providers.agentbox.request_max_retries=2",
	    "model_providers.agentbox.stream_max_retries=2",
	    "analytics.enabled=false",
	    "web_search=\"disabled\"",
	    "allow_login_shell=false",
	    /* Variables named like KEY, SECRET or TOKEN stay out of the
	     * commands' environment. */
	    "shell_environment_policy.ignore_default_excludes=false",
	    NULL };
	/* Off: whatever runs a command outside the approvals (hooks, a
	 * dependency installer, a daemon), reaches past the vendor's API,
	 * or starts another agent. */
	static const char *const off[] = { "unbounded_connection_retries",
	    "shell_snapshot", "hooks", "plugins", "remote_plugin", "apps",
	    "multi_agent", "skill_mcp_dependency_install", "daemon_auto_start",
	    "image_generation", "browser_use", "computer_use", "tool_suggest",
	    NULL };
	/* An API key from the environment, or a ChatGPT sign-in from
	 * CODEX_HOME/auth.json (ab_adapter_env), whose tokens Codex sends to
	 * the ChatGPT backend and refreshes itself. */
	static const char *const key[] = {
	    "model_providers.agentbox.base_url=https://api.openai.com/v1",
	    "model_providers.agentbox.env_key=CODEX_API_KEY", NULL };
	static const char *const signed_in[] = {
	    "model_providers.agentbox.base_url="
	    "https://chatgpt.com/backend-api/codex",
	    "model_providers.agentbox.requires_openai_auth=true", NULL };
	const char *const *v;

	for (v = config; *v != NULL; v++)
		if (push(p, "-c") < 0 || push(p, *v) < 0)
			return -1;
	for (v = p->codex_auth[0] ? signed_in : key; *v != NULL; v++)
		if (push(p, "-c") < 0 || push(p, *v) < 0)
			return -1;
	for (v = off; *v != NULL; v++)
		if (push(p, "--disable") < 0 || push(p, *v) < 0)
			return -1;
	return 0;
}

/* The model, when one is named, and the schema's snapshot, when there
 * is one, under the flags the command takes. */
static int model_schema(struct ab_profile *p, const char *model_flag,
    const char *schema_flag)
{
	char path[160];

	if (p->model[0] != '\0' && (push(p, model_flag) < 0 ||
	    push(p, p->model) < 0))
		return -1;
	ab_profile_input_path(p, AB_IN_SCHEMA, path, sizeof path);
	if (p->schema != NULL && (push(p, schema_flag) < 0 ||
	    push(p, path) < 0))
		return -1;
	return 0;
}

/* Planning and questions: `codex exec`, which reads no user or project
 * config or rules (--ignore-*).  The container is the sandbox: /work is
 * read-only and only the vendor is reachable, so every command runs
 * (danger-full-access) and Codex, which reads code only by running
 * commands, can read it and change nothing. */
static int codex_exec_argv(struct ab_profile *p)
{
	static const char *const fixed[] = { AB_CODEX, "exec", "--json",
	    "--skip-git-repo-check", "--ephemeral", "--ignore-user-config",
	    "--ignore-rules", "--color", "never", "-C", "/work",
	    "--sandbox", "danger-full-access", NULL };

	if (push_list(p, fixed) < 0 || codex_config(p) < 0 ||
	    model_schema(p, "-m", "--output-schema") < 0)
		return -1;
	/* The prompt comes on standard input. */
	return push(p, "-");
}

/* Execution: ab-codex, agentbox's approval client (appserver.h), drives
 * `codex app-server` with a thread in Codex's workspace-write sandbox,
 * which needs bubblewrap, which the agents image leaves out: a command
 * that no rule allows cannot start, an approved one (the profile's rules,
 * the only ones read: /etc/codex/rules, ab_adapter_env) runs outside that
 * sandbox, and each file edit comes to ab-codex to accept or decline.
 * app-server reads CODEX_HOME's config, where ab-codex makes /work an
 * untrusted project, so that the repository's .codex/ is never read. */
static int codex_client_argv(struct ab_profile *p)
{
	if (push(p, AB_CODEX_CLIENT) < 0 ||
	    model_schema(p, "--model", "--schema") < 0)
		return -1;
	if (push(p, "--") < 0 || push(p, AB_CODEX) < 0 ||
	    push(p, "app-server") < 0)
		return -1;
	return codex_config(p);
}

static int codex_argv(struct ab_profile *p)
{
	return strcmp(p->phase, "execution") == 0 ? codex_client_argv(p) :
	    codex_exec_argv(p);
}

/* A push fails on a full argv, or else for want of memory: what was
 * pushed until then is freed, and the argv left empty. */
int ab_adapter_argv(struct ab_profile *p, struct ab_err *err)
{
	int full, i;

	p->argc = 0;
	p->argv[0] = NULL;
	if ((is_codex(p) ? codex_argv(p) : claude_argv(p)) == 0)
		return 0;
	full = p->argc == AB_MAX_ARGV;
	for (i = 0; p->argv[i] != NULL; i++)
		free(p->argv[i]);
	p->argc = 0;
	p->argv[0] = NULL;
	if (full)
		return ab_fail(err, AB_EUSAGE, "the agent's command line is "
		    "too long");
	return ab_fail(err, AB_EENGINE, "out of memory");
}

int ab_adapter_argv_is(const struct ab_profile *p, struct ab_err *err)
{
	struct ab_profile q;
	struct ab_err e;
	int i, same;

	memcpy(&q, p, sizeof q);
	memset(q.argv, 0, sizeof q.argv);
	if (ab_adapter_argv(&q, &e) < 0)
		return e.code == AB_EUSAGE ? 0 : ab_fail(err, e.code, "%s",
		    e.msg);
	same = q.argc == p->argc;
	for (i = 0; same && i < q.argc; i++)
		same = strcmp(q.argv[i], p->argv[i]) == 0;
	for (i = 0; i < q.argc; i++)
		free(q.argv[i]);
	return same;
}

void ab_adapter_first_word(const char *cmd, char *out, size_t cap)
{
	size_t n = strcspn(cmd, " ");

	/* Callers' buffers hold a whole approval: a bug here when cut. */
	if (ab_fmt(out, cap, "%.*s", (int)n, cmd) < 0)
		abort();
}

/* One prefix_rule per approval: its words, as a Starlark list of
 * strings (allow_ok kept them plain); then each approval's program
 * pinned to the image's file (host_executable): a command naming its
 * program by a path matches a rule only when that path is the pin, so
 * ./git or /work/bin/git is not git. */
int ab_adapter_rules(const struct ab_profile *p, char *const *pins,
    struct ab_buf *b)
{
	char name[AB_ALLOW_MAX + 1], seen[AB_ALLOW_MAX + 1];
	const char *w, *e;
	int i, k, rc;

	rc = ab_buf_addf(b, "# agentbox: profile:%s's approved commands\n",
	    p->id);
	for (i = 0; i < p->nallow; i++) {
		rc |= ab_buf_adds(b, "prefix_rule(pattern=[");
		for (w = p->allow[i]; *w; w = *e ? e + 1 : e) {
			e = strchr(w, ' ');
			if (e == NULL)
				e = w + strlen(w);
			rc |= ab_buf_addf(b, "%s\"%.*s\"", w == p->allow[i] ?
			    "" : ", ", (int)(e - w), w);
		}
		rc |= ab_buf_adds(b, "], decision=\"allow\")\n");
	}
	for (i = 0; i < p->nallow; i++) {
		ab_adapter_first_word(p->allow[i], name, sizeof name);
		for (k = 0; k < i; k++) {
			ab_adapter_first_word(p->allow[k], seen, sizeof seen);
			if (strcmp(seen, name) == 0)
				break;
		}
		if (k == i)
			rc |= ab_buf_addf(b, "host_executable(name=\"%s\", "
			    "paths=[\"%s\"])\n", name, pins[i]);
	}
	return rc < 0 ? -1 : 0;
}

static void env(struct ab_profile_lock *k, int *n, const char *name,
    const char *value)
{
	ab_profile_env(k, n, name, value);
}

/* Codex keeps its state (databases, helper links) in CODEX_HOME, which
 * must be writable and not under a temporary directory: HOME's tmpfs.
 * Its approvals are the profile's rules file, which the probe copies to
 * where /etc/codex/rules points (the container's own /tmp): Codex would
 * read every file of a rules directory, and one invocation must not take
 * another's approvals.  Codex reads rules once, at start. */
static void codex_env(const struct ab_profile *p, struct ab_profile_lock *k,
    int *n)
{
	char path[160];

	env(k, n, "CODEX_HOME", AB_HOME "/.codex");
	ab_profile_input_path(p, AB_IN_RULES, path, sizeof path);
	env(k, n, "AB_PROBE_CODEX_RULES", path);
	env(k, n, "SHELL", AB_SHELL);
	if (p->codex_auth[0] != '\0') {
		ab_profile_input_path(p, AB_IN_AUTH, path, sizeof path);
		env(k, n, "AB_PROBE_CODEX_AUTH", path);
	}
}

void ab_adapter_env(const struct ab_profile *p, struct ab_profile_lock *k,
    int *n)
{
	char path[160];

	if (p->provider[0] == '\0')
		return;
	ab_profile_input_path(p, AB_IN_PROMPT, path, sizeof path);
	env(k, n, "AB_PROBE_STDIN", path);
	if (p->cred_var[0] != '\0') {
		ab_profile_input_path(p, AB_IN_SECRET, path, sizeof path);
		env(k, n, "AB_PROBE_SECRET", path);
		env(k, n, "AB_PROBE_SECRET_VAR", p->cred_var);
	}
	if (is_codex(p)) {
		codex_env(p, k, n);
		return;
	}
	/* A failing vendor ends the run in seconds, not in minutes of
	 * retries; nothing but the vendor's API is called. */
	env(k, n, "CLAUDE_CODE_MAX_RETRIES", "2");
	/* A sign-in's copy, of placeholders (inject.h), which the probe
	 * copies to HOME/.claude/.credentials.json for the CLI to rewrite;
	 * and no claude.ai connectors, which a sign-in would otherwise
	 * fetch from the vendor and start (measured: 2.1.332 asks for them
	 * despite --strict-mcp-config). */
	if (p->claude_auth[0] != '\0') {
		ab_profile_input_path(p, AB_IN_AUTH, path, sizeof path);
		env(k, n, "AB_PROBE_CLAUDE_AUTH", path);
	}
	env(k, n, "ENABLE_CLAUDEAI_MCP_SERVERS", "false");
	/* The vendor can serve "managed settings" (permissions, hooks) that
	 * this CLI applies over its flags; as a sandboxed entrypoint it
	 * fetches none (2.1.332; a test serves permissive ones). */
	env(k, n, "CLAUDE_CODE_ENTRYPOINT", "local-agent");
	/* Its Bash tool wants bash; exactly the listed tools, none deferred
	 * behind a tool search. */
	env(k, n, "SHELL", AB_SHELL);
	env(k, n, "ENABLE_TOOL_SEARCH", "false");
	env(k, n, "DISABLE_AUTOUPDATER", "1");
	env(k, n, "DISABLE_TELEMETRY", "1");
	env(k, n, "DISABLE_ERROR_REPORTING", "1");
	env(k, n, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
}
