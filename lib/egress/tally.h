/* tally.h: what an allocation's proxy allowed and refused, counted by the
 * proxy itself (agentbox(7), "EGRESS").
 *
 * The proxy keeps one tally for its whole life and rewrites it, whole,
 * onto its egress volume (agents mount that volume read-only); ab-run
 * reads it before the agent starts and after it ends and reports the
 * difference.  Unlike the proxy's log, nothing an agent sends can rotate
 * it away or crowd an allowed destination out: every entry of the
 * allowlist has a row of its own, refused names share a bounded table
 * whose overflow is counted, and the totals are always whole.
 *
 * The requests of an intercepted connection that carried a placeholder
 * the vault held are listed for that invocation (its "who": the start of
 * the placeholder's hash, vault.h), the first AB_TALLY_REQS of each and
 * then counts, for AB_TALLY_INVS invocations at once: another agent of
 * the allocation cannot crowd an invocation's list out, only the oldest
 * idle invocation's, which is then counted as dropped.
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
#define AB_TALLY_INVS 8		/* invocations whose requests are listed */
#define AB_TALLY_REQS 256	/* requests listed per invocation */
#define AB_TALLY_WHO 16		/* hex digits naming an invocation */
#define AB_TALLY_PATH_MAX 160
#define AB_TALLY_FILE_MAX (1024 * 1024)

/* One intercepted request as it ended. */
struct ab_tally_req {
	char method[12];
	char path[AB_TALLY_PATH_MAX];	/* without its query, cut */
	int status;			/* 0: none given */
	long long up, down, ms;
};

/* The requests that carried one invocation's placeholder. */
struct ab_tally_inv {
	char who[AB_TALLY_WHO + 1];
	long long last_ms;		/* its latest request */
	long long count, up, down;	/* every request, listed or not */
	int n;				/* listed: the first ones */
	struct ab_tally_req req[AB_TALLY_REQS];
};

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
	int ninv;
	struct ab_tally_inv inv[AB_TALLY_INVS];
	long long invs_dropped;		/* lists given up for a newer one */
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

/* Lists request R of invocation WHO, made at NOW_MS; past the table,
 * the invocation whose latest request is oldest gives its place. */
void ab_tally_request(struct ab_tally *t, const char *who,
    const struct ab_tally_req *r, long long now_ms);

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
/* Invocation WHO's requests between BEGIN (NULL: from zero) and END as
 * the member "requests": {count, bytes_up, bytes_down, listed: [...],
 * more}, or null when its list was given up for another's. */
void ab_tally_requests_json(const struct ab_tally *end,
    const struct ab_tally *begin, const char *who, struct ab_jw *w);

#endif
