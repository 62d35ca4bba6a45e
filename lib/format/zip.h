/* zip.h: single members out of a zip archive (a Python wheel).
 *
 * The image builder takes a few files out of hash-pinned wheels.  The hash
 * is checked before this code runs, but every byte is still read as
 * untrusted: the central directory is held (at most 16 MiB, 65535
 * entries), a member is streamed through a fixed buffer and never held
 * whole, and anything that is not a plain single-disk archive of stored
 * or deflated members is refused rather than guessed at: zip64, several
 * disks, encryption, a name listed twice, members that overlap or point
 * outside the file, a local header that disagrees with the central
 * directory, more or fewer bytes than listed, a CRC-32 mismatch.
 *
 * Errors: AB_EREFUSED for an archive that is malformed, corrupt or uses
 * what is not supported ("zip: corrupt: ..."), AB_EENGINE when reading
 * the file fails.
 */
#ifndef AB_ZIP_H
#define AB_ZIP_H

#include <stddef.h>

#include "buf.h"
#include "err.h"

#define AB_ZIP_NAME_MAX 1024	/* with the NUL: longer names are refused */

struct ab_zip;

struct ab_zip_member {
	char name[AB_ZIP_NAME_MAX];	/* never holds a NUL of its own */
	unsigned long long size, csize;	/* uncompressed, compressed */
	unsigned long crc;		/* CRC-32 */
	int method;			/* 0 stored, 8 deflate */
	unsigned mode;	/* st_mode bits when made on unix, else 0 */
	unsigned long long local_offset;
};

/* Reads the end record and the central directory of the regular file open
 * on FD (which stays the caller's, and must stay open until
 * ab_zip_close).  A comment must end the file, the central directory must
 * end where the end record begins. */
int ab_zip_open(struct ab_zip **z, int fd, struct ab_err *err);
void ab_zip_close(struct ab_zip *z);

/* The members in central directory order: 1 with M filled, 0 when I is
 * not below ab_zip_count. */
size_t ab_zip_count(const struct ab_zip *z);
int ab_zip_member_at(const struct ab_zip *z, size_t i,
    struct ab_zip_member *m);

/* 1 found (M filled), 0 no such member, -1 error.  Names are compared
 * byte for byte. */
int ab_zip_find(struct ab_zip *z, const char *name, struct ab_zip_member *m,
    struct ab_err *err);

/* Takes N bytes of a member: 0, or -1 with err (passed through). */
typedef int (*ab_zip_out)(void *ctx, const void *p, size_t n,
    struct ab_err *err);

/* Streams the uncompressed bytes of M (as ab_zip_find or ab_zip_member_at
 * filled it) to OUT in chunks.  OUT may already have had some of them
 * when a later check fails (a CRC-32 mismatch is known only at the end),
 * so a caller writes to a temporary name and keeps it only on 0. */
int ab_zip_read(struct ab_zip *z, const struct ab_zip_member *m,
    ab_zip_out out, void *ctx, struct ab_err *err);

/* Member NAME, of at most MAX bytes, into B, which is set up here
 * (ab_buf_init) and freed on failure; B->data is never NULL on 0.  A
 * missing member is refused like a larger one. */
int ab_zip_read_small(struct ab_zip *z, const char *name, struct ab_buf *b,
    size_t max, struct ab_err *err);

#endif
