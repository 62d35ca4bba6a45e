/* inject.h: where an invocation's credential goes (agentbox(7),
 * "CREDENTIALS").
 *
 * With egress to its provider's API host (ab_egress_injects), the
 * agent's snapshot (AB_IN_SECRET, profile.h) holds a placeholder drawn
 * at validation (secret.h) and the proxy's vault holds the credential
 * (vault.h): the agent never holds it.  Otherwise the snapshot holds the
 * credential itself.  ab-run forgets both when the agent settles, and
 * ab-validate when it refuses.
 */
#ifndef AB_INJECT_H
#define AB_INJECT_H

#include "alloc.h"
#include "engine.h"
#include "err.h"
#include "profile.h"
#include "state.h"

/* 1 when profile P's credential goes to the proxy, not the agent: the
 * default with egress to its provider's API host, unless it was given
 * --credential-in-agent. */
int ab_inject_on(const struct ab_profile *p, const struct ab_alloc *a);
/* P's credential file into B (ab_buf_init'd here; wipe it), bounded,
 * without its last newlines, as the agent would be given it. */
int ab_inject_read(const struct ab_profile *p, struct ab_buf *b,
    struct ab_err *err);
/* Reads P's credential file now (bounded, O_NOFOLLOW) and gives it out
 * as above; every copy of ours is wiped. */
int ab_inject_give(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_profile *p,
    struct ab_err *err);
/* The name the proxy's tally lists requests under (tally.h) for the
 * placeholder PH (N bytes) of P, into WHO (CAP > AB_TALLY_WHO). */
int ab_inject_who(const struct ab_profile *p, const char *ph, size_t n,
    char *who, size_t cap, struct ab_err *err);
/* The credentials agents of allocation ALLOC held themselves
 * (--credential-in-agent), as its runs' results say, each read again
 * from its file into B[0..*N) (at most MAX; ab_buf's, to be wiped):
 * what ab-export looks for in the work. */
int ab_inject_held(struct ab_state *s, const char *alloc, struct ab_buf *b,
    int max, int *n, struct ab_err *err);
/* Empties the vault's file and the snapshot; the first failure in err. */
int ab_inject_forget(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_profile *p,
    struct ab_err *err);

/* A subscription sign-in (ab-profile --codex-auth, --claude-auth;
 * oauth.h).  ab-validate: FILE read now and described in *SN; the
 * agent's copy on the auth volume holds placeholders, the proxy's vault
 * the real tokens and the sign-in's state. */
int ab_inject_signin_give(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_profile *p,
    struct ab_signin *sn, struct ab_err *err);
/* ab-run, once the agent settled: the state read back from the vault
 * once; the tokens the proxy holds, when it refreshed them, written over
 * FILE if FILE is still what *SN says (signin.h), else kept in the
 * state directory (its path in KEPT), what became of them in *O (never
 * the agent's copy); then the vault's files, the state and the copy
 * emptied, the first failure of that in err. */
int ab_inject_signin_settle(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_profile *p,
    const struct ab_signin *sn, struct ab_signin_back *o, char *kept,
    size_t cap, struct ab_err *err);
/* ab-validate refusing: the same emptying, nothing written back. */
int ab_inject_signin_forget(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_profile *p,
    struct ab_err *err);
/* The name a sign-in's requests are listed under in the proxy's tally,
 * the same through every refresh, into WHO (CAP > AB_TALLY_WHO). */
int ab_inject_signin_who(const struct ab_profile *p, char *who, size_t cap,
    struct ab_err *err);

#endif
