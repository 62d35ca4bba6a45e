#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "err.h"

static void vset(struct ab_err *err, int code, const char *fmt, va_list ap)
{
	err->code = code;
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
}

int ab_fail(struct ab_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return -1;
	va_start(ap, fmt);
	vset(err, code, fmt, ap);
	va_end(ap);
	return -1;
}

int ab_fail_errno(struct ab_err *err, int code, const char *fmt, ...)
{
	int saved = errno;
	size_t n;
	va_list ap;

	if (err == NULL)
		return -1;
	va_start(ap, fmt);
	vset(err, code, fmt, ap);
	va_end(ap);
	n = strlen(err->msg);
	snprintf(err->msg + n, sizeof err->msg - n, ": %s", strerror(saved));
	return -1;
}

int ab_err_wrap(struct ab_err *err, const char *fmt, ...)
{
	char old[sizeof err->msg];
	size_t n;
	va_list ap;

	if (err == NULL)
		return -1;
	memcpy(old, err->msg, sizeof old);
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	n = strlen(err->msg);
	if (n + 2 < sizeof err->msg) {
		memcpy(err->msg + n, ": ", 3);
		n += 2;
		/* Truncation is fine: a message is one line for a person. */
		memcpy(err->msg + n, old, sizeof err->msg - n - 1);
		err->msg[sizeof err->msg - 1] = '\0';
	}
	return -1;
}
