/* ctr.h: one container on the engine: created from a lockdown, inspected
 * and checked against it, looked into (which program a name runs), and
 * its record in the state directory (ab-validate). */
#ifndef AB_CTR_H
#define AB_CTR_H

#include <stddef.h>

#include "buf.h"
#include "engine.h"
#include "err.h"
#include "json.h"
#include "lockdown.h"
#include "state.h"

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
/* Which program NAME (no '/') runs as in container CTR of a registered
 * image whose PATH is PATH_ENV: the first DIR/NAME that is, through its
 * symbolic links, a regular executable file, as execvp(3) finds it.
 * 1 with it in out, 0 when there is none, -1 when the engine failed. */
int ab_ctr_which(struct ab_engine *e, const char *ctr,
    const char *path_env, const char *name, char *out, size_t cap,
    struct ab_err *err);

#endif
