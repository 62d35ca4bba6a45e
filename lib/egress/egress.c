#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "egress.h"

/* --- the allowlist ---------------------------------------------------- */

struct set {
	const char *name;
	const char *const entries[4];
};

/* The vendors' API hosts; the sign-in sets add what their CLIs reach to
 * sign in and refresh a token. */
static const struct set sets[] = {
	{ "claude", { "api.anthropic.com:443", NULL } },
	{ "claude-oauth", { "api.anthropic.com:443", "platform.claude.com:443",
	    NULL } },
	{ "codex", { "api.openai.com:443", NULL } },
	{ "codex-chatgpt", { "api.openai.com:443", "chatgpt.com:443",
	    "auth.openai.com:443", NULL } },
	{ NULL, { NULL } }
};

/* Each provider's API host, where its credential goes in (intercept.h):
 * the only hosts the proxy ends TLS for. */
static const struct {
	const char *provider, *host;
	int port;
} apis[] = {
	{ "claude", "api.anthropic.com", 443 },
	{ "codex", "api.openai.com", 443 },
	{ NULL, NULL, 0 }
};

/* What each CLI's sign-in reaches: the model's hosts, and the one it
 * refreshes its tokens at (seen in the CLIs: Codex posts to
 * auth.openai.com/oauth/token, Claude Code to
 * platform.claude.com/v1/oauth/token). */
static const struct ab_egress_signin signins[] = {
	{ "codex", { "chatgpt.com", "api.openai.com", NULL },
	    "auth.openai.com", "/oauth/token" },
	{ "claude", { "api.anthropic.com", NULL }, "platform.claude.com",
	    "/v1/oauth/token" },
	{ NULL, { NULL }, NULL, NULL }
};

const struct ab_egress_signin *ab_egress_signin(const char *provider)
{
	int i;

	for (i = 0; signins[i].provider != NULL; i++)
		if (strcmp(signins[i].provider, provider) == 0)
			return &signins[i];
	return NULL;
}

const struct ab_egress_signin *ab_egress_token_host(const char *host,
    int port)
{
	int i;

	for (i = 0; port == 443 && signins[i].provider != NULL; i++)
		if (strcmp(signins[i].token_host, host) == 0)
			return &signins[i];
	return NULL;
}

int ab_egress_provider(const char *host, int port)
{
	int i, k;

	for (i = 0; apis[i].host != NULL; i++)
		if (strcmp(apis[i].host, host) == 0 && apis[i].port == port)
			return 1;
	for (i = 0; port == 443 && signins[i].provider != NULL; i++)
		for (k = 0; signins[i].api[k] != NULL; k++)
			if (strcmp(signins[i].api[k], host) == 0)
				return 1;
	return ab_egress_token_host(host, port) != NULL;
}

const char *ab_egress_api(const char *provider, int *port)
{
	int i;

	for (i = 0; apis[i].host != NULL; i++)
		if (strcmp(apis[i].provider, provider) == 0) {
			*port = apis[i].port;
			return apis[i].host;
		}
	return NULL;
}

int ab_egress_injects(const struct ab_egress_list *l, const char *provider)
{
	const char *host;
	int port;

	return (host = ab_egress_api(provider, &port)) != NULL &&
	    ab_egress_find(l, host, port) != NULL;
}

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/* Decimal 1-65535, no sign, no leading zero. */
static int parse_port(const char *s, size_t n, int *port)
{
	size_t i;
	long v = 0;

	if (n == 0 || n > 5 || s[0] == '0')
		return -1;
	for (i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v < 1 || v > 65535)
		return -1;
	*port = (int)v;
	return 0;
}

/* A hex number "0x..." or a decimal one: an IPv4 component, as
 * inet_aton(3) and the URL standard read one. */
static int numeric_label(const char *s, size_t n)
{
	size_t i = 0;

	if (n == 0)
		return 0;
	if (n > 1 && s[0] == '0' && lower(s[1]) == 'x') {
		for (i = 2; i < n; i++)
			if (!is_digit(s[i]) && (lower(s[i]) < 'a' ||
			    lower(s[i]) > 'f'))
				return 0;
		return 1;
	}
	for (; i < n; i++)
		if (!is_digit(s[i]))
			return 0;
	return 1;
}

/* RFC 1123 labels of letters, digits and inner hyphens, lowercased into
 * HOST.  A name whose last label is a number is an IPv4 address in some
 * spelling ("127.1", "0x7f000001"): "ip-literal". */
static const char *check_host(const char *s, size_t n,
    char host[AB_EGRESS_HOST_MAX + 1])
{
	size_t i, start = 0;

	if (n > 0 && s[0] == '[')
		return "ip-literal";
	if (n == 0 || n > AB_EGRESS_HOST_MAX)
		return "malformed-authority";
	for (i = 0; i <= n; i++) {
		if (i < n && s[i] != '.') {
			int c = lower((unsigned char)s[i]);

			if (!(c >= 'a' && c <= 'z') && !is_digit(c) && c != '-')
				return "malformed-authority";
			host[i] = (char)c;
			continue;
		}
		/* The end of a label: not empty, at most 63, no hyphen at
		 * either end (so no trailing dot either). */
		if (i == start || i - start > 63 || s[start] == '-' ||
		    s[i - 1] == '-')
			return "malformed-authority";
		if (i < n)
			host[i] = '.';
		if (i == n && numeric_label(s + start, i - start))
			return "ip-literal";
		start = i + 1;
	}
	host[n] = '\0';
	return NULL;
}

const char *ab_egress_authority(const char *s, size_t n,
    char host[AB_EGRESS_HOST_MAX + 1], int *port)
{
	const char *colon = NULL, *r;
	size_t i;

	for (i = 0; i < n; i++) {
		if (s[i] == ':') {
			if (colon != NULL)
				return s[0] == '[' ? "ip-literal" :
				    "malformed-authority";
			colon = s + i;
		}
	}
	if (n > 0 && s[0] == '[')
		return "ip-literal";
	if (colon == NULL)
		return "malformed-authority";
	if ((r = check_host(s, (size_t)(colon - s), host)) != NULL)
		return r;
	if (parse_port(colon + 1, (size_t)(s + n - colon - 1), port) < 0)
		return "malformed-authority";
	return NULL;
}

/* ADDR:PORT, or [ADDR]:PORT for IPv6: a literal, never a name. */
static int parse_pin(const char *s, struct ab_egress_entry *e)
{
	struct sockaddr_in *v4 = (struct sockaddr_in *)&e->pin;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&e->pin;
	char addr[64];
	const char *colon = strrchr(s, ':'), *a = s;
	size_t n;
	int port;

	if (colon == NULL || parse_port(colon + 1, strlen(colon + 1),
	    &port) < 0)
		return -1;
	n = (size_t)(colon - s);
	if (n > 1 && s[0] == '[' && s[n - 1] == ']') {
		a = s + 1;
		n -= 2;
	}
	if (n == 0 || n >= sizeof addr)
		return -1;
	memcpy(addr, a, n);
	addr[n] = '\0';
	memset(&e->pin, 0, sizeof e->pin);
	if (a == s && inet_pton(AF_INET, addr, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((unsigned short)port);
		e->pin_len = sizeof *v4;
	} else if (a != s && inet_pton(AF_INET6, addr, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((unsigned short)port);
		e->pin_len = sizeof *v6;
	} else {
		return -1;
	}
	e->pinned = 1;
	return 0;
}

int ab_egress_entry_parse(struct ab_egress_entry *e, const char *s,
    struct ab_err *err)
{
	const char *eq = strchr(s, '='), *why;
	size_t n = eq ? (size_t)(eq - s) : strlen(s);

	memset(e, 0, sizeof *e);
	why = ab_egress_authority(s, n, e->host, &e->port);
	if (why != NULL)
		return ab_fail(err, AB_EUSAGE, "egress entry %.300s: %s: give "
		    "HOST:PORT with a DNS name", s, strcmp(why, "ip-literal") ?
		    "not HOST:PORT" : "an IP address is not a host");
	if (eq != NULL && parse_pin(eq + 1, e) < 0)
		return ab_fail(err, AB_EUSAGE, "egress entry %.300s: the pin "
		    "must be ADDR:PORT or [ADDR]:PORT, an IP address", s);
	return 0;
}

void ab_egress_entry_text(const struct ab_egress_entry *e, char *buf,
    size_t cap)
{
	const struct sockaddr_in *v4 = (const struct sockaddr_in *)&e->pin;
	const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)&e->pin;
	char a[INET6_ADDRSTRLEN];
	int r;

	if (!e->pinned) {
		r = ab_fmt(buf, cap, "%s:%d", e->host, e->port);
	} else if (e->pin.ss_family == AF_INET) {
		inet_ntop(AF_INET, &v4->sin_addr, a, sizeof a);
		r = ab_fmt(buf, cap, "%s:%d=%s:%d", e->host, e->port, a,
		    ntohs(v4->sin_port));
	} else {
		inet_ntop(AF_INET6, &v6->sin6_addr, a, sizeof a);
		r = ab_fmt(buf, cap, "%s:%d=[%s]:%d", e->host, e->port, a,
		    ntohs(v6->sin6_port));
	}
	/* Callers' buffers hold the longest entry: a bug here when cut. */
	if (r < 0)
		abort();
}

const struct ab_egress_entry *ab_egress_find(const struct ab_egress_list *l,
    const char *host, int port)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (l->e[i].port == port && strcmp(l->e[i].host, host) == 0)
			return &l->e[i];
	return NULL;
}

static int add_entry(struct ab_egress_list *l, const char *s,
    struct ab_err *err)
{
	struct ab_egress_entry e;

	if (ab_egress_entry_parse(&e, s, err) < 0)
		return -1;
	/* One entry per HOST:PORT: a second, differently pinned, would make
	 * the dialled address depend on the order. */
	if (ab_egress_find(l, e.host, e.port) != NULL) {
		const struct ab_egress_entry *o = ab_egress_find(l, e.host,
		    e.port);

		if (o->pinned != e.pinned || (e.pinned &&
		    memcmp(&o->pin, &e.pin, sizeof e.pin) != 0))
			return ab_fail(err, AB_EUSAGE, "egress: %s:%d is given "
			    "twice, differently", e.host, e.port);
		return 0;
	}
	if (l->n == AB_EGRESS_MAX)
		return ab_fail(err, AB_EUSAGE, "egress: more than %d entries",
		    AB_EGRESS_MAX);
	l->e[l->n++] = e;
	return 0;
}

int ab_egress_parse(struct ab_egress_list *l, const char *list,
    struct ab_err *err)
{
	char item[512];
	const char *p = list, *comma;
	const struct set *st;
	size_t n;
	int i;

	memset(l, 0, sizeof *l);
	for (;;) {
		comma = strchr(p, ',');
		n = comma ? (size_t)(comma - p) : strlen(p);
		if (n == 0 || n >= sizeof item)
			return ab_fail(err, AB_EUSAGE, "egress: an empty or "
			    "overlong entry in %.200s", list);
		memcpy(item, p, n);
		item[n] = '\0';
		for (st = sets; st->name != NULL; st++)
			if (strcmp(st->name, item) == 0)
				break;
		if (st->name != NULL) {
			for (i = 0; st->entries[i] != NULL; i++)
				if (add_entry(l, st->entries[i], err) < 0)
					return -1;
		} else if (add_entry(l, item, err) < 0) {
			return -1;
		}
		if (comma == NULL)
			return 0;
		p = comma + 1;
	}
}

/* --- the request ------------------------------------------------------ */

size_t ab_egress_head_len(const char *p, size_t n)
{
	size_t i;

	for (i = 3; i < n; i++)
		if (p[i - 3] == '\r' && p[i - 2] == '\n' && p[i - 1] == '\r' &&
		    p[i] == '\n')
			return i + 1;
	return 0;
}

static int tchar(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    is_digit(c) || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c));
}

/* One header line "Name: value" (no CR or LF in it): a token, a colon,
 * visible characters, spaces and tabs.  No folding. */
static int header_ok(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && tchar((unsigned char)s[i]))
		i++;
	if (i == 0 || i == n || s[i] != ':')
		return 0;
	for (i++; i < n; i++)
		if ((unsigned char)s[i] < 0x20 && s[i] != '\t')
			return 0;
		else if ((unsigned char)s[i] == 0x7f)
			return 0;
	return 1;
}

static const char *refuse(int *status, int code, const char *why)
{
	*status = code;
	return why;
}

/* The request line: "CONNECT HOST:PORT HTTP/1.1" (or 1.0), single
 * spaces. */
static const char *request_line(const char *s, size_t n,
    char host[AB_EGRESS_HOST_MAX + 1], int *port, int *status)
{
	const char *sp1 = memchr(s, ' ', n), *sp2, *why;
	size_t rest;

	if (sp1 == NULL)
		return refuse(status, 400, "malformed-request");
	if ((size_t)(sp1 - s) != 7 || memcmp(s, "CONNECT", 7) != 0)
		return refuse(status, 405, "method");
	rest = n - 8;
	sp2 = memchr(sp1 + 1, ' ', rest);
	if (sp2 == NULL || (size_t)(s + n - sp2 - 1) != 8 ||
	    (memcmp(sp2 + 1, "HTTP/1.1", 8) != 0 &&
	    memcmp(sp2 + 1, "HTTP/1.0", 8) != 0))
		return refuse(status, 400, "malformed-request");
	why = ab_egress_authority(sp1 + 1, (size_t)(sp2 - sp1 - 1), host,
	    port);
	return why ? refuse(status, 400, why) : NULL;
}

const char *ab_egress_first_byte(unsigned char c, int *status)
{
	if (c == 0x16)
		return refuse(status, 400, "tls-handshake");
	if (c == 0x04 || c == 0x05)
		return refuse(status, 400, "socks");
	return NULL;
}

const char *ab_egress_request(const char *head, size_t n,
    char host[AB_EGRESS_HOST_MAX + 1], int *port, int *status)
{
	size_t len = ab_egress_head_len(head, n);
	const char *p = head, *end = head + len, *eol, *why;
	int line = 0;

	if (n > 0 && (why = ab_egress_first_byte((unsigned char)head[0],
	    status)) != NULL)
		return why;
	if (len == 0)
		return refuse(status, 400, "malformed-request");
	for (; p < end; p = eol + 2, line++) {
		eol = p;
		while (eol + 1 < end && !(eol[0] == '\r' && eol[1] == '\n')) {
			if (*eol == '\r' || *eol == '\n' || *eol == '\0')
				return refuse(status, 400,
				    "malformed-request");
			eol++;
		}
		if (eol + 1 >= end)
			return refuse(status, 400, "malformed-request");
		if (line == 0) {
			why = request_line(p, (size_t)(eol - p), host, port,
			    status);
			if (why != NULL)
				return why;
		} else if (eol == p) {
			/* The head is good; nothing may follow it before the
			 * tunnel exists: a second request, or early data. */
			return len == n ? NULL :
			    refuse(status, 400, "pipelined");
		} else if (line > AB_EGRESS_HEADERS_MAX ||
		    !header_ok(p, (size_t)(eol - p))) {
			return refuse(status, 400, "malformed-header");
		}
	}
	return refuse(status, 400, "malformed-request");
}

/* --- the address guard ------------------------------------------------ */

struct net4 {
	unsigned int addr, bits;
	const char *why;
};

static const struct net4 v4_refused[] = {
	{ 0x00000000, 8, "unspecified" },	/* 0.0.0.0/8 */
	{ 0x7f000000, 8, "loopback" },		/* 127/8 */
	{ 0x0a000000, 8, "private" },		/* 10/8 */
	{ 0xac100000, 12, "private" },		/* 172.16/12 */
	{ 0xc0a80000, 16, "private" },		/* 192.168/16 */
	{ 0x64400000, 10, "cgnat" },		/* 100.64/10 */
	{ 0xa9fe0000, 16, "link-local" },	/* 169.254/16, metadata */
	{ 0xc0000000, 24, "reserved" },		/* 192.0.0/24 */
	{ 0xc0000200, 24, "documentation" },	/* 192.0.2/24 */
	{ 0xc0586300, 24, "reserved" },		/* 192.88.99/24, 6to4 relays */
	{ 0xc6120000, 15, "reserved" },		/* 198.18/15 */
	{ 0xc6336400, 24, "documentation" },	/* 198.51.100/24 */
	{ 0xcb007100, 24, "documentation" },	/* 203.0.113/24 */
	{ 0xe0000000, 4, "multicast" },		/* 224/4 */
	{ 0xf0000000, 4, "reserved" },		/* 240/4, broadcast */
	{ 0, 0, NULL }
};

static const char *guard4(unsigned int a)
{
	const struct net4 *n;

	for (n = v4_refused; n->why != NULL; n++)
		if ((a >> (32 - n->bits)) == (n->addr >> (32 - n->bits)))
			return n->why;
	return NULL;
}

static unsigned int v4_at(const unsigned char *b)
{
	return (unsigned int)b[0] << 24 | (unsigned int)b[1] << 16 |
	    (unsigned int)b[2] << 8 | b[3];
}

static int prefix_is(const unsigned char *b, const unsigned char *p,
    size_t n)
{
	return memcmp(b, p, n) == 0;
}

/* Teredo (2001::/32): a relay carries the packets over UDP to the
 * client's IPv4 address (the last 32 bits, inverted) and may go through
 * the server's (bytes 4-7), so either one an agent must never reach
 * refuses the address, as 6to4 is judged by the IPv4 address inside. */
static const char *teredo(const unsigned char *b)
{
	const char *why = guard4(~v4_at(b + 12) & 0xffffffffu);

	return why != NULL ? why : guard4(v4_at(b + 4));
}

static const char *guard6(const unsigned char *b)
{
	static const unsigned char zero[16], mapped[12] = { [10] = 0xff,
	    [11] = 0xff }, translated[12] = { [8] = 0xff, [9] = 0xff },
	    nat64[12] = { 0, 0x64, 0xff, 0x9b }, nat64_local[6] = { 0,
	    0x64, 0xff, 0x9b, 0, 1 }, teredo_pfx[4] = { 0x20, 0x01 };

	if (prefix_is(b, zero, 15))
		return b[15] == 1 ? "loopback" : "unspecified";
	/* IPv4 inside: mapped, translated, NAT64, compatible, 6to4. */
	if (prefix_is(b, mapped, 12) || prefix_is(b, translated, 12) ||
	    prefix_is(b, nat64, 12) || prefix_is(b, zero, 12))
		return guard4(v4_at(b + 12));
	if (b[0] == 0x20 && b[1] == 0x02)
		return guard4(v4_at(b + 2));		/* 2002::/16 */
	if (prefix_is(b, teredo_pfx, 4))
		return teredo(b);
	/* Local-use NAT64 (RFC 8215): where the IPv4 address sits depends
	 * on a prefix length inside the /48 that only the local operator
	 * knows, and the translator is a local one: private, like ULA. */
	if (prefix_is(b, nat64_local, 6))
		return "private";			/* 64:ff9b:1::/48 */
	if ((b[0] & 0xfe) == 0xfc)
		return "private";			/* fc00::/7 */
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
		return "link-local";			/* fe80::/10 */
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0)
		return "private";			/* fec0::/10 */
	if (b[0] == 0xff)
		return "multicast";
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8)
		return "documentation";			/* 2001:db8::/32 */
	if (b[0] == 0x3f && b[1] == 0xff && (b[2] & 0xf0) == 0)
		return "documentation";			/* 3fff::/20 */
	/* Benchmarking, the twin of 198.18/15, and ORCHID: never routed. */
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && (b[3] == 2 ||
	    (b[3] & 0xf0) == 0x10 || (b[3] & 0xf0) == 0x20) &&
	    (b[3] != 2 || (b[4] == 0 && b[5] == 0)))
		return "reserved";	/* 2001:2::/48, 2001:10::/28, 2001:20::/28 */
	if (b[0] == 0x01 && prefix_is(b + 1, zero, 7))
		return "reserved";			/* 100::/64 */
	return NULL;
}

const char *ab_egress_guard(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return guard4(ntohl(((const struct sockaddr_in *)sa)->
		    sin_addr.s_addr));
	if (sa->sa_family == AF_INET6)
		return guard6(((const struct sockaddr_in6 *)sa)->
		    sin6_addr.s6_addr);
	return "reserved";
}

/* --- moving bytes ----------------------------------------------------- */

struct dir {
	int from, to;
	char buf[AB_EGRESS_PUMP_BUF];
	size_t len, off;
	int eof;		/* from ended; passed on once buf is empty */
	int done;
	long long moved;
	long long *live;	/* added to as bytes go, or NULL */
};

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One step of a direction whose poll said it may go on; 1 when bytes
 * moved.  send(2) with MSG_NOSIGNAL: a peer gone is an error, never a
 * SIGPIPE. */
static int step(struct dir *d, short rev_from, short rev_to)
{
	ssize_t k;

	if (d->len == 0 && !d->eof && (rev_from & (POLLIN | POLLHUP |
	    POLLERR))) {
		k = recv(d->from, d->buf, sizeof d->buf, 0);
		if (k > 0) {
			d->len = (size_t)k;
			d->off = 0;
			return 1;
		}
		if (k == 0 || (errno != EAGAIN && errno != EINTR))
			d->eof = 1;
	}
	if (d->len > 0 && (rev_to & (POLLOUT | POLLERR | POLLHUP))) {
		k = send(d->to, d->buf + d->off, d->len, MSG_NOSIGNAL);
		if (k > 0) {
			d->off += (size_t)k;
			d->len -= (size_t)k;
			d->moved += k;
			if (d->live != NULL)
				__atomic_add_fetch(d->live, k, __ATOMIC_RELAXED);
			return 1;
		}
		if (errno != EAGAIN && errno != EINTR) {
			d->eof = 1;
			d->len = 0;
		}
	}
	if (d->eof && d->len == 0 && !d->done) {
		shutdown(d->to, SHUT_WR);
		d->done = 1;
	}
	return 0;
}

static void set_events(const struct dir *d, struct pollfd *from,
    struct pollfd *to)
{
	if (!d->done && d->len == 0 && !d->eof)
		from->events |= POLLIN;
	if (!d->done && d->len > 0)
		to->events |= POLLOUT;
}

void ab_egress_pump(int a, int b, long idle_ms, volatile int *stop,
    long long moved[2], long long *live[2])
{
	struct pollfd p[2];
	struct dir *d;
	long long last = mono_ms();
	int went, n;

	moved[0] = moved[1] = 0;
	if ((d = calloc(2, sizeof *d)) == NULL)
		return;
	if (live != NULL) {
		d[0].live = live[0];
		d[1].live = live[1];
	}
	fcntl(a, F_SETFL, fcntl(a, F_GETFL) | O_NONBLOCK);
	fcntl(b, F_SETFL, fcntl(b, F_GETFL) | O_NONBLOCK);
	d[0].from = a;
	d[0].to = b;
	d[1].from = b;
	d[1].to = a;
	while (!(d[0].done && d[1].done) && !*stop) {
		p[0].fd = a;
		p[1].fd = b;
		p[0].events = p[1].events = 0;
		set_events(&d[0], &p[0], &p[1]);
		set_events(&d[1], &p[1], &p[0]);
		/* Wake at least once a second to see *stop. */
		n = poll(p, 2, 1000);
		if (n < 0 && errno != EINTR)
			break;
		went = 0;
		if (n > 0) {
			went |= step(&d[0], p[0].revents, p[1].revents);
			went |= step(&d[1], p[1].revents, p[0].revents);
		}
		if (went)
			last = mono_ms();
		else if (mono_ms() - last > idle_ms)
			break;
	}
	moved[0] = d[0].moved;
	moved[1] = d[1].moved;
	free(d);
}
