/* egress-test.c: unit tests for lib/egress/egress.c (the allowlist, the request
 * parser, the address guard), TAP output. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "egress.h"
#include "tap.h"

static const char *guard_of(const char *addr)
{
	struct sockaddr_in6 v6;
	struct sockaddr_in v4;

	memset(&v4, 0, sizeof v4);
	memset(&v6, 0, sizeof v6);
	if (inet_pton(AF_INET, addr, &v4.sin_addr) == 1) {
		v4.sin_family = AF_INET;
		return ab_egress_guard((struct sockaddr *)&v4);
	}
	inet_pton(AF_INET6, addr, &v6.sin6_addr);
	v6.sin6_family = AF_INET6;
	return ab_egress_guard((struct sockaddr *)&v6);
}

static void guard(const char *addr, const char *want)
{
	const char *got = guard_of(addr);
	char desc[200];

	snprintf(desc, sizeof desc, "guard %s: %s", addr, want ? want :
	    "allowed");
	if (!(got == want || (got && want && strcmp(got, want) == 0)))
		printf("# got %s\n", got ? got : "allowed");
	ok(got == want || (got && want && strcmp(got, want) == 0), desc);
}

static void request(const char *head, const char *want, int status,
    const char *host, int port)
{
	char h[AB_EGRESS_HOST_MAX + 1] = "", desc[200];
	int p = 0, st = 0, good;
	const char *got = ab_egress_request(head, strlen(head), h, &p, &st);

	good = want == NULL ? got == NULL && strcmp(h, host) == 0 &&
	    p == port : got != NULL && strcmp(got, want) == 0 && st == status;
	snprintf(desc, sizeof desc, "request %.40s: %s", head,
	    want ? want : "accepted");
	if (!good)
		printf("# got %s %d %s:%d\n", got ? got : "accepted", st, h, p);
	ok(good, desc);
}

static void list(const char *text, int want_n, const char *first)
{
	struct ab_egress_list l;
	struct ab_err err;
	char t[400] = "", desc[200];
	int rc = ab_egress_parse(&l, text, &err);

	if (rc == 0 && l.n > 0)
		ab_egress_entry_text(&l.e[0], t, sizeof t);
	snprintf(desc, sizeof desc, "list %s: %d entries", text, want_n);
	if (want_n < 0)
		ok(rc < 0 && err.code == AB_EUSAGE, desc);
	else
		ok(rc == 0 && l.n == want_n && strcmp(t, first) == 0, desc);
}

int main(void)
{
	plan(98);
	guard("1.1.1.1", NULL);
	guard("127.0.0.1", "loopback");
	guard("127.255.0.9", "loopback");
	guard("0.0.0.0", "unspecified");
	guard("10.1.2.3", "private");
	guard("172.16.0.1", "private");
	guard("172.31.255.255", "private");
	guard("172.32.0.1", NULL);
	guard("192.168.1.1", "private");
	guard("100.64.0.1", "cgnat");
	guard("100.128.0.1", NULL);
	guard("169.254.169.254", "link-local");
	guard("224.0.0.1", "multicast");
	guard("255.255.255.255", "reserved");
	guard("192.0.2.1", "documentation");
	guard("::", "unspecified");
	guard("::1", "loopback");
	guard("::ffff:127.0.0.1", "loopback");
	guard("::ffff:169.254.169.254", "link-local");
	guard("::ffff:8.8.8.8", NULL);
	guard("::127.0.0.1", "loopback");
	guard("64:ff9b::10.0.0.1", "private");
	guard("2002:7f00:1::", "loopback");
	guard("2002:808:808::", NULL);
	guard("fc00::1", "private");
	guard("fd12:3456::1", "private");
	guard("fe80::1", "link-local");
	guard("fec0::1", "private");
	guard("ff02::1", "multicast");
	guard("2001:db8::1", "documentation");
	guard("100::1", "reserved");
	/* The newer documentation range, benchmarking, ORCHID, and just
	 * outside each. */
	guard("3fff::1", "documentation");
	guard("3fff:fff:ffff::1", "documentation");
	guard("3fff:1000::1", NULL);
	guard("2001:2::1", "reserved");
	guard("2001:2:0:ffff::1", "reserved");
	guard("2001:2:1::1", NULL);
	guard("2001:10::1", "reserved");
	guard("2001:2f:ffff::1", "reserved");
	guard("2001:30::1", NULL);
	guard("2001:3::1", NULL);
	guard("2606:4700::1111", NULL);
	/* 6to4 relay anycast (RFC 7526), alone and inside 6to4. */
	guard("192.88.99.1", "reserved");
	guard("192.88.99.255", "reserved");
	guard("192.88.98.255", NULL);
	guard("192.88.100.0", NULL);
	guard("2002:c058:6301::", "reserved");
	/* IPv4-translated, ::ffff:0:0:0/96: the IPv4 address inside. */
	guard("::ffff:0:127.0.0.1", "loopback");
	guard("::ffff:0:10.1.2.3", "private");
	guard("::ffff:0:169.254.169.254", "link-local");
	guard("::ffff:0:8.8.8.8", NULL);
	/* Local-use NAT64, 64:ff9b:1::/48: the whole prefix, whatever the
	 * IPv4 address inside; the well-known /96 still by the one inside. */
	guard("64:ff9b:1::1", "private");
	guard("64:ff9b:1:808:8:800::", "private");
	guard("64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "private");
	guard("64:ff9b::8.8.8.8", NULL);
	/* Teredo, 2001::/32: server bytes 4-7, client 12-15 inverted (the
	 * RFC 4380 example's client is 192.0.2.45). */
	guard("2001:0:4136:e378:8000:63bf:3fff:fdd2", "documentation");
	guard("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback");
	guard("2001:0:a00:1:8000:63bf:f7f7:f7f7", "private");
	guard("2001:0:4136:e378:8000:63bf:f7f7:f7f7", NULL);
	/* Outside 2001::/32: its last 32 bits inverted would be 240/4. */
	guard("2001:4860:4860::8888", NULL);

	request("CONNECT api.anthropic.com:443 HTTP/1.1\r\n\r\n", NULL, 0,
	    "api.anthropic.com", 443);
	request("CONNECT Api.OpenAI.COM:443 HTTP/1.0\r\nHost: x\r\n\r\n",
	    NULL, 0, "api.openai.com", 443);
	request("CONNECT a.test:65535 HTTP/1.1\r\n\r\n", NULL, 0, "a.test",
	    65535);
	request("CONNECT a.test:65536 HTTP/1.1\r\n\r\n", "malformed-authority",
	    400, "", 0);
	request("CONNECT a.test:0443 HTTP/1.1\r\n\r\n", "malformed-authority",
	    400, "", 0);
	request("CONNECT a.test.:443 HTTP/1.1\r\n\r\n", "malformed-authority",
	    400, "", 0);
	request("CONNECT a%2etest:443 HTTP/1.1\r\n\r\n", "malformed-authority",
	    400, "", 0);
	request("CONNECT u@a.test:443 HTTP/1.1\r\n\r\n", "malformed-authority",
	    400, "", 0);
	request("CONNECT a.test HTTP/1.1\r\n\r\n", "malformed-authority",
	    400, "", 0);
	request("CONNECT 10.0.0.1:443 HTTP/1.1\r\n\r\n", "ip-literal", 400,
	    "", 0);
	request("CONNECT 2130706433:443 HTTP/1.1\r\n\r\n", "ip-literal", 400,
	    "", 0);
	request("CONNECT 0x7f.1:443 HTTP/1.1\r\n\r\n", "ip-literal", 400,
	    "", 0);
	request("CONNECT [fe80::1]:443 HTTP/1.1\r\n\r\n", "ip-literal", 400,
	    "", 0);
	request("CONNECT  a.test:443 HTTP/1.1\r\n\r\n", "malformed-request",
	    400, "", 0);
	request("CONNECT a.test:443 HTTP/2.0\r\n\r\n", "malformed-request",
	    400, "", 0);
	request("connect a.test:443 HTTP/1.1\r\n\r\n", "method", 405, "", 0);
	request("GET / HTTP/1.1\r\n\r\n", "method", 405, "", 0);
	request("CONNECT a.test:443 HTTP/1.1\r\nX: y\r\n z\r\n\r\n",
	    "malformed-header", 400, "", 0);
	request("CONNECT a.test:443 HTTP/1.1\nX: y\r\n\r\n",
	    "malformed-request", 400, "", 0);
	request("CONNECT a.test:443 HTTP/1.1\r\nBad Header: y\r\n\r\n",
	    "malformed-header", 400, "", 0);
	request("\x16\x03\x01 CONNECT a.test:443 HTTP/1.1\r\n\r\n",
	    "tls-handshake", 400, "", 0);
	/* Bytes after the head: the head is judged first, and only a good
	 * CONNECT followed by more is "pipelined". */
	request("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "method", 405, "", 0);
	request("GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n", "method",
	    405, "", 0);
	request("CONNECT 10.0.0.1:443 HTTP/1.1\r\n\r\nx", "ip-literal", 400,
	    "", 0);
	request("CONNECT a.test:443 HTTP/1.1\r\nBad Header: y\r\n\r\nx",
	    "malformed-header", 400, "", 0);
	request("CONNECT a.test:443 HTTP/1.1\r\n\r\nCONNECT b.test:443 "
	    "HTTP/1.1\r\n\r\n", "pipelined", 400, "", 0);
	request("CONNECT a.test:443 HTTP/1.1\r\nHost: a\r\n\r\n\x16",
	    "pipelined", 400, "", 0);
	request("CONNECT a.test:443 HTTP/1.1\r\n", "malformed-request", 400,
	    "", 0);

	list("claude", 1, "api.anthropic.com:443");
	list("codex-chatgpt", 3, "api.openai.com:443");
	list("codex,codex-chatgpt", 3, "api.openai.com:443");
	list("a.test:443=10.0.0.1:8443", 1, "a.test:443=10.0.0.1:8443");
	list("a.test:443=[fd00::1]:8443", 1, "a.test:443=[fd00::1]:8443");
	list("a.test:443=10.0.0.1:8443,a.test:443=10.0.0.2:8443", -1, "");
	list("a.test:443=a.example:443", -1, "");
	list("a.test:443,", -1, "");
	list("1.2.3.4:443", -1, "");
	list("claude=10.0.0.1:443", -1, "");
	return done_testing();
}
