/* tarread.h: a tar archive read from the engine as it arrives.
 *
 * The engine's reply is a stream on the curl multi handle; libarchive
 * pulls, and each pull drives the stream until more bytes came.  So the
 * archive is never held whole, and what it may cost is bounded: at most
 * MAX bytes in all, or the read is refused.
 */
#ifndef AB_TARREAD_H
#define AB_TARREAD_H

#include <stddef.h>

#include "engine.h"
#include "err.h"

struct ab_tarread;
struct archive_entry;

/* GETs PATH (an archive endpoint) and opens its reply as a tar archive. */
int ab_tarread_open(struct ab_tarread **t, struct ab_engine *e,
    const char *path, long long max, const char *what, struct ab_err *err);
/* 1 with *ent (valid until the next call), 0 at the end, -1 on error. */
int ab_tarread_next(struct ab_tarread *t, struct archive_entry **ent,
    struct ab_err *err);
/* The current entry's bytes: count, 0 at its end, -1 on error. */
long ab_tarread_data(struct ab_tarread *t, char *p, size_t n,
    struct ab_err *err);
void ab_tarread_close(struct ab_tarread *t);

#endif
