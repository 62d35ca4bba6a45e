/* imageimport.h: an image made by one import of a root's tar, its whole
 * configuration and labels in the import's query; the engine's progress
 * stream is followed to the new image's ID (image.h). */
#ifndef AB_IMAGEIMPORT_H
#define AB_IMAGEIMPORT_H

#include "engine.h"
#include "err.h"
#include "imagecheck.h"
#include "rootfs.h"

/* Imports rf, the root assembled on the host, as sp; its ID in digest. */
int ab_image_import(struct ab_engine *e, struct ab_rootfs *rf,
    const struct ab_image_spec *sp, void (*show)(const char *line),
    char digest[80], struct ab_err *err);
/* Imports the root's tar in FD with rf, agentbox's layer, on top. */
int ab_image_import_layered(struct ab_engine *e, struct ab_rootfs *rf,
    int fd, const struct ab_image_spec *sp, void (*show)(const char *line),
    char digest[80], struct ab_err *err);

#endif
