/* run-test.c: unit tests for lib/step/run.c's reading of the engine's events
 * of a container (kills counted, its death and an OOM seen), TAP output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

#include "tap.h"

/* The events of S, fed in chunks of at most CHUNK bytes. */
static void feed(struct ab_run_events *ev, const char *s, size_t n,
    size_t chunk)
{
	size_t k;

	for (; n > 0; s += k, n -= k) {
		k = n < chunk ? n : chunk;
		ab_run_events_feed(ev, s, k);
	}
}

static void test_normal(void)
{
	static const char s[] =
	    "{\"Type\":\"container\",\"Action\":\"start\"}\n"
	    "{\"Type\":\"container\",\"Action\":\"kill\"}\n"
	    "\n"
	    "not json\n"
	    "{\"Type\":\"container\",\"Action\":\"kill\"}\n"
	    "{\"Type\":\"container\",\"Action\":\"oom\"}\n"
	    "{\"Type\":\"container\",\"Action\":\"die\"}\n";
	struct ab_run_events ev;

	ab_run_events_init(&ev);
	feed(&ev, s, sizeof s - 1, 7);
	ok(ev.kills == 2 && ev.died && ev.oom,
	    "events split across chunks: kills counted, die and oom seen");
	ab_run_events_free(&ev);
}

/* A line past the bound whose tail, alone, reads as an event: the tail
 * is the long line's, never an event of its own. */
static void test_long_line(size_t chunk, int aligned, const char *desc)
{
	static const char kill_ev[] = "{\"Action\":\"kill\"}";
	struct ab_run_events ev;
	struct ab_buf b;

	ab_buf_init(&b, 2 * AB_RUN_EVENT_LINE_MAX);
	ab_buf_adds(&b, "{\"Type\":\"container\",\"Action\":\"start\","
	    "\"pad\":\"");
	while (b.len < AB_RUN_EVENT_LINE_MAX + 100)
		ab_buf_addc(&b, 'x');
	/* Where a chunk ends, so the tail comes in a chunk of its own. */
	while (aligned && b.len % chunk != 0)
		ab_buf_addc(&b, 'y');
	ab_buf_adds(&b, kill_ev);
	ab_buf_adds(&b, "\n{\"Action\":\"die\"}\n");
	ab_run_events_init(&ev);
	feed(&ev, b.data, b.len, chunk);
	ok(!b.over && ev.kills == 0 && ev.died, desc);
	ab_run_events_free(&ev);
	ab_buf_free(&b);
}

int main(void)
{
	plan(3);
	test_normal();
	test_long_line(16384, 1, "a long event line's tail, a kill event "
	    "in a chunk of its own, is not counted");
	test_long_line(1 << 20, 0, "nor when the tail comes in the long "
	    "line's chunk");
	return done_testing();
}
