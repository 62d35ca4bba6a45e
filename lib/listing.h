/* listing.h: the bytes of /work's listing (worklist.h), parsed.  They
 * are the agent's doing: every name is hostile bytes, and anything not
 * as find and stat print it is a refusal. */
#ifndef AB_LISTING_H
#define AB_LISTING_H

#include <stddef.h>

#include "err.h"

enum ab_work_kind { AB_WORK_FILE, AB_WORK_SOCKET, AB_WORK_DIR, AB_WORK_OTHER };

struct ab_work_entry {
	const char *path;	/* relative to /work, never "." */
	enum ab_work_kind kind;
	long long size;		/* a regular file's, else 0 */
	unsigned long long ino;	/* a regular file's with more than one link */
};

struct ab_listing {
	struct ab_work_entry *v;	/* paths point into the bytes parsed */
	size_t n;
};

/* Parses the LEN bytes at OUT: names, each a run of one to four equal
 * NUL-ended paths under /work (a regular file, a socket, a directory,
 * anything else), an empty name, then "SIZE LINKS INODE\n" for each
 * regular file in order.  OUT must outlive L; on a refusal L holds
 * nothing. */
int ab_listing_parse(struct ab_listing *l, const char *out, size_t len,
    struct ab_err *err);
void ab_listing_free(struct ab_listing *l);

#endif
