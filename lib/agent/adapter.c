#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter.h"
#include "buf.h"

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

static int is_codex(const struct ab_invocation *c)
{
	return strcmp(c->provider, "codex") == 0;
}

/* The argv being built into the caller's array: at most max words. */
struct argv_out {
	const struct ab_invocation *c;
	char **v;
	int n, max;
};

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

static int push(struct argv_out *p, const char *s)
{
	if (p->n == p->max || (p->v[p->n] = strdup(s)) == NULL)
		return -1;
	p->v[++p->n] = NULL;
	return 0;
}

static int push_list(struct argv_out *p, const char *const *v)
{
	for (; *v != NULL; v++)
		if (push(p, *v) < 0)
			return -1;
	return 0;
}

/* Bash is offered only when a command is approved: with none, every call
 * would be refused anyway. */
static int claude_tools(struct argv_out *p, int allowed)
{
	char rule[AB_ALLOW_MAX + 16];
	int exec = strcmp(p->c->phase, "execution") == 0, i;

	if (push(p, allowed ? "--allowedTools" : "--tools") < 0 ||
	    push_list(p, read_tools) < 0 ||
	    (exec && push_list(p, write_tools) < 0))
		return -1;
	if (!exec || p->c->nallow == 0)
		return 0;
	if (!allowed)
		return push(p, "Bash");
	for (i = 0; i < p->c->nallow; i++) {
		if (ab_fmt(rule, sizeof rule, "Bash(%s)", p->c->allow[i]) < 0 ||
		    push(p, rule) < 0 ||
		    ab_fmt(rule, sizeof rule, "Bash(%s *)", p->c->allow[i]) < 0 ||
		    push(p, rule) < 0)
			return -1;
	}
	return 0;
}

static int claude_argv(struct argv_out *p)
{
	static const char *const fixed[] = { AB_CLAUDE, "-p",
	    "--output-format", "stream-json", "--verbose",
	    /* No settings file is read: the repository's and HOME's are
	     * the agent's to write. */
	    "--setting-sources=", "--strict-mcp-config",
	    "--permission-mode", "dontAsk", NULL };

	if (push_list(p, fixed) < 0)
		return -1;
	if (p->c->model[0] != '\0' && (push(p, "--model") < 0 ||
	    push(p, p->c->model) < 0))
		return -1;
	if (p->c->schema != NULL && (push(p, "--json-schema") < 0 ||
	    push(p, p->c->schema) < 0))
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
static int codex_config(struct argv_out *p)
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
	for (v = p->c->codex_signin ? signed_in : key; *v != NULL; v++)
		if (push(p, "-c") < 0 || push(p, *v) < 0)
			return -1;
	for (v = off; *v != NULL; v++)
		if (push(p, "--disable") < 0 || push(p, *v) < 0)
			return -1;
	return 0;
}

/* The model, when one is named, and the schema's snapshot, when there
 * is one, under the flags the command takes. */
static int model_schema(struct argv_out *p, const char *model_flag,
    const char *schema_flag)
{
	if (p->c->model[0] != '\0' && (push(p, model_flag) < 0 ||
	    push(p, p->c->model) < 0))
		return -1;
	if (p->c->schema != NULL && (push(p, schema_flag) < 0 ||
	    push(p, p->c->schema_file) < 0))
		return -1;
	return 0;
}

/* Planning and questions: `codex exec`, which reads no user or project
 * config or rules (--ignore-*).  The container is the sandbox: /work is
 * read-only and only the vendor is reachable, so every command runs
 * (danger-full-access) and Codex, which reads code only by running
 * commands, can read it and change nothing. */
static int codex_exec_argv(struct argv_out *p)
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
static int codex_client_argv(struct argv_out *p)
{
	if (push(p, AB_CODEX_CLIENT) < 0 ||
	    model_schema(p, "--model", "--schema") < 0)
		return -1;
	if (push(p, "--") < 0 || push(p, AB_CODEX) < 0 ||
	    push(p, "app-server") < 0)
		return -1;
	return codex_config(p);
}

static int codex_argv(struct argv_out *p)
{
	return strcmp(p->c->phase, "execution") == 0 ? codex_client_argv(p) :
	    codex_exec_argv(p);
}

static void argv_free(char **v, int *n)
{
	int i;

	for (i = 0; v[i] != NULL; i++)
		free(v[i]);
	*n = 0;
	v[0] = NULL;
}

/* A push fails on a full argv, or else for want of memory: what was
 * pushed until then is freed, and the argv left empty. */
int ab_adapter_argv(const struct ab_invocation *c, char **v, int *n, int max,
    struct ab_err *err)
{
	struct argv_out o = { c, v, 0, max };
	int full;

	v[0] = NULL;
	if ((is_codex(c) ? codex_argv(&o) : claude_argv(&o)) == 0) {
		*n = o.n;
		return 0;
	}
	full = o.n == max;
	argv_free(v, n);
	if (full)
		return ab_fail(err, AB_EUSAGE, "the agent's command line is "
		    "too long");
	return ab_fail(err, AB_EENGINE, "out of memory");
}

int ab_adapter_argv_is(const struct ab_invocation *c, char *const *v, int n,
    int max, struct ab_err *err)
{
	char **q;
	struct ab_err e;
	int i, qn, same;

	if ((q = calloc((size_t)max + 1, sizeof *q)) == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	if (ab_adapter_argv(c, q, &qn, max, &e) < 0) {
		free(q);
		return e.code == AB_EUSAGE ? 0 : ab_fail(err, e.code, "%s",
		    e.msg);
	}
	same = qn == n;
	for (i = 0; same && i < qn; i++)
		same = strcmp(q[i], v[i]) == 0;
	argv_free(q, &qn);
	free(q);
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
int ab_adapter_rules(const struct ab_invocation *c, char *const *pins,
    struct ab_buf *b)
{
	char name[AB_ALLOW_MAX + 1], seen[AB_ALLOW_MAX + 1];
	const char *w, *e;
	int i, k, rc;

	rc = ab_buf_addf(b, "# agentbox: profile:%s's approved commands\n",
	    c->id);
	for (i = 0; i < c->nallow; i++) {
		rc |= ab_buf_adds(b, "prefix_rule(pattern=[");
		for (w = c->allow[i]; *w; w = *e ? e + 1 : e) {
			e = strchr(w, ' ');
			if (e == NULL)
				e = w + strlen(w);
			rc |= ab_buf_addf(b, "%s\"%.*s\"", w == c->allow[i] ?
			    "" : ", ", (int)(e - w), w);
		}
		rc |= ab_buf_adds(b, "], decision=\"allow\")\n");
	}
	for (i = 0; i < c->nallow; i++) {
		ab_adapter_first_word(c->allow[i], name, sizeof name);
		for (k = 0; k < i; k++) {
			ab_adapter_first_word(c->allow[k], seen, sizeof seen);
			if (strcmp(seen, name) == 0)
				break;
		}
		if (k == i)
			rc |= ab_buf_addf(b, "host_executable(name=\"%s\", "
			    "paths=[\"%s\"])\n", name, pins[i]);
	}
	return rc < 0 ? -1 : 0;
}

/* Codex keeps its state (databases, helper links) in CODEX_HOME, which
 * must be writable and not under a temporary directory: HOME's tmpfs.
 * Its approvals are the profile's rules file, which the probe copies to
 * where /etc/codex/rules points (the container's own /tmp): Codex would
 * read every file of a rules directory, and one invocation must not take
 * another's approvals.  Codex reads rules once, at start. */
static void codex_env(const struct ab_invocation *c, ab_adapter_put *put,
    void *ctx)
{
	put(ctx, "CODEX_HOME", AB_HOME "/.codex");
	put(ctx, "AB_PROBE_CODEX_RULES", c->rules_file);
	put(ctx, "SHELL", AB_SHELL);
	if (c->codex_signin)
		put(ctx, "AB_PROBE_CODEX_AUTH", c->auth_file);
}

void ab_adapter_env(const struct ab_invocation *c, ab_adapter_put *put,
    void *ctx)
{
	if (c->provider[0] == '\0')
		return;
	put(ctx, "AB_PROBE_STDIN", c->prompt_file);
	if (c->cred_var[0] != '\0') {
		put(ctx, "AB_PROBE_SECRET", c->secret_file);
		put(ctx, "AB_PROBE_SECRET_VAR", c->cred_var);
	}
	if (is_codex(c)) {
		codex_env(c, put, ctx);
		return;
	}
	/* A failing vendor ends the run in seconds, not in minutes of
	 * retries; nothing but the vendor's API is called. */
	put(ctx, "CLAUDE_CODE_MAX_RETRIES", "2");
	/* A sign-in's copy, of placeholders (inject.h), which the probe
	 * copies to HOME/.claude/.credentials.json for the CLI to rewrite;
	 * and no claude.ai connectors, which a sign-in would otherwise
	 * fetch from the vendor and start (measured: 2.1.332 asks for them
	 * despite --strict-mcp-config). */
	if (c->claude_signin)
		put(ctx, "AB_PROBE_CLAUDE_AUTH", c->auth_file);
	put(ctx, "ENABLE_CLAUDEAI_MCP_SERVERS", "false");
	/* The vendor can serve "managed settings" (permissions, hooks) that
	 * this CLI applies over its flags; as a sandboxed entrypoint it
	 * fetches none (2.1.332; a test serves permissive ones). */
	put(ctx, "CLAUDE_CODE_ENTRYPOINT", "local-agent");
	/* Its Bash tool wants bash; exactly the listed tools, none deferred
	 * behind a tool search. */
	put(ctx, "SHELL", AB_SHELL);
	put(ctx, "ENABLE_TOOL_SEARCH", "false");
	put(ctx, "DISABLE_AUTOUPDATER", "1");
	put(ctx, "DISABLE_TELEMETRY", "1");
	put(ctx, "DISABLE_ERROR_REPORTING", "1");
	put(ctx, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
}
