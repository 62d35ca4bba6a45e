/* buf-test.c: unit tests for lib/base/buf.c (the bound every buffer states,
 * and what a refused append leaves), TAP output. */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "err.h"

#include "tap.h"

/* Every append of B refused, B holding nothing. */
static int refuses_all(struct ab_buf *b)
{
	return ab_buf_add(b, "x", 1) < 0 && ab_buf_addc(b, 'x') < 0 &&
	    ab_buf_adds(b, "") < 0 && ab_buf_addf(b, "%s", "") < 0 &&
	    b->over && b->len == 0;
}

static void unbounded_is_refused(void)
{
	struct ab_buf b;
	struct ab_err err;
	size_t none = 0;	/* not a literal 0: make lint refuses those */

	ab_buf_init(&b, none);
	ok(refuses_all(&b), "max 0 refuses every append, even of nothing");
	ok(ab_buf_fail(&b, AB_EREFUSED, "a buffer", &err) == -1 &&
	    err.code == AB_EENGINE && strstr(err.msg, "a bug") != NULL,
	    "max 0's refusal is told as a bug, not as an input's size");
	ab_buf_free(&b);

	ab_buf_init(&b, 64);
	ab_buf_adds(&b, "held");
	ab_buf_free(&b);
	ok(refuses_all(&b), "a freed buffer refuses until it is set again");
}

static void past_max(void)
{
	struct ab_buf b;
	struct ab_err err;

	ab_buf_init(&b, 8);
	ok(ab_buf_adds(&b, "12345678") == 0 && b.len == 8 && !b.over &&
	    b.data[8] == '\0', "exactly max bytes fit, NUL-terminated");
	ok(ab_buf_addc(&b, '9') == -1 && b.over, "one byte past max is "
	    "refused and sets over");
	ok(b.len == 8 && memcmp(b.data, "12345678", 9) == 0,
	    "a refused append leaves the bytes and the NUL as they were");
	ok(ab_buf_fail(&b, AB_EREFUSED, "the list", &err) == -1 &&
	    err.code == AB_EREFUSED &&
	    strcmp(err.msg, "the list is larger than 8 bytes") == 0,
	    "the refusal is told with its bound and the caller's code");
	ab_buf_reset(&b);
	ok(!b.over && b.len == 0 && b.data[0] == '\0' &&
	    ab_buf_addf(&b, "%d", 1234567) == 0 && b.data[7] == '\0',
	    "reset clears over; addf's text is NUL-terminated");
	ok(ab_buf_addf(&b, "%s", "ab") == -1 && b.over && b.len == 7 &&
	    strcmp(b.data, "1234567") == 0,
	    "addf past max is refused whole, nothing of it kept");
	ab_buf_consume(&b, 3);
	ok(b.len == 4 && strcmp(b.data, "4567") == 0,
	    "consume keeps the rest NUL-terminated");
	ab_buf_free(&b);
}

int main(void)
{
	plan(10);
	unbounded_is_refused();
	past_max();
	return done_testing();
}
