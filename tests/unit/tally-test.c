/* tally-test.c: unit tests for lib/egress/tally.c (what the proxy counts, its
 * file, and a run's share of it), TAP output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally.h"

#include "tap.h"

/* The run's share of END since BEGIN, as JSON text (static). */
static const char *diff(const struct ab_tally *end,
    const struct ab_tally *begin)
{
	static char text[65536];
	struct ab_buf b;
	struct ab_jw w;

	ab_buf_init(&b, sizeof text - 1);
	ab_jw_init(&w, &b);
	ab_jw_obj(&w);
	ab_tally_diff_json(end, begin, &w);
	ab_jw_obj_end(&w);
	if (ab_jw_done(&w) < 0)
		snprintf(text, sizeof text, "(writer failed)");
	else
		snprintf(text, sizeof text, "%.*s", (int)b.len, b.data);
	ab_buf_free(&b);
	return text;
}

static struct ab_tally *made(void)
{
	struct ab_egress_list l;
	struct ab_tally *t = malloc(sizeof *t);
	struct ab_err err;

	if (t == NULL || ab_egress_parse(&l, "api.example.com:443,"
	    "other.example.com:443", &err) < 0)
		abort();
	ab_tally_init(t, &l, 1000);
	return t;
}

/* Forty refused names first, then the allowed destination's bytes: the
 * allowed row and the totals are whole, the cap drops names only. */
static void crowding(void)
{
	struct ab_tally *t = made(), *b = made();
	char host[64];
	int i;

	*b = *t;
	for (i = 0; i < 40; i++) {
		snprintf(host, sizeof host, "n%d.example.net", i);
		ab_tally_refused(t, host, 443, "not-allowed");
	}
	ab_tally_allowed(t, "api.example.com", 443)->allowed++;
	ab_tally_allowed(t, "api.example.com", 443)->up = 50000000;
	ok(t->nnamed == AB_TALLY_NAMES && t->names_dropped == 8,
	    "past 32 refused names, refusals are counted, not named");
	ok(strstr(diff(t, b), "{\"host\":\"api.example.com\",\"port\":443,"
	    "\"allowed\":1,\"refused\":0,\"bytes_up\":50000000,"
	    "\"bytes_down\":0,\"reasons\":{}}") != NULL,
	    "the allowed destination is listed whatever was refused first");
	ok(strstr(diff(t, b), "\"totals\":{\"allowed\":1,\"refused\":40,"
	    "\"bytes_up\":50000000,\"bytes_down\":0},\"names_dropped\":8,"
	    "\"truncated\":true") != NULL,
	    "totals count every refusal; truncated says names were dropped");
	ok(strstr(diff(t, b), "other.example.com") == NULL,
	    "an allowed destination that did nothing is not listed");
	free(t);
	free(b);
}

/* Only what changed since BEGIN is the run's. */
static void share(void)
{
	struct ab_tally *t = made(), *b = made();
	struct ab_tally_row *r;

	ab_tally_refused(t, "evil.example.net", 443, "not-allowed");
	ab_tally_refused(t, NULL, 0, "method");
	r = ab_tally_allowed(t, "api.example.com", 443);
	r->allowed = 2;
	r->up = 10;
	r->down = 20;
	*b = *t;
	ab_tally_refused(t, "evil.example.net", 443, "not-allowed");
	ab_tally_refused(t, NULL, 0, "tls-handshake");
	r->down = 25;
	ok(strcmp(diff(t, b), "{\"destinations\":[{\"host\":"
	    "\"api.example.com\",\"port\":443,\"allowed\":0,\"refused\":0,"
	    "\"bytes_up\":0,\"bytes_down\":5,\"reasons\":{}},{\"host\":"
	    "\"evil.example.net\",\"port\":443,\"allowed\":0,\"refused\":1,"
	    "\"bytes_up\":0,\"bytes_down\":0,\"reasons\":{\"not-allowed\":1}},"
	    "{\"host\":null,\"port\":null,\"allowed\":0,\"refused\":1,"
	    "\"bytes_up\":0,\"bytes_down\":0,\"reasons\":{\"tls-handshake\":1}}"
	    "],\"totals\":{\"allowed\":0,\"refused\":2,\"bytes_up\":0,"
	    "\"bytes_down\":5},\"names_dropped\":0,\"truncated\":false}") == 0,
	    "a run's share is the difference, reason by reason");
	ok(strstr(diff(t, NULL), "\"allowed\":2,\"refused\":0,\"bytes_up\":10,"
	    "\"bytes_down\":25") != NULL, "no beginning: counted from zero");
	free(t);
	free(b);
}

/* What ab_tally_write writes, ab_tally_parse reads back the same. */
static void file(void)
{
	struct ab_tally *t = made(), *u = made();
	struct ab_buf b, c;
	struct ab_err err;
#define UNNAMED0 "\"unnamed\":{\"host\":null,\"port\":null,\"allowed\":0," \
	"\"refused\":0,\"bytes_up\":0,\"bytes_down\":0,\"reasons\":{}}"
#define UNNAMED UNNAMED0 ",\"invs_dropped\":0,\"invs\":[]}"
#define INV(count, req) UNNAMED0 ",\"invs_dropped\":0,\"invs\":[{\"who\":" \
	"\"ab\",\"last\":1,\"count\":" count ",\"bytes_up\":0," \
	"\"bytes_down\":0,\"req\":[" req "]}]}"
#define ROW(h, p) "{\"host\":" h ",\"port\":" p ",\"allowed\":0," \
	"\"refused\":1,\"bytes_up\":0,\"bytes_down\":0,\"reasons\":{}}"
	static const char good[] = "{\"v\":2,\"start\":1,\"seq\":1,"
	    "\"names_dropped\":0,\"allow\":[],\"named\":[" ROW("\"a.test\"",
	    "443") "]," UNNAMED;
	static const char *const bad[] = {
		"", "[]", "{}",
		"{\"v\":1,\"start\":1,\"seq\":1,\"names_dropped\":0,"
		"\"allow\":[],\"named\":[]," UNNAMED0 "}",
		"{\"v\":2,\"start\":1,\"seq\":1,\"names_dropped\":0,"
		"\"allow\":[],\"named\":[]," UNNAMED0 "}",
		"{\"v\":2,\"start\":1,\"seq\":1,\"names_dropped\":0,"
		"\"allow\":[],\"named\":[]," INV("0", "[\"GET\",\"/\",200,1,1,1]"),
		"{\"v\":2,\"start\":1,\"seq\":1,\"names_dropped\":0,"
		"\"allow\":[],\"named\":[]," INV("1", "[\"GET\",\"/\",-1,1,1,1]"),
		"{\"v\":2,\"start\":1,\"seq\":1,\"names_dropped\":0,"
		"\"allow\":[],\"named\":[]," INV("1", "[\"GET\",\"/\",200,1,1]"),
		"{\"v\":2,\"start\":1,\"seq\":1,\"names_dropped\":-1,"
		"\"allow\":[],\"named\":[]," UNNAMED,
		"{\"v\":2,\"start\":1,\"seq\":1,\"names_dropped\":0,"
		"\"allow\":[],\"named\":[" ROW("\"a.test\"", "70000") "],"
		UNNAMED,
		"{\"v\":2,\"start\":1,\"seq\":1,\"names_dropped\":0,"
		"\"allow\":[],\"named\":[" ROW("\"\"", "443") "]," UNNAMED,
		"{\"v\":2,\"start\":1,\"seq\":1,\"names_dropped\":0,"
		"\"allow\":[],\"named\":[" ROW("null", "443") "]," UNNAMED,
		NULL
	};
	int i;

	ab_tally_refused(t, "evil.example.net", 443, "not-allowed");
	ab_tally_refused(t, "api.example.com", 443, "connect-failed");
	ab_tally_refused(t, NULL, 0, "socks");
	ab_tally_allowed(t, "other.example.com", 443)->down = 7;
	t->seq = 9;
	ab_buf_init(&b, AB_TALLY_FILE_MAX);
	ab_buf_init(&c, AB_TALLY_FILE_MAX);
	ok(ab_tally_write(t, &b) == 0 && ab_tally_parse(u, b.data, b.len,
	    &err) == 0 && ab_tally_write(u, &c) == 0 && b.len == c.len &&
	    memcmp(b.data, c.data, b.len) == 0 && u->seq == 9 &&
	    u->start_ms == 1000, "the file reads back as written");
	ok(ab_tally_parse(u, good, strlen(good), &err) == 0 &&
	    u->nnamed == 1 && u->named[0].refused == 1 &&
	    u->unnamed.host[0] == '\0', "a hand-written tally is read");
	for (i = 0; bad[i] != NULL; i++)
		ok(ab_tally_parse(u, bad[i], strlen(bad[i]), &err) < 0 &&
		    err.code == AB_EREFUSED, "a tally agentbox did not write "
		    "is refused");
	ab_buf_free(&b);
	ab_buf_free(&c);
	free(t);
	free(u);
}

/* The requests an invocation's placeholder carried: its own share,
 * the first AB_TALLY_REQS listed, then counted; a list given up for a
 * ninth invocation's is null, never empty. */
static void requests(void)
{
	struct ab_tally *t = made(), *b = made(), *u = made();
	struct ab_tally_req r;
	struct ab_buf f;
	struct ab_err err;
	const char *d;
	char who[16];
	int i;

	memset(&r, 0, sizeof r);
	snprintf(r.method, sizeof r.method, "POST");
	snprintf(r.path, sizeof r.path, "/v1/messages");
	r.status = 200;
	r.up = 3;
	r.down = 5;
	for (i = 0; i < 10; i++)
		ab_tally_request(t, "aaaa", &r, 100 + i);
	*b = *t;
	for (i = 0; i < 300; i++)
		ab_tally_request(t, "aaaa", &r, 200 + i);
	ab_tally_request(t, "bbbb", &r, 600);
	d = diff(t, b);
	ok(d != NULL, "a diff is written");
	ab_buf_init(&f, 1 << 20);
	{
		struct ab_jw w;

		ab_jw_init(&w, &f);
		ab_jw_obj(&w);
		ab_tally_requests_json(t, b, "aaaa", &w);
		ab_jw_obj_end(&w);
	}
	ok(f.data != NULL && strstr(f.data, "\"count\":300,\"bytes_up\":900,"
	    "\"bytes_down\":1500,\"listed\":[{\"method\":\"POST\",\"path\":"
	    "\"/v1/messages\",\"status\":200,\"bytes_up\":3,\"bytes_down\":5,"
	    "\"ms\":0}") != NULL && strstr(f.data, "\"more\":54}") != NULL,
	    "a run's requests: 300, 246 listed after the 10 before it, 54 "
	    "counted");
	ab_buf_free(&f);
	ab_buf_init(&f, 1 << 20);
	ok(ab_tally_write(t, &f) == 0 && ab_tally_parse(u, f.data, f.len,
	    &err) == 0 && u->ninv == 2 && u->inv[0].count == 310 &&
	    u->inv[0].n == AB_TALLY_REQS && u->inv[1].count == 1,
	    "the lists read back as written");
	ab_buf_free(&f);
	for (i = 0; i < AB_TALLY_INVS - 1; i++) {
		snprintf(who, sizeof who, "c%d", i);
		ab_tally_request(t, who, &r, 1000 + i);
	}
	ab_buf_init(&f, 1 << 20);
	{
		struct ab_jw w;

		ab_jw_init(&w, &f);
		ab_jw_obj(&w);
		ab_tally_requests_json(t, b, "aaaa", &w);
		ab_tally_requests_json(t, b, "c6", &w);
		ab_jw_obj_end(&w);
	}
	ok(t->invs_dropped == 1 && f.data != NULL && strncmp(f.data,
	    "{\"requests\":null,\"requests\":{\"count\":1,", 39) == 0,
	    "the list idle longest is given up, and said to be");
	ab_buf_free(&f);
	free(t);
	free(b);
	free(u);
}

int main(void)
{
	plan(24);
	crowding();
	share();
	file();
	requests();
	return done_testing();
}
