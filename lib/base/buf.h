/* buf.h: a growable byte buffer with a hard ceiling.
 *
 * Every buffer that holds engine or file input has a bound, so a hostile
 * or broken peer can cost at most that much memory; so does every buffer
 * of output we generate, so a bug or an input we did not foresee cannot
 * grow one without end.  The contents are always NUL-terminated (the
 * NUL is not counted in len).
 */
#ifndef AB_BUF_H
#define AB_BUF_H

#include <stddef.h>

#include "err.h"

struct ab_buf {
	char *data;
	size_t len;
	size_t cap;
	size_t max;	/* the most bytes it may hold; 0 holds none */
	int over;	/* an append was refused for exceeding max */
};

/* Every caller states a real bound, named where the buffer's purpose is.
 * MAX 0 is a bug, and fails closed: every append is refused (b->over
 * set), as it is on a buffer ab_buf_free left.  make lint refuses a
 * literal 0. */
void ab_buf_init(struct ab_buf *b, size_t max);
/* 0, or -1 when memory runs out or max would be exceeded (b->over set). */
int ab_buf_add(struct ab_buf *b, const void *p, size_t n);
int ab_buf_addc(struct ab_buf *b, char c);
int ab_buf_adds(struct ab_buf *b, const char *s);
int ab_buf_addf(struct ab_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void ab_buf_reset(struct ab_buf *b);
/* Drops the first n bytes. */
void ab_buf_consume(struct ab_buf *b, size_t n);
/* Frees the bytes; B holds none after, until ab_buf_init again. */
void ab_buf_free(struct ab_buf *b);
/* Why an append to B failed, into err; -1.  "WHAT is larger than MAX
 * bytes" (CODE) when B refused it, else "out of memory" (AB_EENGINE). */
int ab_buf_fail(const struct ab_buf *b, int code, const char *what,
    struct ab_err *err);

#endif
