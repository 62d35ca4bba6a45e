/* oneshot.h: run a short locked container to completion (the image's
 * version probe), validated before it starts and removed afterwards. */
#ifndef AB_ONESHOT_H
#define AB_ONESHOT_H

#include "buf.h"
#include "engine.h"
#include "err.h"
#include "lockdown.h"

struct ab_oneshot {
	struct ab_buf out, err;	/* bounded */
	long long status;	/* the container's exit status */
};

/* The one set of limits every oneshot has: 64 MiB, 64 pids, one CPU, a
 * 1 MiB log, 1024 open files. */
void ab_oneshot_limits(struct ab_lock *l);
int ab_oneshot_run(struct ab_engine *e, const struct ab_lock *l,
    const char *name, struct ab_oneshot *o, struct ab_err *err);
/* The same with up to OUT_MAX bytes of standard output kept (64 KiB
 * above); o->out.over says more came. */
int ab_oneshot_run_max(struct ab_engine *e, const struct ab_lock *l,
    const char *name, size_t out_max, struct ab_oneshot *o,
    struct ab_err *err);
void ab_oneshot_free(struct ab_oneshot *o);

#endif
