#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "tlsca.h"

#define CLOCK_SKEW 3600		/* notBefore this far back: clocks differ */
#define LAST_TIME 253402300799LL	/* 9999-12-31T23:59:59Z */

struct ab_tlsca {
	EVP_PKEY *key;		/* the CA's */
	X509 *cert;
	EVP_PKEY *leaf_key;	/* every leaf's */
	long long not_before, not_after;
	size_t n;
	char host[AB_TLSCA_HOSTS_MAX][AB_TLSCA_HOST_MAX + 1];
	SSL_CTX *ctx[AB_TLSCA_HOSTS_MAX];	/* made on first ask */
	pthread_mutex_t lock;			/* over ctx */
};

/* "http/1.1" as ALPN's wire list. */
static const unsigned char alpn_h1[] = "\x08http/1.1";

/* The reason of OpenSSL's error E, in words: a system call's is its
 * errno's. */
static const char *reason(unsigned long e)
{
	const char *why;

	if (ERR_SYSTEM_ERROR(e))
		return strerror(ERR_GET_REASON(e));
	why = ERR_reason_error_string(e);
	return why != NULL ? why : "OpenSSL failed";
}

/* err as ab_fail, with OpenSSL's first queued reason; the queue is
 * cleared, so the thread's next call starts clean. */
static int ossl_fail(struct ab_err *err, int code, const char *what)
{
	unsigned long e = ERR_peek_error();

	ab_fail(err, code, "%s: %s", what, e != 0 ? reason(e) :
	    "OpenSSL failed");
	ERR_clear_error();
	return -1;
}

/* Without openssl.cnf: the image's, if any, is no business of a static
 * proxy's (it may name modules of another OpenSSL).  The first call
 * decides; every later one, OpenSSL's own included, is a no-op. */
static int init(struct ab_err *err)
{
	if (OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG, NULL) != 1)
		return ossl_fail(err, AB_EENGINE, "cannot initialise OpenSSL");
	return 0;
}

static int is_alpha(int c)
{
	return c >= 'a' && c <= 'z';
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/* A lowercase DNS name: labels of [a-z0-9-], 1-63 bytes, no '-' at
 * either end; the last one starts with a letter, so that no spelling of
 * an IPv4 address (1.2.3.4, 0x7f000001) passes for a name. */
static int host_ok(const char *h)
{
	size_t i, n = strlen(h), label = 0, last = 0;

	if (n == 0 || n > AB_TLSCA_HOST_MAX)
		return 0;
	for (i = 0; i <= n; i++) {
		if (i == n || h[i] == '.') {
			if (label == 0 || label > 63 || h[i - 1] == '-')
				return 0;
			label = 0;
			continue;
		}
		if (label == 0) {
			if (h[i] == '-')
				return 0;
			last = i;
		}
		if (!is_alpha(h[i]) && !is_digit(h[i]) && h[i] != '-')
			return 0;
		label++;
	}
	return is_alpha(h[last]);
}

static int id_ok(const char *id)
{
	size_t i, n = strlen(id);

	if (n == 0 || n > AB_TLSCA_ID_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!is_alpha(id[i]) && !(id[i] >= 'A' && id[i] <= 'Z') &&
		    !is_digit(id[i]) && strchr("._-", id[i]) == NULL)
			return 0;
	return 1;
}

/* --- certificates ------------------------------------------------------ */

/* A random positive 128-bit serial, never zero. */
static int set_serial(X509 *x)
{
	unsigned char r[16];
	BIGNUM *bn = NULL;
	int ok;

	do {
		BN_free(bn);
		bn = NULL;
		if (RAND_bytes(r, sizeof r) != 1 ||
		    (bn = BN_bin2bn(r, sizeof r, NULL)) == NULL)
			return -1;
	} while (BN_is_zero(bn));
	ok = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
	BN_free(bn);
	return ok ? 0 : -1;
}

/* A v3 certificate of CN for KEY's public half, named as issued by
 * ISSUER (NULL: by itself), valid as CA says. */
static X509 *cert_new(const struct ab_tlsca *ca, const char *cn,
    X509 *issuer, EVP_PKEY *key)
{
	X509 *x = X509_new();
	X509_NAME *name;

	if (x == NULL || X509_set_version(x, X509_VERSION_3) != 1 ||
	    set_serial(x) < 0 ||
	    ASN1_TIME_set(X509_getm_notBefore(x), (time_t)ca->not_before) ==
	    NULL ||
	    ASN1_TIME_set(X509_getm_notAfter(x), (time_t)ca->not_after) ==
	    NULL ||
	    X509_set_pubkey(x, key) != 1)
		goto fail;
	name = X509_get_subject_name(x);
	if (X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_UTF8,
	    (const unsigned char *)cn, -1, -1, 0) != 1 ||
	    X509_set_issuer_name(x, issuer != NULL ?
	    X509_get_subject_name(issuer) : name) != 1)
		goto fail;
	return x;
fail:
	X509_free(x);
	return NULL;
}

/* One extension of X, written as openssl.cnf would (constant text
 * only); ISSUER is what keyid values are taken from. */
static int add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX v;
	X509_EXTENSION *e;
	int ok;

	X509V3_set_ctx(&v, issuer, x, NULL, NULL, 0);
	e = X509V3_EXT_conf_nid(NULL, &v, nid, value);
	ok = e != NULL && X509_add_ext(x, e, -1) == 1;
	X509_EXTENSION_free(e);
	return ok ? 0 : -1;
}

static GENERAL_NAME *dns_name(const char *host)
{
	GENERAL_NAME *g = GENERAL_NAME_new();
	ASN1_IA5STRING *s = ASN1_IA5STRING_new();

	if (g == NULL || s == NULL || ASN1_STRING_set(s, host, -1) != 1) {
		GENERAL_NAME_free(g);
		ASN1_IA5STRING_free(s);
		return NULL;
	}
	GENERAL_NAME_set0_value(g, GEN_DNS, s);
	return g;
}

/* Every address of a family: N zero bytes, address then mask (8 for
 * 0.0.0.0/0, 32 for ::/0). */
static GENERAL_NAME *ip_any(int n)
{
	static const unsigned char zero[32];
	GENERAL_NAME *g = GENERAL_NAME_new();
	ASN1_OCTET_STRING *s = ASN1_OCTET_STRING_new();

	if (g == NULL || s == NULL || ASN1_OCTET_STRING_set(s, zero, n) != 1) {
		GENERAL_NAME_free(g);
		ASN1_OCTET_STRING_free(s);
		return NULL;
	}
	GENERAL_NAME_set0_value(g, GEN_IPADD, s);
	return g;
}

/* Pushes G (taken, also on failure) onto SK as a subtree. */
static int subtree(STACK_OF(GENERAL_SUBTREE) *sk, GENERAL_NAME *g)
{
	GENERAL_SUBTREE *t;

	if (g == NULL || (t = GENERAL_SUBTREE_new()) == NULL) {
		GENERAL_NAME_free(g);
		return -1;
	}
	GENERAL_NAME_free(t->base);
	t->base = g;
	if (sk_GENERAL_SUBTREE_push(sk, t) == 0) {
		GENERAL_SUBTREE_free(t);
		return -1;
	}
	return 0;
}

/* Critical nameConstraints: the CA's hosts permitted, every address
 * excluded (a leaf naming an address fails whatever its DNS names). */
static int add_constraints(X509 *x, const struct ab_tlsca *ca)
{
	NAME_CONSTRAINTS *nc = NAME_CONSTRAINTS_new();
	size_t i;
	int ok = 0;

	if (nc == NULL ||
	    (nc->permittedSubtrees = sk_GENERAL_SUBTREE_new_null()) == NULL ||
	    (nc->excludedSubtrees = sk_GENERAL_SUBTREE_new_null()) == NULL)
		goto done;
	for (i = 0; i < ca->n; i++)
		if (subtree(nc->permittedSubtrees, dns_name(ca->host[i])) < 0)
			goto done;
	if (subtree(nc->excludedSubtrees, ip_any(8)) < 0 ||
	    subtree(nc->excludedSubtrees, ip_any(32)) < 0)
		goto done;
	ok = X509_add1_ext_i2d(x, NID_name_constraints, nc, 1,
	    X509V3_ADD_DEFAULT) == 1;
done:
	NAME_CONSTRAINTS_free(nc);
	return ok ? 0 : -1;
}

static X509 *ca_cert_new(const struct ab_tlsca *ca, const char *id)
{
	char cn[65];	/* X.509's bound: 64 characters */
	X509 *x;

	if (ab_fmt(cn, sizeof cn, "agentbox allocation %s", id) < 0 ||
	    (x = cert_new(ca, cn, NULL, ca->key)) == NULL)
		return NULL;
	if (add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,"
	    "pathlen:0") < 0 ||
	    add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
	    add_ext(x, x, NID_subject_key_identifier, "hash") < 0 ||
	    add_constraints(x, ca) < 0 ||
	    X509_sign(x, ca->key, EVP_sha256()) <= 0) {
		X509_free(x);
		return NULL;
	}
	return x;
}

static X509 *leaf_new(const struct ab_tlsca *ca, const char *host)
{
	GENERAL_NAMES *san = sk_GENERAL_NAME_new_null();
	GENERAL_NAME *g = dns_name(host);
	X509 *x = cert_new(ca, host, ca->cert, ca->leaf_key);
	int ok;

	ok = x != NULL && san != NULL && g != NULL &&
	    sk_GENERAL_NAME_push(san, g) != 0;
	if (!ok)
		GENERAL_NAME_free(g);
	ok = ok && X509_add1_ext_i2d(x, NID_subject_alt_name, san, 0,
	    X509V3_ADD_DEFAULT) == 1 &&
	    add_ext(x, ca->cert, NID_basic_constraints, "critical,CA:FALSE")
	    == 0 &&
	    add_ext(x, ca->cert, NID_key_usage, "critical,digitalSignature")
	    == 0 &&
	    add_ext(x, ca->cert, NID_ext_key_usage, "serverAuth") == 0 &&
	    add_ext(x, ca->cert, NID_subject_key_identifier, "hash") == 0 &&
	    add_ext(x, ca->cert, NID_authority_key_identifier,
	    "keyid:always") == 0 &&
	    X509_sign(x, ca->key, EVP_sha256()) > 0;
	GENERAL_NAMES_free(san);
	if (!ok) {
		X509_free(x);
		return NULL;
	}
	return x;
}

/* --- the CA ------------------------------------------------------------ */

static int ca_args(const char *id, const char *const *hosts, size_t nhosts,
    long long not_after, long long now, struct ab_err *err)
{
	size_t i, j;

	if (!id_ok(id))
		return ab_fail(err, AB_EUSAGE, "CA for allocation %.60s: not "
		    "an allocation ID", id);
	if (nhosts == 0 || nhosts > AB_TLSCA_HOSTS_MAX)
		return ab_fail(err, AB_EUSAGE, "CA for allocation %s: %zu "
		    "hosts (1-%d)", id, nhosts, AB_TLSCA_HOSTS_MAX);
	for (i = 0; i < nhosts; i++) {
		if (!host_ok(hosts[i]))
			return ab_fail(err, AB_EUSAGE, "CA for allocation %s: "
			    "\"%.260s\" is not a lowercase DNS name", id,
			    hosts[i]);
		for (j = 0; j < i; j++)
			if (strcmp(hosts[i], hosts[j]) == 0)
				return ab_fail(err, AB_EUSAGE, "CA for "
				    "allocation %s: %s twice", id, hosts[i]);
	}
	if (not_after <= now || not_after > LAST_TIME)
		return ab_fail(err, AB_EUSAGE, "CA for allocation %s: end of "
		    "validity %lld is not between now and the year 9999", id,
		    not_after);
	return 0;
}

int ab_tlsca_new(struct ab_tlsca **out, const char *id,
    const char *const *hosts, size_t nhosts, long long not_after,
    struct ab_err *err)
{
	struct ab_tlsca *ca;
	long long now = (long long)time(NULL);
	size_t i;

	*out = NULL;
	if (ca_args(id, hosts, nhosts, not_after, now, err) < 0 ||
	    init(err) < 0)
		return -1;
	if ((ca = calloc(1, sizeof *ca)) == NULL)
		return ab_fail_errno(err, AB_EENGINE, "CA for allocation %s",
		    id);
	if (pthread_mutex_init(&ca->lock, NULL) != 0) {
		free(ca);
		return ab_fail(err, AB_EENGINE, "CA for allocation %s: cannot "
		    "make a lock", id);
	}
	ca->not_before = now - CLOCK_SKEW;
	ca->not_after = not_after;
	for (i = 0; i < nhosts; i++)
		if (ab_fmt(ca->host[i], sizeof ca->host[i], "%s",
		    hosts[i]) < 0) {
			ab_tlsca_free(ca);
			return ab_fail(err, AB_EUSAGE, "CA for allocation %s: "
			    "a host name is too long", id);
		}
	ca->n = nhosts;
	if ((ca->key = EVP_EC_gen("P-256")) == NULL ||
	    (ca->leaf_key = EVP_EC_gen("P-256")) == NULL ||
	    (ca->cert = ca_cert_new(ca, id)) == NULL) {
		ossl_fail(err, AB_EENGINE, "cannot make the allocation's CA");
		ab_tlsca_free(ca);
		return -1;
	}
	*out = ca;
	return 0;
}

void ab_tlsca_free(struct ab_tlsca *ca)
{
	size_t i;

	if (ca == NULL)
		return;
	for (i = 0; i < ca->n; i++)
		SSL_CTX_free(ca->ctx[i]);
	X509_free(ca->cert);
	EVP_PKEY_free(ca->leaf_key);
	EVP_PKEY_free(ca->key);
	pthread_mutex_destroy(&ca->lock);
	free(ca);
}

int ab_tlsca_cert_pem(const struct ab_tlsca *ca, struct ab_buf *out,
    struct ab_err *err)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *p;
	long n;
	int rc = -1;

	if (b == NULL || PEM_write_bio_X509(b, ca->cert) != 1) {
		ossl_fail(err, AB_EENGINE, "cannot write the CA's certificate");
		goto done;
	}
	n = BIO_get_mem_data(b, &p);
	if (n <= 0 || ab_buf_add(out, p, (size_t)n) < 0) {
		ab_fail(err, AB_EENGINE, "cannot hold the CA's certificate");
		goto done;
	}
	rc = 0;
done:
	BIO_free(b);
	return rc;
}

EVP_PKEY *ab_tlsca_key_for_test(const struct ab_tlsca *ca)
{
	return ca->key;
}

/* --- contexts ---------------------------------------------------------- */

/* TLS 1.2 and 1.3 at security level 2 (no key under 112 bits' worth), no
 * renegotiation. */
static int tls_common(SSL_CTX *c)
{
	SSL_CTX_set_security_level(c, 2);
	SSL_CTX_set_options(c, SSL_OP_NO_RENEGOTIATION);
	return SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION) == 1 &&
	    SSL_CTX_set_max_proto_version(c, TLS1_3_VERSION) == 1 ? 0 : -1;
}

/* "http/1.1", or a fatal no_application_protocol alert for a client
 * that offers only others: it would speak what the proxy cannot read. */
static int alpn_select(SSL *ssl, const unsigned char **out,
    unsigned char *outlen, const unsigned char *in, unsigned int inlen,
    void *arg)
{
	unsigned char *sel;

	(void)ssl;
	(void)arg;
	if (SSL_select_next_proto(&sel, outlen, alpn_h1, sizeof alpn_h1 - 1,
	    in, inlen) != OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

static SSL_CTX *server_ctx_new(const struct ab_tlsca *ca, const char *host,
    struct ab_err *err)
{
	X509 *leaf = leaf_new(ca, host);
	SSL_CTX *c = NULL;

	if (leaf == NULL ||
	    (c = SSL_CTX_new(TLS_server_method())) == NULL ||
	    tls_common(c) < 0 ||
	    SSL_CTX_use_certificate(c, leaf) != 1 ||
	    SSL_CTX_use_PrivateKey(c, ca->leaf_key) != 1 ||
	    SSL_CTX_check_private_key(c) != 1) {
		ossl_fail(err, AB_EENGINE, "cannot make a certificate");
		ab_err_wrap(err, "TLS for %s", host);
		SSL_CTX_free(c);
		c = NULL;
	} else {
		SSL_CTX_set_alpn_select_cb(c, alpn_select, NULL);
		/* Resumption by tickets alone: nothing kept per client. */
		SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
	}
	X509_free(leaf);
	return c;
}

SSL_CTX *ab_tlsca_server_ctx(struct ab_tlsca *ca, const char *host,
    struct ab_err *err)
{
	SSL_CTX *c = NULL;
	size_t i;

	for (i = 0; i < ca->n; i++)
		if (strcmp(ca->host[i], host) == 0)
			break;
	if (i == ca->n) {
		ab_fail(err, AB_EREFUSED, "TLS for %.260s: not a host of the "
		    "allocation's CA", host);
		return NULL;
	}
	pthread_mutex_lock(&ca->lock);
	if (ca->ctx[i] == NULL)
		ca->ctx[i] = server_ctx_new(ca, ca->host[i], err);
	if ((c = ca->ctx[i]) != NULL)
		SSL_CTX_up_ref(c);
	pthread_mutex_unlock(&ca->lock);
	return c;
}

/* Adds the certificates of the PEM text P to ST: at least one, and
 * nothing but certificates (a key here is a mistake to point out). */
static int add_pem(X509_STORE *st, const char *p, size_t n,
    struct ab_err *err)
{
	STACK_OF(X509_INFO) *inf = NULL;
	X509_INFO *xi;
	BIO *b;
	int i, k = 0, rc = -1;

	if (n > AB_TLSCA_EXTRA_MAX)
		return ab_fail(err, AB_EUSAGE, "the added anchors: %zu bytes "
		    "(at most %d)", n, AB_TLSCA_EXTRA_MAX);
	if ((b = BIO_new_mem_buf(p, (int)n)) == NULL ||
	    (inf = PEM_X509_INFO_read_bio(b, NULL, NULL, NULL)) == NULL) {
		ossl_fail(err, AB_EUSAGE, "the added anchors cannot be read");
		goto done;
	}
	for (i = 0; i < sk_X509_INFO_num(inf); i++) {
		xi = sk_X509_INFO_value(inf, i);
		if (xi->x_pkey != NULL || xi->crl != NULL) {
			ab_fail(err, AB_EUSAGE, "the added anchors hold "
			    "something other than certificates");
			goto done;
		}
		if (xi->x509 != NULL && X509_STORE_add_cert(st, xi->x509) != 1) {
			ossl_fail(err, AB_EENGINE, "cannot add an anchor");
			goto done;
		}
		k += xi->x509 != NULL;
	}
	if (k == 0) {
		ab_fail(err, AB_EUSAGE, "the added anchors hold no "
		    "certificate");
		goto done;
	}
	rc = 0;
done:
	sk_X509_INFO_pop_free(inf, X509_INFO_free);
	BIO_free(b);
	return rc;
}

SSL_CTX *ab_tls_client_ctx(const char *anchors, const char *extra,
    size_t extra_len, struct ab_err *err)
{
	SSL_CTX *c;

	if (anchors == NULL && extra == NULL) {
		ab_fail(err, AB_EUSAGE, "TLS client: no trust anchors");
		return NULL;
	}
	if (init(err) < 0)
		return NULL;
	if ((c = SSL_CTX_new(TLS_client_method())) == NULL ||
	    tls_common(c) < 0 ||
	    SSL_CTX_set_alpn_protos(c, alpn_h1, sizeof alpn_h1 - 1) != 0) {
		ossl_fail(err, AB_EENGINE, "cannot make a TLS client");
		SSL_CTX_free(c);
		return NULL;
	}
	SSL_CTX_set_verify(c, SSL_VERIFY_PEER, NULL);
	if (anchors != NULL && SSL_CTX_load_verify_file(c, anchors) != 1) {
		ossl_fail(err, AB_EUSAGE, "cannot load trust anchors");
		ab_err_wrap(err, "%s", anchors);
		SSL_CTX_free(c);
		return NULL;
	}
	if (extra != NULL &&
	    add_pem(SSL_CTX_get_cert_store(c), extra, extra_len, err) < 0) {
		SSL_CTX_free(c);
		return NULL;
	}
	return c;
}

static struct {
	char *anchors;			/* NULL: a free place */
	unsigned char sha[32];		/* of the extra anchors' bytes */
	int extra;
	SSL_CTX *ctx;
} shared[AB_TLS_SHARED];
static unsigned next_shared;
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;

static int same(int i, const char *anchors, const unsigned char *sha,
    int extra)
{
	return shared[i].anchors != NULL && shared[i].extra == extra &&
	    memcmp(shared[i].sha, sha, 32) == 0 &&
	    strcmp(shared[i].anchors, anchors) == 0;
}

SSL_CTX *ab_tls_client_ctx_shared(const char *anchors, const char *extra,
    size_t extra_len, struct ab_err *err)
{
	unsigned char sha[32] = { 0 };
	SSL_CTX *c = NULL;
	unsigned i;
	char *a;

	if (extra != NULL && EVP_Digest(extra, extra_len, sha, NULL,
	    EVP_sha256(), NULL) != 1) {
		ossl_fail(err, AB_EENGINE, "cannot hash trust anchors");
		return NULL;
	}
	pthread_mutex_lock(&shared_lock);
	for (i = 0; i < AB_TLS_SHARED && c == NULL; i++)
		if (same((int)i, anchors ? anchors : "", sha, extra != NULL) &&
		    SSL_CTX_up_ref(shared[i].ctx) == 1)
			c = shared[i].ctx;
	pthread_mutex_unlock(&shared_lock);
	if (c != NULL)
		return c;
	if ((c = ab_tls_client_ctx(anchors, extra, extra_len, err)) == NULL)
		return NULL;
	if ((a = strdup(anchors ? anchors : "")) == NULL ||
	    SSL_CTX_up_ref(c) != 1) {
		free(a);
		return c;	/* not kept: the caller's alone */
	}
	pthread_mutex_lock(&shared_lock);
	i = next_shared++ % AB_TLS_SHARED;
	SSL_CTX_free(shared[i].ctx);
	free(shared[i].anchors);
	shared[i].anchors = a;
	memcpy(shared[i].sha, sha, sizeof sha);
	shared[i].extra = extra != NULL;
	shared[i].ctx = c;
	pthread_mutex_unlock(&shared_lock);
	return c;
}

int ab_tls_client_host(SSL *ssl, const char *host, struct ab_err *err)
{
	if (!host_ok(host))
		return ab_fail(err, AB_EUSAGE, "TLS to \"%.260s\": not a "
		    "lowercase DNS name", host);
	if (SSL_set_tlsext_host_name(ssl, host) != 1 ||
	    SSL_set1_host(ssl, host) != 1)
		return ossl_fail(err, AB_EENGINE, "cannot name the TLS peer");
	SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	return 0;
}

void ab_tls_reason(const SSL *ssl, char *buf, size_t cap)
{
	long v = ssl != NULL ? SSL_get_verify_result(ssl) : X509_V_OK;
	unsigned long e = ERR_peek_error();

	if (cap == 0)
		return;
	/* A reason cut short still reads. */
	if (v != X509_V_OK)
		(void)ab_fmt(buf, cap, "certificate verify failed: %s",
		    X509_verify_cert_error_string(v));
	else if (e != 0)
		(void)ab_fmt(buf, cap, "%s", reason(e));
	else
		(void)ab_fmt(buf, cap, "connection closed");
	ERR_clear_error();
}
