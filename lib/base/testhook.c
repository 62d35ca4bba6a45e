#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "testhook.h"

void ab_test_pause(const char *point)
{
	const char *want;

	if (point == NULL)
		return;
	want = getenv("AB_TEST_PAUSE");
	if (want != NULL && strcmp(want, point) == 0)
		raise(SIGSTOP);
}
