/* archive.h: a tar archive from the engine (GET .../archive, an image's
 * or a container's export), read as it arrives.
 *
 * The engine's reply is a stream on the curl multi handle; each read the
 * tar reader (tarread.h) makes pumps the stream until more bytes came,
 * so the archive is never held whole and costs at most MAX bytes.  The
 * reader owns the stream: ab_tarread_close ends both.
 */
#ifndef AB_ARCHIVE_H
#define AB_ARCHIVE_H

#include "engine.h"
#include "err.h"
#include "tarread.h"

/* GETs PATH (an archive endpoint) and opens its reply as a tar archive.
 * On failure *T is NULL and nothing is left to close. */
int ab_archive_open(struct ab_tarread **t, struct ab_engine *e,
    const char *path, long long max, const char *what, struct ab_err *err);
/* The same, but a reply other than 200 is 0 with *T NULL and its status
 * in *REFUSED: for an entry the caller can read, or account for,
 * otherwise. */
int ab_archive_open_if(struct ab_tarread **t, struct ab_engine *e,
    const char *path, long long max, const char *what, long *refused,
    struct ab_err *err);

#endif
