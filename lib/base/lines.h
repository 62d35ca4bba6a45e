/* lines.h: a byte stream read as lines, the one reader every site uses.
 *
 * Bytes come in chunks (a curl write, a read); the reader yields each
 * whole line, without its '\n', one at a time.  A line longer than its
 * max is reported once, AB_LINE_OVER, and the caller chooses: refuse the
 * stream or skip the line.  Either way the rest of that line, up to its
 * newline, is discarded: never read as a line of its own.  A '\r' before
 * the newline stays in the line (a site that takes CRLF trims it).
 *
 * Only the line being read is kept, at most max bytes, NUL-terminated;
 * every byte is looked at and copied once, whatever the chunks.
 */
#ifndef AB_LINES_H
#define AB_LINES_H

#include <stddef.h>

#include "buf.h"

enum {
	AB_LINE_NONE = 0,	/* the chunk is read: feed the next */
	AB_LINE_OK = 1,		/* a whole line */
	AB_LINE_OVER = 2	/* a line past max: its first max bytes */
};

struct ab_lines {
	struct ab_buf line;	/* the line being read */
	const char *p;		/* the chunk's unread rest */
	size_t n;
	int skipping;		/* past max: discarding to the newline */
	int yielded;		/* line was handed out: emptied on the next call */
};

/* MAX (> 0): the longest line taken, in bytes, without its newline. */
void ab_lines_init(struct ab_lines *l, size_t max);
/* The chunk the next calls read (it must stay valid while they do): the
 * previous chunk's unread rest, if any, is dropped. */
void ab_lines_feed(struct ab_lines *l, const char *p, size_t n);
/* The next line of the chunk in *LINE and *N (NUL-terminated, valid until
 * the next call): AB_LINE_OK, AB_LINE_OVER (once per long line), or
 * AB_LINE_NONE.  -1 when memory ran out: the line is skipped as if over. */
int ab_lines_next(struct ab_lines *l, const char **line, size_t *n);
/* At the stream's end, after the last chunk is read: the last line when
 * it had no newline and is not empty nor over, AB_LINE_OK; otherwise
 * AB_LINE_NONE. */
int ab_lines_end(struct ab_lines *l, const char **line, size_t *n);
/* The chunk's unread rest, taken from the reader: what follows the lines
 * a caller wanted, for a reader of its own. */
void ab_lines_rest(struct ab_lines *l, const char **p, size_t *n);
void ab_lines_free(struct ab_lines *l);

#endif
