/* imagereg.h: the records of registered images in the state directory
 * (image.h): written once an image passed its checks, read back and
 * checked again before any container runs it, looked up, and the
 * engine's images of this state that no record keeps swept away. */
#ifndef AB_IMAGEREG_H
#define AB_IMAGEREG_H

#include <stddef.h>

#include "engine.h"
#include "err.h"
#include "imagecheck.h"
#include "state.h"

/* Re-inspects a registered image and repeats the label checks, and with
 * probe set the version probe too.  digest (>= 80 bytes) may be NULL. */
int ab_image_verify(struct ab_state *s, struct ab_engine *e,
    const struct ab_handle *h, int probe, char *digest, struct ab_err *err);
/* 1 when registered image ID carries COMPONENT (a version label its probe
 * confirmed: "ab-proxy", "claude-code"), 0 when not. */
int ab_image_has(struct ab_state *s, const char *id, const char *component,
    struct ab_err *err);
/* The same, with the version (cap bytes) in out. */
int ab_image_version(struct ab_state *s, const char *id,
    const char *component, char *out, size_t cap, struct ab_err *err);
/* The PATH a registered image pins, from its record. */
int ab_image_path(struct ab_state *s, const char *id, char *path, size_t cap,
    struct ab_err *err);
/* Removes what killed builds left: images of this state that no record
 * registers and version-probe containers, unless a live ab-image is
 * still making them (its in-flight marker).  MARK is the engine's mark, as
 * ab-clean read it ("" for none): a record of another engine keeps
 * nothing here.  *n counts what went. */
int ab_image_sweep(struct ab_state *s, struct ab_engine *e, const char *mark,
    int *n, struct ab_err *err);
/* Removes the engine image of a handle and its record; refuses an image
 * that does not carry this state's label. */
int ab_image_remove(struct ab_state *s, struct ab_engine *e,
    const struct ab_handle *h, struct ab_err *err);

/* Writes sp's record, which registers it. */
int ab_image_record_write(struct ab_state *s, const struct ab_image_spec *sp,
    struct ab_err *err);
/* Reads image H's record into sp; refuses one outside what ab-image
 * writes. */
int ab_image_record_read(struct ab_state *s, const struct ab_handle *h,
    struct ab_image_spec *sp, struct ab_err *err);
/* A registered image of the same engine, recipe kind and recipe as WANT
 * that is still intact in the engine: 1 with its ID, 0 when none. */
int ab_image_find(struct ab_state *s, struct ab_engine *e,
    const struct ab_image_spec *want, char id[AB_ID_LEN + 1],
    struct ab_err *err);
/* Removes the engine's image DIGEST when it carries state SID's label;
 * refuses another's. */
int ab_image_remove_owned(struct ab_engine *e, const char *digest,
    const char *sid, struct ab_err *err);

#endif
