/* listing.h: the bytes of /work's listing (worklist.h), parsed.  They
 * are the agent's doing: every name is hostile bytes, and anything not
 * as find and stat print it is a refusal. */
#ifndef AB_LISTING_H
#define AB_LISTING_H

#include <stddef.h>

#include "err.h"

enum ab_work_kind { AB_WORK_FILE, AB_WORK_SOCKET, AB_WORK_DIR, AB_WORK_OTHER };

/* A change time: seconds and nanoseconds since the epoch. */
struct ab_ctime {
	long long s;
	long ns;
};

struct ab_work_entry {
	const char *path;	/* relative to /work, never "." */
	enum ab_work_kind kind;
	/* A regular file's, else 0: */
	long long size;
	unsigned long long ino;	/* with more than one link, else 0 */
	/* A regular file's or a directory's, else 0: */
	unsigned perm;		/* its permission bits */
	struct ab_ctime ctime;
};

struct ab_listing {
	struct ab_work_entry *v;	/* paths point into the bytes parsed */
	size_t n;
	int marked;		/* the seed's mark was found: */
	struct ab_ctime mark;	/* its change time */
};

/* /work as the listing names it, from inside: as long as "/work". */
#define AB_LISTING_ROOT "././."
#define AB_LISTING_ROOT_LEN 5

/* Parses the LEN bytes at OUT: names, each a run of one to four equal
 * NUL-ended paths as find prints them from inside /work, AB_LISTING_ROOT
 * itself or AB_LISTING_ROOT/PATH (a regular file, a socket, a
 * directory, anything else), an empty name, then for each regular file and
 * directory in order
 * "SIZE LINKS INODE PERM CTIME DATE TIME.NS ZONE\n" (stat's %s %h %i %a
 * %Z %z: the nanoseconds of the change time are only in %z's time of
 * day), then at most one "mark CTIME DATE TIME.NS ZONE\n", the seed's
 * mark's.  OUT must outlive L; on a refusal L holds nothing. */
int ab_listing_parse(struct ab_listing *l, const char *out, size_t len,
    struct ab_err *err);
/* -1, 0 or 1 as A is older than, as old as, or newer than B. */
int ab_ctime_cmp(struct ab_ctime a, struct ab_ctime b);
void ab_listing_free(struct ab_listing *l);

#endif
