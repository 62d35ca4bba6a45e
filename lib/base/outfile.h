/* outfile.h: a file the user names for a tool to write (ab-export -o,
 * ab-run --stdout and --stderr), by one rule for all.
 *
 * Symbolic links are followed, as a shell's redirection follows them, and
 * what is at the end decides:
 *  - a character device or a FIFO is written through, opened without
 *    creating or truncating anything: /dev/null, a named pipe, or
 *    /dev/stdout (a link to the caller's pipe or terminal);
 *  - a regular file, or nothing, is replaced whole: written under a
 *    temporary name in its directory and renamed over it once complete
 *    (over the link's target, never the link), so a failure leaves the
 *    old file and a reader never sees half of the new one;
 *  - anything else (a directory, a block device, a socket, a link to
 *    nothing) is refused.
 * Renaming over whatever was there replaced /dev/full with a regular file
 * when root wrote a patch to it.
 */
#ifndef AB_OUTFILE_H
#define AB_OUTFILE_H

#include "err.h"

struct ab_outfile {
	int fd;			/* -1 when not open */
	int replace;		/* renamed over target by ab_outfile_commit */
	char target[4096];	/* the path written, links resolved */
	char tmp[4200];
};

/* Opens PATH by the rule above; "-" is standard output.  A refused or
 * unusable PATH is AB_EUSAGE. */
int ab_outfile_open(struct ab_outfile *o, const char *path,
    struct ab_err *err);
/* Completes it: a replacement is flushed to disk and renamed into place.
 * Closes it either way. */
int ab_outfile_commit(struct ab_outfile *o, struct ab_err *err);
/* Drops a replacement's temporary and closes; the target is untouched. */
void ab_outfile_abort(struct ab_outfile *o);

#endif
