/* bench/secret.c: the throughput of lib/base/secret.c's stream substitution on
 * one core (`make bench-secret`), as the egress proxy runs it over a
 * vendor's streamed answer: a 100-byte credential swapped for its
 * placeholder in 64 MiB of server-sent events, fed in pieces of a read's
 * size.  Prints MiB/s, the best of five passes, next to a plain memcpy of
 * the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "secret.h"

#define TOTAL (64u << 20)
#define KEYLEN 100

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Events of streamed text, the key echoed once every EVERY bytes (0:
 * never). */
static void events(char *buf, const char *key, size_t every)
{
	static const char ev[] = "event: content_block_delta\ndata: {\"type\":"
	    "\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
	    "\"text_delta\",\"text\":\"so the tests pass; see the sketch\"}}"
	    "\n\n";
	size_t at = 0, next = every;

	while (at < TOTAL) {
		if (every && at >= next && TOTAL - at >= KEYLEN) {
			memcpy(buf + at, key, KEYLEN);
			at += KEYLEN;
			next += every;
			continue;
		}
		buf[at] = ev[at % (sizeof ev - 1)];
		at++;
	}
}

/* MiB/s of feeding BUF in pieces of PIECE bytes, best of five. */
static double run(const char *buf, const char *from, const char *to,
    size_t n, size_t piece, char *out)
{
	struct ab_subst s;
	double best = 0, t;
	size_t at, k;
	int pass;

	for (pass = 0; pass < 5; pass++) {
		if (ab_subst_init(&s, from, to, n) < 0)
			abort();
		t = now();
		for (at = 0; at < TOTAL; at += k) {
			k = TOTAL - at < piece ? TOTAL - at : piece;
			ab_subst_feed(&s, buf + at, k, out);
		}
		ab_subst_flush(&s, out);
		t = now() - t;
		ab_subst_free(&s);
		if (TOTAL / t > best)
			best = TOTAL / t;
	}
	return best / (1 << 20);
}

static double copy(const char *buf, size_t piece, char *out)
{
	double best = 0, t;
	size_t at, k;
	int pass;

	for (pass = 0; pass < 5; pass++) {
		t = now();
		for (at = 0; at < TOTAL; at += k) {
			k = TOTAL - at < piece ? TOTAL - at : piece;
			memcpy(out, buf + at, k);
			__asm__ volatile("" : : "r"(out) : "memory");
		}
		t = now() - t;
		if (TOTAL / t > best)
			best = TOTAL / t;
	}
	return best / (1 << 20);
}

int main(void)
{
	char *buf = malloc(TOTAL), *out = malloc(128 * 1024), key[KEYLEN],
	    ph[KEYLEN], worst[KEYLEN];
	struct ab_err err;
	size_t i;

	if (buf == NULL || out == NULL)
		abort();
	memcpy(key, "sk-ant-api03-", 13);
	for (i = 13; i < KEYLEN; i++)
		key[i] = "abcXYZ0189_-qrsTUV"[i * 7 % 18];
	if (ab_placeholder(key, KEYLEN, ph, &err) < 0) {
		fprintf(stderr, "bench: %s\n", err.msg);
		return 1;
	}
	events(buf, key, 64 * 1024);
	printf("memcpy alone, 16 KiB pieces:          %6.0f MiB/s\n",
	    copy(buf, 16 * 1024, out));
	printf("key every 64 KiB, 16 KiB pieces:      %6.0f MiB/s\n",
	    run(buf, key, ph, KEYLEN, 16 * 1024, out));
	printf("key every 64 KiB, 1 KiB pieces:       %6.0f MiB/s\n",
	    run(buf, key, ph, KEYLEN, 1024, out));
	printf("key every 64 KiB, 100-byte pieces:    %6.0f MiB/s\n",
	    run(buf, key, ph, KEYLEN, 100, out));
	events(buf, key, 512);
	printf("key every 512 bytes, 16 KiB pieces:   %6.0f MiB/s\n",
	    run(buf, key, ph, KEYLEN, 16 * 1024, out));
	events(buf, key, 0);
	printf("no key, 16 KiB pieces:                %6.0f MiB/s\n",
	    run(buf, key, ph, KEYLEN, 16 * 1024, out));
	/* What an agent could make a model echo: the prefix it knows, over
	 * and over. */
	for (i = 0; i < TOTAL; i++)
		buf[i] = key[i % 13];
	printf("the prefix over and over, 16 KiB:     %6.0f MiB/s\n",
	    run(buf, key, ph, KEYLEN, 16 * 1024, out));
	/* A pattern made to be slow (no drawn key is): 99 a's then b, over
	 * a's alone; memmem(3) itself runs at some 60 MiB/s on it. */
	memset(worst, 'a', KEYLEN - 1);
	worst[KEYLEN - 1] = 'b';
	memset(buf, 'a', TOTAL);
	printf("a^99 b over a's, 16 KiB pieces:       %6.0f MiB/s\n",
	    run(buf, worst, ph, KEYLEN, 16 * 1024, out));
	printf("a^99 b over a's, 1 KiB pieces:        %6.0f MiB/s\n",
	    run(buf, worst, ph, KEYLEN, 1024, out));
	free(buf);
	free(out);
	return 0;
}
