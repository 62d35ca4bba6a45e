/* owned.h: removing an engine object only when this state directory owns
 * it (agentbox(7), "CLEANUP": "a name derived from a handle is never
 * enough to remove anything").
 *
 * The object is inspected right before its removal and must carry
 * org.agentbox.state=SID (and org.agentbox.alloc=ALLOC when ALLOC is
 * given); it is then removed by the ID that inspect reported, so a name
 * that changed hands in between is not what goes.  Volumes have no ID but
 * their name: between the inspect and the removal of a volume another
 * client could remove it and create a foreign one of the same name, and
 * the engine API has no conditional removal to close that window.
 */
#ifndef AB_OWNED_H
#define AB_OWNED_H

#include "engine.h"
#include "err.h"

enum ab_kind { AB_CONTAINER, AB_VOLUME, AB_IMAGE, AB_NETWORK };

/* What ab_owned_lookup found. */
enum { AB_ABSENT = 0, AB_OURS = 1, AB_FOREIGN = 2 };

/* Inspects REF (a name or an ID) of KIND; with AB_OURS, id (80 bytes, may
 * be NULL) receives the engine's ID (a volume's name). */
int ab_owned_lookup(struct ab_engine *e, enum ab_kind kind, const char *ref,
    const char *sid, const char *alloc, char *id, struct ab_err *err);
/* Removes REF when it is ours, within a cleanup budget of its own (it
 * must still run after the deadline passed).  0 when it is gone or was
 * never there; AB_FOREIGN (left alone) when it is not ours; -1 when the
 * engine could not be asked or refused the removal. */
int ab_owned_remove(struct ab_engine *e, enum ab_kind kind, const char *ref,
    const char *sid, const char *alloc, struct ab_err *err);
/* "container", "volume", "image", "network". */
const char *ab_kind_name(enum ab_kind kind);

#endif
