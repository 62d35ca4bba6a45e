/* egress.h: the egress allowlist and what the proxy decides (agentbox(7),
 * "EGRESS").
 *
 * ab-alloc parses the list a user gives; ab-proxy, inside the allocation's
 * proxy container, parses each request, compares its HOST:PORT exactly with
 * the list, refuses addresses an agent must never reach, and moves the
 * bytes.  Everything here is pure (no engine, no state), so the parsers of
 * untrusted bytes can be fuzzed alone.
 */
#ifndef AB_EGRESS_H
#define AB_EGRESS_H

#include <stddef.h>
#include <sys/socket.h>

#include "err.h"

#define AB_EGRESS_MAX 32		/* entries in a list */
#define AB_EGRESS_HOST_MAX 253		/* a DNS name, no trailing dot */
#define AB_EGRESS_HEAD_MAX 8192		/* request line and headers */
#define AB_EGRESS_HEADERS_MAX 64

/* What one tunnel may cost the proxy, by construction: the pump's two
 * buffers, its sockets' buffers pinned at AB_EGRESS_SOCK_BUF each way (the
 * kernel doubles what is set, and charges TCP's to the proxy's memory),
 * and its thread's stack and the kernel's bookkeeping.  The proxy's
 * memory limit is this times its connection bound, and a base. */
#define AB_EGRESS_PUMP_BUF (64 << 10)
#define AB_EGRESS_SOCK_BUF (128 << 10)
#define AB_EGRESS_CONN_MEMORY (2LL * AB_EGRESS_PUMP_BUF + \
	4LL * AB_EGRESS_SOCK_BUF + (128 << 10))

struct ab_egress_entry {
	char host[AB_EGRESS_HOST_MAX + 1];	/* lowercase */
	int port;
	int pinned;				/* =ADDR:PORT given */
	struct sockaddr_storage pin;
	socklen_t pin_len;
};

struct ab_egress_list {
	struct ab_egress_entry e[AB_EGRESS_MAX];
	int n;
};

/* LIST: NAME[,NAME...], each a built-in set (claude, claude-oauth, codex,
 * codex-chatgpt) or HOST:PORT[=ADDR:PORT].  Duplicates are dropped;
 * AB_EUSAGE naming the bad entry. */
int ab_egress_parse(struct ab_egress_list *l, const char *list,
    struct ab_err *err);
/* One HOST:PORT[=ADDR:PORT] entry. */
int ab_egress_entry_parse(struct ab_egress_entry *e, const char *s,
    struct ab_err *err);
/* The canonical text of e: "host:port" or "host:port=addr:port". */
void ab_egress_entry_text(const struct ab_egress_entry *e, char *buf,
    size_t cap);
/* The entry allowing HOST:PORT exactly, or NULL. */
const struct ab_egress_entry *ab_egress_find(const struct ab_egress_list *l,
    const char *host, int port);

/* 1 when HOST:PORT is a provider's API host or a host of its sign-in:
 * the proxy ends TLS there when the vault holds a credential for it
 * (intercept.h). */
int ab_egress_provider(const char *host, int port);

/* A provider's subscription sign-in: the hosts its access token goes
 * to, and where its CLI refreshes it (oauth.h).  Every host on port
 * 443. */
struct ab_egress_signin {
	const char *provider;
	const char *api[3];	/* NULL-terminated */
	const char *token_host;
	const char *token_path;
};

/* PROVIDER's ("codex", "claude"), or NULL. */
const struct ab_egress_signin *ab_egress_signin(const char *provider);
/* The sign-in whose token host HOST:PORT is, or NULL. */
const struct ab_egress_signin *ab_egress_token_host(const char *host,
    int port);
/* PROVIDER's API host and its port, or NULL. */
const char *ab_egress_api(const char *provider, int *port);

/* 1 when L allows PROVIDER's API host: its credential stays with the
 * proxy, and the agent holds a placeholder (agentbox(7), "CREDENTIALS"). */
int ab_egress_injects(const struct ab_egress_list *l, const char *provider);

/* HOST:PORT as a CONNECT request names it (N bytes at S): NULL with the
 * lowercased host and the port, or the reason it is refused
 * ("ip-literal", "malformed-authority"). */
const char *ab_egress_authority(const char *s, size_t n,
    char host[AB_EGRESS_HOST_MAX + 1], int *port);

/* A request: N bytes as received, its head through the blank line and
 * whatever came after it.  NULL with host and port; or the reason, with
 * *status the HTTP status to answer (400 malformed, 405 not CONNECT).
 * The head is judged first: only a good CONNECT head with bytes after it
 * is "pipelined", so an HTTP/2 preface is "method". */
const char *ab_egress_request(const char *head, size_t n,
    char host[AB_EGRESS_HOST_MAX + 1], int *port, int *status);
/* The first byte of a connection, judged alone: a TLS handshake or a
 * SOCKS greeting is refused at once (400), without waiting for a head. */
const char *ab_egress_first_byte(unsigned char c, int *status);
/* The length of the head in the N bytes at P (through "\r\n\r\n"), 0 when
 * it has not ended yet. */
size_t ab_egress_head_len(const char *p, size_t n);

/* NULL when an agent may reach SA; else why not: "loopback",
 * "unspecified", "private", "cgnat", "link-local", "multicast",
 * "reserved", "documentation".  Mapped, translated, compatible, NAT64
 * (64:ff9b::/96) and 6to4 addresses are judged by the IPv4 address
 * inside, Teredo by both of its own; local-use NAT64 (64:ff9b:1::/48) is
 * "private" whole. */
const char *ab_egress_guard(const struct sockaddr *sa);

/* Moves bytes between sockets A and B (both made non-blocking here) until
 * both directions have ended, nothing moved for IDLE_MS, or *stop is set.
 * An end of one direction is passed on as a half-close.  MOVED gets the
 * bytes sent each way, A to B first; LIVE (or NULL) points at counters
 * other threads read, added to atomically as the bytes go. */
void ab_egress_pump(int a, int b, long idle_ms, volatile int *stop,
    long long moved[2], long long *live[2]);

#endif
