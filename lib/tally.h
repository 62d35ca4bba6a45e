/* tally.h: what an allocation's proxy allowed and refused, counted by the
 * proxy itself (DESIGN.md, "Egress").
 *
 * The proxy keeps one tally for its whole life and rewrites it, whole,
 * onto its egress volume (agents mount that volume read-only); ab-run
 * reads it before the agent starts and after it ends and reports the
 * difference.  Unlike the proxy's log, nothing an agent sends can rotate
 * it away or crowd an allowed destination out: every entry of the
 * allowlist has a row of its own, refused names share a bounded table
 * whose overflow is counted, and the totals are always whole.
 */
#ifndef AB_TALLY_H
#define AB_TALLY_H

#include <stddef.h>

#include "buf.h"
#include "egress.h"
#include "err.h"
#include "json.h"

#define AB_TALLY_NAMES 32	/* refused names with a row of their own */
#define AB_TALLY_REASONS 16
#define AB_TALLY_REASON_MAX 24
#define AB_TALLY_FILE_MAX (256 * 1024)

struct ab_tally_row {
	char host[AB_EGRESS_HOST_MAX + 1];	/* "" for the unnamed row */
	int port;
	long long allowed, refused;
	long long up, down;	/* added to as bytes move (atomically) */
	char reason[AB_TALLY_REASONS][AB_TALLY_REASON_MAX];
	long long nreason[AB_TALLY_REASONS];
};

struct ab_tally {
	long long start_ms;	/* the proxy's start: which proxy wrote it */
	long long seq;		/* one more at every write */
	int nallow, nnamed;
	struct ab_tally_row allow[AB_EGRESS_MAX];	/* the list's order */
	struct ab_tally_row named[AB_TALLY_NAMES];	/* refused names */
	struct ab_tally_row unnamed;	/* refusals that named no host */
	long long names_dropped;	/* refusals of names past the table */
};

/* An empty tally with a row per entry of L. */
void ab_tally_init(struct ab_tally *t, const struct ab_egress_list *l,
    long long start_ms);
/* The allowlist's row of HOST:PORT, or NULL. */
struct ab_tally_row *ab_tally_allowed(struct ab_tally *t, const char *host,
    int port);
/* Counts a refusal: in the allowlist's row, the name's row (made while
 * the table has room), or, past it, names_dropped; HOST NULL: unnamed. */
void ab_tally_refused(struct ab_tally *t, const char *host, int port,
    const char *reason);

/* The tally as one JSON object. */
int ab_tally_write(const struct ab_tally *t, struct ab_buf *out);
/* Reads what ab_tally_write wrote; AB_EREFUSED for anything else. */
int ab_tally_parse(struct ab_tally *t, const char *p, size_t n,
    struct ab_err *err);

/* END minus BEGIN (one proxy's two readings) as the result's totals,
 * destinations (every allowlisted row that moved, every refused name,
 * the unnamed row) and "truncated" (names past the table), written as
 * members of the object W is in.  BEGIN NULL: from zero. */
void ab_tally_diff_json(const struct ab_tally *end,
    const struct ab_tally *begin, struct ab_jw *w);

#endif
