/* err.h: how lib reports failure to the tools.
 *
 * lib never prints and never exits.  A failing call fills a struct ab_err
 * with the exit status class (agentbox(7), "EXIT STATUS") and one line
 * of text; the tool prints "prog: text" and exits with the class.
 */
#ifndef AB_ERR_H
#define AB_ERR_H

#include <stdarg.h>
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

/* One line of printable ASCII from N bytes at SRC into DST (CAP bytes,
 * NUL added): every other byte (a newline, an escape sequence's ESC, a
 * byte of UTF-8, which may be a control or reorder the line) as \xNN;
 * cut at CAP, never inside an escape.  Its length.  Every message
 * ab_fail and ab_err_wrap set goes through it. */
size_t ab_printable(char *dst, size_t cap, const char *src, size_t n);
/* The same for a name put between double quotes in a message: '"' and
 * '\\' also as \xNN, so the quoting stays unambiguous, and "..." where
 * it is cut. */
size_t ab_quote(char *dst, size_t cap, const char *src, size_t n);

/* Prefixes err->msg with "what: ", keeping its code; returns -1. */
int ab_err_wrap(struct ab_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Formats into DST (N bytes) as snprintf does: 0, or -1 when the text
 * did not fit (DST then holds it cut) or the format failed.  Every
 * fixed-size text in lib/ and cmd/ is made through it, so a path or a
 * name that does not fit is refused, never used cut. */
int ab_fmt(char *dst, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same, with a va_list. */
int ab_vfmt(char *dst, size_t n, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
/* ab_fmt, and on -1 err set (code AB_EUSAGE) to "WHAT: longer than N
 * bytes". */
int ab_fmt_err(struct ab_err *err, char *dst, size_t n, const char *what,
    const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

#endif
