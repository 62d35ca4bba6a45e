/* httpmsg-test.c: unit tests for lib/format/httpmsg.c (heads, framing, chunked
 * bodies, pipelining), TAP output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpmsg.h"
#include "tap.h"

#define H11 " HTTP/1.1\r\nHost: api.example\r\n"

/* --- requests ---------------------------------------------------------- */

static void refused_n(const char *head, size_t n, const char *want,
    int status, const char *desc)
{
	static struct ab_http_head h;
	int st = 0;
	const char *got = ab_http_request(head, n, &h, &st);
	int good = got != NULL && strcmp(got, want) == 0 && st == status;

	if (!good)
		printf("# got %s %d\n", got ? got : "accepted", st);
	ok(good, desc);
}

static void refused(const char *head, const char *want, int status,
    const char *desc)
{
	refused_n(head, strlen(head), want, status, desc);
}

struct want {
	enum ab_http_body body;
	long long length;
	int keep_alive, expect, upgrade;
};

static int same(const struct ab_http_head *h, struct want w)
{
	return h->body == w.body && h->length == w.length &&
	    h->keep_alive == w.keep_alive && h->expect_continue == w.expect &&
	    h->upgrade == w.upgrade;
}

static void accepted(const char *head, struct want w, const char *desc)
{
	static struct ab_http_head h;
	int st = 0;
	const char *got = ab_http_request(head, strlen(head), &h, &st);
	int good = got == NULL && same(&h, w) &&
	    ab_http_head_len(head, strlen(head)) == (long)strlen(head);

	if (!good)
		printf("# got %s body %d length %lld keep %d expect %d "
		    "upgrade %d\n", got ? got : "accepted", h.body, h.length,
		    h.keep_alive, h.expect_continue, h.upgrade);
	ok(good, desc);
}

static const struct want none = { AB_BODY_NONE, 0, 1, 0, 0 };

static void request_lines(void)
{
	static struct ab_http_head h;
	const char *get = "GET /v1/messages?beta=true" H11 "\r\n";
	int st;

	ok(ab_http_request(get, strlen(get), &h, &st) == NULL &&
	    h.method_len == 3 && memcmp(h.method, "GET", 3) == 0 &&
	    h.target_len == 22 && memcmp(h.target, "/v1/messages?beta=true",
	    22) == 0 && h.minor == 1 && h.nf == 1 &&
	    h.f[0].name_len == 4 && h.f[0].value_len == 11 &&
	    memcmp(h.f[0].value, "api.example", 11) == 0,
	    "a GET: method, target, version and its one field");
	accepted(get, none, "a GET has no body and is kept alive");
	accepted("GET / HTTP/1.0\r\n\r\n",
	    (struct want){ AB_BODY_NONE, 0, 0, 0, 0 },
	    "HTTP/1.0 without Host: no body, not kept alive");
	accepted("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", none,
	    "HTTP/1.0 with Connection: keep-alive is kept alive");
	accepted("M-SEARCH.x_1 /" H11 "\r\n", none,
	    "a method is any token");
	refused("GET  /" H11 "\r\n", "bad-request-line", 400,
	    "two spaces after the method");
	refused("GET / HTTP/1.1 \r\nHost: a\r\n\r\n", "bad-request-line",
	    400, "a space after the version");
	refused(" GET /" H11 "\r\n", "bad-request-line", 400,
	    "a space before the method");
	refused("GET\t/" H11 "\r\n", "bad-request-line", 400,
	    "a tab for a space");
	refused("G(T /" H11 "\r\n", "bad-request-line", 400,
	    "a method that is not a token");
	refused("GET /\r\nHost: a\r\n\r\n", "bad-request-line", 400,
	    "no version (HTTP/0.9)");
	refused("GET / http/1.1\r\nHost: a\r\n\r\n", "bad-request-line", 400,
	    "a lowercase version");
	refused("GET / HTTP/1.10\r\nHost: a\r\n\r\n", "bad-request-line", 400,
	    "a version of three digits");
	refused("GET /a b" H11 "\r\n", "bad-request-line", 400,
	    "a space inside the target");
	refused("\r\nGET /" H11 "\r\n", "bad-request-line", 400,
	    "an empty line before the request line");
	refused("GET / HTTP/1.2\r\nHost: a\r\n\r\n", "version", 505,
	    "HTTP/1.2 is not supported");
	refused("GET / HTTP/2.0\r\nHost: a\r\n\r\n", "version", 505,
	    "HTTP/2.0 in a request line");
	refused("GET / HTTP/0.9\r\n\r\n", "version", 505, "HTTP/0.9");
	refused("PRI * HTTP/2.0\r\n\r\n", "http2-preface", 505,
	    "the HTTP/2 preface is refused by name");
	ok(ab_http_head_len("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24) == 18,
	    "the HTTP/2 preface's head ends before SM");
	refused("GET http://api.example/" H11 "\r\n", "absolute-form", 400,
	    "an absolute-form target");
	refused("GET api.example:443" H11 "\r\n", "absolute-form", 400,
	    "an authority-form target");
	refused("OPTIONS *" H11 "\r\n", "asterisk-form", 400,
	    "an asterisk-form target");
	refused("CONNECT api.example:443" H11 "\r\n", "connect", 501,
	    "CONNECT");
	refused("CONNECT /" H11 "\r\n", "connect", 501,
	    "CONNECT with an origin-form target");
	refused("head /" H11 "\r\n", "method-case", 400,
	    "\"head\" is HEAD to a lenient server");
	refused("Connect /" H11 "\r\n", "method-case", 400,
	    "\"Connect\" is CONNECT to a lenient server");
	refused("GET /\x01" H11 "\r\n", "bad-target", 400,
	    "a control in the target");
	refused("GET /\x7f" H11 "\r\n", "bad-target", 400,
	    "DEL in the target");
	refused("GET /\xc3\xa9" H11 "\r\n", "bad-target", 400,
	    "a non-ASCII target");
	refused_n("GET /\0" H11 "\r\n", 5 + 1 + strlen(H11) + 2,
	    "bad-target", 400, "a NUL in the target");
}

/* --- lines and fields -------------------------------------------------- */

static void lines(void)
{
	char many[AB_HTTP_HEAD_MAX + 64];
	size_t n;
	int i;

	refused("GET / HTTP/1.1\nHost: a\r\n\r\n", "bare-lf", 400,
	    "a bare LF ends the request line");
	refused("GET /" H11 "X: 1\n\r\n", "bare-lf", 400,
	    "a bare LF ends a field line");
	refused("GET /" H11 "X: a\rb\r\n\r\n", "bare-cr", 400,
	    "a bare CR in a value");
	refused("GET / HTTP/1.1\r\r\nHost: a\r\n\r\n", "bare-cr", 400,
	    "CR CR LF");
	ok(ab_http_head_len("GET / HTTP/1.1\nHost: a\n\n", 24) == 15,
	    "the head's length stops at a bare LF");
	ok(ab_http_head_len("GET / HTTP/1.1\rHost", 19) == 15,
	    "the head's length stops at a bare CR");
	ok(ab_http_head_len("GET / HTTP/1.1\r", 15) == 0,
	    "a CR at the end may be a CRLF's");
	ok(ab_http_head_len("GET / HTTP/1.1\r\nHost: a\r\n\r", 26) == 0,
	    "an incomplete head: 0");
	ok(ab_http_head_len("GET / HTTP/1.1\r\nHost: a\r\n\r\nGET", 30) == 27,
	    "the head ends at the blank line, whatever follows");
	memset(many, 'a', sizeof many);
	ok(ab_http_head_len(many, AB_HTTP_HEAD_MAX - 1) == 0,
	    "a head just under the bound is still incomplete");
	ok(ab_http_head_len(many, AB_HTTP_HEAD_MAX) == -1,
	    "a head that reaches the bound unended: -1");
	memcpy(many + AB_HTTP_HEAD_MAX - 4, "\r\n\r\n", 4);
	ok(ab_http_head_len(many, sizeof many) == AB_HTTP_HEAD_MAX,
	    "a head that ends exactly at the bound");
	refused_n(many, AB_HTTP_HEAD_MAX + 1, "head-too-large", 431,
	    "a head past the bound");

	n = (size_t)snprintf(many, sizeof many, "GET / HTTP/1.1\r\n");
	for (i = 0; i < AB_HTTP_HEADERS_MAX; i++)
		n += (size_t)snprintf(many + n, sizeof many - n, "%s: %d\r\n",
		    i == 0 ? "Host" : "X-N", i);
	memcpy(many + n, "\r\n", 3);
	accepted(many, none, "exactly AB_HTTP_HEADERS_MAX fields");
	memcpy(many + n, "X: 1\r\n\r\n", 9);
	refused(many, "header-too-many", 431, "one field more");

	refused("GET /" H11 "X: 1\r\n x\r\n\r\n", "obs-fold", 400,
	    "a folded line");
	refused("GET /" H11 "X: 1\r\n\tx\r\n\r\n", "obs-fold", 400,
	    "a line folded with a tab");
	refused("GET / HTTP/1.1\r\n Host: a\r\n\r\n", "obs-fold", 400,
	    "whitespace before the first field");
	refused("GET / HTTP/1.1\r\nHost : a\r\n\r\n", "header-space", 400,
	    "a space before the colon");
	refused("GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", "header-space", 400,
	    "a tab before the colon");
	refused("GET /" H11 "Content-Length : 5\r\n\r\n", "header-space",
	    400, "Content-Length with a space before the colon");
	refused("GET /" H11 ": a\r\n\r\n", "bad-field-name", 400,
	    "an empty field name");
	refused("GET /" H11 "X-(a): 1\r\n\r\n", "bad-field-name", 400,
	    "a field name that is not a token");
	refused("GET /" H11 "X-a\r\n\r\n", "bad-field-name", 400,
	    "a field line without a colon");
	refused("GET /" H11 "X: a\x01" "b\r\n\r\n", "bad-field-value", 400,
	    "a control in a value");
	refused("GET /" H11 "X: a\x7f\r\n\r\n", "bad-field-value", 400,
	    "DEL in a value");
	refused_n("GET /" H11 "X: a\0b\r\n\r\n", 5 + strlen(H11) + 10,
	    "bad-field-value", 400, "a NUL in a value");
	accepted("GET /" H11 "X: a\tb \xe9\r\nY:\r\nZ:  \t \r\n\r\n", none,
	    "tabs, obs-text and empty values");
	refused("GET /" H11 "Transfer_Encoding: chunked\r\n\r\n",
	    "lookalike-field", 400, "Transfer_Encoding");
	refused("GET /" H11 "content_length: 5\r\n\r\n", "lookalike-field",
	    400, "content_length");
	accepted("GET /" H11 "X_Trace: 5\r\n\r\n", none,
	    "'_' in a field this module does not read");
	refused("GET / HTTP/1.1\r\nHost: a\r\n", "bad-head", 400,
	    "no blank line");
	refused("GET /" H11 "\r\nGET", "bad-head", 400,
	    "bytes after the blank line");
}

static void fields(void)
{
	static struct ab_http_head h;
	const char *two = "GET /" H11 "X-A: 1\r\nx-a:  2 \r\nContent-Length:"
	    " 3\r\n\r\n";
	int st;

	ok(ab_http_request(two, strlen(two), &h, &st) == NULL &&
	    ab_http_field_find(&h, "host") == 0 &&
	    ab_http_field_find(&h, "CONTENT-length") == 3 &&
	    ab_http_field_find(&h, "x-a") == -2 &&
	    ab_http_field_find(&h, "x-b") == -1 &&
	    h.f[2].value_len == 1 && h.f[2].value[0] == '2',
	    "a field is found by name whatever its case; twice is -2");
	refused("GET / HTTP/1.1\r\n\r\n", "host-missing", 400,
	    "HTTP/1.1 without Host");
	refused("GET /" H11 "Host: b\r\n\r\n", "host-repeated", 400,
	    "two Host fields");
	refused("GET / HTTP/1.0\r\nHost: a\r\nhost: a\r\n\r\n",
	    "host-repeated", 400, "two Host fields in HTTP/1.0");
	accepted("GET / HTTP/1.1\r\nHost:\r\n\r\n", none,
	    "an empty Host (its value is the caller's to judge)");
}

/* --- framing ----------------------------------------------------------- */

static void framing(void)
{
	struct want w5 = { AB_BODY_LENGTH, 5, 1, 0, 0 };
	struct want ch = { AB_BODY_CHUNKED, 0, 1, 0, 0 };

	accepted("POST /" H11 "Content-Length: 5\r\n\r\n", w5,
	    "Content-Length");
	accepted("POST /" H11 "Content-Length: 0\r\n\r\n",
	    (struct want){ AB_BODY_LENGTH, 0, 1, 0, 0 }, "Content-Length 0");
	accepted("POST /" H11 "content-length:\t005 \r\n\r\n", w5,
	    "leading zeros and OWS in Content-Length");
	accepted("POST /" H11 "Content-Length: 9223372036854775807\r\n\r\n",
	    (struct want){ AB_BODY_LENGTH, 9223372036854775807LL, 1, 0, 0 },
	    "the largest Content-Length");
	refused("POST /" H11 "Content-Length: 9223372036854775808\r\n\r\n",
	    "bad-length", 400, "Content-Length overflows");
	refused("POST /" H11 "Content-Length: 99999999999999999999999\r\n"
	    "\r\n", "bad-length", 400, "a far larger Content-Length");
	refused("POST /" H11 "Content-Length:\r\n\r\n", "bad-length", 400,
	    "an empty Content-Length");
	refused("POST /" H11 "Content-Length: +5\r\n\r\n", "bad-length", 400,
	    "a signed Content-Length");
	refused("POST /" H11 "Content-Length: -1\r\n\r\n", "bad-length", 400,
	    "a negative Content-Length");
	refused("POST /" H11 "Content-Length: 0x5\r\n\r\n", "bad-length", 400,
	    "a hex Content-Length");
	refused("POST /" H11 "Content-Length: 5 5\r\n\r\n", "bad-length", 400,
	    "two numbers in Content-Length");
	refused("POST /" H11 "Content-Length: 5, 5\r\n\r\n", "bad-length", 400,
	    "a list of equal lengths is refused");
	refused("POST /" H11 "Content-Length: 5\r\nContent-Length: 5\r\n\r\n",
	    "length-repeated", 400, "two equal Content-Length fields");
	refused("POST /" H11 "Content-Length: 5\r\nContent-Length: 6\r\n\r\n",
	    "length-repeated", 400, "two different Content-Length fields");

	accepted("POST /" H11 "Transfer-Encoding: chunked\r\n\r\n", ch,
	    "Transfer-Encoding: chunked");
	accepted("POST /" H11 "transfer-encoding:  CHUNKED \r\n\r\n", ch,
	    "chunked in any case, with OWS");
	refused("POST /" H11 "Transfer-Encoding: chunked\r\nContent-Length: 5"
	    "\r\n\r\n", "both-length-and-chunked", 400,
	    "Transfer-Encoding then Content-Length");
	refused("POST /" H11 "Content-Length: 5\r\nTransfer-Encoding: chunked"
	    "\r\n\r\n", "both-length-and-chunked", 400,
	    "Content-Length then Transfer-Encoding");
	refused("POST /" H11 "Content-Length: 5\r\nTransfer-Encoding: gzip"
	    "\r\n\r\n", "both-length-and-chunked", 400,
	    "a length with any coding");
	refused("POST /" H11 "Transfer-Encoding: gzip\r\n\r\n",
	    "transfer-coding", 501, "gzip alone");
	refused("POST /" H11 "Transfer-Encoding: gzip, chunked\r\n\r\n",
	    "transfer-coding", 501, "gzip then chunked");
	refused("POST /" H11 "Transfer-Encoding: chunked, gzip\r\n\r\n",
	    "transfer-coding", 501, "chunked then gzip");
	refused("POST /" H11 "Transfer-Encoding: chunked, chunked\r\n\r\n",
	    "transfer-coding", 501, "chunked twice in one field");
	refused("POST /" H11 "Transfer-Encoding: chunked\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n", "transfer-coding", 501,
	    "two Transfer-Encoding fields");
	refused("POST /" H11 "Transfer-Encoding: chunked,\r\n\r\n",
	    "transfer-coding", 501, "chunked and an empty element");
	refused("POST /" H11 "Transfer-Encoding: chunked;q=1\r\n\r\n",
	    "transfer-coding", 501, "chunked with a parameter");
	refused("POST /" H11 "Transfer-Encoding: \"chunked\"\r\n\r\n",
	    "transfer-coding", 501, "chunked quoted");
	refused("POST /" H11 "Transfer-Encoding: xchunked\r\n\r\n",
	    "transfer-coding", 501, "a coding that ends in chunked");
	refused("POST /" H11 "Transfer-Encoding:\r\n\r\n", "transfer-coding",
	    501, "an empty Transfer-Encoding");
	refused("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
	    "http10-transfer-encoding", 400, "chunked in HTTP/1.0");

	accepted("GET /" H11 "Connection: close\r\n\r\n",
	    (struct want){ AB_BODY_NONE, 0, 0, 0, 0 }, "Connection: close");
	accepted("GET /" H11 "Connection: keep-alive,, CLOSE \r\n\r\n",
	    (struct want){ AB_BODY_NONE, 0, 0, 0, 0 },
	    "close among other options, an empty element");
	accepted("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n",
	    (struct want){ AB_BODY_NONE, 0, 0, 0, 0 },
	    "close wins over keep-alive in 1.0");
	refused("GET /" H11 "Connection: a b\r\n\r\n", "bad-connection", 400,
	    "a Connection option that is not a token");
	refused("GET /" H11 "Connection: close, Content-Length\r\n\r\n",
	    "connection-option", 400, "Connection naming Content-Length");
	refused("GET /" H11 "Connection: transfer-encoding\r\n\r\n",
	    "connection-option", 400, "Connection naming Transfer-Encoding");

	accepted("POST /" H11 "Expect: 100-Continue\r\nContent-Length: 5\r\n"
	    "\r\n", (struct want){ AB_BODY_LENGTH, 5, 1, 1, 0 },
	    "Expect: 100-continue");
	accepted("POST / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n",
	    (struct want){ AB_BODY_NONE, 0, 0, 0, 0 },
	    "a 1.0 request's expectation is ignored");
	refused("POST /" H11 "Expect: 200-ok\r\n\r\n", "expect", 417,
	    "another expectation");
	refused("POST /" H11 "Expect: 100-continue\r\nExpect: 100-continue"
	    "\r\n\r\n", "expect", 417, "Expect twice");

	accepted("GET /ws" H11 "Connection: Upgrade\r\nUpgrade: websocket\r\n"
	    "Sec-WebSocket-Version: 13\r\n\r\n",
	    (struct want){ AB_BODY_NONE, 0, 1, 0, 1 }, "a websocket upgrade");
	refused("GET /ws" H11 "Upgrade: websocket\r\n\r\n", "bad-upgrade", 400,
	    "Upgrade without its connection option");
	refused("GET /ws HTTP/1.0\r\nConnection: upgrade\r\nUpgrade: "
	    "websocket\r\n\r\n", "bad-upgrade", 400, "Upgrade in HTTP/1.0");
	accepted("GET /" H11 "Connection: upgrade\r\n\r\n", none,
	    "the upgrade option without Upgrade asks nothing");
}

/* --- responses --------------------------------------------------------- */

static void response(const char *head, const char *method, const char *want,
    struct want w, const char *desc)
{
	static struct ab_http_head h;
	const char *got = ab_http_response(head, strlen(head), method,
	    strlen(method), &h);
	int good = want ? got != NULL && strcmp(got, want) == 0 :
	    got == NULL && same(&h, w);

	if (!good)
		printf("# got %s body %d length %lld keep %d upgrade %d\n",
		    got ? got : "accepted", h.body, h.length, h.keep_alive,
		    h.upgrade);
	ok(good, desc);
}

static void responses(void)
{
	struct want eof = { AB_BODY_EOF, 0, 0, 0, 0 };
	struct want nob = { AB_BODY_NONE, 0, 1, 0, 0 };
	struct want up = { AB_BODY_NONE, 0, 0, 0, 1 };
	static struct ab_http_head h;

	response("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", "GET", NULL,
	    (struct want){ AB_BODY_LENGTH, 3, 1, 0, 0 }, "a 200 with a length");
	response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
	    "POST", NULL, (struct want){ AB_BODY_CHUNKED, 0, 1, 0, 0 },
	    "a chunked 200");
	response("HTTP/1.1 200 OK\r\n\r\n", "GET", NULL, eof,
	    "no length: read to close");
	response("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length:"
	    " 0\r\n\r\n", "GET", NULL, (struct want){ AB_BODY_LENGTH, 0, 1, 0,
	    0 }, "a kept-alive 1.0 response");
	response("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1"
	    "\r\n\r\n", "GET", NULL, (struct want){ AB_BODY_LENGTH, 1, 0, 0,
	    0 }, "Connection: close");
	response("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", "HEAD", NULL,
	    nob, "a response to HEAD has no body");
	response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
	    "HEAD", NULL, nob, "nor a chunked one");
	response("HTTP/1.1 204 No Content\r\n\r\n", "DELETE", NULL, nob,
	    "204 has no body");
	response("HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n",
	    "GET", NULL, nob, "304 has no body, whatever its length");
	response("HTTP/1.1 100 Continue\r\n\r\n", "POST", NULL, nob,
	    "100 has no body");
	response("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", "GET", NULL,
	    nob, "103 has no body");
	response("HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\n"
	    "Upgrade: websocket\r\n\r\n", "GET", NULL, up, "101 is a tunnel");
	response("HTTP/1.1 200 OK\r\n\r\n", "CONNECT", NULL, up,
	    "a 2xx to CONNECT is a tunnel");
	response("HTTP/1.1 407 No\r\nContent-Length: 2\r\n\r\n", "CONNECT",
	    NULL, (struct want){ AB_BODY_LENGTH, 2, 1, 0, 0 },
	    "a 407 to CONNECT is not");
	response("HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n", "GET", NULL,
	    (struct want){ AB_BODY_LENGTH, 0, 1, 0, 0 }, "an empty reason");
	ok(ab_http_response("HTTP/1.1 599 x\r\n\r\n", 18, "GET", 3, &h) ==
	    NULL && h.status == 599 && h.minor == 1,
	    "the status and the minor version");
	response("HTTP/1.1 200\r\n\r\n", "GET", "bad-status-line", nob,
	    "no space after the status");
	response("HTTP/1.1 99 OK\r\n\r\n", "GET", "bad-status-line", nob,
	    "two digits");
	response("HTTP/1.1 099 OK\r\n\r\n", "GET", "bad-status-line", nob,
	    "a status under 100");
	response("HTTP/1.1 600 OK\r\n\r\n", "GET", "bad-status-line", nob,
	    "a status past 599");
	response("HTTP/1.1 2000 OK\r\n\r\n", "GET", "bad-status-line", nob,
	    "four digits");
	response("HTTP/1.1  200 OK\r\n\r\n", "GET", "bad-status-line", nob,
	    "two spaces");
	response("HTTP/1.1 200 O\x01K\r\n\r\n", "GET", "bad-status-line", nob,
	    "a control in the reason");
	response("HTTP/2 200 OK\r\n\r\n", "GET", "bad-status-line", nob,
	    "HTTP/2 in a status line");
	response("HTTP/1.2 200 OK\r\n\r\n", "GET", "version", nob,
	    "HTTP/1.2");
	response("HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", "GET", "bare-lf",
	    nob, "a bare LF in a response");
	response("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: "
	    "chunked\r\n\r\n", "GET", "both-length-and-chunked", nob,
	    "a response with both");
	response("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "GET",
	    "transfer-coding", nob, "a response with another coding");
	response("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1"
	    "\r\n\r\n", "GET", "length-repeated", nob,
	    "a response with two lengths");
	response("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
	    "GET", "http10-transfer-encoding", nob, "a chunked 1.0 response");
	response("HTTP/1.1 200 OK\r\nX: 1\r\n y\r\n\r\n", "GET", "obs-fold",
	    nob, "a folded response field");
}

/* --- bodies ------------------------------------------------------------ */

/* BODY framed as KIND, fed whole: the bytes of the message and whether
 * it is whole (-1 when refused). */
static long frame(enum ab_http_body kind, long long length, const char *p,
    size_t n, int *done)
{
	static struct ab_http_head h;
	struct ab_http_framer fr;

	memset(&h, 0, sizeof h);
	h.body = kind;
	h.length = length;
	ab_http_framer_init(&fr, &h);
	return ab_http_framer_feed(&fr, p, n, done);
}

/* The same fed byte by byte: the same answer. */
static long frame_bytes(enum ab_http_body kind, long long length,
    const char *p, size_t n, int *done)
{
	static struct ab_http_head h;
	struct ab_http_framer fr;
	size_t i;
	long k, total = 0;

	memset(&h, 0, sizeof h);
	h.body = kind;
	h.length = length;
	ab_http_framer_init(&fr, &h);
	*done = 0;
	for (i = 0; i < n && !*done; i++) {
		if ((k = ab_http_framer_feed(&fr, p + i, 1, done)) < 0)
			return -1;
		total += k;
	}
	return total;
}

#define WHOLE (-2)	/* whole at the input's end */
#define CUT 0		/* not whole: every byte taken */

/* CHUNKED of N bytes: -1 refused, CUT, WHOLE, or whole after END bytes;
 * fed whole and byte by byte alike. */
static void chunked_n(const char *body, size_t n, long want, const char *desc)
{
	long a, b, end = want == WHOLE || want == CUT ? (long)n : want;
	int da, db, whole = want != CUT && want != -1, good;

	a = frame(AB_BODY_CHUNKED, 0, body, n, &da);
	b = frame_bytes(AB_BODY_CHUNKED, 0, body, n, &db);
	good = a == end && b == end && (want == -1 || (da == whole &&
	    db == whole));
	if (!good)
		printf("# whole %ld done %d, bytes %ld done %d\n", a, da, b, db);
	ok(good, desc);
}

static void chunked(const char *body, long want, const char *desc)
{
	chunked_n(body, strlen(body), want, desc);
}

static void bodies(void)
{
	char big[AB_HTTP_TRAILER_MAX + 64];
	long k;
	int done;
	size_t n;

	k = frame(AB_BODY_LENGTH, 5, "helloGET", 8, &done);
	ok(k == 5 && done, "a length takes its bytes and no more");
	k = frame(AB_BODY_LENGTH, 5, "hel", 3, &done);
	ok(k == 3 && !done, "a length short of its bytes is not whole");
	k = frame(AB_BODY_LENGTH, 0, "GET", 3, &done);
	ok(k == 0 && done, "a length of 0 is whole at once");
	k = frame(AB_BODY_NONE, 0, "GET", 3, &done);
	ok(k == 0 && done, "no body is whole at once");
	k = frame(AB_BODY_EOF, 0, "abc", 3, &done);
	ok(k == 3 && !done, "a body read to close takes everything");

	chunked("5\r\nhello\r\n0\r\n\r\n", WHOLE, "a chunk and the last, whole");
	chunked("5\r\nhello\r\n0\r\n\r\nGET / HTTP/1.1", 15,
	    "what follows the last chunk is the next message's");
	chunked("A\r\n0123456789\r\nf\r\n0123456789abcde\r\n000\r\n\r\n", WHOLE,
	    "hex sizes in both cases, zeros for the last, whole");
	chunked("5;a=b;c=\"d\\\"e;\";f\r\nhello\r\n0;g=h\r\n\r\n", WHOLE,
	    "extensions: token and quoted values, a bare name, whole");
	chunked("5 ;\ta = b ; c\t=\"x\"\r\nhello\r\n0\r\n\r\n", WHOLE,
	    "BWS around ';' and '=', whole");
	chunked("5\r\nhello\r\n0\r\nX-Sum: 1\r\nY:\r\n\r\n", WHOLE,
	    "trailer fields, whole");
	chunked("5\r\nhel", CUT, "a chunk's data cut short is not whole");
	chunked("5\r\nhello\r\n0\r\nX: 1\r\n", CUT,
	    "trailers without the final CRLF are not whole");
	chunked("7fffffffffffffff\r\nab", CUT,
	    "the largest chunk size is accepted");
	chunked("8000000000000000\r\n", -1, "a chunk size past a long long");
	chunked("00000000000000000000000000001\r\nx\r\n0\r\n\r\n", WHOLE,
	    "leading zeros do not overflow, whole");
	chunked("\r\nhello\r\n", -1, "an empty chunk size");
	chunked("g\r\n", -1, "a chunk size that is not hex");
	chunked("0x5\r\nhello\r\n0\r\n\r\n", -1, "0x before a chunk size");
	chunked("-5\r\n", -1, "a signed chunk size");
	chunked(" 5\r\n", -1, "a space before a chunk size");
	chunked("5 \r\nhello\r\n0\r\n\r\n", -1, "a space after a chunk size");
	chunked("5\nhello\r\n0\r\n\r\n", -1, "a bare LF after a chunk size");
	chunked("5\rhello", -1, "a bare CR after a chunk size");
	chunked("5\r\nhelloX\r\n0\r\n\r\n", -1, "data longer than its size");
	chunked("5\r\nhello\n0\r\n\r\n", -1, "a bare LF after data");
	chunked("5;\r\nhello\r\n0\r\n\r\n", -1, "an empty extension");
	chunked("5;a=\r\nhello\r\n0\r\n\r\n", -1, "an empty extension value");
	chunked("5;a b\r\n", -1, "a space inside an extension");
	chunked("5;a=\"b\r\n", -1, "an unterminated quoted value");
	chunked("5;a=\"\x01\"\r\n", -1, "a control in a quoted value");
	chunked("5;a=b\"c\"\r\n", -1, "a quote inside a token");
	chunked("5;a=(b)\r\n", -1, "a value that is no token");
	chunked("0\r\n X: 1\r\n\r\n", -1, "a folded trailer line");
	chunked("0\r\nX : 1\r\n\r\n", -1, "a space before a trailer's colon");
	chunked("0\r\nX\r\n\r\n", -1, "a trailer line without a colon");
	chunked("0\r\nX: \x01\r\n\r\n", -1, "a control in a trailer value");
	chunked("0\r\nX: 1\n\r\n", -1, "a bare LF in the trailers");
	chunked("0\r\n\n", -1, "a bare LF ends the trailers");
	chunked_n("5\r\nhe\0lo\r\n0\r\n\r\n", 15, WHOLE,
	    "chunk data is any bytes, NUL too, whole");

	n = (size_t)snprintf(big, sizeof big, "1;");
	memset(big + n, 'e', AB_HTTP_CHUNK_LINE_MAX - n - 2);
	memcpy(big + AB_HTTP_CHUNK_LINE_MAX - 2, "\r\nx\r\n0\r\n\r\n", 11);
	chunked(big, WHOLE, "a chunk line exactly at its bound, whole");
	memmove(big + 1, big, strlen(big) + 1);
	chunked(big, -1, "a chunk line one byte past its bound");

	n = (size_t)snprintf(big, sizeof big, "0\r\nX: ");
	memset(big + n, 'v', AB_HTTP_TRAILER_MAX - 7);
	memcpy(big + n + AB_HTTP_TRAILER_MAX - 7, "\r\n\r\n", 5);
	chunked(big, WHOLE, "trailers exactly at their bound, whole");
	memmove(big + n + 1, big + n, strlen(big + n) + 1);
	chunked(big, -1, "trailers one byte past their bound");
}

/* --- connections ------------------------------------------------------- */

/* The requests in the N bytes at P, one after the other as the proxy
 * reads them: their count, or -1 when one is refused or cut short.  STEP
 * is how many bytes the framer is given at a time. */
static int requests(const char *p, size_t n, size_t step, char *methods,
    size_t cap)
{
	static struct ab_http_head h;
	struct ab_http_framer fr;
	size_t at = 0, end, m = 0;
	long len, k;
	int st, done, count = 0;

	methods[0] = '\0';
	while (at < n) {
		len = ab_http_head_len(p + at, n - at);
		if (len <= 0 || ab_http_request(p + at, (size_t)len, &h,
		    &st) != NULL)
			return -1;
		m += (size_t)snprintf(methods + m, cap - m, "%s%.*s",
		    count ? " " : "", (int)h.method_len, h.method);
		at += (size_t)len;
		ab_http_framer_init(&fr, &h);
		done = 0;
		k = ab_http_framer_feed(&fr, p + at, 0, &done);
		while (!done && at < n) {
			end = n - at < step ? n - at : step;
			if ((k = ab_http_framer_feed(&fr, p + at, end,
			    &done)) < 0)
				return -1;
			at += (size_t)k;
		}
		if (!done)
			return -1;
		count++;
	}
	return count;
}

static void connections(void)
{
	static const char two[] = "POST /a" H11 "Content-Length: 5\r\n\r\n"
	    "helloPOST /b" H11 "Transfer-Encoding: chunked\r\n\r\n"
	    "3;x=y\r\nGET\r\n0\r\nT: 1\r\n\r\nGET /c" H11 "\r\n";
	static const char smuggle[] = "POST /a" H11 "Content-Length: 5\r\n\r\n"
	    "0\r\n\r\nGET /admin" H11 "\r\n";
	static struct ab_http_head h;
	char m1[64], m2[64];
	size_t n = sizeof two - 1;
	const char *r;
	long len;
	int st, done;
	struct ab_http_framer fr;

	ok(requests(two, n, n, m1, sizeof m1) == 3 &&
	    strcmp(m1, "POST POST GET") == 0,
	    "three pipelined requests, bodies of both kinds");
	ok(requests(two, n, 1, m2, sizeof m2) == 3 && strcmp(m1, m2) == 0,
	    "the same fed byte by byte");
	ok(requests(two, n, 7, m2, sizeof m2) == 3 && strcmp(m1, m2) == 0,
	    "the same fed seven bytes at a time");
	ok(requests(smuggle, sizeof smuggle - 1, 3, m1, sizeof m1) == 2 &&
	    strcmp(m1, "POST GET") == 0,
	    "a body's bytes are its length's, the next request is the rest");
	ok(requests(two, n - 3, 5, m1, sizeof m1) == -1,
	    "a connection cut inside a head");

	/* 100-continue: the head alone, an interim response, then the
	 * body, and the final response after the interim one. */
	r = "POST /up" H11 "Expect: 100-continue\r\nContent-Length: 4\r\n\r\n";
	ok(ab_http_request(r, strlen(r), &h, &st) == NULL &&
	    h.expect_continue && h.body == AB_BODY_LENGTH,
	    "100-continue: the head asks for it");
	ab_http_framer_init(&fr, &h);
	ok(ab_http_framer_feed(&fr, "", 0, &done) == 0 && !done &&
	    !ab_http_framer_eof_ok(&fr),
	    "100-continue: the body has not come yet");
	ok(ab_http_framer_feed(&fr, "data", 4, &done) == 4 && done &&
	    ab_http_framer_eof_ok(&fr), "100-continue: then it comes");
	r = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n"
	    "Content-Length: 2\r\n\r\nokHTTP/1.1";
	len = ab_http_head_len(r, strlen(r));
	ok(len == 25 && ab_http_response(r, (size_t)len, "POST", 4, &h) ==
	    NULL && h.status == 100 && h.body == AB_BODY_NONE,
	    "100-continue: the interim response has no body");
	r += len;
	len = ab_http_head_len(r, strlen(r));
	ok(len > 0 && ab_http_response(r, (size_t)len, "POST", 4, &h) ==
	    NULL && h.status == 201 && h.body == AB_BODY_LENGTH &&
	    h.length == 2, "100-continue: the final response follows");
	ab_http_framer_init(&fr, &h);
	ok(ab_http_framer_feed(&fr, r + len, strlen(r + len), &done) == 2 &&
	    done, "100-continue: the final response's body");

	/* An upgrade: what follows the 101's head is the tunnel's. */
	r = "GET /ws" H11 "Connection: upgrade\r\nUpgrade: websocket\r\n\r\n";
	ok(ab_http_request(r, strlen(r), &h, &st) == NULL && h.upgrade &&
	    h.body == AB_BODY_NONE, "upgrade: the request asks for it");
	r = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
	    "Connection: upgrade\r\n\r\n\x81\x05hello";
	len = ab_http_head_len(r, strlen(r));
	ok(len == (long)strlen(r) - 7 && ab_http_response(r, (size_t)len,
	    "GET", 3, &h) == NULL && h.upgrade && !h.keep_alive,
	    "upgrade: 101, and the frame after it is not HTTP");

	/* A chunked response cut short is not whole at the close; one read
	 * to close is. */
	r = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
	ab_http_response(r, strlen(r), "GET", 3, &h);
	ab_http_framer_init(&fr, &h);
	ab_http_framer_feed(&fr, "5\r\nhel", 6, &done);
	ok(!done && !ab_http_framer_eof_ok(&fr),
	    "a chunked response cut short is not whole");
	r = "HTTP/1.1 200 OK\r\n\r\n";
	ab_http_response(r, strlen(r), "GET", 3, &h);
	ab_http_framer_init(&fr, &h);
	ab_http_framer_feed(&fr, "anything", 8, &done);
	ok(!done && ab_http_framer_eof_ok(&fr),
	    "a response read to close is whole at the close");
	ab_http_framer_init(&fr, &(struct ab_http_head){ .body =
	    AB_BODY_CHUNKED });
	ok(ab_http_framer_feed(&fr, "z", 1, &done) == -1 &&
	    ab_http_framer_feed(&fr, "0\r\n\r\n", 5, &done) == -1 && !done,
	    "a framer that refused refuses again");
}

int main(void)
{
	plan(204);
	request_lines();
	lines();
	fields();
	framing();
	responses();
	bodies();
	connections();
	return done_testing();
}
