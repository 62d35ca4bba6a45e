/* clean.h: removing an allocation and proving it is gone (ab-clean). */
#ifndef AB_CLEAN_H
#define AB_CLEAN_H

#include "buf.h"
#include "engine.h"
#include "err.h"
#include "state.h"

/* Removes every container and volume of allocation ID (by its derived
 * names and by its labels), then its staging clone and its record, and
 * proves absence twice, a settle window apart: 1 when it removed
 * something, 0 when nothing of it was left (cleaned here before).  What
 * remains is named in left (one per line) and the records are kept: -1
 * with AB_EREFUSED. */
int ab_clean_alloc(struct ab_state *s, struct ab_engine *e, const char *id,
    struct ab_buf *left, struct ab_err *err);

/* For a sweep: 1 when ID is the engine's to clean, whose mark is MARK
 * ("" when it has none): its record names that engine, or it has no
 * record, or something of it is there; 0 when it lives elsewhere. */
int ab_clean_here(struct ab_state *s, struct ab_engine *e, const char *mark,
    const char *id, struct ab_err *err);

/* The allocation IDs labelled with this state's SID in the engine, and
 * those with a record; malloc'd, deduplicated. */
int ab_clean_known(struct ab_state *s, struct ab_engine *e,
    char (**ids)[AB_ID_LEN + 1], size_t *n, struct ab_err *err);
/* 1 when ID's lease has run out (its deadline plus GRACE_MS) or its record
 * is gone; 0 while it is held or has no lease. */
int ab_clean_expired(struct ab_state *s, const char *id, long long grace_ms);

#endif
