/* httpmsg.h: strict HTTP/1.1 message framing (RFC 9112) for the egress
 * proxy that ends TLS for a vendor's API host, rewrites one header of each
 * request and passes the bytes on.
 *
 * The proxy forwards what the agent sent, so where it thinks a message
 * ends must be where any strict server thinks it ends: whatever a lenient
 * parser and a strict one could read two ways (a bare LF, a folded line,
 * Transfer-Encoding with Content-Length, a coding other than chunked,
 * a repeated length, a field name with '_' for '-', a malformed chunk
 * line) is refused, never repaired.  Everything here is pure: no I/O, no
 * allocation, pointers into the caller's buffer, so it is fuzzed alone.
 *
 * Use: ab_http_head_len until a head is whole (431 on -1), then
 * ab_http_request (or ab_http_response), then a framer over the bytes
 * that follow; what the framer does not take is the next message's.
 * After a message with keep_alive 0, nothing more is read as HTTP; after
 * a 101 (upgrade) everything is the tunnel's.  A request that expects
 * 100-continue keeps its framer: if a final response comes before its
 * body, the body's bytes are still its own, never a next request (or
 * the connection is closed).
 */
#ifndef AB_HTTPMSG_H
#define AB_HTTPMSG_H

#include <stddef.h>

#define AB_HTTP_HEAD_MAX (32 * 1024)	/* request line and headers; 431 */
#define AB_HTTP_HEADERS_MAX 100		/* header fields; 431 past it */
#define AB_HTTP_CHUNK_LINE_MAX 1024	/* a chunk-size line, CRLF included */
#define AB_HTTP_TRAILER_MAX (16 * 1024)	/* trailer fields and final CRLF */

struct ab_http_field {
	const char *name, *value;	/* the value without its OWS */
	size_t name_len, value_len;
};

enum ab_http_body {
	AB_BODY_NONE,
	AB_BODY_LENGTH,		/* Content-Length bytes (maybe 0) */
	AB_BODY_CHUNKED,
	AB_BODY_EOF		/* a response read until the server closes */
};

struct ab_http_head {
	const char *method, *target;	/* requests: origin-form target */
	size_t method_len, target_len;
	int status;			/* responses: 100-599 */
	int minor;			/* HTTP/1.MINOR: 0 or 1 */
	struct ab_http_field f[AB_HTTP_HEADERS_MAX];
	int nf;
	enum ab_http_body body;
	long long length;		/* AB_BODY_LENGTH's */
	int keep_alive;		/* 1.1: unless "close"; 1.0: "keep-alive" */
	int expect_continue;	/* a 1.1 request's "Expect: 100-continue" */
	int upgrade;		/* a 1.1 request with Upgrade and "Connection:
				 * upgrade"; a 101 response, or a 2xx to
				 * CONNECT: what follows is a tunnel */
};

/* Bytes of the head at BUF: through its blank line, or through the first
 * CR or LF that is not part of a CRLF (a head ab_http_request refuses at
 * once rather than waits on).  0 while incomplete; -1 when N reached
 * AB_HTTP_HEAD_MAX and the head has not ended within it (431). */
long ab_http_head_len(const char *buf, size_t n);

/* Parses a whole request head, N bytes as ab_http_head_len measured
 * them.  NULL with H filled; or a word for the log, with *status the
 * answer to give:
 *   400 bad-head (not one head), bad-request-line, bad-target,
 *       method-case ("head" or "connect" in another case),
 *       absolute-form (any target but origin-form '/...',
 *       authority-form too), asterisk-form, bare-cr, bare-lf,
 *       obs-fold, header-space (whitespace before the colon),
 *       bad-field-name, bad-field-value,
 *       lookalike-field ("Content_Length" and the like), host-missing,
 *       host-repeated (1.1 needs exactly one Host; 1.0 at most one),
 *       both-length-and-chunked, http10-transfer-encoding, bad-length
 *       (not digits, overflow, "5, 5"), length-repeated (several
 *       Content-Length fields, equal or not), bad-connection,
 *       connection-option (Connection naming a framing field),
 *       bad-upgrade (Upgrade in 1.0, or without "Connection: upgrade")
 *   417 expect (any expectation but 100-continue)
 *   431 head-too-large, header-too-many
 *   501 transfer-coding (anything but one "chunked"), connect
 *   505 version, http2-preface ("PRI * HTTP/2.0": the version is what
 *       is refused, and the word tells a prior-knowledge HTTP/2 client
 *       from garbage in the log)
 * Host's and Upgrade's values are the caller's to judge. */
const char *ab_http_request(const char *buf, size_t n, struct ab_http_head *h,
    int *status);

/* Parses a whole response head to a request of method METHOD, with the
 * same field rules (a response is refused where a request would be,
 * whatever its status).  The body per RFC 9112 section 6.3: none for
 * HEAD, 1xx, 204 and 304; a 101, or a 2xx to CONNECT, is a tunnel
 * (upgrade); chunked; Content-Length; else read to close.  A 1xx other
 * than 101 is interim: the final response's head follows.  NULL, or a
 * word as above (bad-status-line, version, ...). */
const char *ab_http_response(const char *buf, size_t n, const char *method,
    size_t method_len, struct ab_http_head *h);

/* The index of header NAME (case-insensitive) in H; -1 when absent, -2
 * when present more than once. */
int ab_http_field_find(const struct ab_http_head *h, const char *name);

/* A body's framing followed byte by byte; the bytes are passed on
 * unchanged (chunk framing included).  Chunked: hex sizes within a long
 * long, extensions as RFC 9112 section 7.1.1 writes them (token names,
 * token or quoted values, BWS around ';' and '='), CRLF everywhere,
 * trailer fields as header fields are. */
struct ab_http_framer {
	enum ab_http_body kind;
	int state;		/* where in the chunked grammar, done, failed */
	long long left;		/* bytes of the body, or of the chunk's data */
	long long size;		/* the chunk size read so far */
	size_t line;		/* bytes of the chunk-size line so far */
	size_t trailer;		/* bytes of the trailer section so far */
};

void ab_http_framer_init(struct ab_http_framer *fr,
    const struct ab_http_head *h);
/* Of N bytes at P, how many belong to the current message (<= N), with
 * *done set once the message is whole (then 0 more); -1 on malformed
 * framing (a bad chunk size or line, overflow, a line or the trailers
 * past their bound), and -1 again after. */
long ab_http_framer_feed(struct ab_http_framer *fr, const char *p, size_t n,
    int *done);
/* As ab_http_framer_feed, and where the body's own bytes are among
 * those taken: [*OFF, *OFF + *LEN) of P, one span (chunk framing before
 * it taken too), so a caller may read the data apart from its framing.
 * Call again on what is left. */
long ab_http_framer_data(struct ab_http_framer *fr, const char *p, size_t n,
    size_t *off, size_t *len, int *done);
/* 1 when the connection ending now leaves the message whole (it is
 * whole, or it is read to close); 0: it was cut short. */
int ab_http_framer_eof_ok(const struct ab_http_framer *fr);

#endif
