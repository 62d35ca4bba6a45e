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

#include "hash.h"

struct ab_git_feed;

/* A feed holding at most CAP bytes of blobs; NULL when out of memory. */
struct ab_git_feed *ab_git_feed_new(size_t cap);
/* Offers a copy of blob ID's N bytes, P.  The bytes must have been read
 * and hashed against ID already. */
void ab_git_feed_offer(struct ab_git_feed *f,
    const unsigned char id[AB_OID_RAW], const void *p, size_t n);
/* No more offers: the packer stops waiting. */
void ab_git_feed_close(struct ab_git_feed *f);

struct ab_git_fed {
	struct ab_git_fed *next;
	unsigned char id[AB_OID_RAW];
	size_t n;
	unsigned char data[];
};

/* The oldest offer, which the caller frees with free(); NULL when none
 * came within WAIT_MS, or none is left of a closed feed. */
struct ab_git_fed *ab_git_feed_take(struct ab_git_feed *f, int wait_ms);
/* Blobs over 1 MiB go loose (gitstage.h), written by the packer.  One
 * that libgit2 inflated whole for the upload (a packed one) is shared,
 * not copied: the upload hands over a reference, released by release()
 * once the packer is done, and at most one is held at a time.  For every
 * big blob the upload streamed, or could not hand over, it says so, so
 * that the packer, taking them in the listing's order, never waits for
 * one that will not come. */
struct ab_git_big {
	struct ab_git_big *next;
	unsigned char id[AB_OID_RAW];
	const void *data;	/* NULL: read it yourself */
	size_t n;
	void *ref;
	void (*release)(void *ref);
};

/* Offers blob ID's N bytes at P, held by REF (NULL P: it streamed).
 * REF is released here when it cannot be taken. */
void ab_git_feed_big(struct ab_git_feed *f,
    const unsigned char id[AB_OID_RAW], const void *p, size_t n, void *ref,
    void (*release)(void *ref));
/* The next big blob offered; NULL when none came within WAIT_MS, or the
 * feed is closed and empty. */
struct ab_git_big *ab_git_feed_take_big(struct ab_git_feed *f, int wait_ms);
/* Releases what a taken big blob held. */
void ab_git_feed_big_done(struct ab_git_feed *f, struct ab_git_big *b);
/* 1 once the feed is closed. */
int ab_git_feed_closed(struct ab_git_feed *f);

/* Frees the feed and what is left in it. */
void ab_git_feed_free(struct ab_git_feed *f);

#endif
