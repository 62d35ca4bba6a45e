/* tool.h: what every cmd/ main shares: its name in messages, the one-line
 * error, the exit status, and the few option values all tools take.
 * This is the only lib module that prints. */
#ifndef AB_TOOL_H
#define AB_TOOL_H

#include <getopt.h>
#include <stdarg.h>

#include "err.h"

extern const char *ab_prog;
/* The synopsis its man page shows; set once, beside ab_prog. */
extern const char *ab_usage_text;

/* "prog: " and the text on stderr, as one printable line (err.h's
 * ab_printable), however long: the one place a tool prints a message. */
void ab_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ab_vsay(const char *fmt, va_list ap)
	__attribute__((format(printf, 1, 0)));

/* Prints "prog: msg" on stderr and returns the status to exit with. */
int ab_report(const struct ab_err *err);
/* Prints "prog: msg" for a usage error and returns AB_EUSAGE. */
int ab_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints AB_VERSION, the version records carry, on stdout; returns -1,
 * which a parse() returns for "done, exit 0" as after --help. */
int ab_version(void);
/* What a parse() returns for an option every tool reads the same way:
 * --version, --help (the synopsis on stdout, -1), and one it does not
 * know (the synopsis on stderr, AB_EUSAGE). */
int ab_option(int c);
/* getopt_long over the tool's OWN options (ended by a NULL name, 29 at
 * the most) and --version and --help, which every tool takes; SHORTS
 * as getopt's. */
int ab_getopt(int argc, char **argv, const char *shorts,
    const struct option *own);
/* The synopsis on stderr after a wrong command line; AB_EUSAGE. */
int ab_usage(void);
/* "prog: line" on stderr: progress a user can watch. */
void ab_progress_line(const char *line);
/* Prints the handle KIND:ID and a newline on stdout, and flushes; a
 * failure to write it is a failure of the step. */
int ab_print_handle(const char *kind, const char *id, struct ab_err *err);

/* A tool's main after its parse(), which returned PARSED (0: go on, -1:
 * done, else the usage status): RUN on OPTS, its error said and mapped
 * to the exit status (agentbox(7), "EXIT STATUS"). */
int ab_tool_main(int parsed, int (*run)(void *opts, struct ab_err *err),
    void *opts);

#endif
