/* alloc.h: allocations: three capped tmpfs volumes and the keeper that
 * holds them mounted (a tmpfs volume lives only while mounted).
 *
 * Every name derives from the alloc ID and is written to the record before
 * the create that uses it, so a create that lands after its client gave up
 * is still found and removed.  Every object carries org.agentbox.alloc=ID
 * and org.agentbox.state=SID.
 */
#ifndef AB_ALLOC_H
#define AB_ALLOC_H

#include "allocrec.h"
#include "deadline.h"
#include "egress.h"
#include "engine.h"
#include "err.h"
#include "lockdown.h"
#include "state.h"

/* Every volume name an allocation may have, in use or not: cleanup looks
 * for them all.  Returns how many (at most AB_NVOL + 2). */
/* What a's proxy is made from (proxy.h): pointers into a. */
void ab_alloc_proxy(const struct ab_alloc *a, struct ab_proxy_of *px);
int ab_alloc_volumes(const struct ab_alloc *a, const struct ab_volume *v[]);
/* Creates volume v (a tmpfs of its ceilings, labelled with alloc ID and
 * state SID); a volume of that name with anything else is refused. */
int ab_alloc_volume_create(struct ab_engine *e, const struct ab_volume *v,
    const char *id, const char *sid, struct ab_err *err);
/* Fills names, roles and mount points for a new ID of state SID. */
void ab_alloc_init(struct ab_alloc *a, const char *id, const char *sid);
/* Creates volumes and keeper and validates the keeper; on failure removes
 * what it made, within a cleanup budget, and keeps the record only when
 * something could not be removed. */
int ab_alloc_create(struct ab_state *s, struct ab_engine *e,
    struct ab_alloc *a, struct ab_err *err);
int ab_alloc_save(struct ab_state *s, const struct ab_alloc *a,
    struct ab_err *err);
/* Loads and bounds a record: every value is re-checked as the command
 * line would be (sizes, names, digests, the lease), so a corrupt record
 * fails here instead of producing absurd limits downstream.  The record
 * is trusted as its owner's; what the engine knows (the keeper, the
 * volumes' options) is cross-checked against the engine by the steps. */
int ab_alloc_load(struct ab_state *s, const struct ab_handle *h,
    struct ab_alloc *a, struct ab_err *err);
/* The engine a record names, read alone: ab-clean must clean a record
 * whose other fields are corrupt.  "" for a record made before engines
 * were marked; -1 when the record is unreadable or its engine malformed. */
int ab_alloc_engine_of(struct ab_state *s, const struct ab_handle *h,
    char engine[AB_ID_LEN + 1], struct ab_err *err);
/* 0 when the engine reached is the one A lives on; -1 with AB_EREFUSED
 * naming both (engineid.h), before any call that changes or proves
 * anything about A. */
int ab_alloc_on(struct ab_engine *e, const struct ab_alloc *a,
    struct ab_err *err);
/* The keeper's lockdown and the storage it points into, so later steps
 * validate the keeper with the very description it was created from. */
struct ab_keeper_lock {
	struct ab_lock l;
	const char *labels[9];
	const char *env[2];
	struct ab_mount mounts[AB_NVOL + 1];	/* and the sign-in's */
};

void ab_alloc_keeper_lock(const struct ab_alloc *a, const char *sid,
    int seccomp_keyword, struct ab_keeper_lock *k);

#endif
