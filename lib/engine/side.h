/* side.h: one engine call made beside the caller's own.
 *
 * The engine serves requests on several connections at once, and much of
 * a step's time is spent waiting on one (a container started or removed,
 * an archive read through a mount).  ab_side_start runs FN in a thread on
 * a connection of its own (ab_engine_twin) while the caller goes on with
 * its own; ab_side_join waits for it and hands back what it said.  FN
 * must touch nothing the caller touches meanwhile.  When no thread or
 * connection can be had, FN runs in the caller at start, as if there
 * were no side: the same work, one after the other.
 */
#ifndef AB_SIDE_H
#define AB_SIDE_H

#include <pthread.h>

#include "engine.h"
#include "err.h"

typedef int (*ab_side_fn)(struct ab_engine *e, void *arg,
    struct ab_err *err);

struct ab_side {
	pthread_t thread;
	int threaded;
	struct ab_engine e;
	ab_side_fn fn;
	void *arg;
	int rc;
	struct ab_err err;
};

void ab_side_start(struct ab_side *s, struct ab_engine *e, ab_side_fn fn,
    void *arg);
/* FN's return value, with its error in err when it is -1. */
int ab_side_join(struct ab_side *s, struct ab_err *err);

#endif
