#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "progress.h"

static long long monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ab_progress_init(struct ab_progress *p, int fd, const char *prefix)
{
	int i;

	memset(p, 0, sizeof *p);
	p->fd = fd;
	p->prefix = prefix;
	p->clock = monotonic_ms;
	for (i = 0; i < AB_PROGRESS_RATE; i++)
		p->sent[i] = LLONG_MIN / 2;
}

void ab_progress_free(struct ab_progress *p)
{
	int i;

	for (i = 0; i < p->nsecrets; i++) {
		explicit_bzero(p->secret[i].grams, p->secret[i].n *
		    sizeof *p->secret[i].grams);
		free(p->secret[i].grams);
	}
	p->nsecrets = 0;
}

/* -- Cleaning. */

/* A well-formed escape sequence starting at in[0] (ESC): its length, or
 * 0 when it is not one, in which case only the ESC goes.  CSI ends at its
 * final byte; OSC, DCS, SOS, PM and APC at BEL or ST; the others (nF, Fp,
 * Fe, Fs) at the first byte past their intermediates.  A string that
 * never ends is not removed whole: the text after it stays visible. */
static size_t escape_len(const unsigned char *in, size_t n)
{
	size_t i = 2;

	if (n < 2)
		return 0;
	if (in[1] == '[') {
		while (i < n && in[i] >= 0x30 && in[i] <= 0x3f)
			i++;
		while (i < n && in[i] >= 0x20 && in[i] <= 0x2f)
			i++;
		return i < n && in[i] >= 0x40 && in[i] <= 0x7e ? i + 1 : 0;
	}
	if (strchr("]PX^_", in[1]) != NULL && in[1] != '\0') {
		for (; i < n; i++) {
			if (in[i] == 0x07)
				return i + 1;
			if (in[i] == 0x1b && i + 1 < n && in[i + 1] == '\\')
				return i + 2;
		}
		return 0;
	}
	for (i = 1; i < n && in[i] >= 0x20 && in[i] <= 0x2f; i++)
		;
	return i < n && in[i] >= 0x30 && in[i] <= 0x7e ? i + 1 : 0;
}

/* The UTF-8 character at in[0]: its length with *cp set, or 0 when the
 * bytes are not one (overlong, surrogate, past U+10FFFF, cut short). */
static size_t utf8_char(const unsigned char *in, size_t n, unsigned *cp)
{
	size_t len, i;
	unsigned c = in[0], min;

	if (c >= 0xc2 && c <= 0xdf) {
		len = 2, c &= 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3, c &= 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4, c &= 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((in[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (in[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/* Characters that change how a terminal shows the rest of the line:
 * C1 controls (U+009B is a CSI to some), and the marks and overrides of
 * bidirectional text, which can make a line read as another. */
static int invisible(unsigned cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c ||
	    cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
	    (cp >= 0x2066 && cp <= 0x2069);
}

/* IN made one line into OUT (at most CAP bytes; *more set when some of
 * IN did not fit): escape sequences, control bytes, DEL, C1 controls and
 * bidirectional controls go; a line or tab break, U+2028 and U+2029 are a
 * space; the rest stays, to be masked as the credential would be, then
 * shown. */
static size_t sanitize(const unsigned char *in, size_t n, unsigned char *out,
    size_t cap, int *more)
{
	size_t i = 0, o = 0, len;
	unsigned cp;

	*more = 0;
	while (i < n) {
		if (in[i] == 0x1b) {
			len = escape_len(in + i, n - i);
			i += len > 0 ? len : 1;
			continue;
		}
		if (o == cap) {
			*more = 1;
			break;
		}
		if (in[i] == '\t' || in[i] == '\n' || in[i] == '\r' ||
		    in[i] == '\v' || in[i] == '\f') {
			out[o++] = ' ';
			i++;
		} else if (in[i] < 0x20 || in[i] == 0x7f) {
			i++;
		} else if (in[i] < 0x80) {
			out[o++] = in[i++];
		} else if ((len = utf8_char(in + i, n - i, &cp)) == 0) {
			out[o++] = in[i++];	/* no character: shown as \xNN */
		} else if (cp == 0x2028 || cp == 0x2029) {
			out[o++] = ' ';
			i += len;
		} else if (invisible(cp)) {
			i += len;
		} else if (o + len > cap) {
			*more = 1;
			break;
		} else {
			memcpy(out + o, in + i, len);
			o += len;
			i += len;
		}
	}
	return o;
}

static unsigned long long pack(const unsigned char *s, size_t k)
{
	unsigned long long v = 0;
	size_t i;

	for (i = 0; i < k; i++)
		v = v << 8 | s[i];
	return v;
}

static int cmp_gram(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a;
	unsigned long long y = *(const unsigned long long *)b;

	return x < y ? -1 : x > y;
}

int ab_progress_secret(struct ab_progress *p, const char *s, size_t n)
{
	struct ab_progress_secret *sec;
	unsigned char *clean;
	size_t len, i, j;
	int more;

	if (p->nsecrets == AB_PROGRESS_SECRETS)
		return -1;
	/* Cleaned as a line is: what it would look like once shown. */
	if ((clean = malloc(n + 1)) == NULL)
		return -1;
	len = sanitize((const unsigned char *)s, n, clean, n, &more);
	while (len > 0 && clean[len - 1] == ' ')
		len--;
	for (i = 0; i < len && clean[i] == ' '; i++)
		;
	sec = &p->secret[p->nsecrets];
	sec->k = len - i < AB_PROGRESS_MASK ? len - i : AB_PROGRESS_MASK;
	sec->n = sec->k > 0 ? len - i - sec->k + 1 : 0;
	sec->grams = NULL;
	if (sec->n > 0 && (sec->grams = malloc(sec->n *
	    sizeof *sec->grams)) == NULL) {
		explicit_bzero(clean, n);
		free(clean);
		return -1;
	}
	for (j = 0; j < sec->n; j++)
		sec->grams[j] = pack(clean + i + j, sec->k);
	explicit_bzero(clean, n);
	free(clean);
	if (sec->n == 0)
		return 0;
	qsort(sec->grams, sec->n, sizeof *sec->grams, cmp_gram);
	p->nsecrets++;
	return 0;
}

/* Marks every byte of S inside a run of a credential, then widens each
 * mark to whole characters. */
static void mark(const struct ab_progress *p, const unsigned char *s,
    size_t n, unsigned char *m)
{
	const struct ab_progress_secret *sec;
	unsigned long long g;
	size_t i;
	int k;

	memset(m, 0, n);
	for (k = 0; k < p->nsecrets; k++) {
		sec = &p->secret[k];
		for (i = 0; i + sec->k <= n; i++) {
			g = pack(s + i, sec->k);
			if (bsearch(&g, sec->grams, sec->n, sizeof g,
			    cmp_gram) != NULL)
				memset(m + i, 1, sec->k);
		}
	}
	for (i = 1; i < n; i++)
		if ((s[i] & 0xc0) == 0x80 && m[i - 1])
			m[i] = 1;
	for (i = n; i > 1; i--)
		if ((s[i - 1] & 0xc0) == 0x80 && m[i - 1])
			m[i - 2] = 1;
}

/* Keeps M's marks inside the strings of JSON text S alone, each escape
 * sequence marked whole or not at all. */
static void in_strings(const unsigned char *s, size_t n, unsigned char *m)
{
	size_t i = 0, len, j;
	int in = 0, any;

	while (i < n) {
		if (!in || s[i] == '"') {
			in ^= s[i] == '"';
			m[i++] = 0;
			continue;
		}
		len = s[i] != '\\' ? 1 : i + 1 < n && s[i + 1] == 'u' ? 6 : 2;
		if (i + len > n)
			len = n - i;
		for (any = 0, j = 0; j < len; j++)
			any |= m[i + j];
		memset(m + i, any, len);
		i += len;
	}
}

int ab_progress_mask_json(const struct ab_progress *p, const char *in,
    size_t n, struct ab_buf *out)
{
	const unsigned char *s = (const unsigned char *)in;
	unsigned char *m;
	size_t i = 0, j;
	int rc = 0;

	if ((m = malloc(n + 1)) == NULL)
		return -1;
	mark(p, s, n, m);
	in_strings(s, n, m);
	while (rc == 0 && i < n) {
		for (j = i; j < n && m[j] == m[i]; j++)
			;
		rc = m[i] ? ab_buf_add(out, AB_PROGRESS_MASKED,
		    strlen(AB_PROGRESS_MASKED)) : ab_buf_add(out, in + i, j - i);
		i = j;
	}
	free(m);
	return rc;
}

/* The character of LEN bytes at S as it is shown into OUT: ASCII as it
 * is, any other byte as \xNN, as ab_printable shows it.  Its length. */
static size_t show(const unsigned char *s, size_t len, unsigned char *out)
{
	static const char digit[] = "0123456789abcdef";
	size_t i;

	if (len == 1 && s[0] < 0x80) {
		out[0] = s[0];
		return 1;
	}
	for (i = 0; i < len; i++) {
		out[4 * i] = '\\';
		out[4 * i + 1] = 'x';
		out[4 * i + 2] = (unsigned char)digit[s[i] >> 4];
		out[4 * i + 3] = (unsigned char)digit[s[i] & 0x0f];
	}
	return 4 * len;
}

/* The text as shown, and where each character of it begins. */
struct shown {
	unsigned char t[AB_PROGRESS_SCAN], m[AB_PROGRESS_SCAN];
	unsigned char start[AB_PROGRESS_SCAN];
	size_t n;
};

/* S (SN bytes, M its marks) as shown into SH; *more set when it did not
 * fit.  Not ab_printable alone: sanitize made S one line, removing a
 * terminal's sequences whole, and a character is shown whole or not. */
static void show_all(const unsigned char *s, const unsigned char *m,
    size_t sn, struct shown *sh, int *more)
{
	size_t i = 0, k, len;

	sh->n = 0;
	while (i < sn) {
		for (k = 1; s[i] >= 0xc0 && k < 4 && i + k < sn &&
		    m[i + k] == m[i] && (s[i + k] & 0xc0) == 0x80; k++)
			;
		len = k == 1 && s[i] < 0x80 ? 1 : 4 * k;
		if (sh->n + len > sizeof sh->t) {
			*more = 1;
			return;
		}
		show(s + i, k, sh->t + sh->n);
		memset(sh->m + sh->n, m[i], len);
		memset(sh->start + sh->n, 0, len);
		sh->start[sh->n] = 1;
		sh->n += len;
		i += k;
	}
}

/* The credential's runs in the text as shown too (an escape's digits
 * beside the text could complete one), each mark widened to whole
 * characters. */
static void mark_shown(const struct ab_progress *p, struct shown *sh,
    unsigned char *m)
{
	size_t i, j;
	int any;

	mark(p, sh->t, sh->n, m);
	for (i = 0; i < sh->n; i = j) {
		any = sh->m[i] | m[i];
		for (j = i + 1; j < sh->n && !sh->start[j]; j++)
			any |= sh->m[j] | m[j];
		memset(sh->m + i, any, j - i);
	}
}

size_t ab_progress_clean(const struct ab_progress *p, const char *in,
    size_t n, char out[AB_PROGRESS_TEXT_MAX])
{
	unsigned char s[AB_PROGRESS_SCAN], m[AB_PROGRESS_SCAN];
	struct shown sh;
	const unsigned char *piece;
	size_t sn, i = 0, o = 0, len;
	int cut;

	sn = sanitize((const unsigned char *)in, n, s, sizeof s, &cut);
	mark(p, s, sn, m);
	show_all(s, m, sn, &sh, &cut);
	explicit_bzero(s, sizeof s);
	mark_shown(p, &sh, m);
	while (i < sh.n) {
		if (sh.m[i]) {
			piece = (const unsigned char *)AB_PROGRESS_MASKED;
			len = strlen(AB_PROGRESS_MASKED);
		} else {
			piece = sh.t + i;
			for (len = 1; i + len < sh.n && !sh.start[i + len]; len++)
				;
		}
		if (o + len > AB_PROGRESS_WIDTH) {
			cut = 1;
			break;
		}
		memcpy(out + o, piece, len);
		o += len;
		if (sh.m[i])
			while (i < sh.n && sh.m[i])
				i++;
		else
			i += len;
	}
	if (cut) {
		memcpy(out + o, AB_PROGRESS_CUT, strlen(AB_PROGRESS_CUT));
		o += strlen(AB_PROGRESS_CUT);
	}
	explicit_bzero(&sh, sizeof sh);
	out[o] = '\0';
	return o;
}

/* -- Lines. */

/* One whole line in one write, or none: standard error that cannot take
 * it now (a full pipe) is not waited for. */
static int put(struct ab_progress *p, const char *text, size_t n)
{
	char line[256 + AB_PROGRESS_TEXT_MAX];
	struct pollfd pf = { .fd = p->fd, .events = POLLOUT };
	size_t len, off = 0;
	ssize_t w;

	if (ab_fmt(line, sizeof line, "%s%.*s\n", p->prefix, (int)n,
	    text) < 0)
		return -1;
	len = strlen(line);
	if (poll(&pf, 1, 0) != 1 || !(pf.revents & POLLOUT))
		return -1;
	while (off < len) {
		w = write(p->fd, line + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

static int count_line(struct ab_progress *p)
{
	char text[64];
	int n;

	if (ab_fmt(text, sizeof text, "%lld line%s not shown", p->hidden,
	    p->hidden == 1 ? "" : "s") < 0)
		return -1;
	n = (int)strlen(text);
	if (put(p, text, (size_t)n) < 0)
		return -1;
	p->hidden = 0;
	return 0;
}

/* Room for NEED more lines in the second up to now. */
static int room(const struct ab_progress *p, long long now, int need)
{
	return now - p->sent[(p->next + need - 1) % AB_PROGRESS_RATE] >= 1000;
}

static void went(struct ab_progress *p, long long now)
{
	p->sent[p->next] = now;
	p->next = (p->next + 1) % AB_PROGRESS_RATE;
}

void ab_progress_say(struct ab_progress *p, const char *text, size_t n)
{
	char clean[AB_PROGRESS_TEXT_MAX];
	long long now;
	size_t len;

	if (p->fd < 0)
		return;
	now = p->clock();
	/* Once lines were hidden, the next one waits for a whole second
	 * without a line: then the count goes first, within the rate too,
	 * so a flood shows one count a second, not one every other line. */
	if (!room(p, now, p->hidden > 0 ? AB_PROGRESS_RATE : 1)) {
		p->hidden++;
		return;
	}
	if (p->hidden > 0) {
		if (count_line(p) < 0) {
			p->hidden++;
			return;
		}
		went(p, now);
	}
	len = ab_progress_clean(p, text, n, clean);
	if (put(p, clean, len) < 0) {
		p->hidden++;
		return;
	}
	went(p, now);
}

void ab_progress_end(struct ab_progress *p, const char *text, size_t n)
{
	char clean[AB_PROGRESS_TEXT_MAX];
	size_t len;

	if (p->fd < 0)
		return;
	if (p->hidden > 0)
		count_line(p);
	if (text == NULL)
		return;
	len = ab_progress_clean(p, text, n, clean);
	put(p, clean, len);
}
