/* appserver.c: ab-codex's side of Codex's app-server (appserver.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "appserver.h"
#include "json.h"
#include "pathcheck.h"

/* Our requests' IDs: one of each, in this order. */
enum { ID_INIT = 1, ID_THREAD, ID_TURN };

#define DECLINE_COMMAND "agentbox approves no command while Codex runs: " \
	"only the profile's --allow-command rules run"

/* RC of an append to Q, s->to_server or s->events: a line that did not
 * fit stops the run rather than go missing. */
static void queued(struct ab_as *s, const struct ab_buf *q, int rc)
{
	if (rc < 0)
		ab_as_abort(s, "the lines for %s: %s %zu bytes",
		    q == &s->events ? "ab-run" : "Codex", q->over ?
		    "larger than" : "out of memory at", q->max);
}

static void jw_line(struct ab_as *s, struct ab_buf *out, struct ab_buf *b)
{
	queued(s, out, ab_buf_add(out, b->data, b->len) < 0 ||
	    ab_buf_addc(out, '\n') < 0 ? -1 : 0);
	ab_buf_free(b);
}

/* N bytes of text, NULs and all, cut to cap bytes on a character
 * boundary (the writer refuses half a UTF-8 sequence). */
static void kstrn_cut(struct ab_jw *w, const char *k, const char *v,
    size_t n, size_t cap)
{
	if (n > cap) {
		n = cap;
		while (n > 0 && ((unsigned char)v[n] & 0xc0) == 0x80)
			n--;
	}
	ab_jw_kstrn(w, k, v, n);
}

static void kstr_cut(struct ab_jw *w, const char *k, const char *v,
    size_t cap)
{
	kstrn_cut(w, k, v, strlen(v), cap);
}

/* The string at T, or "" (never NULL): a malloc'd copy.  For a word or
 * an ID: one holding a NUL is "". */
static char *str_or_empty(const struct ab_json *j, int t)
{
	char *v = ab_json_str(j, t);

	return v != NULL ? v : strdup("");
}

/* Text the server reports (a command, what it printed, a message), NULs
 * and all, its length in *n; "" when absent; NULL only without memory. */
static char *text_or_empty(const struct ab_json *j, int t, size_t *n)
{
	char *v = ab_json_strn(j, t, n);

	if (v != NULL)
		return v;
	*n = 0;
	return strdup("");
}

static int copy_id(const struct ab_json *j, int t, char *dst)
{
	char *v = ab_json_str(j, t);
	int rc = -1;

	if (v != NULL && v[0] != '\0' && strlen(v) < AB_AS_ID_MAX) {
		memcpy(dst, v, strlen(v) + 1);
		rc = 0;
	}
	free(v);
	return rc;
}

/* The turn's last event: {"type":"turn.failed","error":{"message":M}},
 * M the N bytes of TEXT. */
static void event_failed(struct ab_as *s, const char *text, size_t n)
{
	struct ab_buf b;
	struct ab_jw w;

	ab_buf_init(&b, AB_AS_EVENT_MAX);
	ab_jw_init(&w, &b);
	ab_jw_obj(&w);
	ab_jw_kstr(&w, "type", "turn.failed");
	ab_jw_key(&w, "error");
	ab_jw_obj(&w);
	kstrn_cut(&w, "message", text, n, AB_AS_TEXT_MAX);
	ab_jw_obj_end(&w);
	ab_jw_obj_end(&w);
	if (ab_jw_done(&w) == 0)
		jw_line(s, &s->events, &b);
	else
		ab_buf_free(&b);
}

void ab_as_abort(struct ab_as *s, const char *fmt, ...)
{
	char msg[AB_AS_WHY_MAX + 32], text[AB_AS_WHY_MAX];
	va_list ap;

	if (s->state == AB_AS_ABORTED)
		return;
	/* A reason cut short still reads. */
	va_start(ap, fmt);
	(void)ab_vfmt(text, sizeof text, fmt, ap);
	va_end(ap);
	/* One line of printable ASCII: it reaches a terminal as it is, and
	 * a cut above may have split a character. */
	ab_printable(s->why, sizeof s->why, text, strlen(text));
	s->state = AB_AS_ABORTED;
	/* Sized for the reason: a bug here when cut. */
	if (ab_fmt(msg, sizeof msg, "ab-codex stopped Codex: %s", s->why) < 0)
		abort();
	event_failed(s, msg, strlen(msg));
}

/* --- what agentbox sends ---------------------------------------------- */

/* {"jsonrpc":"2.0","id":ID,"method":METHOD,"params":{ ... the caller
 * writes the params and closes both objects. */
static void request_begin(struct ab_jw *w, struct ab_buf *b, int id,
    const char *method)
{
	ab_buf_init(b, AB_AS_EVENT_MAX);
	ab_jw_init(w, b);
	ab_jw_obj(w);
	ab_jw_kstr(w, "jsonrpc", "2.0");
	ab_jw_kint(w, "id", id);
	ab_jw_kstr(w, "method", method);
	ab_jw_key(w, "params");
	ab_jw_obj(w);
}

static void send_thread_start(struct ab_as *s)
{
	struct ab_buf b;
	struct ab_jw w;

	request_begin(&w, &b, ID_THREAD, "thread/start");
	ab_jw_kstr(&w, "cwd", s->root);
	ab_jw_kstr(&w, "sandbox", "workspace-write");
	ab_jw_kstr(&w, "approvalPolicy", "on-request");
	ab_jw_kstr(&w, "approvalsReviewer", "user");
	ab_jw_kbool(&w, "ephemeral", 1);
	if (s->model != NULL)
		ab_jw_kstr(&w, "model", s->model);
	ab_jw_obj_end(&w);
	ab_jw_obj_end(&w);
	jw_line(s, &s->to_server, &b);
}

static void send_turn_start(struct ab_as *s)
{
	struct ab_buf b;
	struct ab_jw w;

	request_begin(&w, &b, ID_TURN, "turn/start");
	ab_jw_kstr(&w, "threadId", s->thread);
	ab_jw_key(&w, "input");
	ab_jw_arr(&w);
	ab_jw_obj(&w);
	ab_jw_kstr(&w, "type", "text");
	ab_jw_kstr(&w, "text", s->prompt);
	ab_jw_obj_end(&w);
	ab_jw_arr_end(&w);
	if (s->schema != NULL) {
		/* One message is one line: a line break in valid JSON is
		 * whitespace between tokens, and a space serves as well. */
		size_t i, n = strlen(s->schema);
		char *one = malloc(n + 1);

		if (one == NULL) {
			w.failed = 1;
		} else {
			for (i = 0; i <= n; i++)
				one[i] = s->schema[i] == '\n' ||
				    s->schema[i] == '\r' ? ' ' : s->schema[i];
			ab_jw_key(&w, "outputSchema");
			ab_jw_raw(&w, one, n);
			free(one);
		}
	}
	ab_jw_obj_end(&w);
	ab_jw_obj_end(&w);
	s->turn_sent = 1;
	if (ab_jw_done(&w) != 0) {
		if (b.over)
			ab_as_abort(s, "the turn is larger than %u bytes",
			    AB_AS_EVENT_MAX);
		else
			ab_as_abort(s, "the turn could not be written");
		ab_buf_free(&b);
		return;
	}
	jw_line(s, &s->to_server, &b);
}

int ab_as_init(struct ab_as *s, const char *root, const char *model,
    const char *prompt, const char *schema,
    int (*lstat_fn)(const char *, struct stat *))
{
	static const char hello[] =
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
	    "\"params\":{\"clientInfo\":{\"name\":\"agentbox\","
	    "\"version\":\"1\"}}}\n"
	    "{\"jsonrpc\":\"2.0\",\"method\":\"initialized\"}\n";

	memset(s, 0, sizeof *s);
	s->root = root;
	s->model = model;
	s->prompt = prompt;
	s->schema = schema;
	s->lstat = lstat_fn;
	ab_buf_init(&s->to_server, AB_AS_QUEUE_MAX);
	ab_buf_init(&s->events, AB_AS_QUEUE_MAX);
	ab_lines_init(&s->lines, AB_AS_LINE_MAX);
	ab_buf_init(&s->usage, 4096);
	if (!ab_json_text_ok(prompt, strlen(prompt)))
		return -1;
	ab_buf_adds(&s->to_server, hello);
	send_thread_start(s);
	return s->to_server.over ? -1 : 0;
}

static void item_free(struct ab_as_item *it)
{
	int i;

	if (it == NULL)
		return;
	for (i = 0; i < it->nchanges; i++) {
		free(it->c[i].path);
		free(it->c[i].move);
	}
	free(it);
}

void ab_as_free(struct ab_as *s)
{
	int i;

	for (i = 0; i < AB_AS_ITEMS_MAX; i++)
		item_free(s->items[i]);
	ab_buf_free(&s->to_server);
	ab_buf_free(&s->events);
	ab_lines_free(&s->lines);
	ab_buf_free(&s->usage);
}

/* A response to the server's request ID (its JSON text, echoed), with
 * MEMBER: "result":... or "error":... */
static void answer(struct ab_as *s, const struct ab_json *j, int id,
    const char *member)
{
	const char *p;
	size_t n;

	ab_json_span(j, id, &p, &n);
	queued(s, &s->to_server, ab_buf_adds(&s->to_server,
	    "{\"jsonrpc\":\"2.0\",\"id\":") < 0 ||
	    ab_buf_add(&s->to_server, p, n) < 0 ||
	    ab_buf_addf(&s->to_server, ",%s}\n", member) < 0 ? -1 : 0);
}

static void reply(struct ab_as *s, const struct ab_json *j, int id,
    const char *result_json)
{
	char member[128];

	if (ab_fmt(member, sizeof member, "\"result\":%s", result_json) < 0)
		ab_as_abort(s, "an answer too long to send");
	else
		answer(s, j, id, member);
}

/* MESSAGE is one of this file's own, plain ASCII. */
static void reply_error(struct ab_as *s, const struct ab_json *j, int id,
    const char *message)
{
	char member[160];

	if (ab_fmt(member, sizeof member, "\"error\":{\"code\":-32000,"
	    "\"message\":\"%s\"}", message) < 0)
		ab_as_abort(s, "an answer too long to send");
	else
		answer(s, j, id, member);
}

/* --- the file changes Codex announces --------------------------------- */

static struct ab_as_item **item_slot(struct ab_as *s, const char *id)
{
	int i;

	for (i = 0; i < AB_AS_ITEMS_MAX; i++)
		if (s->items[i] != NULL && strcmp(s->items[i]->id, id) == 0)
			return &s->items[i];
	return NULL;
}

static struct ab_as_item *item_new(struct ab_as *s, const char *id)
{
	struct ab_as_item **slot = item_slot(s, id);
	int i;

	if (slot != NULL)
		return *slot;
	for (i = 0; i < AB_AS_ITEMS_MAX; i++)
		if (s->items[i] == NULL) {
			if ((s->items[i] = calloc(1, sizeof *s->items[i])) ==
			    NULL)
				return NULL;
			memcpy(s->items[i]->id, id, strlen(id) + 1);
			return s->items[i];
		}
	return NULL;
}

static void item_drop(struct ab_as *s, const char *id)
{
	struct ab_as_item **slot = item_slot(s, id);

	if (slot != NULL) {
		item_free(*slot);
		*slot = NULL;
	}
}

/* One FileUpdateChange {path, kind: {type, move_path?}}, added to the
 * item; an entry not of that form makes the whole item unacceptable. */
static void add_change(struct ab_as_item *it, const struct ab_json *j,
    int c)
{
	int kind = ab_json_key(j, c, "kind");
	int type = ab_json_key(j, kind, "type");
	int move = ab_json_key(j, kind, "move_path");
	struct ab_as_change *ch;
	char *kt;

	if (it->nchanges == AB_AS_CHANGES_MAX) {
		it->overflow = 1;
		return;
	}
	ch = &it->c[it->nchanges];
	memset(ch, 0, sizeof *ch);
	kt = ab_json_str(j, type);
	ch->path = ab_json_str(j, ab_json_key(j, c, "path"));
	if (ab_json_type(j, move) == AB_JSON_STRING)
		ch->move = ab_json_str(j, move);
	if (kt == NULL || ch->path == NULL || (ab_json_type(j, move) !=
	    AB_JSON_ABSENT && ab_json_type(j, move) != AB_JSON_NULL &&
	    ch->move == NULL) || (strcmp(kt, "add") != 0 &&
	    strcmp(kt, "update") != 0 && strcmp(kt, "delete") != 0) ||
	    (ch->move != NULL && strcmp(kt, "update") != 0) ||
	    ab_fmt(ch->kind, sizeof ch->kind, "%s", kt) < 0) {
		/* Kept as an overflow: declined whatever else it holds. */
		free(ch->path);
		free(ch->move);
		free(kt);
		it->overflow = 1;
		return;
	}
	free(kt);
	it->nchanges++;
}

static void add_changes(struct ab_as *s, const char *id,
    const struct ab_json *j, int arr)
{
	struct ab_as_item *it = item_new(s, id);
	int i, c;

	if (it == NULL)
		return;		/* not kept: its request will be declined */
	if (ab_json_type(j, arr) != AB_JSON_ARRAY)
		it->overflow = 1;
	for (i = 0; (c = ab_json_elem(j, arr, i)) >= 0; i++)
		add_change(it, j, c);
}

/* --- events for ab-run ------------------------------------------------- */

static void changes_json(struct ab_jw *w, const struct ab_as_item *it)
{
	int i;

	ab_jw_key(w, "changes");
	ab_jw_arr(w);
	for (i = 0; i < it->nchanges; i++) {
		ab_jw_obj(w);
		kstr_cut(w, "path", it->c[i].path, AB_AS_PATH_MAX);
		ab_jw_kstr(w, "kind", it->c[i].kind);
		if (it->c[i].move != NULL)
			kstr_cut(w, "move_path", it->c[i].move,
			    AB_AS_PATH_MAX);
		ab_jw_obj_end(w);
	}
	ab_jw_arr_end(w);
	if (it->overflow)
		ab_jw_kbool(w, "changes_truncated", 1);
}

/* {"type":"item.completed","item":{"type":TYPE,"id":ID,"status":ST, ...
 * the caller closes with item_end. */
static void item_begin(struct ab_jw *w, struct ab_buf *b, const char *type,
    const char *id, const char *status)
{
	ab_buf_init(b, AB_AS_EVENT_MAX);
	ab_jw_init(w, b);
	ab_jw_obj(w);
	ab_jw_kstr(w, "type", "item.completed");
	ab_jw_key(w, "item");
	ab_jw_obj(w);
	ab_jw_kstr(w, "type", type);
	if (id != NULL)
		ab_jw_kstr(w, "id", id);
	ab_jw_kstr(w, "status", status);
}

static void item_end(struct ab_as *s, struct ab_jw *w, struct ab_buf *b)
{
	ab_jw_obj_end(w);
	ab_jw_obj_end(w);
	if (ab_jw_done(w) != 0) {
		if (b->over)	/* never dropped unseen */
			ab_as_abort(s, "an event for ab-run is larger than %u "
			    "bytes", AB_AS_EVENT_MAX);
		ab_buf_free(b);
		return;
	}
	jw_line(s, &s->events, b);
}

static void event_file_change(struct ab_as *s, const struct ab_as_item *it,
    const char *status, const char *why)
{
	struct ab_buf b;
	struct ab_jw w;

	item_begin(&w, &b, "file_change", it->id, status);
	if (why != NULL)
		kstr_cut(&w, "reason", why, AB_AS_TEXT_MAX);
	changes_json(&w, it);
	item_end(s, &w, &b);
}

/* --- requests from the server ----------------------------------------- */

static void decide_file_change(struct ab_as *s, const struct ab_json *j,
    int id, int params)
{
	char itemid[AB_AS_ID_MAX], why[512] = "";
	struct ab_as_item **slot, *it;
	int i, ok = 1;

	if (copy_id(j, ab_json_key(j, params, "itemId"), itemid) < 0) {
		reply(s, j, id, "{\"decision\":\"decline\"}");
		s->declined++;
		return;
	}
	slot = item_slot(s, itemid);
	it = slot != NULL ? *slot : NULL;
	if (it == NULL) {
		ok = 0;
		(void)ab_fmt(why, sizeof why, "no file change was announced "
		    "as this item");
	} else if (it->overflow || it->nchanges == 0) {
		ok = 0;
		(void)ab_fmt(why, sizeof why, "a change agentbox cannot read "
		    "whole");
	} else if (ab_json_type(j, ab_json_key(j, params, "grantRoot")) !=
	    AB_JSON_ABSENT && ab_json_type(j, ab_json_key(j, params,
	    "grantRoot")) != AB_JSON_NULL) {
		ok = 0;
		(void)ab_fmt(why, sizeof why, "it asks for a writable root");
	}
	for (i = 0; ok && i < it->nchanges; i++)
		if (ab_path_write_ok(s->root, it->c[i].path, s->lstat, why,
		    sizeof why) < 0 || (it->c[i].move != NULL &&
		    ab_path_write_ok(s->root, it->c[i].move, s->lstat, why,
		    sizeof why) < 0))
			ok = 0;
	if (ok) {
		it->accepted = 1;
		s->accepted++;
		reply(s, j, id, "{\"decision\":\"accept\"}");
		return;
	}
	reply(s, j, id, "{\"decision\":\"decline\"}");
	s->declined++;
	if (it == NULL) {
		struct ab_as_item none;

		memset(&none, 0, sizeof none);
		memcpy(none.id, itemid, sizeof none.id);
		event_file_change(s, &none, "declined", why);
		return;
	}
	event_file_change(s, it, "declined", why);
	/* Its item/completed repeats the decline: not listed twice. */
	item_drop(s, itemid);
	if (item_new(s, itemid) != NULL)
		(*item_slot(s, itemid))->accepted = -1;
}

static void decline_command(struct ab_as *s, const struct ab_json *j,
    int id, int params)
{
	char itemid[AB_AS_ID_MAX] = "";
	struct ab_buf b;
	struct ab_jw w;
	char *cmd, *kind, *cwd;
	struct ab_as_item *it;
	size_t cmdn;

	reply(s, j, id, "{\"decision\":\"decline\"}");
	s->declined++;
	copy_id(j, ab_json_key(j, params, "itemId"), itemid);
	cmd = text_or_empty(j, ab_json_key(j, params, "command"), &cmdn);
	kind = str_or_empty(j, ab_json_key(j, params, "kind"));
	cwd = str_or_empty(j, ab_json_key(j, params, "cwd"));
	item_begin(&w, &b, "command_execution", itemid[0] ? itemid : NULL,
	    "declined");
	if (cmd != NULL)
		kstrn_cut(&w, "command", cmd, cmdn, AB_AS_TEXT_MAX);
	if (kind != NULL && kind[0] != '\0')
		kstr_cut(&w, "kind", kind, 32);
	if (cwd != NULL)
		kstr_cut(&w, "cwd", cwd, AB_AS_PATH_MAX);
	ab_jw_kstr(&w, "reason", DECLINE_COMMAND);
	item_end(s, &w, &b);
	free(cmd);
	free(kind);
	free(cwd);
	/* Its item/completed repeats the decline: not listed twice. */
	if (itemid[0] != '\0' && (it = item_new(s, itemid)) != NULL)
		it->accepted = -1;
}

static void refuse_request(struct ab_as *s, const struct ab_json *j, int id,
    const char *method, const char *answer, const char *why)
{
	struct ab_buf b;
	struct ab_jw w;

	if (answer != NULL)
		reply(s, j, id, answer);
	else
		reply_error(s, j, id, why);
	s->declined++;
	item_begin(&w, &b, "request", NULL, "declined");
	kstr_cut(&w, "method", method, 64);
	ab_jw_kstr(&w, "reason", why);
	item_end(s, &w, &b);
}

/* The thread a request or notification names, or NULL: threadId, or
 * conversationId in the protocol's first version. */
static char *thread_of(const struct ab_json *j, int params)
{
	int t = ab_json_key(j, params, "threadId");

	if (t < 0)
		t = ab_json_key(j, params, "conversationId");
	return t < 0 ? NULL : str_or_empty(j, t);
}

static void request(struct ab_as *s, const struct ab_json *j,
    const char *method, int id, int params)
{
	char *th;

	const char *raw;
	size_t rawn;

	ab_json_span(j, id, &raw, &rawn);
	if ((ab_json_type(j, id) != AB_JSON_NUMBER &&
	    ab_json_type(j, id) != AB_JSON_STRING) || rawn > AB_AS_ID_MAX) {
		ab_as_abort(s, "a request with an ID agentbox cannot answer");
		return;
	}
	th = thread_of(j, params);
	if (th == NULL || s->thread[0] == '\0' || strcmp(th, s->thread) != 0) {
		free(th);
		ab_as_abort(s, "%s for a thread agentbox did not start",
		    method);
		return;
	}
	free(th);
	if (strcmp(method, "item/fileChange/requestApproval") == 0)
		decide_file_change(s, j, id, params);
	else if (strcmp(method, "item/commandExecution/requestApproval") == 0)
		decline_command(s, j, id, params);
	else if (strcmp(method, "mcpServer/elicitation/request") == 0)
		refuse_request(s, j, id, method, "{\"action\":\"cancel\"}",
		    "agentbox answers no MCP server");
	else if (strcmp(method, "item/permissions/requestApproval") == 0)
		refuse_request(s, j, id, method, NULL,
		    "agentbox grants no permissions");
	else
		refuse_request(s, j, id, method, NULL,
		    "agentbox does not take this request");
}

/* --- responses to ours ------------------------------------------------- */

/* The thread must be exactly what was asked for: a sign-in's cloud
 * requirements, for one, can change policy, sandbox or reviewer. */
static const char *thread_wrong(const struct ab_as *s,
    const struct ab_json *j, int r)
{
	int sb = ab_json_key(j, r, "sandbox");
	int roots = ab_json_key(j, sb, "writableRoots");
	int net = 0;

	if (!ab_json_str_eq(j, ab_json_key(j, r, "approvalPolicy"),
	    "on-request"))
		return "approval policy";
	if (!ab_json_str_eq(j, ab_json_key(j, r, "approvalsReviewer"), "user"))
		return "reviewer";
	if (!ab_json_str_eq(j, ab_json_key(j, sb, "type"), "workspaceWrite") ||
	    ab_json_bool(j, ab_json_key(j, sb, "networkAccess"), &net) < 0 ||
	    net || ab_json_type(j, roots) != AB_JSON_ARRAY ||
	    ab_json_count(j, roots) != 0)
		return "sandbox";
	if (!ab_json_str_eq(j, ab_json_key(j, r, "cwd"), s->root))
		return "working directory";
	if (s->model != NULL && !ab_json_str_eq(j, ab_json_key(j, r, "model"),
	    s->model))
		return "model";
	return NULL;
}

static void thread_started(struct ab_as *s, const struct ab_json *j, int r)
{
	const char *wrong = thread_wrong(s, j, r);
	int eph = 0;

	if (wrong != NULL) {
		ab_as_abort(s, "the thread Codex started has another %s than "
		    "agentbox asked for", wrong);
		return;
	}
	if (copy_id(j, ab_json_get(j, r, "thread.id"), s->thread) < 0 ||
	    ab_json_bool(j, ab_json_get(j, r, "thread.ephemeral"), &eph) < 0 ||
	    !eph) {
		ab_as_abort(s, "the thread Codex started is not one agentbox "
		    "can follow");
		return;
	}
	s->state = AB_AS_RUNNING;
	send_turn_start(s);
}

/* WHAT and the server's message (MSGN bytes, NULs and all), cut. */
static void failed(struct ab_as *s, const char *what, const char *msg,
    size_t msgn)
{
	char text[AB_AS_TEXT_MAX];
	size_t n;

	n = strlen(what);
	memcpy(text, what, n);
	if (msgn > sizeof text - n)
		msgn = sizeof text - n;
	memcpy(text + n, msg, msgn);
	/* The cut may have split a character: back to a whole one. */
	for (n += msgn; n > 0 && !ab_json_utf8_ok(text, n); n--)
		;
	/* why is a C string for a terminal: one printable ASCII line. */
	ab_printable(s->why, sizeof s->why, text, n);
	s->state = AB_AS_FAILED;
	event_failed(s, text, n);
}

static void response(struct ab_as *s, const struct ab_json *j, int id)
{
	long long n = 0;
	int e = ab_json_key(j, 0, "error");
	size_t msgn;
	char *msg;

	if (ab_json_int(j, id, &n) < 0 || n < ID_INIT || n > ID_TURN ||
	    (n == ID_TURN && !s->turn_sent) ||
	    (n == ID_THREAD && s->thread[0] != '\0')) {
		ab_as_abort(s, "an answer to a request agentbox did not send");
		return;
	}
	if (e >= 0) {
		msg = text_or_empty(j, ab_json_key(j, e, "message"), &msgn);
		if (n == ID_TURN)
			failed(s, "turn/start: ", msg ? msg : "", msg ? msgn : 0);
		else
			ab_as_abort(s, "%s: %.160s", n == ID_INIT ?
			    "initialize" : "thread/start", msg ? msg : "");
		free(msg);
		return;
	}
	if (n == ID_THREAD)
		thread_started(s, j, ab_json_key(j, 0, "result"));
}

/* --- notifications ----------------------------------------------------- */

static void usage_update(struct ab_as *s, const struct ab_json *j, int p)
{
	static const char *const keys[][2] = {
	    { "inputTokens", "input_tokens" },
	    { "cachedInputTokens", "cached_input_tokens" },
	    { "outputTokens", "output_tokens" },
	    { "reasoningOutputTokens", "reasoning_output_tokens" } };
	int t = ab_json_get(j, p, "tokenUsage.total");
	struct ab_jw w;
	long long v;
	size_t i;

	ab_buf_reset(&s->usage);
	ab_jw_init(&w, &s->usage);
	ab_jw_obj(&w);
	for (i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (ab_json_int(j, ab_json_key(j, t, keys[i][0]), &v) == 0)
			ab_jw_kint(&w, keys[i][1], v);
	ab_jw_obj_end(&w);
	if (ab_jw_done(&w) != 0)
		ab_buf_reset(&s->usage);
}

static void turn_completed(struct ab_as *s, const struct ab_json *j, int p)
{
	int turn = ab_json_key(j, p, "turn");
	size_t n;
	char *msg;

	if (ab_json_str_eq(j, ab_json_key(j, turn, "status"), "completed")) {
		s->state = AB_AS_DONE;
		queued(s, &s->events, ab_buf_adds(&s->events,
		    "{\"type\":\"turn.completed\",\"usage\":") < 0 ||
		    ab_buf_adds(&s->events, s->usage.len ? s->usage.data :
		    "{}") < 0 || ab_buf_adds(&s->events, "}\n") < 0 ? -1 : 0);
		return;
	}
	msg = text_or_empty(j, ab_json_get(j, turn, "error.message"), &n);
	if (msg != NULL && n > 0)
		failed(s, "", msg, n);
	else
		failed(s, "the turn ended as ", "interrupted or failed",
		    strlen("interrupted or failed"));
	free(msg);
}

static void error_note(struct ab_as *s, const struct ab_json *j, int p)
{
	size_t n;
	char *msg = text_or_empty(j, ab_json_get(j, p, "error.message"), &n);
	struct ab_buf b;
	struct ab_jw w;

	if (msg == NULL)
		return;
	ab_buf_init(&b, AB_AS_EVENT_MAX);
	ab_jw_init(&w, &b);
	ab_jw_obj(&w);
	ab_jw_kstr(&w, "type", "error");
	kstrn_cut(&w, "message", msg, n, AB_AS_TEXT_MAX);
	ab_jw_obj_end(&w);
	free(msg);
	if (ab_jw_done(&w) == 0)
		jw_line(s, &s->events, &b);
	else
		ab_buf_free(&b);
}

static void agent_message(struct ab_as *s, const struct ab_json *j, int it)
{
	size_t n;
	char *text = text_or_empty(j, ab_json_key(j, it, "text"), &n);
	struct ab_buf b;
	struct ab_jw w;

	if (text == NULL)
		return;
	item_begin(&w, &b, "agent_message", NULL, "completed");
	kstrn_cut(&w, "text", text, n, AB_AS_FINAL_MAX);
	free(text);
	item_end(s, &w, &b);
}

/* A command as it starts, as codex exec says it: a long one shows in
 * ab-run's progress lines while it runs, not only once it ended. */
static void command_started(struct ab_as *s, const struct ab_json *j,
    int it, const char *id)
{
	size_t n;
	char *cmd = ab_json_strn(j, ab_json_key(j, it, "command"), &n);
	struct ab_buf b;
	struct ab_jw w;

	if (cmd == NULL)
		return;
	ab_buf_init(&b, AB_AS_EVENT_MAX);
	ab_jw_init(&w, &b);
	ab_jw_obj(&w);
	ab_jw_kstr(&w, "type", "item.started");
	ab_jw_key(&w, "item");
	ab_jw_obj(&w);
	ab_jw_kstr(&w, "type", "command_execution");
	ab_jw_kstr(&w, "id", id);
	ab_jw_kstr(&w, "status", "in_progress");
	kstrn_cut(&w, "command", cmd, n, AB_AS_TEXT_MAX);
	free(cmd);
	item_end(s, &w, &b);
}

static void command_done(struct ab_as *s, const struct ab_json *j, int it,
    const char *id)
{
	size_t cmdn, outn = 0;
	char *cmd = text_or_empty(j, ab_json_key(j, it, "command"), &cmdn);
	char *st = str_or_empty(j, ab_json_key(j, it, "status"));
	/* What the command printed, as Codex reported it: a binary file's
	 * NULs come as \u0000 and go on the same way. */
	char *out = ab_json_strn(j, ab_json_key(j, it, "aggregatedOutput"),
	    &outn);
	struct ab_as_item **slot = item_slot(s, id);
	struct ab_buf b;
	struct ab_jw w;
	long long code;

	/* A decline of agentbox's own is listed already. */
	if (slot != NULL && (*slot)->accepted == -1) {
		item_drop(s, id);
	} else if (cmd != NULL && st != NULL) {
		item_begin(&w, &b, "command_execution", id,
		    ab_json_text_ok(st, strlen(st)) && strlen(st) < 32 ? st :
		    "unknown");
		kstrn_cut(&w, "command", cmd, cmdn, AB_AS_TEXT_MAX);
		if (out != NULL && outn > 0)
			kstrn_cut(&w, "aggregated_output", out, outn,
			    AB_AS_OUTPUT_MAX);
		if (ab_json_int(j, ab_json_key(j, it, "exitCode"), &code) == 0)
			ab_jw_kint(&w, "exit_code", code);
		item_end(s, &w, &b);
	}
	free(cmd);
	free(st);
	free(out);
}

/* An edit landed (completed), or did not (failed, declined). */
static void file_change_done(struct ab_as *s, const struct ab_json *j,
    int itj, const char *id)
{
	struct ab_as_item **slot = item_slot(s, id), *it;
	int st = ab_json_key(j, itj, "status");

	if (slot == NULL) {
		/* Never announced: what it says is all there is. */
		add_changes(s, id, j, ab_json_key(j, itj, "changes"));
		slot = item_slot(s, id);
		if (slot == NULL)
			return;
	}
	it = *slot;
	if (ab_json_str_eq(j, st, "completed")) {
		if (it->accepted != 1) {
			ab_as_abort(s, "a file change landed that agentbox "
			    "did not accept");
			return;
		}
		event_file_change(s, it, "completed", NULL);
	} else if (it->accepted != -1) {
		event_file_change(s, it, ab_json_str_eq(j, st, "declined") ?
		    "declined" : "failed", NULL);
	}
	item_drop(s, id);
}

/* Items that mean something started that agentbox allows nowhere. */
static int item_forbidden(const struct ab_json *j, int type)
{
	return ab_json_str_eq(j, type, "mcpToolCall") ||
	    ab_json_str_eq(j, type, "collabAgentToolCall") ||
	    ab_json_str_eq(j, type, "subAgentActivity");
}

static void item_note(struct ab_as *s, const struct ab_json *j, int p,
    int completed)
{
	int it = ab_json_key(j, p, "item");
	int type = ab_json_key(j, it, "type");
	char id[AB_AS_ID_MAX];

	if (item_forbidden(j, type)) {
		ab_as_abort(s, "Codex started a tool call of a kind agentbox "
		    "allows nowhere");
		return;
	}
	if (copy_id(j, ab_json_key(j, it, "id"), id) < 0)
		return;
	if (!completed) {
		if (ab_json_str_eq(j, type, "fileChange"))
			add_changes(s, id, j, ab_json_key(j, it, "changes"));
		else if (ab_json_str_eq(j, type, "commandExecution"))
			command_started(s, j, it, id);
		return;
	}
	if (ab_json_str_eq(j, type, "agentMessage"))
		agent_message(s, j, it);
	else if (ab_json_str_eq(j, type, "fileChange"))
		file_change_done(s, j, it, id);
	else if (ab_json_str_eq(j, type, "commandExecution"))
		command_done(s, j, it, id);
}

static void settings_update(struct ab_as *s, const struct ab_json *j, int p)
{
	int t = ab_json_key(j, p, "threadSettings");

	if (!ab_json_str_eq(j, ab_json_key(j, t, "approvalPolicy"),
	    "on-request") ||
	    !ab_json_str_eq(j, ab_json_key(j, t, "approvalsReviewer"),
	    "user") ||
	    !ab_json_str_eq(j, ab_json_get(j, t, "sandboxPolicy.type"),
	    "workspaceWrite") ||
	    !ab_json_str_eq(j, ab_json_key(j, t, "cwd"), s->root))
		ab_as_abort(s, "the thread's policy, reviewer, sandbox or "
		    "directory changed while it ran");
}

static int reviewer_sign(const char *method)
{
	return strncmp(method, "item/autoApprovalReview/", 24) == 0 ||
	    strncmp(method, "autoApprovalReview/", 19) == 0 ||
	    strcmp(method, "guardianWarning") == 0;
}

/* The agent's message comes in deltas before the one item/completed
 * line that carries it whole: once its deltas, counted as sent (escaped,
 * as that line will hold them), pass AB_AS_LINE_MAX the line will too,
 * so Codex is stopped now rather than after streaming the rest, which
 * costs it CPU time that grows faster than the message. */
static void message_delta(struct ab_as *s, const struct ab_json *j, int p)
{
	char id[AB_AS_ID_MAX];
	const char *text;
	size_t n;

	if (copy_id(j, ab_json_key(j, p, "itemId"), id) < 0 ||
	    ab_json_type(j, ab_json_key(j, p, "delta")) != AB_JSON_STRING)
		return;
	ab_json_span(j, ab_json_key(j, p, "delta"), &text, &n);
	if (strcmp(id, s->grow_item) != 0) {
		memcpy(s->grow_item, id, sizeof(id));
		s->grow_bytes = 0;
	}
	s->grow_bytes += n - 2;
	if (s->grow_bytes > AB_AS_LINE_MAX)
		ab_as_abort(s, "Codex sent a message over %u bytes",
		    AB_AS_LINE_MAX);
}

static void notification(struct ab_as *s, const struct ab_json *j,
    const char *method, int p)
{
	char *th = thread_of(j, p), id[AB_AS_ID_MAX];
	int other = th != NULL && s->thread[0] != '\0' &&
	    strcmp(th, s->thread) != 0;

	free(th);
	if (other)
		ab_as_abort(s, "%.60s for a thread agentbox did not start",
		    method);
	else if (reviewer_sign(method))
		ab_as_abort(s, "a reviewer other than agentbox (%.60s)",
		    method);
	else if (strcmp(method, "remoteControl/status/changed") == 0 &&
	    !ab_json_str_eq(j, ab_json_key(j, p, "status"), "disabled"))
		ab_as_abort(s, "remote control is not disabled");
	else if (strcmp(method, "thread/settings/updated") == 0)
		settings_update(s, j, p);
	else if (strcmp(method, "item/started") == 0)
		item_note(s, j, p, 0);
	else if (strcmp(method, "item/completed") == 0)
		item_note(s, j, p, 1);
	else if (strcmp(method, "item/agentMessage/delta") == 0)
		message_delta(s, j, p);
	else if (strcmp(method, "item/fileChange/patchUpdated") == 0 &&
	    copy_id(j, ab_json_key(j, p, "itemId"), id) == 0)
		add_changes(s, id, j, ab_json_key(j, p, "changes"));
	else if (strcmp(method, "thread/tokenUsage/updated") == 0)
		usage_update(s, j, p);
	else if (strcmp(method, "error") == 0)
		error_note(s, j, p);
	else if (strcmp(method, "turn/completed") == 0 &&
	    s->state == AB_AS_RUNNING)
		turn_completed(s, j, p);
}

/* --- lines ------------------------------------------------------------- */

static void message(struct ab_as *s, const char *text, size_t n)
{
	struct ab_json j;
	struct ab_err err;
	char *method;
	int id, p;

	if (n == 0)
		return;
	if (ab_json_parse(&j, text, n, &err) < 0) {
		ab_as_abort(s, "Codex sent a line that is not JSON");
		return;
	}
	if (ab_json_type(&j, 0) != AB_JSON_OBJECT) {
		ab_as_abort(s, "Codex sent a line that is not a JSON object");
		ab_json_free(&j);
		return;
	}
	id = ab_json_key(&j, 0, "id");
	p = ab_json_key(&j, 0, "params");
	method = ab_json_str(&j, ab_json_key(&j, 0, "method"));
	if (method != NULL && (p < 0 || ab_json_type(&j, p) ==
	    AB_JSON_OBJECT) && id >= 0)
		request(s, &j, method, id, p);
	else if (method != NULL && ab_json_type(&j, p) == AB_JSON_OBJECT)
		notification(s, &j, method, p);
	else if (method == NULL && id >= 0 &&
	    ab_json_key(&j, 0, "method") < 0)
		response(s, &j, id);
	else if (ab_json_key(&j, 0, "method") >= 0 || id >= 0)
		ab_as_abort(s, "Codex sent a message agentbox cannot read");
	free(method);
	ab_json_free(&j);
}

void ab_as_feed(struct ab_as *s, const char *p, size_t n)
{
	const char *l;
	size_t k;
	int rc;

	ab_lines_feed(&s->lines, p, n);
	while (s->state != AB_AS_ABORTED &&
	    (rc = ab_lines_next(&s->lines, &l, &k)) != AB_LINE_NONE) {
		if (rc == AB_LINE_OK)
			message(s, l, k);
		else	/* refused: a message cut short has no meaning */
			ab_as_abort(s, "Codex sent a message over %u bytes",
			    AB_AS_LINE_MAX);
	}
}

void ab_as_eof(struct ab_as *s)
{
	const char *l;
	size_t k;

	if (ab_lines_end(&s->lines, &l, &k) == AB_LINE_OK &&
	    s->state != AB_AS_ABORTED)
		message(s, l, k);
	if (s->state == AB_AS_STARTING || s->state == AB_AS_RUNNING)
		ab_as_abort(s, "Codex ended before its turn did");
}
