/* imageroot.h: another root under agentbox's layer (image.h): the
 * user's own image on the engine (--base), exported whole, or a root of
 * Debian packages made by mmdebstrap (--packages). */
#ifndef AB_IMAGEROOT_H
#define AB_IMAGEROOT_H

#include "debroot.h"
#include "engine.h"
#include "err.h"
#include "imagecheck.h"

/* The engine's PATH for an image that sets none, and Debian's. */
#define AB_IMAGE_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* Refuses a base that is not an image ID or pinned by digest. */
int ab_image_check_base(const char *base, struct ab_err *err);
/* The base REF as the engine has it (never pulled): its ID, and its
 * PATH, AB_IMAGE_DEFAULT_PATH when it sets none ("" when too long). */
int ab_image_resolve_base(struct ab_engine *e, const char *ref, char id[80],
    char path[256], struct ab_err *err);
/* A file for a root's tar, gone once closed: its descriptor. */
int ab_image_root_file(struct ab_err *err);
/* The filesystem of base sp->base, whole, into FD. */
int ab_image_export_base(struct ab_engine *e,
    const struct ab_image_spec *sp, int fd, struct ab_err *err);
/* Makes the root d describes; *fdp, its tar, open and already unlinked. */
int ab_image_debian_root(struct ab_debroot *d, int *fdp, struct ab_err *err);

#endif
