/* gitfeed.h: blobs the tree's upload has read, offered to the thread that
 * packs the tip (gitstage.h), so that each is read and hashed once.
 *
 * On 10,000 files the tip packer's own reads were a fifth of a seeding's
 * instructions: libgit2 inflates each object and hashes it with its
 * collision-detecting SHA-1, and the upload had just done the same.  The
 * feed is an optimisation only: an offer that does not fit is dropped,
 * and the packer reads whatever it was not given.  Offers never block
 * the upload, and the packer waits for one only briefly.
 */
#ifndef AB_GITFEED_H
#define AB_GITFEED_H

#include <stddef.h>

struct ab_git_feed;

/* A feed holding at most CAP bytes of blobs; NULL when out of memory. */
struct ab_git_feed *ab_git_feed_new(size_t cap);
/* Offers a copy of blob ID's N bytes, P.  The bytes must have been read
 * and hashed against ID already. */
void ab_git_feed_offer(struct ab_git_feed *f, const unsigned char id[20],
    const void *p, size_t n);
/* No more offers: the packer stops waiting. */
void ab_git_feed_close(struct ab_git_feed *f);

struct ab_git_fed {
	struct ab_git_fed *next;
	unsigned char id[20];
	size_t n;
	unsigned char data[];
};

/* The oldest offer, which the caller frees with free(); NULL when none
 * came within WAIT_MS, or none is left of a closed feed. */
struct ab_git_fed *ab_git_feed_take(struct ab_git_feed *f, int wait_ms);
/* Frees the feed and what is left in it. */
void ab_git_feed_free(struct ab_git_feed *f);

#endif
