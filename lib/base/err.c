#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "err.h"

/* SRC into DST as one line of printable ASCII: every other byte, and
 * each byte of ALSO, as \xNN; cut where the next would not fit with
 * CUT after it, which then ends it. */
static size_t escape(char *dst, size_t cap, const char *src, size_t n,
    const char *also, const char *cut)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0, room, k = strlen(cut);
	unsigned char b;

	if (cap == 0)
		return 0;
	for (i = 0; i < n; i++) {
		b = (unsigned char)src[i];
		room = b >= 0x20 && b < 0x7f && strchr(also, b) == NULL ? 1 : 4;
		if (o + room + (i + 1 < n ? k : 0) >= cap) {
			if (o + k < cap) {
				memcpy(dst + o, cut, k);
				o += k;
			}
			break;
		}
		if (room == 1) {
			dst[o++] = (char)b;
			continue;
		}
		dst[o++] = '\\';
		dst[o++] = 'x';
		dst[o++] = hex[b >> 4];
		dst[o++] = hex[b & 15];
	}
	dst[o] = '\0';
	return o;
}

size_t ab_printable(char *dst, size_t cap, const char *src, size_t n)
{
	return escape(dst, cap, src, n, "", "");
}

size_t ab_quote(char *dst, size_t cap, const char *src, size_t n)
{
	return escape(dst, cap, src, n, "\"\\", "...");
}

/* Every message is one printable line, whatever it quotes (an engine's
 * words, a name from a repository): its text through ab_printable. */
static void settle(struct ab_err *err, const char *text)
{
	ab_printable(err->msg, sizeof err->msg, text, strlen(text));
}

static void vset(struct ab_err *err, int code, const char *fmt, va_list ap)
{
	char text[sizeof err->msg];

	err->code = code;
	vsnprintf(text, sizeof text, fmt, ap);
	settle(err, text);
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
	char old[sizeof err->msg], text[sizeof err->msg];
	size_t n;
	va_list ap;

	if (err == NULL)
		return -1;
	memcpy(old, err->msg, sizeof old);
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	n = strlen(text);
	if (n + 2 < sizeof text) {
		memcpy(text + n, ": ", 3);
		n += 2;
		/* Truncation is fine: a message is one line for a person. */
		memcpy(text + n, old, sizeof text - n - 1);
		text[sizeof text - 1] = '\0';
	}
	settle(err, text);
	return -1;
}

int ab_vfmt(char *dst, size_t n, const char *fmt, va_list ap)
{
	int k;

	k = vsnprintf(dst, n, fmt, ap);
	return k < 0 || (size_t)k >= n ? -1 : 0;
}

int ab_fmt(char *dst, size_t n, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = ab_vfmt(dst, n, fmt, ap);
	va_end(ap);
	return r;
}

int ab_fmt_err(struct ab_err *err, char *dst, size_t n, const char *what,
    const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = ab_vfmt(dst, n, fmt, ap);
	va_end(ap);
	if (r < 0)
		return ab_fail(err, AB_EUSAGE, "%s: longer than %zu bytes",
		    what, n > 0 ? n - 1 : 0);
	return 0;
}
