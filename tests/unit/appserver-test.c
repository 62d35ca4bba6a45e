/* appserver-test.c: unit tests for lib/agent/appserver.c (ab-codex's side of
 * Codex's app-server), TAP output.  The server's messages are crafted:
 * they stand for a Codex whose thread came back with another policy (a
 * ChatGPT sign-in's cloud requirements can do that), a server that asks
 * for another thread, a reviewer or remote control agentbox never
 * allowed, which the real CLI cannot be made to produce on demand.  The
 * filesystem is a table (fake_lstat). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "appserver.h"
#include "pathcheck.h"

#include "tap.h"

/* /work holds a file, a directory, and a symbolic link to it. */
static int fake_lstat(const char *path, struct stat *st)
{
	static const struct { const char *path; mode_t mode; } fs[] = {
		{ "/work", S_IFDIR | 0755 },
		{ "/work/notes.txt", S_IFREG | 0644 },
		{ "/work/sub", S_IFDIR | 0755 },
		{ "/work/sub/keep", S_IFREG | 0644 },
		{ "/work/link", S_IFLNK | 0777 },
		{ "/work/notes.txt.d", S_IFREG | 0644 },
		{ NULL, 0 } };
	int i;

	for (i = 0; fs[i].path != NULL; i++)
		if (strcmp(fs[i].path, path) == 0) {
			memset(st, 0, sizeof *st);
			st->st_mode = fs[i].mode;
			return 0;
		}
	errno = ENOENT;
	return -1;
}

#define THREAD "thr-1"
#define GOOD_THREAD \
	"{\"id\":2,\"result\":{\"thread\":{\"id\":\"" THREAD "\"," \
	"\"ephemeral\":true},\"model\":\"gpt-5.5\",\"cwd\":\"/work\"," \
	"\"approvalPolicy\":\"on-request\",\"approvalsReviewer\":\"user\"," \
	"\"sandbox\":{\"type\":\"workspaceWrite\",\"writableRoots\":[]," \
	"\"networkAccess\":false}}}\n"

static void feed(struct ab_as *s, const char *text)
{
	ab_as_feed(s, text, strlen(text));
}

/* A session whose thread has started: turn/start sent, to_server and
 * events emptied. */
static void started(struct ab_as *s, const char *model)
{
	ab_as_init(s, "/work", model, "Do the task.", NULL, fake_lstat);
	feed(s, "{\"id\":1,\"result\":{}}\n");
	feed(s, GOOD_THREAD);
	ab_buf_reset(&s->to_server);
	ab_buf_reset(&s->events);
}

static int sent(const struct ab_as *s, const char *needle)
{
	return s->to_server.data != NULL &&
	    strstr(s->to_server.data, needle) != NULL;
}

static int emitted(const struct ab_as *s, const char *needle)
{
	return s->events.data != NULL && strstr(s->events.data, needle) != NULL;
}

static void test_start(void)
{
	struct ab_as s;

	ab_as_init(&s, "/work", "gpt-5.5", "Do \"it\".",
	    "{\n  \"type\":\r\n\"object\"}\n", fake_lstat);
	ok(sent(&s, "\"method\":\"initialize\"") &&
	    sent(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"initialized\"}") &&
	    sent(&s, "\"method\":\"thread/start\",\"params\":{\"cwd\":\"/work\","
	    "\"sandbox\":\"workspace-write\",\"approvalPolicy\":\"on-request\","
	    "\"approvalsReviewer\":\"user\",\"ephemeral\":true,"
	    "\"model\":\"gpt-5.5\"}"), "initialize, then the thread exactly");
	ok(!sent(&s, "turn/start"), "no turn before the thread is checked");
	ab_buf_reset(&s.to_server);
	feed(&s, "{\"id\":1,\"result\":{}}\n" GOOD_THREAD);
	ok(s.state == AB_AS_RUNNING && sent(&s, "\"method\":\"turn/start\","
	    "\"params\":{\"threadId\":\"thr-1\",\"input\":[{\"type\":\"text\","
	    "\"text\":\"Do \\\"it\\\".\"}],\"outputSchema\":{   \"type\":"
	    "  \"object\"} }}\n"), "the turn: the prompt, escaped, and the "
	    "schema, on one line");
	ab_as_free(&s);
}

/* A thread/start answer with FROM replaced by TO aborts the run. */
static void thread_wrong(const char *from, const char *to, const char *what)
{
	char reply[1024], *p, desc[200];
	struct ab_as s;

	snprintf(reply, sizeof reply, "%s", GOOD_THREAD);
	p = strstr(reply, from);
	if (p == NULL) {
		ok(0, from);
		return;
	}
	memmove(p + strlen(to), p + strlen(from), strlen(p + strlen(from)) + 1);
	memcpy(p, to, strlen(to));
	ab_as_init(&s, "/work", "gpt-5.5", "x", NULL, fake_lstat);
	feed(&s, reply);
	snprintf(desc, sizeof desc, "a thread with %s aborts, naming it", to);
	ok(s.state == AB_AS_ABORTED && strstr(s.why, what) != NULL &&
	    !sent(&s, "turn/start") && emitted(&s, "\"type\":\"turn.failed\"")
	    && emitted(&s, "ab-codex stopped Codex"), desc);
	ab_as_free(&s);
}

static void test_thread_checks(void)
{
	thread_wrong("\"on-request\"", "\"never\"", "approval policy");
	thread_wrong("\"on-request\"", "\"untrusted\"", "approval policy");
	thread_wrong("\"user\"", "\"auto_review\"", "reviewer");
	thread_wrong("\"user\"", "\"guardian_subagent\"", "reviewer");
	thread_wrong("\"workspaceWrite\"", "\"dangerFullAccess\"", "sandbox");
	thread_wrong("\"workspaceWrite\"", "\"externalSandbox\"", "sandbox");
	thread_wrong("\"networkAccess\":false", "\"networkAccess\":true",
	    "sandbox");
	thread_wrong("\"writableRoots\":[]", "\"writableRoots\":[\"/\"]",
	    "sandbox");
	thread_wrong("\"cwd\":\"/work\"", "\"cwd\":\"/\"", "working directory");
	thread_wrong("\"model\":\"gpt-5.5\"", "\"model\":\"other\"", "model");
	thread_wrong("\"ephemeral\":true", "\"ephemeral\":false", "follow");
}

/* NOTE, fed to a running session, aborts it (or not, with want 0). */
static void note_aborts(const char *note, int want, const char *desc)
{
	struct ab_as s;

	started(&s, NULL);
	feed(&s, note);
	ok((s.state == AB_AS_ABORTED) == want, desc);
	ab_as_free(&s);
}

static void test_signs(void)
{
	note_aborts("{\"method\":\"remoteControl/status/changed\",\"params\":"
	    "{\"status\":\"connected\"}}\n", 1, "remote control connected "
	    "aborts");
	note_aborts("{\"method\":\"remoteControl/status/changed\",\"params\":"
	    "{\"status\":\"disabled\"}}\n", 0, "remote control disabled does "
	    "not");
	note_aborts("{\"method\":\"item/autoApprovalReview/started\",\"params\":"
	    "{\"threadId\":\"thr-1\"}}\n", 1, "an auto-review aborts");
	note_aborts("{\"method\":\"guardianWarning\",\"params\":{}}\n", 1,
	    "a guardian warning aborts");
	note_aborts("{\"method\":\"autoApprovalReview/strictReviewRequired\","
	    "\"params\":{}}\n", 1, "a strict review aborts");
	note_aborts("{\"method\":\"item/started\",\"params\":{\"threadId\":"
	    "\"thr-2\",\"item\":{\"type\":\"agentMessage\",\"id\":\"m\"}}}\n",
	    1, "an item of another thread aborts");
	note_aborts("{\"method\":\"item/started\",\"params\":{\"threadId\":"
	    "\"thr-1\",\"item\":{\"type\":\"mcpToolCall\",\"id\":\"m\"}}}\n",
	    1, "an MCP tool call aborts");
	note_aborts("{\"method\":\"item/started\",\"params\":{\"threadId\":"
	    "\"thr-1\",\"item\":{\"type\":\"collabAgentToolCall\",\"id\":"
	    "\"m\"}}}\n", 1, "a sub-agent aborts");
	note_aborts("{\"method\":\"thread/settings/updated\",\"params\":{"
	    "\"threadId\":\"thr-1\",\"threadSettings\":{\"approvalPolicy\":"
	    "\"never\",\"approvalsReviewer\":\"user\",\"cwd\":\"/work\","
	    "\"sandboxPolicy\":{\"type\":\"workspaceWrite\"}}}}\n", 1,
	    "a policy changed mid-run aborts");
	note_aborts("{\"method\":\"thread/settings/updated\",\"params\":{"
	    "\"threadId\":\"thr-1\",\"threadSettings\":{\"approvalPolicy\":"
	    "\"on-request\",\"approvalsReviewer\":\"user\",\"cwd\":\"/work\","
	    "\"sandboxPolicy\":{\"type\":\"workspaceWrite\"}}}}\n", 0,
	    "the same settings do not");
	note_aborts("{\"id\":7,\"method\":\"item/commandExecution/"
	    "requestApproval\",\"params\":{\"threadId\":\"thr-9\"}}\n", 1,
	    "a request for another thread aborts");
	note_aborts("{\"id\":7,\"method\":\"item/commandExecution/"
	    "requestApproval\",\"params\":{}}\n", 1,
	    "a request naming no thread aborts");
	note_aborts("{\"id\":9,\"result\":{}}\n", 1, "an answer to a request "
	    "never sent aborts");
	note_aborts("not json\n", 1, "a line that is not JSON aborts");
	note_aborts("[1]\n", 1, "a line that is not an object aborts");
	note_aborts("{\"method\":\"item/completed\",\"params\":{\"threadId\":"
	    "\"thr-1\",\"item\":{\"type\":\"fileChange\",\"id\":\"f\","
	    "\"status\":\"completed\",\"changes\":[{\"path\":\"/work/a\","
	    "\"kind\":{\"type\":\"add\"},\"diff\":\"\"}]}}}\n", 1,
	    "a file change landing unaccepted aborts");
}

static void test_line_bound(void)
{
	struct ab_as s;
	char *big = malloc(AB_AS_LINE_MAX + 16);

	started(&s, NULL);
	memset(big, 'x', AB_AS_LINE_MAX + 15);
	big[AB_AS_LINE_MAX + 15] = '\0';
	feed(&s, big);
	ok(s.state == AB_AS_ABORTED && strstr(s.why, "over") != NULL,
	    "a message past the line bound aborts");
	free(big);
	ab_as_free(&s);
}

/* One delta of N bytes of 'x' for the agent message ITEM. */
static void delta(struct ab_as *s, const char *item, size_t n)
{
	static const char head[] = "{\"method\":\"item/agentMessage/delta\","
	    "\"params\":{\"threadId\":\"thr-1\",\"itemId\":\"";
	struct ab_buf b;

	ab_buf_init(&b, AB_AS_LINE_MAX + 1024);	/* past the line bound */
	ab_buf_add(&b, head, strlen(head));
	ab_buf_add(&b, item, strlen(item));
	ab_buf_add(&b, "\",\"delta\":\"", 11);
	for (size_t i = 0; i < n; i++)
		ab_buf_add(&b, "x", 1);
	ab_buf_add(&b, "\"}}\n", 4);
	ab_as_feed(s, b.data, b.len);
	ab_buf_free(&b);
}

/* A message is stopped as soon as its deltas pass the bound its whole
 * item/completed line would pass; two messages are counted apart. */
static void test_message_bound(void)
{
	struct ab_as s;
	size_t piece = 256u << 10;
	unsigned i;

	started(&s, NULL);
	for (i = 0; i < AB_AS_LINE_MAX / piece; i++) {
		delta(&s, i % 2 ? "m1" : "m2", piece);
		delta(&s, i % 2 ? "m1" : "m2", piece);
	}
	ok(s.state == AB_AS_RUNNING,
	    "two messages whose deltas each stay under the bound run on");
	ab_as_free(&s);
	started(&s, NULL);
	for (i = 0; i < AB_AS_LINE_MAX / piece; i++)
		delta(&s, "m", piece);
	ok(s.state == AB_AS_RUNNING,
	    "a message whose deltas reach the bound exactly runs on");
	delta(&s, "m", 1);
	ok(s.state == AB_AS_ABORTED && strstr(s.why, "over") != NULL,
	    "one delta more stops Codex: the whole message would be over");
	ab_as_free(&s);
}

/* The decision on a file change of CHANGES (a JSON array), announced in
 * item/started or not, with EXTRA params: "accept" or "decline". */
static const char *decide(const char *changes, int announce,
    const char *extra)
{
	static char out[16];
	char msg[4096];
	struct ab_as s;

	started(&s, NULL);
	if (announce) {
		snprintf(msg, sizeof msg, "{\"method\":\"item/started\","
		    "\"params\":{\"threadId\":\"thr-1\",\"item\":{\"type\":"
		    "\"fileChange\",\"id\":\"f1\",\"status\":\"inProgress\","
		    "\"changes\":%s}}}\n", changes);
		feed(&s, msg);
	}
	snprintf(msg, sizeof msg, "{\"method\":\"item/fileChange/"
	    "requestApproval\",\"id\":4,\"params\":{\"threadId\":\"thr-1\","
	    "\"turnId\":\"t\",\"itemId\":\"f1\"%s}}\n", extra);
	feed(&s, msg);
	snprintf(out, sizeof out, "%s",
	    sent(&s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"decision\":"
	    "\"accept\"}}") ? "accept" : sent(&s, "{\"jsonrpc\":\"2.0\",\"id\":"
	    "4,\"result\":{\"decision\":\"decline\"}}") ? "decline" : "none");
	if (strcmp(out, "decline") == 0 && !emitted(&s, "\"status\":"
	    "\"declined\""))
		snprintf(out, sizeof out, "unlisted");
	ab_as_free(&s);
	return out;
}

#define ADD(p) "[{\"path\":\"" p "\",\"kind\":{\"type\":\"add\"},\"diff\":\"x\"}]"

static void test_file_changes(void)
{
	ok(strcmp(decide(ADD("/work/new/dir/a.txt"), 1, ""), "accept") == 0,
	    "an add under /work is accepted");
	ok(strcmp(decide("[{\"path\":\"/work/notes.txt\",\"kind\":{\"type\":"
	    "\"update\",\"move_path\":\"/work/sub/n.txt\"},\"diff\":\"\"},"
	    "{\"path\":\"/work/sub/keep\",\"kind\":{\"type\":\"delete\"},"
	    "\"diff\":\"\"}]", 1, ""), "accept") == 0,
	    "an update with a move and a delete are accepted");
	ok(strcmp(decide(ADD("/work/a.txt"), 0, ""), "decline") == 0,
	    "a change never announced is declined, and listed");
	ok(strcmp(decide(ADD("/work/a.txt"), 1, ",\"grantRoot\":\"/\""),
	    "decline") == 0, "a change asking for a writable root is declined");
	ok(strcmp(decide(ADD("/work/a.txt"), 1, ",\"grantRoot\":null"),
	    "accept") == 0, "a null grantRoot is no request");
	ok(strcmp(decide(ADD("/tmp/a"), 1, ""), "decline") == 0,
	    "outside /work: declined");
	ok(strcmp(decide(ADD("/workx/a"), 1, ""), "decline") == 0,
	    "a sibling of /work: declined");
	ok(strcmp(decide(ADD("/work/../tmp/a"), 1, ""), "decline") == 0,
	    "a .. component: declined");
	ok(strcmp(decide(ADD("/work/./a"), 1, ""), "decline") == 0,
	    "a . component: declined");
	ok(strcmp(decide(ADD("/work//a"), 1, ""), "decline") == 0,
	    "an empty component: declined");
	ok(strcmp(decide(ADD("/work/.git/config"), 1, ""), "decline") == 0,
	    "into .git: declined");
	ok(strcmp(decide(ADD("/work/x/GiT~1/config"), 1, ""), "decline") == 0 &&
	    strcmp(decide(ADD("/work/.git./x"), 1, ""), "decline") == 0,
	    "into .git in another spelling: declined");
	ok(strcmp(decide(ADD("/work/.codex/config.toml"), 1, ""), "decline") ==
	    0 && strcmp(decide(ADD("/work/sub/.Codex/r"), 1, ""), "decline") ==
	    0, "into .codex at any depth: declined");
	ok(strcmp(decide(ADD("/work/link/a"), 1, ""), "decline") == 0,
	    "through a symbolic link: declined");
	ok(strcmp(decide(ADD("/work/link"), 1, ""), "decline") == 0,
	    "onto a symbolic link: declined");
	ok(strcmp(decide(ADD("/work/sub"), 1, ""), "decline") == 0,
	    "onto a directory: declined");
	ok(strcmp(decide(ADD("/work/notes.txt/a"), 1, ""), "decline") == 0,
	    "below a file: declined");
	ok(strcmp(decide("[{\"path\":\"/work/notes.txt\",\"kind\":{\"type\":"
	    "\"update\",\"move_path\":\"/tmp/x\"},\"diff\":\"\"}]", 1, ""),
	    "decline") == 0, "a move out of /work: declined");
	ok(strcmp(decide("[{\"path\":\"/work/a\",\"kind\":{\"type\":\"chmod\"},"
	    "\"diff\":\"\"}]", 1, ""), "decline") == 0,
	    "a kind agentbox does not know: declined");
	ok(strcmp(decide("[{\"path\":\"/work/a\",\"kind\":{\"type\":\"add\","
	    "\"move_path\":\"/work/b\"},\"diff\":\"\"}]", 1, ""), "decline") ==
	    0, "a move on an add: declined");
	ok(strcmp(decide("[]", 1, ""), "decline") == 0,
	    "a change of no path: declined");
	ok(strcmp(decide("{}", 1, ""), "decline") == 0,
	    "changes that are not a list: declined");
	ok(strcmp(decide(ADD("/work/a\\u0001b"), 1, ""), "decline") == 0,
	    "a control byte: declined");
}

/* A later patchUpdated that adds a bad path spoils the item. */
static void test_patch_updated(void)
{
	struct ab_as s;

	started(&s, NULL);
	feed(&s, "{\"method\":\"item/started\",\"params\":{\"threadId\":"
	    "\"thr-1\",\"item\":{\"type\":\"fileChange\",\"id\":\"f1\","
	    "\"changes\":" ADD("/work/a") "}}}\n"
	    "{\"method\":\"item/fileChange/patchUpdated\",\"params\":{"
	    "\"threadId\":\"thr-1\",\"itemId\":\"f1\",\"changes\":"
	    ADD("/etc/passwd") "}}\n"
	    "{\"method\":\"item/fileChange/requestApproval\",\"id\":\"r-1\","
	    "\"params\":{\"threadId\":\"thr-1\",\"itemId\":\"f1\"}}\n");
	ok(sent(&s, "{\"jsonrpc\":\"2.0\",\"id\":\"r-1\",\"result\":"
	    "{\"decision\":\"decline\"}}"), "every path an item ever named "
	    "counts; a string request ID is echoed");
	ab_as_free(&s);
}

static void test_requests(void)
{
	struct ab_as s;

	started(&s, NULL);
	feed(&s, "{\"method\":\"item/started\",\"params\":{\"threadId\":"
	    "\"thr-1\",\"item\":{\"type\":\"commandExecution\",\"id\":"
	    "\"c0\",\"command\":\"make test\",\"status\":\"inProgress\"}}}\n");
	ok(strcmp(s.events.data ? s.events.data : "", "{\"type\":"
	    "\"item.started\",\"item\":{\"type\":\"command_execution\","
	    "\"id\":\"c0\",\"status\":\"in_progress\",\"command\":"
	    "\"make test\"}}\n") == 0, "a command is told as it starts, for "
	    "ab-run's progress lines");
	ab_buf_reset(&s.events);
	feed(&s, "{\"method\":\"item/commandExecution/requestApproval\",\"id\":"
	    "5,\"params\":{\"threadId\":\"thr-1\",\"itemId\":\"c1\",\"kind\":"
	    "\"command\",\"command\":\"rm -rf /work\",\"cwd\":\"/work\","
	    "\"availableDecisions\":[\"accept\",\"acceptForSession\"]}}\n");
	ok(sent(&s, "\"id\":5,\"result\":{\"decision\":\"decline\"}") &&
	    emitted(&s, "\"command\":\"rm -rf /work\""),
	    "a command's approval is declined and listed");
	feed(&s, "{\"method\":\"item/completed\",\"params\":{\"threadId\":"
	    "\"thr-1\",\"item\":{\"type\":\"commandExecution\",\"id\":\"c1\","
	    "\"command\":\"rm -rf /work\",\"status\":\"declined\"}}}\n");
	ok(strstr(strstr(s.events.data, "rm -rf") + 1, "rm -rf") == NULL,
	    "its completion is not listed twice");
	feed(&s, "{\"method\":\"item/permissions/requestApproval\",\"id\":6,"
	    "\"params\":{\"threadId\":\"thr-1\",\"itemId\":\"p\"}}\n");
	ok(sent(&s, "\"id\":6,\"error\":"), "a permissions request gets an "
	    "error");
	feed(&s, "{\"method\":\"mcpServer/elicitation/request\",\"id\":7,"
	    "\"params\":{\"threadId\":\"thr-1\"}}\n");
	ok(sent(&s, "\"id\":7,\"result\":{\"action\":\"cancel\"}"),
	    "an MCP elicitation is cancelled");
	feed(&s, "{\"method\":\"item/tool/requestUserInput\",\"id\":8,"
	    "\"params\":{\"threadId\":\"thr-1\"}}\n"
	    "{\"method\":\"execCommandApproval\",\"id\":9,\"params\":"
	    "{\"conversationId\":\"thr-1\",\"command\":[\"id\"]}}\n");
	ok(sent(&s, "\"id\":8,\"error\":") && sent(&s, "\"id\":9,\"error\":"),
	    "any other request, of either protocol version, gets an error");
	ok(!sent(&s, "accept"), "nothing was ever accepted");
	ok(s.state == AB_AS_RUNNING, "and the turn goes on");
	ab_as_free(&s);
}

static void test_turn_end(void)
{
	struct ab_as s;

	started(&s, NULL);
	feed(&s, "{\"method\":\"thread/tokenUsage/updated\",\"params\":{"
	    "\"threadId\":\"thr-1\",\"tokenUsage\":{\"total\":{\"inputTokens\":"
	    "10,\"cachedInputTokens\":2,\"outputTokens\":5,"
	    "\"reasoningOutputTokens\":1,\"totalTokens\":15}}}}\n"
	    "{\"method\":\"item/completed\",\"params\":{\"threadId\":\"thr-1\","
	    "\"item\":{\"type\":\"agentMessage\",\"id\":\"m\",\"text\":"
	    "\"done\"}}}\n"
	    "{\"method\":\"turn/completed\",\"params\":{\"threadId\":\"thr-1\","
	    "\"turn\":{\"id\":\"t\",\"status\":\"completed\",\"items\":[]}}}\n");
	ok(s.state == AB_AS_DONE && emitted(&s, "{\"type\":\"item.completed\","
	    "\"item\":{\"type\":\"agent_message\",\"status\":\"completed\","
	    "\"text\":\"done\"}}\n{\"type\":\"turn.completed\",\"usage\":{"
	    "\"input_tokens\":10,\"cached_input_tokens\":2,\"output_tokens\":5,"
	    "\"reasoning_output_tokens\":1}}\n"), "a completed turn: the "
	    "message and the usage, as codex exec writes them");
	ab_as_free(&s);
	started(&s, NULL);
	feed(&s, "{\"method\":\"turn/completed\",\"params\":{\"threadId\":"
	    "\"thr-1\",\"turn\":{\"id\":\"t\",\"status\":\"failed\",\"error\":"
	    "{\"message\":\"unexpected status 401 Unauthorized\"},\"items\":"
	    "[]}}}\n");
	ok(s.state == AB_AS_FAILED && emitted(&s, "{\"type\":\"turn.failed\","
	    "\"error\":{\"message\":\"unexpected status 401 Unauthorized\"}}"),
	    "a failed turn: its error");
	ab_as_free(&s);
	started(&s, NULL);
	ab_as_eof(&s);
	ok(s.state == AB_AS_ABORTED && strstr(s.why, "ended") != NULL,
	    "Codex ending mid-turn aborts");
	ab_as_free(&s);
}

/* \u0000 in what Codex reports: text (a command's output, a message)
 * goes on escaped as it came; an ID or a path holding one is refused. */
static void test_nul(void)
{
	struct ab_as s;

	started(&s, NULL);
	feed(&s, "{\"method\":\"item/completed\",\"params\":{\"threadId\":"
	    "\"thr-1\",\"item\":{\"type\":\"commandExecution\",\"id\":\"c1\","
	    "\"command\":\"cat bin.dat\",\"status\":\"completed\","
	    "\"aggregatedOutput\":\"a\\u0000b\\u0000c\\n\",\"exitCode\":0}}}\n"
	    "{\"method\":\"item/completed\",\"params\":{\"threadId\":\"thr-1\","
	    "\"item\":{\"type\":\"agentMessage\",\"id\":\"m\",\"text\":"
	    "\"it holds a\\u0000b\"}}}\n");
	ok(s.state == AB_AS_RUNNING && strcmp(s.events.data ? s.events.data :
	    "", "{\"type\":\"item.completed\",\"item\":{\"type\":"
	    "\"command_execution\",\"id\":\"c1\",\"status\":\"completed\","
	    "\"command\":\"cat bin.dat\",\"aggregated_output\":"
	    "\"a\\u0000b\\u0000c\\n\",\"exit_code\":0}}\n"
	    "{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\","
	    "\"status\":\"completed\",\"text\":\"it holds a\\u0000b\"}}\n") == 0,
	    "a command's output and a message holding NULs go on, escaped");
	ab_buf_reset(&s.events);
	feed(&s, "{\"method\":\"item/started\",\"params\":{\"threadId\":"
	    "\"thr-1\",\"item\":{\"type\":\"commandExecution\",\"id\":"
	    "\"c\\u00002\",\"command\":\"true\",\"status\":\"inProgress\"}}}\n");
	ok(s.state == AB_AS_RUNNING && s.events.len == 0,
	    "an item whose ID holds a NUL is not followed");
	feed(&s, "{\"method\":\"item/commandExecution/requestApproval\",\"id\":"
	    "5,\"params\":{\"threadId\":\"thr-1\",\"itemId\":\"c3\",\"kind\":"
	    "\"command\",\"command\":\"printf a\\u0000b\",\"cwd\":\"/work\"}}\n");
	ok(sent(&s, "\"id\":5,\"result\":{\"decision\":\"decline\"}") &&
	    emitted(&s, "\"command\":\"printf a\\u0000b\""),
	    "a declined command holding a NUL is listed whole");
	feed(&s, "{\"method\":\"item/started\",\"params\":{\"threadId\":"
	    "\"thr-1\\u0000x\",\"item\":{\"type\":\"agentMessage\",\"id\":"
	    "\"m2\"}}}\n");
	ok(s.state == AB_AS_ABORTED && strstr(s.why, "did not start") != NULL,
	    "a thread ID holding a NUL is another thread");
	ab_as_free(&s);

	ok(strcmp(decide(ADD("/work/a\\u0000b"), 1, ""), "decline") == 0,
	    "a file change whose path holds a NUL is declined");

	started(&s, NULL);
	feed(&s, "{\"method\":\"turn/completed\",\"params\":{\"threadId\":"
	    "\"thr-1\",\"turn\":{\"id\":\"t\",\"status\":\"failed\",\"error\":"
	    "{\"message\":\"bad\\u0000byte\"},\"items\":[]}}}\n");
	ok(s.state == AB_AS_FAILED && emitted(&s, "{\"type\":\"turn.failed\","
	    "\"error\":{\"message\":\"bad\\u0000byte\"}}") &&
	    strcmp(s.why, "bad\\x00byte") == 0,
	    "a failed turn's error holding a NUL: whole in the event, "
	    "printable in why");
	ab_as_free(&s);

	started(&s, NULL);
	feed(&s, "{\"method\":\"x\\u001b[2J\\u00e9\",\"params\":{"
	    "\"threadId\":\"other\"}}\n");
	ok(s.state == AB_AS_ABORTED && strcmp(s.why,
	    "x\\x1b[2J\\xc3\\xa9 for a thread agentbox did not start") == 0,
	    "an abort naming an escape sequence and UTF-8: \\xNN in why");
	ab_as_free(&s);
}

static void test_path_ok(void)
{
	char why[256];

	ok(ab_path_write_ok("/work", "/work/a/b/c", fake_lstat, why,
	    sizeof why) == 0, "a path to be made is fine");
	ok(ab_path_write_ok("/work", "/work/link/x", fake_lstat, why,
	    sizeof why) < 0 && strstr(why, "symbolic link") != NULL,
	    "a symbolic link on the way is named");
	ok(ab_path_write_ok("/work", "/work", fake_lstat, why, sizeof why) < 0,
	    "the root itself is no file");
	ok(ab_path_write_ok("/work", "/work/", fake_lstat, why, sizeof why) < 0,
	    "nor is the root with a slash");
	ok(ab_path_write_ok("/work", "work/a", fake_lstat, why, sizeof why) < 0,
	    "a relative path is refused");
	ok(ab_path_write_ok("/src", "/work/a", fake_lstat, why, sizeof why) < 0 &&
	    strcmp(why, "/work/a is not under /src") == 0,
	    "a path outside the root is named with the root given");
}

int main(void)
{
	plan(82);
	test_start();
	test_thread_checks();
	test_signs();
	test_line_bound();
	test_message_bound();
	test_file_changes();
	test_patch_updated();
	test_requests();
	test_turn_end();
	test_nul();
	test_path_ok();
	return done_testing();
}
