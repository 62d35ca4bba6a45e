#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "schema.h"

void ab_agent_init(struct ab_agent *a, const char *provider,
    const char *schema, size_t schema_len)
{
	memset(a, 0, sizeof *a);
	/* As large as the profile's: a bug here when cut. */
	if (ab_fmt(a->provider, sizeof a->provider, "%s", provider) < 0)
		abort();
	a->schema = schema;
	a->schema_len = schema_len;
	ab_lines_init(&a->lines, AB_AGENT_LINE_MAX);
	ab_buf_init(&a->final, AB_AGENT_FINAL_MAX);
	ab_buf_init(&a->answer, AB_AGENT_ANSWER_MAX);
	ab_buf_init(&a->usage, 64 << 10);
	ab_buf_init(&a->cost, 64);
	ab_buf_init(&a->refused, (AB_AGENT_REFUSED_ITEM_MAX + 64) *
	    AB_AGENT_REFUSED_MAX);
	ab_buf_init(&a->error, AB_AGENT_ERROR_MAX);
	ab_buf_init(&a->edits, (AB_AGENT_REFUSED_ITEM_MAX + 64) *
	    AB_AGENT_EDITS_MAX);
}

void ab_agent_free(struct ab_agent *a)
{
	ab_lines_free(&a->lines);
	ab_buf_free(&a->final);
	ab_buf_free(&a->answer);
	ab_buf_free(&a->usage);
	ab_buf_free(&a->cost);
	ab_buf_free(&a->refused);
	ab_buf_free(&a->error);
	ab_buf_free(&a->edits);
}

/* A string field, unescaped (NULs and all: a message may quote a binary
 * file), cut at the buffer's bound (flagged). */
static void keep_str(const struct ab_json *j, int t, struct ab_buf *b,
    int *cut)
{
	size_t n, room;
	char *v = ab_json_strn(j, t, &n);

	ab_buf_reset(b);
	*cut = 0;
	if (v == NULL)
		return;
	room = b->max - 1;
	if (n > room) {
		/* Cut on a character boundary: never half a UTF-8 sequence. */
		n = room;
		while (n > 0 && ((unsigned char)v[n] & 0xc0) == 0x80)
			n--;
		*cut = 1;
	}
	ab_buf_add(b, v, n);
	free(v);
}

/* A value kept as its JSON text, or dropped (flagged) past the bound. */
static void keep_raw(const struct ab_json *j, int t, struct ab_buf *b,
    int *over)
{
	const char *p;
	size_t n;

	ab_buf_reset(b);
	if (ab_json_type(j, t) == AB_JSON_ABSENT ||
	    ab_json_type(j, t) == AB_JSON_NULL)
		return;
	ab_json_span(j, t, &p, &n);
	/* The record stays UTF-8 whatever the CLI wrote. */
	if (!ab_json_text_ok(p, n) || ab_buf_add(b, p, n) < 0) {
		ab_buf_reset(b);
		if (over != NULL)
			*over = 1;
	}
}

static void keep_word(const struct ab_json *j, int t, char *dst, size_t cap)
{
	char *v = ab_json_str(j, t);
	size_t i;

	dst[0] = '\0';
	if (v == NULL)
		return;
	for (i = 0; v[i] != '\0' && i + 1 < cap; i++)
		dst[i] = v[i] >= 0x20 && v[i] < 0x7f ? v[i] : '?';
	dst[i] = '\0';
	free(v);
}

/* Up to AB_AGENT_REFUSED_MAX refused tool calls, each at most
 * AB_AGENT_REFUSED_ITEM_MAX bytes of JSON; a longer one keeps its tool
 * name only. */
static void keep_refused(struct ab_agent *a, const struct ab_json *j, int t)
{
	char name[128];
	const char *p;
	size_t n;
	int i, e;

	ab_buf_reset(&a->refused);
	a->nrefused = 0;
	a->refused_cut = 0;
	for (i = 0; (e = ab_json_elem(j, t, i)) >= 0; i++) {
		if (a->nrefused == AB_AGENT_REFUSED_MAX) {
			a->refused_cut = 1;
			break;
		}
		if (a->nrefused > 0)
			ab_buf_addc(&a->refused, ',');
		ab_json_span(j, e, &p, &n);
		if (n <= AB_AGENT_REFUSED_ITEM_MAX &&
		    ab_json_type(j, e) == AB_JSON_OBJECT &&
		    ab_json_text_ok(p, n)) {
			ab_buf_add(&a->refused, p, n);
		} else {
			keep_word(j, ab_json_key(j, e, "tool_name"), name,
			    sizeof name);
			ab_buf_addf(&a->refused, "{\"tool_name\":\"%s\","
			    "\"truncated\":true}", name);
			a->refused_cut = 1;
		}
		a->nrefused++;
	}
}

/* Claude Code's last line: {"type":"result", ...}. */
static void claude_result(struct ab_agent *a, const struct ab_json *j)
{
	int b = 0;

	a->saw_result = 1;
	a->is_error = ab_json_bool(j, ab_json_key(j, 0, "is_error"), &b) == 0 &&
	    b;
	keep_word(j, ab_json_key(j, 0, "subtype"), a->subtype,
	    sizeof a->subtype);
	keep_word(j, ab_json_key(j, 0, "terminal_reason"), a->terminal,
	    sizeof a->terminal);
	a->num_turns = a->api_status = 0;
	ab_json_int(j, ab_json_key(j, 0, "num_turns"), &a->num_turns);
	ab_json_int(j, ab_json_key(j, 0, "api_error_status"), &a->api_status);
	keep_str(j, ab_json_key(j, 0, "result"), &a->final, &a->final_cut);
	a->answer_over = 0;
	keep_raw(j, ab_json_key(j, 0, "structured_output"), &a->answer,
	    &a->answer_over);
	keep_raw(j, ab_json_key(j, 0, "usage"), &a->usage, NULL);
	keep_raw(j, ab_json_key(j, 0, "total_cost_usd"), &a->cost, NULL);
	keep_refused(a, j, ab_json_key(j, 0, "permission_denials"));
	ab_buf_reset(&a->error);
	if (a->is_error)
		keep_str(j, ab_json_key(j, 0, "result"), &a->error,
		    &a->error_cut);
}

/* Appends object T to a list kept as "ITEM,ITEM": whole within
 * AB_AGENT_REFUSED_ITEM_MAX, else {"truncated":true}; past MAX items it
 * is dropped.  *cut is set either way. */
static void list_add(struct ab_buf *list, int *n, int max, int *cut,
    const struct ab_json *j, int t)
{
	const char *p;
	size_t len;

	if (*n == max) {
		*cut = 1;
		return;
	}
	ab_json_span(j, t, &p, &len);
	if (ab_json_type(j, t) != AB_JSON_OBJECT ||
	    len > AB_AGENT_REFUSED_ITEM_MAX || !ab_json_text_ok(p, len)) {
		p = "{\"truncated\":true}";
		len = strlen(p);
		*cut = 1;
	}
	if (*n > 0)
		ab_buf_addc(list, ',');
	ab_buf_add(list, p, len);
	(*n)++;
}

/* Each change of a file change that landed: {path, kind[, move_path]}. */
static void codex_edits(struct ab_agent *a, const struct ab_json *j,
    int item)
{
	int changes = ab_json_key(j, item, "changes"), i, c;

	for (i = 0; (c = ab_json_elem(j, changes, i)) >= 0; i++)
		list_add(&a->edits, &a->nedits, AB_AGENT_EDITS_MAX,
		    &a->edits_cut, j, c);
}

/* An item as it ended.  Under ab-codex (execution) a declined item is
 * one agentbox or Codex refused; under codex exec (planning, questions)
 * a file change fails on the read-only /work.  A command that Codex's
 * sandbox kept from starting is reported by no item: only the model
 * hears of it. */
static void codex_item(struct ab_agent *a, const struct ab_json *j)
{
	int item = ab_json_key(j, 0, "item");
	int type = ab_json_key(j, item, "type");
	int st = ab_json_key(j, item, "status");

	if (ab_json_str_eq(j, type, "agent_message"))
		keep_str(j, ab_json_key(j, item, "text"), &a->final,
		    &a->final_cut);
	else if (ab_json_str_eq(j, st, "declined") ||
	    (ab_json_str_eq(j, type, "file_change") &&
	    ab_json_str_eq(j, st, "failed")))
		list_add(&a->refused, &a->nrefused, AB_AGENT_REFUSED_MAX,
		    &a->refused_cut, j, item);
	else if (ab_json_str_eq(j, type, "file_change") &&
	    ab_json_str_eq(j, st, "completed"))
		codex_edits(a, j, item);
}

/* "unexpected status 401 Unauthorized: ...": the API's status, when the
 * message names one. */
static long long codex_status(const struct ab_buf *msg)
{
	const char *p = msg->data ? strstr(msg->data, "unexpected status ") :
	    NULL;
	long long v = 0;
	int i;

	if (p == NULL)
		return 0;
	p += 18;
	for (i = 0; i < 3 && p[i] >= '0' && p[i] <= '9'; i++)
		v = v * 10 + (p[i] - '0');
	return i == 3 && (p[3] == ' ' || p[3] == '\0') ? v : 0;
}

/* The answer to --output-schema is the last message's text, as JSON. */
static void codex_answer(struct ab_agent *a)
{
	struct ab_json j;
	struct ab_err skip;

	ab_buf_reset(&a->answer);
	a->answer_over = a->answer_not_json = 0;
	if (a->schema == NULL || a->final.len == 0)
		return;
	if (a->final_cut || a->final.len > a->answer.max - 1) {
		a->answer_over = 1;
		return;
	}
	if (ab_json_parse(&j, a->final.data, a->final.len, &skip) < 0) {
		a->answer_not_json = 1;
		return;
	}
	ab_json_free(&j);
	ab_buf_add(&a->answer, a->final.data, a->final.len);
}

/* Codex's JSONL: items as they complete, then turn.completed (usage) or
 * turn.failed (its error); "error" lines come before a failure and on
 * each reconnection. */
static void codex_line(struct ab_agent *a, const struct ab_json *j)
{
	int type = ab_json_key(j, 0, "type");

	if (ab_json_str_eq(j, type, "item.completed")) {
		codex_item(a, j);
	} else if (ab_json_str_eq(j, type, "turn.completed")) {
		a->saw_result = 1;
		a->is_error = 0;
		a->num_turns++;
		keep_raw(j, ab_json_key(j, 0, "usage"), &a->usage, NULL);
		codex_answer(a);
	} else if (ab_json_str_eq(j, type, "turn.failed")) {
		a->saw_result = a->is_error = 1;
		a->num_turns++;
		keep_str(j, ab_json_get(j, 0, "error.message"), &a->error,
		    &a->error_cut);
		a->api_status = codex_status(&a->error);
		if (ab_fmt(a->subtype, sizeof a->subtype, "turn.failed") < 0)
			abort();	/* a bug here */
	} else if (ab_json_str_eq(j, type, "error")) {
		keep_str(j, ab_json_key(j, 0, "message"), &a->error,
		    &a->error_cut);
		a->api_status = codex_status(&a->error);
	}
}

/* -- Progress: each step told as it is read (progress.h cleans it). */

/* The bytes of a field a line is made from: far more than is shown, so
 * the credential is masked whole around where the line is cut. */
#define RAW_MAX (64u << 10)
/* A step's line: RAW_MAX of fields, a name cut at 64 bytes, and the
 * words and escapes around them. */
#define STEP_MAX (RAW_MAX + 1024)

/* N bytes of S; a NUL, which a value may hold, as the text \u0000, as
 * the CLI escaped it: neither dropped unseen nor cutting the line. */
static void raw_addn(struct ab_buf *b, const char *s, size_t n)
{
	const char *z;
	size_t k;

	while (n > 0 && b->len < RAW_MAX) {
		z = memchr(s, '\0', n);
		k = z != NULL ? (size_t)(z - s) : n;
		ab_buf_add(b, s, k < RAW_MAX - b->len ? k : RAW_MAX - b->len);
		if (z == NULL)
			return;
		if (b->len < RAW_MAX)
			ab_buf_add(b, "\\u0000", 6);
		s += k + 1;
		n -= k + 1;
	}
}

static void raw_add(struct ab_buf *b, const char *s)
{
	raw_addn(b, s, strlen(s));
}

static void say(struct ab_agent *a, const struct ab_buf *b)
{
	ab_progress_say(a->progress, b->data ? b->data : "", b->len);
}

static const char *call_text(const struct ab_agent *a, const char *id)
{
	int i;

	for (i = 0; id != NULL && id[0] != '\0' && i < AB_AGENT_CALLS; i++)
		if (strcmp(a->calls[i].id, id) == 0)
			return a->calls[i].text;
	return NULL;
}

/* A tool call: told, and remembered by its ID for a refusal. */
static void call(struct ab_agent *a, const char *id, const struct ab_buf *b)
{
	struct ab_agent_call *c = &a->calls[a->next_call];

	say(a, b);
	if (id == NULL || strlen(id) >= sizeof c->id)
		return;
	if (ab_fmt(c->id, sizeof c->id, "%s", id) < 0)
		return;
	ab_progress_clean(a->progress, b->data ? b->data : "", b->len,
	    c->text);
	a->next_call = (a->next_call + 1) % AB_AGENT_CALLS;
}

/* "refused " and the call as it was told, else WHAT. */
static void refused(struct ab_agent *a, const char *id, const char *what)
{
	const char *t = call_text(a, id);
	struct ab_buf b;

	ab_buf_init(&b, STEP_MAX);
	raw_add(&b, "refused ");
	raw_add(&b, t != NULL ? t : what != NULL ? what : "a step");
	say(a, &b);
	ab_buf_free(&b);
}

/* NAME(ARG), NAME ARG or NAME, the name cut short; ARG is ARGN bytes. */
static void named(struct ab_buf *b, const char *name, const char *arg,
    size_t argn, int paren)
{
	size_t n = name != NULL ? strlen(name) : 0;

	if (name == NULL)
		raw_add(b, "tool");
	else
		ab_buf_add(b, name, n < 64 ? n : 64);
	if (arg == NULL)
		return;
	raw_add(b, paren ? "(" : " ");
	raw_addn(b, arg, argn);
	if (paren)
		raw_add(b, ")");
}

/* "Bash(git status)", "Write /work/notes.txt": a tool call by its name
 * and the one input that says what it does. */
static void claude_call(struct ab_agent *a, const struct ab_json *j, int blk)
{
	static const struct { const char *key; int paren; } said[] = {
	    { "command", 1 }, { "file_path", 0 }, { "notebook_path", 0 },
	    { "pattern", 1 }, { "url", 1 }, { "query", 1 }, { "path", 0 },
	    { "description", 1 } };
	int in = ab_json_key(j, blk, "input");
	char *name = ab_json_str(j, ab_json_key(j, blk, "name"));
	char *id = ab_json_str(j, ab_json_key(j, blk, "id"));
	char *arg = NULL;
	struct ab_buf b;
	size_t i, n = 0;

	for (i = 0; arg == NULL && i < sizeof said / sizeof said[0]; i++)
		arg = ab_json_strn(j, ab_json_key(j, in, said[i].key), &n);
	ab_buf_init(&b, STEP_MAX);
	named(&b, name, arg, n, arg != NULL && said[i - 1].paren);
	call(a, id, &b);
	ab_buf_free(&b);
	free(name);
	free(id);
	free(arg);
}

/* An assistant message's tool_use blocks, each a step. */
static void claude_calls(struct ab_agent *a, const struct ab_json *j)
{
	int content = ab_json_get(j, 0, "message.content");
	int i, n = ab_json_count(j, content), blk = content + 1;

	if (ab_json_type(j, content) != AB_JSON_ARRAY)
		return;
	for (i = 0; i < n; i++, blk = ab_json_skip(j, blk))
		if (ab_json_str_eq(j, ab_json_key(j, blk, "type"), "tool_use"))
			claude_call(a, j, blk);
}

/* WHY is N bytes (the error kept, NULs and all). */
static void turn_end(struct ab_agent *a, int failed, const char *why,
    size_t n)
{
	struct ab_buf b;

	ab_buf_init(&b, STEP_MAX);
	raw_add(&b, failed ? "turn failed" : "turn ended");
	if (failed && why != NULL && n > 0) {
		raw_add(&b, ": ");
		raw_addn(&b, why, n);
	}
	say(a, &b);
	ab_buf_free(&b);
}

static void claude_progress(struct ab_agent *a, const struct ab_json *j)
{
	int type = ab_json_key(j, 0, "type");
	char *id, *name;

	if (ab_json_str_eq(j, type, "assistant")) {
		claude_calls(a, j);
	} else if (ab_json_str_eq(j, type, "system") &&
	    ab_json_str_eq(j, ab_json_key(j, 0, "subtype"),
	    "permission_denied")) {
		id = ab_json_str(j, ab_json_key(j, 0, "tool_use_id"));
		name = ab_json_str(j, ab_json_key(j, 0, "tool_name"));
		refused(a, id, name != NULL ? name : "tool");
		free(id);
		free(name);
	} else if (ab_json_str_eq(j, type, "result")) {
		if (a->is_error && a->error.len > 0)
			turn_end(a, 1, a->error.data, a->error.len);
		else
			turn_end(a, a->is_error, a->subtype,
			    strlen(a->subtype));
	}
}

/* A Codex command: "shell(CMD)". */
static void codex_command(struct ab_buf *b, const struct ab_json *j,
    int item)
{
	size_t n = 0;
	char *cmd = ab_json_strn(j, ab_json_key(j, item, "command"), &n);

	named(b, "shell", cmd != NULL ? cmd : "", cmd != NULL ? n : 0, 1);
	free(cmd);
}

/* A file change: "KIND PATH[ -> MOVE]", each of its changes. */
static void codex_changes(struct ab_buf *b, const struct ab_json *j,
    int item)
{
	int changes = ab_json_key(j, item, "changes");
	int i, n = ab_json_count(j, changes), c = changes + 1;
	char *kind, *path, *move;

	if (ab_json_type(j, changes) != AB_JSON_ARRAY || n == 0)
		raw_add(b, "file change");
	for (i = 0; i < n && b->len < RAW_MAX; i++, c = ab_json_skip(j, c)) {
		kind = ab_json_str(j, ab_json_key(j, c, "kind"));
		path = ab_json_str(j, ab_json_key(j, c, "path"));
		move = ab_json_str(j, ab_json_key(j, c, "move_path"));
		if (i > 0)
			raw_add(b, ", ");
		named(b, kind != NULL ? kind : "change", path != NULL ? path :
		    "?", path != NULL ? strlen(path) : 1, 0);
		if (move != NULL) {
			raw_add(b, " -> ");
			raw_add(b, move);
		}
		free(kind);
		free(path);
		free(move);
	}
}

/* A command when it starts (or ends, unseen before); a file change when
 * it lands; a refusal of either, and of a request. */
static void codex_item_progress(struct ab_agent *a, const struct ab_json *j,
    int started)
{
	int item = ab_json_key(j, 0, "item");
	int type = ab_json_key(j, item, "type");
	int st = ab_json_key(j, item, "status");
	char *id = ab_json_str(j, ab_json_key(j, item, "id")), *method;
	int declined = ab_json_str_eq(j, st, "declined");
	struct ab_buf b;

	ab_buf_init(&b, STEP_MAX);
	if (ab_json_str_eq(j, type, "command_execution")) {
		codex_command(&b, j, item);
		if (declined)
			refused(a, id, b.data);
		else if (started || call_text(a, id) == NULL)
			call(a, id, &b);
	} else if (!started && ab_json_str_eq(j, type, "file_change")) {
		codex_changes(&b, j, item);
		if (declined || ab_json_str_eq(j, st, "failed"))
			refused(a, NULL, b.data);
		else if (ab_json_str_eq(j, st, "completed"))
			say(a, &b);
	} else if (!started && declined &&
	    ab_json_str_eq(j, type, "request")) {
		method = ab_json_str(j, ab_json_key(j, item, "method"));
		named(&b, "request", method != NULL ? method : "?",
		    method != NULL ? strlen(method) : 1, 0);
		refused(a, NULL, b.data);
		free(method);
	}
	ab_buf_free(&b);
	free(id);
}

static void codex_progress(struct ab_agent *a, const struct ab_json *j)
{
	int type = ab_json_key(j, 0, "type");

	if (ab_json_str_eq(j, type, "item.started"))
		codex_item_progress(a, j, 1);
	else if (ab_json_str_eq(j, type, "item.completed"))
		codex_item_progress(a, j, 0);
	else if (ab_json_str_eq(j, type, "turn.completed"))
		turn_end(a, 0, NULL, 0);
	else if (ab_json_str_eq(j, type, "turn.failed"))
		turn_end(a, 1, a->error.data, a->error.len);
}

static void line(struct ab_agent *a, const char *p, size_t n)
{
	struct ab_json j;
	struct ab_err skip;

	if (n == 0 || ab_json_parse(&j, p, n, &skip) < 0)
		return;
	if (strcmp(a->provider, "codex") == 0)
		codex_line(a, &j);
	else if (ab_json_str_eq(&j, ab_json_key(&j, 0, "type"), "result"))
		claude_result(a, &j);
	/* After the record's reading: a turn's end names its error. */
	if (a->progress != NULL && strcmp(a->provider, "codex") == 0)
		codex_progress(a, &j);
	else if (a->progress != NULL)
		claude_progress(a, &j);
	ab_json_free(&j);
}

void ab_agent_feed(struct ab_agent *a, const char *p, size_t n)
{
	const char *l;
	size_t k;
	int rc;

	ab_lines_feed(&a->lines, p, n);
	while ((rc = ab_lines_next(&a->lines, &l, &k)) != AB_LINE_NONE) {
		if (rc == AB_LINE_OK)
			line(a, l, k);
		else	/* skipped: the rest of the stream is still read */
			a->lines_over++;
	}
}

void ab_agent_end(struct ab_agent *a)
{
	const char *l;
	size_t k;

	if (ab_lines_end(&a->lines, &l, &k) == AB_LINE_OK)
		line(a, l, k);
}

/* The status, and in why what makes it so. */
static const char *status(const struct ab_agent *a, char *why, size_t cap)
{
	struct ab_err err;
	int v;

	why[0] = '\0';
	if (!a->saw_result)
		return a->lines_over > 0 ? "output-too-large" : "error";
	if (a->is_error)
		return "error";
	if (a->schema == NULL)
		return "ok";
	if (a->answer_over)
		return "output-too-large";
	if (a->answer_not_json) {
		/* A reason cut short still reads. */
		(void)ab_fmt(why, cap, "the final message is not JSON");
		return "invalid-answer";
	}
	if (a->answer.len == 0)
		return "no-answer";
	v = ab_schema_validate(a->schema, a->schema_len, a->answer.data,
	    a->answer.len, why, cap, &err);
	if (v < 0)
		(void)ab_fmt(why, cap, "%.400s", err.msg);
	return v == 1 ? "ok" : "invalid-answer";
}

const char *ab_agent_status(const struct ab_agent *a)
{
	char why[512];

	return status(a, why, sizeof why);
}

static void raw_or_null(struct ab_jw *w, const char *key,
    const struct ab_buf *b)
{
	ab_jw_key(w, key);
	if (b->len > 0)
		ab_jw_raw(w, b->data, b->len);
	else
		ab_jw_null(w);
}

static void str_or_null(struct ab_jw *w, const char *key,
    const struct ab_buf *b, int present)
{
	ab_jw_key(w, key);
	if (present && b->data != NULL &&
	    ab_json_utf8_ok(b->data, b->len))
		ab_jw_strn(w, b->data, b->len);
	else
		ab_jw_null(w);
}

/* A list kept as "ITEM,ITEM": one array value; NULL: null. */
static void list_json(struct ab_jw *w, const char *key,
    const struct ab_buf *items)
{
	struct ab_buf arr;

	ab_jw_key(w, key);
	if (items == NULL) {
		ab_jw_null(w);
		return;
	}
	ab_buf_init(&arr, items->len + 2);	/* the list in brackets */
	if (ab_buf_addc(&arr, '[') < 0 || (items->len > 0 &&
	    ab_buf_add(&arr, items->data, items->len) < 0) ||
	    ab_buf_addc(&arr, ']') < 0)
		w->failed = 1;	/* ab_jw_done tells */
	else
		ab_jw_raw(w, arr.data, arr.len);
	ab_buf_free(&arr);
}

void ab_agent_json(const struct ab_agent *a, const char *cli_version,
    struct ab_jw *w)
{
	char why[512];
	const char *st = status(a, why, sizeof why);

	ab_jw_obj(w);
	ab_jw_kstr(w, "provider", a->provider);
	ab_jw_kstr(w, "cli_version", cli_version);
	ab_jw_kstr(w, "status", st);
	if (why[0] != '\0')
		ab_jw_kstr(w, "invalid", why);
	str_or_null(w, "final_message", &a->final, a->saw_result);
	ab_jw_kbool(w, "final_message_truncated", a->final_cut);
	/* An answer that does not match never becomes the answer. */
	if (strcmp(st, "ok") == 0) {
		raw_or_null(w, "answer", &a->answer);
	} else {
		ab_jw_key(w, "answer");
		ab_jw_null(w);
	}
	ab_jw_kbool(w, "answer_truncated", a->answer_over);
	raw_or_null(w, "usage", &a->usage);
	raw_or_null(w, "cost_usd", &a->cost);
	ab_jw_kint(w, "turns", a->num_turns);
	list_json(w, "edits", strcmp(a->provider, "codex") == 0 ?
	    &a->edits : NULL);
	ab_jw_kbool(w, "edits_truncated", a->edits_cut);
	list_json(w, "refused", &a->refused);
	ab_jw_kbool(w, "refused_truncated", a->refused_cut);
	ab_jw_key(w, "error");
	if (strcmp(st, "error") != 0) {
		ab_jw_null(w);
	} else {
		ab_jw_obj(w);
		str_or_null(w, "message", &a->error, a->error.len > 0);
		ab_jw_kstr(w, "subtype", a->subtype);
		ab_jw_kstr(w, "terminal_reason", a->terminal);
		ab_jw_key(w, "api_status");
		if (a->api_status > 0)
			ab_jw_int(w, a->api_status);
		else
			ab_jw_null(w);
		ab_jw_kbool(w, "saw_result", a->saw_result);
		ab_jw_obj_end(w);
	}
	ab_jw_kint(w, "lines_over_bound", a->lines_over);
	ab_jw_obj_end(w);
}
