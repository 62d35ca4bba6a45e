/* tlsca.h: the egress proxy's TLS (agentbox(7), "CREDENTIALS").
 *
 * For a vendor's API host the proxy ends the agent's TLS itself, under a
 * CA of the allocation's own, and opens its own verified connection to
 * the real host.  The CA lives in the proxy's memory only: its key is
 * drawn when the proxy starts and never written anywhere, and its
 * nameConstraints let it vouch for the allocation's hosts alone (and, as
 * name constraints go, names under them), never for an IP address, so
 * even an agent that trusts it trusts it for nothing else.
 *
 * Everything is OpenSSL's: keys, certificates, their extensions and the
 * verification.  The library is initialised here without reading any
 * openssl.cnf (a static proxy must not load the image's modules).
 */
#ifndef AB_TLSCA_H
#define AB_TLSCA_H

#include <stddef.h>

#include <openssl/ssl.h>

#include "buf.h"
#include "err.h"

#define AB_TLSCA_HOSTS_MAX 32		/* hosts of one CA */
#define AB_TLSCA_HOST_MAX 253		/* a DNS name, no trailing dot */
#define AB_TLSCA_ID_MAX 44		/* CN "agentbox allocation ID" <= 64 */
#define AB_TLSCA_EXTRA_MAX (1 << 20)	/* --ca's PEM text */

/* A CA key and certificate and one leaf key, in memory only. */
struct ab_tlsca;

/* A new CA: an EC P-256 key drawn now; self-signed; basicConstraints
 * critical CA:TRUE pathlen:0; keyUsage critical keyCertSign cRLSign;
 * nameConstraints critical, permitting the DNS names HOSTS and excluding
 * every IPv4 and IPv6 address; subject "CN=agentbox allocation ID"; valid
 * from an hour ago (clocks differ) to NOT_AFTER (unix seconds); a random
 * 128-bit serial.  HOSTS are lowercase DNS names (no IP literal, no
 * wildcard), ID is [A-Za-z0-9._-]; anything else is AB_EUSAGE, as is a
 * NOT_AFTER already past.  0, or -1 with err set. */
int ab_tlsca_new(struct ab_tlsca **out, const char *id,
    const char *const *hosts, size_t nhosts, long long not_after,
    struct ab_err *err);
/* Frees CA (NULL is fine); the contexts handed out keep what they use. */
void ab_tlsca_free(struct ab_tlsca *ca);

/* Appends the CA's certificate alone, PEM, to OUT: what agents trust. */
int ab_tlsca_cert_pem(const struct ab_tlsca *ca, struct ab_buf *out,
    struct ab_err *err);

/* A server context presenting a leaf for HOST, which must be one of the
 * CA's hosts (anything else is AB_EREFUSED): the CA's signature,
 * subjectAltName DNS:HOST alone, extendedKeyUsage serverAuth, the CA's
 * validity.  TLS 1.2 and 1.3 only; ALPN selects "http/1.1", and a client
 * that offers protocols but not that one is refused (no_application_
 * protocol); one that offers none is served.  Each host's context is made
 * once and shared; any thread may ask.  The caller owns one reference
 * (SSL_CTX_free), or NULL with err set. */
SSL_CTX *ab_tlsca_server_ctx(struct ab_tlsca *ca, const char *host,
    struct ab_err *err);

/* A client context for the proxy's own connections: TLS 1.2 or later,
 * the peer verified (SSL_VERIFY_PEER) against the certificates of the PEM
 * file ANCHORS (the image's bundle; NULL: none) and those of the PEM text
 * EXTRA of EXTRA_LEN bytes (NULL: none; else at least one certificate,
 * and certificates only: no key, no CRL, no broken block); ALPN offers
 * "http/1.1".  Neither given is AB_EUSAGE.  NULL with err set. */
SSL_CTX *ab_tls_client_ctx(const char *anchors, const char *extra,
    size_t extra_len, struct ab_err *err);
/* The same, shared: one context per ANCHORS path and EXTRA bytes, made
 * once (loading the image's bundle costs milliseconds, a new connection's
 * first request should not) and handed out with a reference of the
 * caller's own (SSL_CTX_free it).  The last AB_TLS_SHARED kept. */
#define AB_TLS_SHARED 8
SSL_CTX *ab_tls_client_ctx_shared(const char *anchors, const char *extra,
    size_t extra_len, struct ab_err *err);
/* Before the handshake: SNI HOST, and HOST the name the peer's
 * certificate must carry (no partial wildcards).  HOST as for
 * ab_tlsca_new. */
int ab_tls_client_host(SSL *ssl, const char *host, struct ab_err *err);

/* One line for a log: why SSL's handshake failed.  The verification's
 * result when it failed ("certificate verify failed: hostname
 * mismatch"), else the first error OpenSSL queued on this thread (the
 * queue is then cleared), else "connection closed".  Call it on the
 * thread whose handshake failed, right after. */
void ab_tls_reason(const SSL *ssl, char *buf, size_t cap);

/* The CA's key, borrowed: for tests, to sign what this module never
 * would.  The proxy has no use for it. */
EVP_PKEY *ab_tlsca_key_for_test(const struct ab_tlsca *ca);

#endif
