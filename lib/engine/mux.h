/* mux.h: the engine's framed output streams (attach, logs without a TTY).
 *
 * Each chunk is preceded by 8 bytes: stream type (1 stdout, 2 stderr),
 * three zero bytes, and the chunk length, big-endian.  The decoder is fed
 * arbitrary pieces and calls out with whole or partial chunk payloads.
 */
#ifndef AB_MUX_H
#define AB_MUX_H

#include <stddef.h>

#include "err.h"

typedef int (*ab_mux_out)(void *ctx, int stream, const char *p, size_t n,
    struct ab_err *err);

struct ab_mux {
	unsigned char hdr[8];
	size_t have;		/* header bytes collected */
	size_t left;		/* payload bytes left in the current frame */
	int stream;
	ab_mux_out out;
	void *ctx;
};

void ab_mux_init(struct ab_mux *m, ab_mux_out out, void *ctx);
/* An ab_sink (engine.h): refuses a malformed header. */
int ab_mux_feed(void *m, const char *p, size_t n, struct ab_err *err);
/* 1 when the stream ended between frames. */
int ab_mux_clean_end(const struct ab_mux *m);

#endif
