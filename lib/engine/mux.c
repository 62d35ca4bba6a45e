#include <string.h>

#include "mux.h"

void ab_mux_init(struct ab_mux *m, ab_mux_out out, void *ctx)
{
	memset(m, 0, sizeof *m);
	m->out = out;
	m->ctx = ctx;
}

static int header_done(struct ab_mux *m, struct ab_err *err)
{
	if ((m->hdr[0] != 1 && m->hdr[0] != 2) || m->hdr[1] || m->hdr[2] ||
	    m->hdr[3])
		return ab_fail(err, AB_EENGINE,
		    "engine sent a malformed output frame");
	m->stream = m->hdr[0];
	m->left = (size_t)m->hdr[4] << 24 | (size_t)m->hdr[5] << 16 |
	    (size_t)m->hdr[6] << 8 | m->hdr[7];
	m->have = 0;
	return 0;
}

int ab_mux_feed(void *arg, const char *p, size_t n, struct ab_err *err)
{
	struct ab_mux *m = arg;
	size_t k;

	while (n > 0) {
		if (m->left == 0) {
			m->hdr[m->have++] = (unsigned char)*p++;
			n--;
			if (m->have == 8 && header_done(m, err) < 0)
				return -1;
			continue;
		}
		k = n < m->left ? n : m->left;
		if (m->out(m->ctx, m->stream, p, k, err) < 0)
			return -1;
		p += k;
		n -= k;
		m->left -= k;
	}
	return 0;
}

int ab_mux_clean_end(const struct ab_mux *m)
{
	return m->have == 0 && m->left == 0;
}
