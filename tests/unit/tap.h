/* tap.h: the unit tests' TAP lines, included by every test program.
 *
 * A program says first how many checks it will run, plan(N), which prints
 * the plan line "1..N", and ends with "return done_testing();": its exit
 * status is 1 when a check failed or when it ran another number of checks
 * than planned (a loop cut short, a function no longer called), which it
 * says in a diagnostic line "# planned N, ran M".  A program that exits
 * early (a setup failure) leaves fewer "ok" lines than its plan, which a
 * TAP harness reports too.
 */
#ifndef AB_TEST_TAP_H
#define AB_TEST_TAP_H

#include <stdio.h>

static int ntest, nfail, nplan = -1;

static void plan(int n)
{
	/* Each line out as it is written: a crash keeps the lines before
	 * it. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	nplan = n;
	printf("1..%d\n", n);
}

/* A description may hold a check's input: its control bytes are shown as
 * '.', so that a check is one line. */
static void ok(int cond, const char *desc)
{
	const char *c;

	ntest++;
	if (!cond)
		nfail++;
	printf("%sok %d - ", cond ? "" : "not ", ntest);
	for (c = desc; *c != '\0'; c++)
		putchar((unsigned char)*c < 0x20 || *c == 0x7f ? '.' : *c);
	putchar('\n');
}

/* main's exit status: 0 when every planned check ran and passed. */
static int done_testing(void)
{
	if (nplan < 0) {
		printf("# no plan: plan(N) was never called\n");
		return 1;
	}
	if (ntest != nplan) {
		printf("# planned %d, ran %d\n", nplan, ntest);
		return 1;
	}
	if (nfail > 0)
		printf("# failed %d of %d\n", nfail, ntest);
	return nfail > 0;
}

#endif
