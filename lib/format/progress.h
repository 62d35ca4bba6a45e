/* progress.h: the agent's steps, one line each on ab-run's standard error
 * while it runs (ab-run(1), PROGRESS LINES).
 *
 * Every byte of a step's text is the model's or its vendor's.  Before it
 * is shown it is made safe for a terminal or a log: escape sequences and
 * control bytes removed, then every run of AB_PROGRESS_MASK bytes or more
 * of a credential masked, then every other byte past ASCII shown as \xNN
 * (as ab_printable shows it), then cut to AB_PROGRESS_WIDTH bytes.  At
 * most AB_PROGRESS_RATE lines go out in any one second; the rest are
 * counted, and the count goes out as one line
 * before the next line shown.  A line that standard error cannot take at
 * once (a full pipe nobody reads) is counted the same way: the follower
 * of a running agent never waits on its own standard error.
 *
 * The module reads no stream (agent.c does) and keeps only when the last
 * lines went and the credential's pieces, wiped when it is freed.
 */
#ifndef AB_PROGRESS_H
#define AB_PROGRESS_H

#include <stddef.h>

#include "buf.h"

#define AB_PROGRESS_WIDTH 200	/* bytes of a step's text shown */
#define AB_PROGRESS_CUT " [cut]"	/* after a text cut at the width */
#define AB_PROGRESS_MASKED "[redacted]"	/* in place of a credential */
#define AB_PROGRESS_SCAN 4096	/* bytes of cleaned text looked at */
#define AB_PROGRESS_RATE 10	/* lines in any one second */
#define AB_PROGRESS_MASK 8	/* bytes in a row of a credential masked */
#define AB_PROGRESS_SECRETS 8	/* credentials (a sign-in has three) */
/* A cleaned text: the width, the cut marker and its NUL. */
#define AB_PROGRESS_TEXT_MAX (AB_PROGRESS_WIDTH + sizeof AB_PROGRESS_CUT)

struct ab_progress_secret {
	size_t k;			/* the run masked: MASK, or less */
	size_t n;
	unsigned long long *grams;	/* each k bytes of it, sorted */
};

struct ab_progress {
	int fd;				/* -1: no lines */
	const char *prefix;		/* before each line: "ab-run: agent: " */
	long long (*clock)(void);	/* milliseconds, never going back */
	long long sent[AB_PROGRESS_RATE];	/* when the last lines went */
	int next;			/* the oldest of them */
	long long hidden;		/* lines not shown since one was */
	int nsecrets;
	struct ab_progress_secret secret[AB_PROGRESS_SECRETS];
};

/* Lines go to FD, each after PREFIX (kept, not copied). */
void ab_progress_init(struct ab_progress *p, int fd, const char *prefix);
/* Wipes and frees what it keeps of the credentials. */
void ab_progress_free(struct ab_progress *p);
/* Masks S (N bytes, as the agent was given it: a final newline is not
 * part of it) from every later line.  -1 when it cannot be kept (no
 * memory, too many): the caller must then show no line at all. */
int ab_progress_secret(struct ab_progress *p, const char *s, size_t n);
/* IN (N bytes, any) as it may be shown, into OUT; its length. */
size_t ab_progress_clean(const struct ab_progress *p, const char *in,
    size_t n, char out[AB_PROGRESS_TEXT_MAX]);
/* JSON text IN (N bytes, as ab_jw writes it) into OUT with every run of
 * a credential inside its strings masked as in a line, an escape
 * sequence masked whole, so OUT is JSON still.  -1: no memory. */
int ab_progress_mask_json(const struct ab_progress *p, const char *in,
    size_t n, struct ab_buf *out);
/* One step's line: TEXT cleaned, within the rate. */
void ab_progress_say(struct ab_progress *p, const char *text, size_t n);
/* The last lines, whatever the rate: the count of lines not shown, if
 * any, then TEXT (cleaned; none when NULL). */
void ab_progress_end(struct ab_progress *p, const char *text, size_t n);

#endif
