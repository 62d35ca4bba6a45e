/* appserver.c: libFuzzer harness for ab-codex's reader of Codex's
 * app-server (lib/agent/appserver.c), every byte of which Codex, its model or
 * its vendor chose.  The first byte picks the form of the input:
 *
 * raw: the rest is the server's output as it is, fed in pieces of a size
 *   the second byte picks.  Beyond not crashing: the same bytes in pieces
 *   of any size give the same answers and events; every answer and every
 *   event is one JSON object a line; no answer ever accepts a command,
 *   accepts for the session or amends a rule, and an acceptance answers
 *   only a file change request.
 *
 * paths: the rest is a list of paths (NUL-separated) that the harness
 *   makes into one announced file change each, asked for in turn, on a
 *   filesystem of its own (a directory, a file, a symbolic link).  Each
 *   answer is checked by a rule of the harness's own: an accepted path
 *   lies under /work, has no empty, "." or ".." component, no control
 *   byte or backslash, no component that is .git or .codex in any case,
 *   and does not pass through the link; and a path of plain lowercase
 *   names that misses the link is never declined.  Each path is asked
 *   for again with a NUL and a byte after it (\u0000 in the message):
 *   that one is always declined, whatever precedes the NUL. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "appserver.h"
#include "common.h"
#include "json.h"

/* A message the harness writes: one path, escaped, and its frame. */
#define MSG_MAX (AB_AS_EVENT_MAX + 1024)

#define INPUT_MAX (256 * 1024)
#define PATHS_MAX 32

static int fake_lstat(const char *path, struct stat *st)
{
	memset(st, 0, sizeof *st);
	if (strcmp(path, "/work") == 0 || strcmp(path, "/work/d") == 0)
		st->st_mode = S_IFDIR | 0755;
	else if (strcmp(path, "/work/f") == 0)
		st->st_mode = S_IFREG | 0644;
	else if (strcmp(path, "/work/l") == 0)
		st->st_mode = S_IFLNK | 0777;
	else {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

static const char thread_ok[] =
    "{\"id\":1,\"result\":{}}\n"
    "{\"id\":2,\"result\":{\"thread\":{\"id\":\"t\",\"ephemeral\":true},"
    "\"cwd\":\"/work\",\"model\":\"m\",\"approvalPolicy\":\"on-request\","
    "\"approvalsReviewer\":\"user\",\"sandbox\":{\"type\":"
    "\"workspaceWrite\",\"writableRoots\":[],\"networkAccess\":false}}}\n";

/* Every line of b parses as one JSON object. */
static void lines_hold(const struct ab_buf *b)
{
	const char *p = b->data, *nl;
	struct ab_json j;
	struct ab_err err;

	if (p == NULL)
		return;
	for (; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
		if (ab_json_parse(&j, p, (size_t)(nl - p), &err) < 0 ||
		    ab_json_type(&j, 0) != AB_JSON_OBJECT)
			abort();
		ab_json_free(&j);
	}
	if (*p != '\0')
		abort();	/* a line without its end */
}

static void run(const uint8_t *p, size_t n, size_t step, struct ab_buf *srv,
    struct ab_buf *ev)
{
	struct ab_as s;
	size_t i, k;

	ab_as_init(&s, "/work", "m", "prompt", NULL, fake_lstat);
	ab_as_feed(&s, thread_ok, strlen(thread_ok));
	for (i = 0; i < n; i += k) {
		k = n - i < step ? n - i : step;
		ab_as_feed(&s, (const char *)p + i, k);
	}
	ab_as_eof(&s);
	fuzz_line(s.why, sizeof s.why);
	ab_buf_init(srv, AB_AS_QUEUE_MAX);	/* copies of s's queues */
	ab_buf_init(ev, AB_AS_QUEUE_MAX);
	ab_buf_add(srv, s.to_server.data ? s.to_server.data : "",
	    s.to_server.len);
	ab_buf_add(ev, s.events.data ? s.events.data : "", s.events.len);
	ab_as_free(&s);
}

static void raw(const uint8_t *p, size_t n)
{
	struct ab_buf s1, e1, s2, e2;

	if (n < 1)
		return;
	run(p + 1, n - 1, n, &s1, &e1);
	run(p + 1, n - 1, 1 + p[0] % 64, &s2, &e2);
	if (s1.len != s2.len || e1.len != e2.len ||
	    memcmp(s1.data, s2.data, s1.len) != 0 ||
	    memcmp(e1.data, e2.data, e1.len) != 0)
		abort();
	lines_hold(&s1);
	lines_hold(&e1);
	if (s1.data != NULL && (strstr(s1.data, "acceptForSession") != NULL ||
	    strstr(s1.data, "Amendment") != NULL ||
	    strstr(s1.data, "\"approved") != NULL ||
	    (strstr(s1.data, "\"accept\"") != NULL && memmem(p, n,
	    "item/fileChange/requestApproval", 31) == NULL)))
		abort();
	ab_buf_free(&s1);
	ab_buf_free(&e1);
	ab_buf_free(&s2);
	ab_buf_free(&e2);
}

static int is_name(const char *c, size_t n, const char *name)
{
	return n == strlen(name) && strncasecmp(c, name, n) == 0;
}

/* The harness's rule: 1 acceptable, 0 not; *plain when every component
 * is [a-z] and the path misses the link. */
static int path_rule(const char *path, int *plain)
{
	const char *c, *e;
	size_t i;

	*plain = strncmp(path, "/work/", 6) == 0;
	if (strncmp(path, "/work/", 6) != 0 || strlen(path) > 4000 ||
	    path[strlen(path) - 1] == '/') {
		*plain = 0;
		return 0;
	}
	for (i = 0; path[i] != '\0'; i++) {
		if ((unsigned char)path[i] < 0x20 || path[i] == 0x7f ||
		    path[i] == '\\')
			return 0;
		if (path[i] != '/' && (path[i] < 'a' || path[i] > 'z'))
			*plain = 0;
	}
	if (strncmp(path, "/work/l/", 8) == 0 || strcmp(path, "/work/l") == 0 ||
	    strncmp(path, "/work/f/", 8) == 0 || strcmp(path, "/work/d") == 0) {
		*plain = 0;
		return 0;
	}
	for (c = path + 6; *c != '\0'; c = *e ? e + 1 : e) {
		e = strchrnul(c, '/');
		if (e == c || is_name(c, (size_t)(e - c), ".") ||
		    is_name(c, (size_t)(e - c), "..") ||
		    is_name(c, (size_t)(e - c), ".git") ||
		    is_name(c, (size_t)(e - c), ".codex") ||
		    e - c > 255)
			return 0;
	}
	return 1;
}

/* Announces a file change of the N bytes at PATH as item K-V and asks
 * for it: 1 accepted, 0 declined, -1 not asked (the writer cannot take
 * the path: not UTF-8). */
static int ask(struct ab_as *s, int k, int v, const char *path, size_t n)
{
	struct ab_buf b, msg;
	struct ab_jw w;
	const char *q;
	int accepted, declined;

	/* The harness writes the messages, escaping what it must. */
	ab_buf_init(&msg, MSG_MAX);
	ab_jw_init(&w, &msg);
	ab_jw_obj(&w);
	ab_jw_kstrn(&w, "path", path, n);
	ab_jw_key(&w, "kind");
	ab_jw_raw(&w, "{\"type\":\"add\"}", 14);
	ab_jw_kstr(&w, "diff", "x");
	ab_jw_obj_end(&w);
	if (ab_jw_done(&w) != 0) {
		ab_buf_free(&msg);
		return -1;
	}
	ab_buf_init(&b, 2 * MSG_MAX);
	ab_buf_addf(&b, "{\"method\":\"item/started\",\"params\":{"
	    "\"threadId\":\"t\",\"item\":{\"type\":\"fileChange\","
	    "\"id\":\"i%d-%d\",\"changes\":[%s]}}}\n{\"method\":"
	    "\"item/fileChange/requestApproval\",\"id\":%d,\"params\":"
	    "{\"threadId\":\"t\",\"itemId\":\"i%d-%d\"}}\n", k, v, msg.data,
	    100 + 2 * k + v, k, v);
	ab_buf_reset(&s->to_server);
	ab_as_feed(s, b.data, b.len);
	q = s->to_server.data;
	accepted = q != NULL && strstr(q, "\"accept\"") != NULL;
	declined = q != NULL && strstr(q, "\"decline\"") != NULL;
	if (accepted == declined)
		abort();
	ab_buf_free(&b);
	ab_buf_free(&msg);
	return accepted;
}

static void paths(const uint8_t *p, size_t n)
{
	char path[4200];
	const char *c = (const char *)p, *end = c + n;
	struct ab_as s;
	int k, a, ok, plain;
	size_t len;

	ab_as_init(&s, "/work", "m", "prompt", NULL, fake_lstat);
	ab_as_feed(&s, thread_ok, strlen(thread_ok));
	for (k = 0; k < PATHS_MAX && c < end; k++, c += len + 1) {
		len = strnlen(c, (size_t)(end - c));
		if (len + 2 >= sizeof path)
			break;
		memcpy(path, c, len);
		memcpy(path + len, "\0x", 3);
		ok = path_rule(path, &plain);
		a = ask(&s, k, 0, path, len);
		if ((a == 1 && !ok) || (a == 0 && plain && ok))
			abort();
		/* The same with a NUL and a byte after it. */
		if (ask(&s, k, 1, path, len + 2) == 1)
			abort();
	}
	lines_hold(&s.events);
	ab_as_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > INPUT_MAX)
		return 0;
	if (data[0] & 1)
		paths(data + 1, size - 1);
	else
		raw(data + 1, size - 1);
	return 0;
}
