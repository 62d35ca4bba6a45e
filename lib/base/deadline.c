#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"
#include "file.h"

/* The bound on a deadline file: one number and a newline. */
#define DEADLINE_MAX 64

/* Parses the file's text; 0 or -1 (AB_EUSAGE). */
int ab_deadline_parse(struct ab_deadline *d, const char *text,
    struct ab_err *err)
{
	const char *p = text;
	long long sec = 0, ms = 0;
	int digits = 0, frac = 0;

	while (*p >= '0' && *p <= '9') {
		if (sec > 999999999999LL)
			return ab_fail(err, AB_EUSAGE, "deadline out of range");
		sec = sec * 10 + (*p++ - '0');
		digits++;
	}
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			/* Keep milliseconds; finer digits are valid, unused. */
			if (frac < 3)
				ms = ms * 10 + (*p - '0');
			frac++;
			p++;
		}
		if (frac == 0)
			digits = 0;
	}
	while (frac > 0 && frac < 3) {
		ms *= 10;
		frac++;
	}
	if (*p == '\n')
		p++;
	if (digits == 0 || *p != '\0')
		return ab_fail(err, AB_EUSAGE,
		    "deadline is not one line of epoch seconds");
	d->set = 1;
	d->at_ms = sec * 1000 + ms;
	return 0;
}

int ab_deadline_load(struct ab_deadline *d, const char *path,
    struct ab_err *err)
{
	char text[DEADLINE_MAX + 1];
	size_t n;

	d->set = 0;
	d->at_ms = 0;
	if (path == NULL)
		path = getenv("AB_DEADLINE");
	if (path == NULL || *path == '\0')
		return 0;
	if (ab_file_read_small(path, text, sizeof text, &n, err) < 0) {
		if (err->code != AB_EUSAGE)
			err->code = AB_EUSAGE;
		return ab_err_wrap(err, "deadline file %s", path);
	}
	text[n] = '\0';
	if (memchr(text, '\0', n) != NULL ||
	    ab_deadline_parse(d, text, err) < 0)
		return ab_fail(err, AB_EUSAGE,
		    "deadline file %s: not one line of epoch seconds", path);
	return 0;
}

void ab_deadline_shrink(struct ab_deadline *d, const struct ab_deadline *o)
{
	if (!o->set)
		return;
	if (!d->set || o->at_ms < d->at_ms) {
		d->set = 1;
		d->at_ms = o->at_ms;
	}
}

long long ab_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long ab_ns(const struct timespec *t)
{
	return (long long)t->tv_sec * 1000000000LL + t->tv_nsec;
}

void ab_abstime_in(struct timespec *at, long ms)
{
	clock_gettime(CLOCK_REALTIME, at);
	at->tv_sec += ms / 1000;
	at->tv_nsec += (ms % 1000) * 1000000L;
	if (at->tv_nsec >= 1000000000L) {
		at->tv_sec++;
		at->tv_nsec -= 1000000000L;
	}
}

long long ab_deadline_left_ms(const struct ab_deadline *d)
{
	if (!d->set)
		return 365LL * 24 * 3600 * 1000;
	return d->at_ms - ab_now_ms();
}

int ab_deadline_passed(const struct ab_deadline *d)
{
	return d->set && ab_deadline_left_ms(d) <= 0;
}

int ab_deadline_check(const struct ab_deadline *d, const char *what,
    struct ab_err *err)
{
	if (ab_deadline_passed(d))
		return ab_fail(err, AB_EDEADLINE, "deadline passed before %s",
		    what);
	return 0;
}
