/* common.h: what every harness checks of an error it is given. */
#ifndef AB_FUZZ_COMMON_H
#define AB_FUZZ_COMMON_H

#include <stdlib.h>

#include "err.h"

/* A reason is one printable line, within its buffer: it reaches a
 * terminal or a log as it is, and an agent's bytes inside it would be a
 * way to forge another line. */
static inline void fuzz_line(const char *s, size_t cap)
{
	size_t i;

	for (i = 0; i < cap && s[i] != '\0'; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f)
			abort();
	if (i == cap)
		abort();
}

static inline void fuzz_err(const struct ab_err *err)
{
	if (err->code != AB_EREFUSED && err->code != AB_EUSAGE &&
	    err->code != AB_EENGINE)
		abort();
	fuzz_line(err->msg, sizeof err->msg);
}

#endif
