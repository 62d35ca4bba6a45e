/* packcheck.h: which object of a source pack is damaged.
 *
 * git moves a stored delta or object as it is, without inflating it, so a
 * flipped byte in a source pack surfaces only where the bytes are checked,
 * as "bad object at offset N" of a pack that has no object names.  An index
 * of version 2 holds a CRC-32 of every entry's stored bytes: recomputing
 * them names the entry that changed.  Run only after a failure; it reads
 * the pack once (CRC-32 at a few GB/s) and holds 12 bytes an object.
 */
#ifndef AB_PACKCHECK_H
#define AB_PACKCHECK_H

#include <stddef.h>

#include "err.h"
#include "hash.h"

/* 1 with HEX (41 bytes) the first object of the pack whose index is IDX
 * that does not match its CRC, 0 when all match (or the index is of
 * version 1, which has no CRCs), -1 when the pack cannot be read. */
int ab_pack_damaged(const char *idx, char hex[AB_OID_HEX + 1],
    struct ab_err *err);

#endif
