/* agent-test.c: unit tests for lib/agent/agent.c (a CLI's stream into the
 * result's agent section), TAP output.  The streams are crafted: they
 * stand for a CLI that does not check its answer, a hostile vendor, or a
 * flood, which no real CLI run can be made to produce on demand. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "json.h"
#include "tap.h"

/* The agent's record: its fields are bounded (agent.h), far under. */
#define RECORD_MAX (16u << 20)

static const char *provider = "claude";

static const char schema[] = "{\"type\":\"object\",\"properties\":{"
    "\"answer\":{\"type\":\"string\"}},\"required\":[\"answer\"],"
    "\"additionalProperties\":false}";

/* Feeds STREAM in pieces of STEP bytes; the agent object's JSON in out. */
static void run(const char *stream, size_t n, size_t step,
    const char *sch, struct ab_buf *out)
{
	struct ab_agent a;
	struct ab_jw w;
	size_t i, k;

	ab_agent_init(&a, provider, sch, sch ? strlen(sch) : 0);
	for (i = 0; i < n; i += k) {
		k = n - i < step ? n - i : step;
		ab_agent_feed(&a, stream + i, k);
	}
	ab_agent_end(&a);
	ab_buf_init(out, RECORD_MAX);
	ab_jw_init(&w, out);
	ab_agent_json(&a, "1.0", &w);
	if (ab_jw_done(&w) < 0)
		ab_buf_reset(out);
	ab_agent_free(&a);
}

/* The string value of KEY (a dotted path) in the agent object, or "". */
static int has(const struct ab_buf *b, const char *path, const char *want)
{
	struct ab_json j;
	struct ab_err err;
	int t, same;

	if (b->len == 0 || ab_json_parse(&j, b->data, b->len, &err) < 0)
		return 0;
	t = ab_json_get(&j, 0, path);
	same = want == NULL ? ab_json_type(&j, t) == AB_JSON_NULL :
	    ab_json_str_eq(&j, t, want);
	ab_json_free(&j);
	return same;
}

static long long num(const struct ab_buf *b, const char *path)
{
	struct ab_json j;
	struct ab_err err;
	long long v = -1;

	if (b->len > 0 && ab_json_parse(&j, b->data, b->len, &err) == 0) {
		ab_json_int(&j, ab_json_get(&j, 0, path), &v);
		ab_json_free(&j);
	}
	return v;
}

static void status(const char *stream, const char *sch, const char *want,
    const char *desc)
{
	struct ab_buf out;

	run(stream, strlen(stream), 7, sch, &out);
	if (!has(&out, "status", want))
		printf("# %s\n", out.data ? out.data : "(no JSON)");
	ok(has(&out, "status", want), desc);
	ab_buf_free(&out);
}

#define RESULT(x) "{\"type\":\"system\"}\n{\"type\":\"result\",\"subtype\":" \
	"\"success\",\"num_turns\":2,\"result\":\"fine\"," x "}\n"

#define CODEX_MSG(t) "{\"type\":\"item.completed\",\"item\":{\"id\":" \
	"\"item_1\",\"type\":\"agent_message\",\"text\":\"" t "\"}}\n"
#define CODEX_DONE "{\"type\":\"turn.completed\",\"usage\":" \
	"{\"input_tokens\":10,\"output_tokens\":5}}\n"

/* Codex's events: the last message is the final one, and with a schema
 * the answer, which must be JSON that matches. */
static void codex(void)
{
	struct ab_buf out;
	const char *s;

	provider = "codex";
	status(CODEX_MSG("first") CODEX_MSG("fine") CODEX_DONE, NULL, "ok",
	    "codex: a completed turn is ok");
	s = CODEX_MSG("first") CODEX_MSG("fine") CODEX_DONE;
	run(s, strlen(s), 5, NULL, &out);
	ok(has(&out, "final_message", "fine") &&
	    num(&out, "usage.output_tokens") == 5 && num(&out, "turns") == 1,
	    "codex: the last message is the final one, usage is the turn's");
	ab_buf_free(&out);
	status(CODEX_MSG("fine"), NULL, "error",
	    "codex: no turn.completed is an error");
	s = CODEX_MSG("x") "{\"type\":\"error\",\"message\":\"Reconnecting"
	    "... 1/2\"}\n{\"type\":\"turn.failed\",\"error\":{\"message\":"
	    "\"unexpected status 401 Unauthorized: no\"}}\n";
	run(s, strlen(s), 3, NULL, &out);
	ok(has(&out, "status", "error") && num(&out, "error.api_status") == 401 &&
	    has(&out, "error.message", "unexpected status 401 Unauthorized: no"),
	    "codex: a failed turn is an error with the API's status");
	ab_buf_free(&out);
	status(CODEX_MSG("{\\\"answer\\\":\\\"x\\\"}") CODEX_DONE, schema,
	    "ok", "codex: a final message that matches the schema is ok");
	s = CODEX_MSG("{\\\"answer\\\":42}") CODEX_DONE;
	run(s, strlen(s), 7, schema, &out);
	ok(has(&out, "status", "invalid-answer") && has(&out, "answer", NULL),
	    "codex: an answer that does not match is invalid, and not the "
	    "answer");
	ab_buf_free(&out);
	status(CODEX_MSG("not json") CODEX_DONE, schema, "invalid-answer",
	    "codex: a final message that is not JSON is invalid");
	status(CODEX_DONE, schema, "no-answer",
	    "codex: no message with a schema is no-answer");
	s = "{\"type\":\"item.completed\",\"item\":{\"type\":"
	    "\"file_change\",\"changes\":[{\"path\":\"/work/a\"}],"
	    "\"status\":\"failed\"}}\n" CODEX_DONE;
	run(s, strlen(s), 11, NULL, &out);
	ok(strstr(out.data, "\"refused\":[{\"type\":\"file_change\"") != NULL,
	    "codex: a failed file change is listed as refused");
	ab_buf_free(&out);
	/* ab-codex's events: edits that landed, and what it declined. */
	s = "{\"type\":\"item.completed\",\"item\":{\"type\":"
	    "\"file_change\",\"status\":\"completed\",\"changes\":[{\"path\":"
	    "\"/work/a\",\"kind\":\"add\"},{\"path\":\"/work/b\",\"kind\":"
	    "\"update\",\"move_path\":\"/work/c\"},7]}}\n"
	    "{\"type\":\"item.completed\",\"item\":{\"type\":"
	    "\"command_execution\",\"status\":\"declined\",\"command\":"
	    "\"rm\"}}\n{\"type\":\"item.completed\",\"item\":{\"type\":"
	    "\"command_execution\",\"status\":\"failed\",\"command\":"
	    "\"false\"}}\n" CODEX_DONE;
	run(s, strlen(s), 13, NULL, &out);
	ok(strstr(out.data, "\"edits\":[{\"path\":\"/work/a\",\"kind\":"
	    "\"add\"},{\"path\":\"/work/b\",\"kind\":\"update\",\"move_path\":"
	    "\"/work/c\"},{\"truncated\":true}],\"edits_truncated\":true") !=
	    NULL, "codex: the edits that landed, a change that is no object cut");
	ok(strstr(out.data, "\"refused\":[{\"type\":\"command_execution\","
	    "\"status\":\"declined\",\"command\":\"rm\"}]") != NULL,
	    "codex: a declined command is refused; one that failed is not");
	ab_buf_free(&out);
	provider = "claude";
	run(CODEX_DONE, strlen(CODEX_DONE), 3, NULL, &out);
	ok(strstr(out.data, "\"edits\":null") != NULL,
	    "claude: edits are null, not an empty list");
	ab_buf_free(&out);
}

/* \u0000 in a CLI's stream: the text kept holds it, and the record
 * writes it escaped, as the CLI did. */
static void nul(void)
{
	struct ab_buf out;
	const char *s;

	provider = "codex";
	s = "{\"type\":\"item.completed\",\"item\":{\"type\":"
	    "\"command_execution\",\"id\":\"c1\",\"status\":\"completed\","
	    "\"command\":\"cat bin.dat\",\"aggregated_output\":"
	    "\"a\\u0000b\\u0000c\\n\",\"exit_code\":0}}\n"
	    CODEX_MSG("it printed a\\u0000b") CODEX_DONE;
	run(s, strlen(s), 7, NULL, &out);
	ok(has(&out, "status", "ok") && out.data != NULL &&
	    strstr(out.data, "\"final_message\":\"it printed a\\u0000b\"") !=
	    NULL, "codex: a turn whose output and message hold NULs is ok, "
	    "the message whole");
	ab_buf_free(&out);
	s = "{\"type\":\"turn.failed\",\"error\":{\"message\":"
	    "\"bad\\u0000byte\"}}\n";
	run(s, strlen(s), 5, NULL, &out);
	ok(has(&out, "status", "error") && out.data != NULL &&
	    strstr(out.data, "\"message\":\"bad\\u0000byte\"") != NULL,
	    "codex: an error holding a NUL is kept whole");
	ab_buf_free(&out);
	provider = "claude";
	s = "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,"
	    "\"result\":\"r\\u0000s\",\"permission_denials\":[{\"tool_name\":"
	    "\"Bash\",\"tool_input\":{\"command\":\"printf a\\u0000b\"}}]}\n";
	run(s, strlen(s), 3, NULL, &out);
	ok(has(&out, "status", "ok") && out.data != NULL &&
	    strstr(out.data, "\"final_message\":\"r\\u0000s\"") != NULL &&
	    strstr(out.data, "\"command\":\"printf a\\u0000b\"") != NULL,
	    "claude: a result and a refusal holding NULs are kept whole");
	ab_buf_free(&out);
}

static long long steps_now;

static long long steps_clock(void)
{
	return steps_now += 1000;
}

/* The progress lines PROV's STREAM makes, fed in pieces of STEP bytes,
 * without their prefix; "finished" ends them as ab-run does. */
static const char *lines(const char *prov, const char *stream, size_t step)
{
	static char text[8192];
	struct ab_progress p;
	struct ab_agent a;
	size_t i, k, n = strlen(stream), got = 0;
	ssize_t r;
	int fd[2];

	if (pipe2(fd, O_NONBLOCK) < 0)
		abort();
	ab_progress_init(&p, fd[1], "");
	p.clock = steps_clock;
	ab_progress_secret(&p, "sk-unit-0123456789", 18);
	ab_agent_init(&a, prov, NULL, 0);
	a.progress = &p;
	for (i = 0; i < n; i += k) {
		k = n - i < step ? n - i : step;
		ab_agent_feed(&a, stream + i, k);
	}
	ab_agent_end(&a);
	ab_progress_end(&p, "finished", 8);
	ab_agent_free(&a);
	ab_progress_free(&p);
	while (got + 1 < sizeof text &&
	    (r = read(fd[0], text + got, sizeof text - 1 - got)) > 0)
		got += (size_t)r;
	text[got] = '\0';
	close(fd[0]);
	close(fd[1]);
	return text;
}

static int lines_are(const char *prov, const char *stream, const char *want)
{
	const char *got = lines(prov, stream, 1);

	if (strcmp(got, want) != 0 || strcmp(lines(prov, stream, 4096),
	    want) != 0) {
		printf("# got:\n%s# want:\n%s", got, want);
		return 0;
	}
	return 1;
}

#define TOOL_USE(id, name, input) "{\"type\":\"tool_use\",\"id\":\"" id \
    "\",\"name\":\"" name "\",\"input\":" input "}"
#define ASSISTANT(blocks) "{\"type\":\"assistant\",\"message\":{" \
    "\"content\":[" blocks "]}}\n"

static void steps(void)
{
	ok(lines_are("claude", ASSISTANT(TOOL_USE("t1", "Bash",
	    "{\"command\":\"git status\",\"description\":\"d\"}") ","
	    "{\"type\":\"text\",\"text\":\"hi\"},"
	    TOOL_USE("t2", "Write", "{\"file_path\":\"/work/notes.txt\","
	    "\"content\":\"x\"}") "," TOOL_USE("t3", "Grep",
	    "{\"pattern\":\"forty\",\"path\":\"/work\"}") ","
	    TOOL_USE("t4", "StructuredOutput", "{\"answer\":\"x\"}"))
	    "{\"type\":\"system\",\"subtype\":\"permission_denied\","
	    "\"tool_name\":\"Bash\",\"tool_use_id\":\"t1\"}\n"
	    "{\"type\":\"system\",\"subtype\":\"permission_denied\","
	    "\"tool_name\":\"WebFetch\",\"tool_use_id\":\"unknown\"}\n"
	    RESULT("\"is_error\":false"),
	    "Bash(git status)\nWrite /work/notes.txt\nGrep(forty)\n"
	    "StructuredOutput\nrefused Bash(git status)\nrefused WebFetch\n"
	    "turn ended\nfinished\n"),
	    "claude: each tool call, each refusal by the call it refuses, the "
	    "turn's end");
	ok(lines_are("claude", ASSISTANT(TOOL_USE("t1", "Bash",
	    "{\"command\":\"echo \\u001b]0;x\\u0007sk-unit-0123456789\\n"
	    "\\u001b[2Jdone\"}")) "{\"type\":\"result\",\"subtype\":"
	    "\"error_during_execution\",\"is_error\":true,\"result\":"
	    "\"API Error: 500 \\u001b[31mboom\"}\n",
	    "Bash(echo [redacted] done)\n"
	    "turn failed: API Error: 500 boom\nfinished\n"),
	    "claude: escapes and the credential never reach a line; a failed "
	    "turn says why");
	ok(lines_are("codex",
	    "{\"type\":\"item.started\",\"item\":{\"type\":"
	    "\"command_execution\",\"id\":\"c1\",\"command\":\"git log\"}}\n"
	    "{\"type\":\"item.completed\",\"item\":{\"type\":"
	    "\"command_execution\",\"id\":\"c1\",\"status\":\"completed\","
	    "\"command\":\"git log\"}}\n"
	    "{\"type\":\"item.completed\",\"item\":{\"type\":"
	    "\"command_execution\",\"id\":\"c2\",\"status\":\"completed\","
	    "\"command\":\"ls\"}}\n"
	    "{\"type\":\"item.started\",\"item\":{\"type\":"
	    "\"command_execution\",\"id\":\"c3\",\"command\":\"rm -rf /\"}}\n"
	    "{\"type\":\"item.completed\",\"item\":{\"type\":"
	    "\"command_execution\",\"id\":\"c3\",\"status\":\"declined\","
	    "\"command\":\"rm -rf /\"}}\n"
	    "{\"type\":\"item.completed\",\"item\":{\"type\":\"file_change\","
	    "\"id\":\"f1\",\"status\":\"completed\",\"changes\":[{\"path\":"
	    "\"/work/a\",\"kind\":\"add\"},{\"path\":\"/work/o\",\"kind\":"
	    "\"update\",\"move_path\":\"/work/n\"}]}}\n"
	    "{\"type\":\"item.completed\",\"item\":{\"type\":\"file_change\","
	    "\"id\":\"f2\",\"status\":\"declined\",\"changes\":[{\"path\":"
	    "\"/work/.git/x\",\"kind\":\"add\"}]}}\n"
	    "{\"type\":\"item.completed\",\"item\":{\"type\":\"request\","
	    "\"status\":\"declined\",\"method\":\"item/permissions/"
	    "requestApproval\"}}\n"
	    "{\"type\":\"item.completed\",\"item\":{\"type\":"
	    "\"agent_message\",\"text\":\"done\"}}\n"
	    "{\"type\":\"turn.completed\",\"usage\":{}}\n",
	    "shell(git log)\nshell(ls)\nshell(rm -rf /)\n"
	    "refused shell(rm -rf /)\nadd /work/a, update /work/o -> /work/n\n"
	    "refused add /work/.git/x\n"
	    "refused request item/permissions/requestApproval\n"
	    "turn ended\nfinished\n"),
	    "codex: a command once, when it starts; file changes; refusals; "
	    "the turn's end");
	ok(lines_are("codex", "{\"type\":\"turn.failed\",\"error\":{"
	    "\"message\":\"unexpected status 401 Unauthorized\"}}\n",
	    "turn failed: unexpected status 401 Unauthorized\nfinished\n"),
	    "codex: a failed turn says why");
	ok(lines_are("codex", "{\"type\":\"item.started\",\"item\":{\"type\":"
	    "\"command_execution\",\"id\":\"c1\",\"command\":\"printf "
	    "a\\u0000b\"}}\n{\"type\":\"turn.failed\",\"error\":{"
	    "\"message\":\"bad\\u0000byte\"}}\n",
	    "shell(printf a\\u0000b)\nturn failed: bad\\u0000byte\nfinished\n"),
	    "codex: a NUL in a command or an error is shown escaped, not cut");
	ok(lines_are("claude", ASSISTANT(TOOL_USE("t1", "Bash",
	    "{\"command\":\"printf a\\u0000b\"}")),
	    "Bash(printf a\\u0000b)\nfinished\n"),
	    "claude: a NUL in a command is shown escaped, not cut");
}

int main(void)
{
	struct ab_buf big, out;
	size_t i;

	plan(34);
	nul();
	status(RESULT("\"is_error\":false"), NULL, "ok", "a result is ok");
	status("{\"type\":\"assistant\"}\n", NULL, "error",
	    "no result line is an error");
	status(RESULT("\"is_error\":true,\"api_error_status\":401"), NULL,
	    "error", "an API error is an error");
	status(RESULT("\"is_error\":false,\"structured_output\":"
	    "{\"answer\":\"x\"}"), schema, "ok", "a matching answer is ok");
	status(RESULT("\"is_error\":false,\"structured_output\":"
	    "{\"answer\":42}"), schema, "invalid-answer",
	    "an answer of the wrong type is invalid");
	status(RESULT("\"is_error\":false,\"structured_output\":"
	    "{\"answer\":\"x\",\"extra\":1}"), schema, "invalid-answer",
	    "an answer with a property not allowed is invalid");
	status(RESULT("\"is_error\":false"), schema, "no-answer",
	    "no structured output with a schema is no-answer");
	status(RESULT("\"is_error\":false,\"structured_output\":null"), schema,
	    "no-answer", "a null structured output is no-answer");
	status(RESULT("\"is_error\":false") "not json\n{\"type\"", NULL, "ok",
	    "garbage after the result changes nothing");
	status("{\"type\":\"result\",\"is_error\":false,\"result\":\"a\xff\"}\n",
	    NULL, "error", "a result line that is not UTF-8 is not read, and "
	    "the record is still written");

	/* A line past the 4 MiB bound is skipped, and said. */
	ab_buf_init(&big, 6u << 20);	/* the 5 MiB line */
	ab_buf_adds(&big, "{\"type\":\"result\",\"is_error\":false,\"result\":\"");
	for (i = 0; i < (5u << 20); i++)
		ab_buf_addc(&big, 'x');
	ab_buf_adds(&big, "\"}\n");
	run(big.data, big.len, 65536, NULL, &out);
	ok(has(&out, "status", "output-too-large") &&
	    num(&out, "lines_over_bound") == 1,
	    "a result line past the line bound is output-too-large");
	ab_buf_free(&out);

	/* A final message past 64 KiB is cut, and flagged. */
	ab_buf_reset(&big);
	ab_buf_adds(&big, "{\"type\":\"result\",\"is_error\":false,\"result\":\"");
	for (i = 0; i < 70000; i++)
		ab_buf_addc(&big, 'y');
	ab_buf_adds(&big, "\"}\n");
	run(big.data, big.len, 4096, NULL, &out);
	ok(has(&out, "status", "ok") && out.len > 65000 && out.len < 70000 &&
	    strstr(out.data, "\"final_message_truncated\":true") != NULL,
	    "a final message past 64 KiB is cut and flagged");
	ab_buf_free(&out);

	/* At most 100 refused calls are listed. */
	ab_buf_reset(&big);
	ab_buf_adds(&big, "{\"type\":\"result\",\"is_error\":false,"
	    "\"permission_denials\":[");
	for (i = 0; i < 150; i++)
		ab_buf_addf(&big, "%s{\"tool_name\":\"Bash\",\"tool_input\":"
		    "{\"command\":\"touch /work/%zu\"}}", i ? "," : "", i);
	ab_buf_adds(&big, "]}\n");
	run(big.data, big.len, 1000, NULL, &out);
	ok(strstr(out.data, "\"refused_truncated\":true") != NULL &&
	    strstr(out.data, "/work/99\"") != NULL &&
	    strstr(out.data, "/work/100\"") == NULL,
	    "at most 100 refused calls are kept, the rest flagged");
	ab_buf_free(&out);
	ab_buf_free(&big);
	codex();
	steps();
	return done_testing();
}
