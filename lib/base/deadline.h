/* deadline.h: the shared deadline file (agentbox(7), "DEADLINE").
 *
 * The file holds one line: the absolute deadline in seconds since the
 * epoch, a decimal fraction allowed.  Anything else is a usage error, never
 * "no deadline".  Times are kept as milliseconds since the epoch.
 */
#ifndef AB_DEADLINE_H
#define AB_DEADLINE_H

#include <time.h>

#include "err.h"

struct ab_deadline {
	int set;		/* 0: no deadline */
	long long at_ms;	/* epoch milliseconds, when set */
};

/* Reads --deadline FILE, or $AB_DEADLINE when path is NULL.  No path and
 * no variable: d->set = 0. */
int ab_deadline_load(struct ab_deadline *d, const char *path,
    struct ab_err *err);
/* Parses the file's text; 0 or -1 (AB_EUSAGE): also what the sweep
 * reads a killed run-task's deadline with (state.c). */
int ab_deadline_parse(struct ab_deadline *d, const char *text,
    struct ab_err *err);
/* Keeps the earlier of d and other: a deadline only ever shrinks. */
void ab_deadline_shrink(struct ab_deadline *d, const struct ab_deadline *o);
long long ab_now_ms(void);
/* T in nanoseconds (a file's mtime or ctime, as a stat returns it). */
long long ab_ns(const struct timespec *t);
/* The CLOCK_REALTIME instant MS milliseconds from now, for
 * pthread_cond_timedwait. */
struct timespec;
void ab_abstime_in(struct timespec *at, long ms);
/* Milliseconds left (<= 0 when passed); a large value when unset. */
long long ab_deadline_left_ms(const struct ab_deadline *d);
int ab_deadline_passed(const struct ab_deadline *d);
/* -1 with AB_EDEADLINE when passed ("deadline passed before WHAT"). */
int ab_deadline_check(const struct ab_deadline *d, const char *what,
    struct ab_err *err);

#endif
