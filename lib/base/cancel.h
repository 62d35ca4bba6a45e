/* cancel.h: SIGINT, SIGTERM and SIGHUP as a cancellation request.
 *
 * A tool that must not die half-way (one that creates engine objects, or
 * follows a running agent) catches the three signals once; lib code asks
 * at its step boundaries whether a cancellation was requested, and undoes
 * or stops what it started.  The handler only sets a flag and writes to a
 * self-pipe, whose read end (ab_cancel_fd) a wait polls, so it wakes at
 * once: the engine's stream pump, given it by ab_engine_wake_on.
 */
#ifndef AB_CANCEL_H
#define AB_CANCEL_H

#include "err.h"

/* The exit status of a cancelled step: 128 + SIGINT, as a shell says. */
#define AB_ECANCELLED 130

/* Installs the handlers (and ignores SIGPIPE). */
int ab_cancel_catch(struct ab_err *err);
/* The self-pipe's read end, readable once a signal came; -1 before
 * ab_cancel_catch. */
int ab_cancel_fd(void);
/* 1 once a signal came; drains the self-pipe. */
int ab_cancel_requested(void);
/* -1 with AB_ECANCELLED ("cancelled before WHAT") once a signal came. */
int ab_cancel_check(const char *what, struct ab_err *err);

#endif
