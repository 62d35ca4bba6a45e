/* roottar.h: an image's whole tar from a root filesystem's tar and
 * agentbox's layer on top, for one import (ab-image build --base,
 * --packages).
 *
 * The root's archive (the engine's export of the user's base, or
 * mmdebstrap's) is passed through as it is, block by block, up to its end
 * marker, but for the paths the layer has (the engine refuses a path
 * twice) and anything under /usr/lib/agentbox, which is the layer's
 * alone; its /etc/passwd and /etc/group are read on the way.  Then come
 * the layer's entries (rootfs.h) and the two files again, with the agent
 * (uid and gid 10001) appended when the root has no such user or group.
 * Nothing of the root is run.
 */
#ifndef AB_ROOTTAR_H
#define AB_ROOTTAR_H

#include <stddef.h>

#include "err.h"
#include "rootfs.h"

struct ab_roottar;

/* Reads the root's archive from FD (kept open by the caller). */
int ab_roottar_open(struct ab_roottar **rt, int fd, struct ab_rootfs *layer,
    struct ab_err *err);
/* An ab_reader (engine.h) over the image's archive. */
long ab_roottar_read(void *rt, char *p, size_t n, struct ab_err *err);
void ab_roottar_close(struct ab_roottar *rt);

#endif
