/* cancel.h: SIGINT, SIGTERM and SIGHUP as a cancellation request.
 *
 * A tool that must not die half-way (one that creates engine objects, or
 * follows a running agent) catches the three signals once; lib code asks
 * at its step boundaries whether a cancellation was requested, and undoes
 * or stops what it started.  The handler only sets a flag and writes to a
 * self-pipe, which the engine's stream pump polls, so a wait wakes at once.
 */
#ifndef AB_CANCEL_H
#define AB_CANCEL_H

#include "engine.h"
#include "err.h"

/* The exit status of a cancelled step: 128 + SIGINT, as a shell says. */
#define AB_ECANCELLED 130

/* Installs the handlers (and ignores SIGPIPE); with e, its stream pump
 * wakes on a signal. */
int ab_cancel_catch(struct ab_engine *e, struct ab_err *err);
/* 1 once a signal came; drains the self-pipe. */
int ab_cancel_requested(void);
/* -1 with AB_ECANCELLED ("cancelled before WHAT") once a signal came. */
int ab_cancel_check(const char *what, struct ab_err *err);

#endif
