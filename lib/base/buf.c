#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

void ab_buf_init(struct ab_buf *b, size_t max)
{
	memset(b, 0, sizeof *b);
	b->max = max;
}

static int grow(struct ab_buf *b, size_t need)
{
	size_t cap;
	char *p;

	if (need > b->max || b->max == 0) {
		b->over = 1;
		return -1;
	}
	if (need + 1 <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < need + 1)
		cap *= 2;
	p = realloc(b->data, cap);
	if (p == NULL)
		return -1;
	b->data = p;
	b->cap = cap;
	return 0;
}

int ab_buf_add(struct ab_buf *b, const void *p, size_t n)
{
	if (n > (size_t)-1 / 2 - b->len || grow(b, b->len + n) < 0)
		return -1;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int ab_buf_addc(struct ab_buf *b, char c)
{
	return ab_buf_add(b, &c, 1);
}

int ab_buf_adds(struct ab_buf *b, const char *s)
{
	return ab_buf_add(b, s, strlen(s));
}

int ab_buf_addf(struct ab_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || grow(b, b->len + (size_t)n) < 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void ab_buf_reset(struct ab_buf *b)
{
	b->len = 0;
	b->over = 0;
	if (b->data)
		b->data[0] = '\0';
}

void ab_buf_consume(struct ab_buf *b, size_t n)
{
	if (n >= b->len) {
		ab_buf_reset(b);
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
	b->data[b->len] = '\0';
}

void ab_buf_free(struct ab_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof *b);
}

int ab_buf_fail(const struct ab_buf *b, int code, const char *what,
    struct ab_err *err)
{
	if (b->over && b->max == 0)
		return ab_fail(err, AB_EENGINE, "%s: a buffer without a bound "
		    "(a bug)", what);
	if (b->over)
		return ab_fail(err, code, "%s is larger than %zu bytes", what,
		    b->max);
	return ab_fail(err, AB_EENGINE, "out of memory");
}
