/* tap.h: the unit tests' TAP lines; one copy per test program. */
#ifndef AB_TEST_TAP_H
#define AB_TEST_TAP_H

#include <stdio.h>

static int ntest, nfail;

static void ok(int cond, const char *desc)
{
	ntest++;
	if (!cond)
		nfail++;
	printf("%sok %d - %s\n", cond ? "" : "not ", ntest, desc);
}

#endif
