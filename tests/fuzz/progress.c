/* progress.c: libFuzzer harness for lib/format/progress.c, what ab-run shows of
 * the model's text in its agent lines.  The first byte is the length of
 * a credential taken from the bytes after it (each one of the characters
 * keys are made of, none of which is in the markers, or mapped onto
 * one), the rest is the
 * text.  Beyond not crashing: the cleaned text is printable ASCII,
 * within the width and its marker, and holds no run of AB_PROGRESS_MASK
 * bytes of the credential. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "progress.h"

static const char key_chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";

/* Printable ASCII alone: a byte past it is shown as \xNN. */
static void shown_ok(const unsigned char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] >= 0x7f)
			abort();
}

static long long fake_now;

static long long fake_clock(void)
{
	return fake_now += 150;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int devnull = -2;
	char out[AB_PROGRESS_TEXT_MAX], key[256];
	struct ab_progress p;
	size_t klen, n, i;

	if (size < 1)
		return 0;
	if (devnull == -2)
		devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	klen = data[0] < size - 1 ? data[0] : size - 1;
	for (i = 0; i < klen; i++)
		key[i] = data[1 + i] != '\0' && strchr(key_chars, data[1 + i]) ?
		    (char)data[1 + i] : key_chars[data[1 + i] %
		    (sizeof key_chars - 1)];
	ab_progress_init(&p, devnull, "agent: ");
	p.clock = fake_clock;
	if (ab_progress_secret(&p, key, klen) < 0)
		abort();
	data += 1 + klen;
	size -= 1 + klen;
	n = ab_progress_clean(&p, (const char *)data, size, out);
	if (n != strlen(out) || n > AB_PROGRESS_WIDTH +
	    strlen(AB_PROGRESS_CUT))
		abort();
	shown_ok((const unsigned char *)out, n);
	/* Not one run of the credential: every window of the text checked
	 * against what the module keeps of it. */
	for (i = 0; p.nsecrets == 1 && i + p.secret[0].k <= n; i++) {
		unsigned long long g = 0;
		size_t k;

		for (k = 0; k < p.secret[0].k; k++)
			g = g << 8 | (unsigned char)out[i + k];
		for (k = 0; k < p.secret[0].n; k++)
			if (p.secret[0].grams[k] == g)
				abort();
	}
	ab_progress_say(&p, (const char *)data, size);
	ab_progress_end(&p, (const char *)data, size);
	ab_progress_free(&p);
	return 0;
}
