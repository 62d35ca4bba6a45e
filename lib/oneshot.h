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

/* Creates container NAME from l; refuses any engine warning.  *conflict is
 * set when the name is already held (409): that container is not ours. */
int ab_ctr_create(struct ab_engine *e, const struct ab_lock *l,
    const char *name, const char *what, char id[80], int *conflict,
    struct ab_err *err);
/* Inspects container ID into j (ab_json_free it): a refusal (1) when the
 * engine does not know it. */
int ab_ctr_inspect(struct ab_engine *e, const char *id, struct ab_json *j,
    struct ab_err *err);
/* Keeps image ID's inspect reply BODY for this process's container
 * checks, when ID is a content address (sha256:...); else forgets. */
void ab_image_keep(struct ab_engine *e, const char *id, const char *body,
    size_t len);
/* Compares a container's inspect document with l, and with the labels
 * of the image l names (ab_lock_check_doc). */
int ab_ctr_check_doc(struct ab_engine *e, const struct ab_lock *l,
    const struct ab_json *ins, struct ab_err *err);
/* Inspects container ID and compares it with l (ab_ctr_check_doc). */
int ab_ctr_check(struct ab_engine *e, const struct ab_lock *l,
    const char *id, struct ab_err *err);

#endif
