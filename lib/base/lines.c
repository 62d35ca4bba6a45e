#include <string.h>

#include "lines.h"

void ab_lines_init(struct ab_lines *l, size_t max)
{
	memset(l, 0, sizeof *l);
	ab_buf_init(&l->line, max);
}

void ab_lines_feed(struct ab_lines *l, const char *p, size_t n)
{
	l->p = p;
	l->n = n;
}

static void take(struct ab_lines *l, size_t k)
{
	l->p += k;
	l->n -= k;
}

/* What fits of K bytes is kept: the head a refusal may show. */
static int overflow(struct ab_lines *l, size_t k)
{
	size_t room = l->line.max - l->line.len;
	int nomem = !l->line.over;

	l->line.over = 0;
	if (!nomem && k > room && ab_buf_add(&l->line, l->p, room) < 0)
		nomem = 1;
	l->skipping = 1;
	l->yielded = 1;
	return nomem ? -1 : AB_LINE_OVER;
}

int ab_lines_next(struct ab_lines *l, const char **line, size_t *n)
{
	const char *nl;
	size_t k;
	int rc;

	if (l->yielded)
		ab_buf_reset(&l->line);
	l->yielded = 0;
	while (l->n > 0) {
		nl = memchr(l->p, '\n', l->n);
		k = nl != NULL ? (size_t)(nl - l->p) : l->n;
		rc = AB_LINE_OK;
		if (!l->skipping && ab_buf_add(&l->line, l->p, k) < 0)
			rc = overflow(l, k);
		take(l, nl != NULL ? k + 1 : k);
		if (nl != NULL && l->skipping && rc == AB_LINE_OK) {
			l->skipping = 0;	/* the long line's tail ended */
			continue;
		}
		if (nl != NULL)
			l->skipping = 0;
		if (rc == AB_LINE_OK && nl == NULL)
			return AB_LINE_NONE;
		l->yielded = 1;
		*line = l->line.data != NULL ? l->line.data : "";
		*n = l->line.len;
		return rc;
	}
	return AB_LINE_NONE;
}

int ab_lines_end(struct ab_lines *l, const char **line, size_t *n)
{
	int skipped = l->skipping;

	if (l->yielded)
		ab_buf_reset(&l->line);
	l->yielded = 0;
	l->skipping = 0;
	if (skipped || l->line.len == 0)
		return AB_LINE_NONE;
	l->yielded = 1;
	*line = l->line.data;
	*n = l->line.len;
	return AB_LINE_OK;
}

void ab_lines_rest(struct ab_lines *l, const char **p, size_t *n)
{
	*p = l->p;
	*n = l->n;
	take(l, l->n);
}

void ab_lines_free(struct ab_lines *l)
{
	ab_buf_free(&l->line);
	memset(l, 0, sizeof *l);
}
