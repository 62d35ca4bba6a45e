/* tarread.h: a tar archive read as it arrives.
 *
 * Its bytes are fed by whoever has them (archive.h: the engine's reply,
 * pumped as it comes), or given at once.  So the archive is never held
 * whole, and what it may cost is bounded: at most MAX bytes in all, or
 * the read is refused.  The reader takes what the engine writes (ustar,
 * pax and GNU headers); a path is bytes, as git keeps it.  Anything it
 * cannot frame exactly (a bad checksum, a number that does not parse, a
 * sparse file) ends the read as "not a tar archive".
 */
#ifndef AB_TARREAD_H
#define AB_TARREAD_H

#include <stddef.h>

#include "buf.h"
#include "err.h"

enum ab_tarread_type {
	AB_TR_FILE, AB_TR_DIR, AB_TR_SYMLINK, AB_TR_HARDLINK, AB_TR_OTHER
};

struct ab_tarread_entry {
	const char *path;	/* as in the archive: no NUL inside */
	const char *link;	/* a symlink's target, a hard link's name */
	long long size;		/* a file's bytes */
	unsigned mode;		/* permission bits */
	enum ab_tarread_type type;
};

struct ab_tarread;

/* A reader over N bytes at P (copied), as if they had been fed and the
 * source had ended: for the fuzzing harness (tests/fuzz/tarread.c). */
int ab_tarread_open_mem(struct ab_tarread **t, const void *p, size_t n,
    long long max, const char *what, struct ab_err *err);
/* A reader its caller feeds: when it needs bytes it calls PULL(CTX),
 * which gives what it has through ab_tarread_feed and returns 0, or 1
 * once its source has ended cleanly (all fed), or -1 with ERR set.
 * For a stream framed by another layer (a container's output). */
typedef int (*ab_tarread_pull)(void *ctx, struct ab_err *err);
int ab_tarread_open_fed(struct ab_tarread **t, ab_tarread_pull pull,
    void *ctx, long long max, const char *what, struct ab_err *err);
/* On ab_tarread_close, RELEASE(CTX): the source's end, for a reader that
 * owns its source (archive.c). */
void ab_tarread_owns(struct ab_tarread *t, void (*release)(void *ctx));
/* N bytes at P for a fed reader, within its MAX in all. */
int ab_tarread_feed(struct ab_tarread *t, const char *p, size_t n,
    struct ab_err *err);
/* 1 with *ent (valid until the next call), 0 at the end, -1 on error. */
int ab_tarread_next(struct ab_tarread *t,
    const struct ab_tarread_entry **ent, struct ab_err *err);
/* The current file's bytes: count, 0 at its end, -1 on error. */
long ab_tarread_data(struct ab_tarread *t, char *p, size_t n,
    struct ab_err *err);
/* The bytes read so far, headers and padding included. */
long long ab_tarread_got(const struct ab_tarread *t);
void ab_tarread_close(struct ab_tarread *t);
/* The archive of one small file: its bytes into B (bounded by B's max),
 * and the end; AB_EREFUSED for anything else. */
int ab_tarread_one(struct ab_tarread *t, struct ab_buf *b,
    struct ab_err *err);

#endif
