/* err.h: how lib reports failure to the tools.
 *
 * lib never prints and never exits.  A failing call fills a struct ab_err
 * with the exit status class (agentbox(7), "EXIT STATUS") and one line
 * of text; the tool prints "prog: text" and exits with the class.
 */
#ifndef AB_ERR_H
#define AB_ERR_H

#include <stddef.h>

enum {
	AB_OK = 0,
	AB_EREFUSED = 1,	/* a check failed */
	AB_EUSAGE = 2,		/* bad arguments or a malformed input file */
	AB_EDEADLINE = 124,	/* the deadline passed */
	AB_EENGINE = 125	/* the engine or the system failed */
};

struct ab_err {
	int code;
	char msg[768];
};

/* Sets err (when err is not NULL) and returns -1, so a caller can write
 * "return ab_fail(err, AB_EREFUSED, ...)". */
int ab_fail(struct ab_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Like ab_fail, with ": strerror(errno)" appended. */
int ab_fail_errno(struct ab_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefixes err->msg with "what: ", keeping its code; returns -1. */
int ab_err_wrap(struct ab_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
