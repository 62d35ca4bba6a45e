/* engineid.h: which engine an allocation lives on.
 *
 * An engine's /info ID is not unique before Engine 23: on 20.10 it comes
 * from a key file that every daemon of a host, and every machine cloned
 * from one image, may share.  So agentbox marks each engine it allocates
 * on with a volume of its own, agentbox-engine, labelled
 * org.agentbox.engine=ID (32 random hex digits), made on first use; the
 * record of every allocation names that ID, and a tool that reaches
 * another engine is refused before it changes or proves anything.
 */
#ifndef AB_ENGINEID_H
#define AB_ENGINEID_H

#include "engine.h"
#include "err.h"
#include "state.h"

#define AB_ENGINE_MARK "agentbox-engine"
#define AB_ENGINE_LABEL "org.agentbox.engine"

/* The engine's mark into id: 1 when found (or made, with make), 0 when
 * the engine has none (id ""), -1 on failure. */
int ab_engine_mark(struct ab_engine *e, int make, char id[AB_ID_LEN + 1],
    struct ab_err *err);

/* 0 when the engine reached carries the mark RECORDED, which WHAT (a
 * handle, for the message) was made on; -1 otherwise, AB_EREFUSED naming
 * both engines, or how to restore a mark removed by hand. */
int ab_engine_is(struct ab_engine *e, const char *recorded, const char *what,
    struct ab_err *err);

#endif
