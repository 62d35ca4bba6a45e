#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "size.h"

int ab_parse_size(const char *s, long long max, const char *what,
    long long *out, struct ab_err *err)
{
	long long v, mul = 1;
	char *end;

	errno = 0;
	if (*s < '0' || *s > '9')
		return ab_fail(err, AB_EUSAGE, "%s: not a size: %.40s", what, s);
	v = strtoll(s, &end, 10);
	if (*end == 'k' || *end == 'K')
		mul = 1LL << 10;
	else if (*end == 'm' || *end == 'M')
		mul = 1LL << 20;
	else if (*end == 'g' || *end == 'G')
		mul = 1LL << 30;
	if (mul != 1)
		end++;
	if (errno || *end != '\0' || v <= 0 || v > max / mul)
		return ab_fail(err, AB_EUSAGE,
		    "%s: not a size between 1 and %lld: %.40s", what, max, s);
	*out = v * mul;
	return 0;
}

/* For a message: a size cut short still reads. */
void ab_human_size(long long n, char *out, size_t cap)
{
	if (n >= 1LL << 30)
		(void)ab_fmt(out, cap, "%.1f GiB", (double)n / (1LL << 30));
	else if (n >= 1LL << 20)
		(void)ab_fmt(out, cap, "%.1f MiB", (double)n / (1LL << 20));
	else if (n >= 1LL << 10)
		(void)ab_fmt(out, cap, "%.1f KiB", (double)n / (1LL << 10));
	else
		(void)ab_fmt(out, cap, "%lld bytes", n);
}
