#include <string.h>

#include "side.h"

static void *side_main(void *arg)
{
	struct ab_side *s = arg;

	s->rc = s->fn(&s->e, s->arg, &s->err);
	return NULL;
}

void ab_side_start(struct ab_side *s, struct ab_engine *e, ab_side_fn fn,
    void *arg)
{
	memset(s, 0, sizeof *s);
	s->fn = fn;
	s->arg = arg;
	if (ab_engine_twin(&s->e, e, &s->err) == 0) {
		if (pthread_create(&s->thread, NULL, side_main, s) == 0) {
			s->threaded = 1;
			return;
		}
		ab_engine_close(&s->e);
	}
	memset(&s->err, 0, sizeof s->err);
	s->rc = fn(e, arg, &s->err);
}

int ab_side_join(struct ab_side *s, struct ab_err *err)
{
	if (s->threaded) {
		pthread_join(s->thread, NULL);
		ab_engine_close(&s->e);
		s->threaded = 0;
	}
	if (s->rc < 0 && err != NULL)
		*err = s->err;
	return s->rc;
}
