/* secret.h: the two pure pieces of credential injection.
 *
 * The agent holds a placeholder instead of its vendor API key; the egress
 * proxy swaps the placeholder for the real key in one request header, and
 * the real key back to the placeholder wherever a vendor's answer echoes
 * it (headers and streamed bodies, across read and chunk boundaries).
 * Placeholder and credential have the same length, so no length in the
 * HTTP framing changes.
 *
 * Neither piece prints, logs or keeps a copy of a credential: an error
 * says what is wrong in words, and what a stream held back is wiped.
 */
#ifndef AB_SECRET_H
#define AB_SECRET_H

#include <stddef.h>

#include "err.h"

#define AB_SECRET_LEN_MAX 4096	/* a credential's bytes; longer is refused */

/* A placeholder for the credential CRED (N bytes, printable ASCII, no
 * space), written to OUT (N bytes, no NUL added): the same length; the
 * same known prefix kept as is (the longest of "sk-ant-api03-",
 * "sk-ant-oat01-", "sk-ant-ort01-", "sk-proj-", "sk-" that CRED starts
 * with; none otherwise); every other byte drawn uniformly (getrandom(2), no modulo
 * bias) from the class of the byte it stands for: digit, lower-case
 * letter, upper-case letter; any other byte ('-', '_', '.', ...) kept as
 * is.  Never equal to CRED (drawn again), so a client's format check
 * cannot tell them apart.
 * -1 with err (AB_EUSAGE) on a credential that is empty, too long, holds
 * a byte outside 0x21..0x7e, or has no letter or digit past its prefix
 * (no placeholder could differ from it); AB_EENGINE when getrandom
 * fails.  The message never holds a byte of CRED. */
int ab_placeholder(const char *cred, size_t n, char *out, struct ab_err *err);

/* N characters drawn uniformly from base64url's 64 (getrandom(2)): the
 * signature of a placeholder JWT (jwt.h).  AB_EENGINE when getrandom
 * fails. */
int ab_random_b64url(char *out, size_t n, struct ab_err *err);

/* Replaces every occurrence of FROM (N bytes) with TO (N bytes) in a
 * stream, across the boundaries of the pieces fed.  Occurrences are taken
 * leftmost first and never overlap, as a plain replace-all of the whole
 * stream would: FROM "aa" in "aaa" is one occurrence, then "a"; FROM "aba"
 * in "ababa" is one, then "ba".
 *
 * It holds back at most N - 1 bytes, and only bytes that could begin an
 * occurrence (a proper prefix of FROM at the end of what was fed); its
 * memory is those bytes alone, allocated once at init.  FROM and TO are
 * kept, not copied: they must outlive S.
 *
 * Cost: a feed copies its bytes once and finds occurrences with memmem(3);
 * where pieces meet, it compares at each place FROM's first byte recurs
 * within N - 1 bytes, so a FROM made of one repeated byte costs up to
 * N * N compares a feed (a drawn credential's first byte rarely recurs). */
struct ab_subst {
	const char *from, *to;	/* kept, not copied */
	size_t n;
	char *held;		/* N - 1 bytes; NULL when N is 1 */
	size_t nheld;		/* bytes held back, at most N - 1 */
};

/* -1 (errno EINVAL) when N is 0 or above AB_SECRET_LEN_MAX, or when
 * memory runs out. */
int ab_subst_init(struct ab_subst *s, const char *from, const char *to,
    size_t n);
/* Wipes what it held (explicit_bzero) and frees it; also safe on an S
 * whose init failed. */
void ab_subst_free(struct ab_subst *s);
/* Feeds IN (LEN bytes, any; 0 is allowed): writes to OUT what is now
 * certain (at most LEN + N - 1 bytes; OUT must hold that) and returns its
 * length. */
size_t ab_subst_feed(struct ab_subst *s, const char *in, size_t len,
    char *out);
/* At the end of the stream: the held-back bytes, to OUT (at most N - 1),
 * as they were (no occurrence can be among them); S is then empty, and
 * may take another stream. */
size_t ab_subst_flush(struct ab_subst *s, char *out);

/* Whether a stream holds NEEDLE (N bytes), across the pieces fed: what
 * ab-export asks of each file an agent that held its credential left.
 * It keeps the last N - 1 bytes fed (2N - 2 bytes allocated once, wiped
 * when reset or freed); NEEDLE is kept, not copied. */
struct ab_find {
	const char *needle;
	size_t n;
	char *win;		/* the kept bytes, then a piece's first ones */
	size_t nkept;
	int found;
};

/* -1 (errno EINVAL) when N is 0 or above AB_SECRET_LEN_MAX, or when
 * memory runs out. */
int ab_find_init(struct ab_find *f, const char *needle, size_t n);
/* Feeds IN (LEN bytes); 1 once NEEDLE was found in what was fed. */
int ab_find_feed(struct ab_find *f, const char *in, size_t len);
/* Forgets what was fed, for another stream. */
void ab_find_reset(struct ab_find *f);
void ab_find_free(struct ab_find *f);

#endif
