/* tlsca-test.c: unit tests for lib/egress/tlsca.c, TAP output.  The oracle is
 * OpenSSL's own: its verifier (strict) judges the certificates, and real
 * handshakes over socketpair(2) judge the contexts.
 *
 * tlsca-test --bench N: the time to make a CA and one leaf, N times. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "tlsca.h"

#include "tap.h"

static const char *const hosts[] = { "api.example.com", "auth.example.com" };
static long long not_after;

static struct ab_tlsca *ca_made(const char *id)
{
	struct ab_tlsca *ca;
	struct ab_err err;

	if (ab_tlsca_new(&ca, id, hosts, 2, not_after, &err) < 0) {
		fprintf(stderr, "ab_tlsca_new: %s\n", err.msg);
		exit(1);
	}
	return ca;
}

static void ca_pem(const struct ab_tlsca *ca, struct ab_buf *b)
{
	struct ab_err err;

	ab_buf_init(b, AB_TLSCA_EXTRA_MAX);	/* a CA's PEM, as --ca */
	if (ab_tlsca_cert_pem(ca, b, &err) < 0) {
		fprintf(stderr, "ab_tlsca_cert_pem: %s\n", err.msg);
		exit(1);
	}
}

static X509 *pem_x509(const struct ab_buf *b)
{
	BIO *bio = BIO_new_mem_buf(b->data, (int)b->len);
	X509 *x = bio != NULL ? PEM_read_bio_X509(bio, NULL, NULL, NULL) :
	    NULL;

	BIO_free(bio);
	return x;
}

/* OpenSSL's judgement of LEAF under the one anchor CA, strictly, for
 * PURPOSE (0: any): X509_V_OK or the error.  HOST (or NULL) is the name
 * expected, AT (or 0) the time. */
static int verify_as(X509 *ca, X509 *leaf, const char *host, time_t at,
    int purpose)
{
	X509_STORE *st = X509_STORE_new();
	X509_STORE_CTX *c = X509_STORE_CTX_new();
	X509_VERIFY_PARAM *p;
	int r = -1;

	if (st == NULL || c == NULL || X509_STORE_add_cert(st, ca) != 1 ||
	    X509_STORE_CTX_init(c, st, leaf, NULL) != 1)
		goto done;
	p = X509_STORE_CTX_get0_param(c);
	X509_VERIFY_PARAM_set_flags(p, X509_V_FLAG_X509_STRICT);
	if (purpose != 0)
		X509_VERIFY_PARAM_set_purpose(p, purpose);
	if (host != NULL)
		X509_VERIFY_PARAM_set1_host(p, host, 0);
	if (at != 0)
		X509_VERIFY_PARAM_set_time(p, at);
	r = X509_verify_cert(c) == 1 ? X509_V_OK : X509_STORE_CTX_get_error(c);
done:
	X509_STORE_CTX_free(c);
	X509_STORE_free(st);
	return r;
}

/* As a TLS server's certificate. */
static int verify(X509 *ca, X509 *leaf, const char *host, time_t at)
{
	return verify_as(ca, leaf, host, at, X509_PURPOSE_SSL_SERVER);
}

static int critical(X509 *x, int nid)
{
	int i = X509_get_ext_by_NID(x, nid, -1);

	return i >= 0 && X509_EXTENSION_get_critical(X509_get_ext(x, i));
}

static const char *cn(X509 *x)
{
	static char s[256];

	if (X509_NAME_get_text_by_NID(X509_get_subject_name(x),
	    NID_commonName, s, sizeof s) < 0)
		return "";
	return s;
}

/* The subjectAltName's one DNS name, or "" when it has more or other. */
static const char *san_only(X509 *x)
{
	static char s[256];
	GENERAL_NAMES *g = X509_get_ext_d2i(x, NID_subject_alt_name, NULL,
	    NULL);
	GENERAL_NAME *n;
	ASN1_IA5STRING *v;

	s[0] = '\0';
	if (g != NULL && sk_GENERAL_NAME_num(g) == 1) {
		n = sk_GENERAL_NAME_value(g, 0);
		v = GENERAL_NAME_get0_value(n, NULL);
		if (n->type == GEN_DNS)
			snprintf(s, sizeof s, "%.*s", ASN1_STRING_length(v),
			    (const char *)ASN1_STRING_get0_data(v));
	}
	GENERAL_NAMES_free(g);
	return s;
}

/* Seconds from T to the certificate time A. */
static long long secs_to(time_t t, const ASN1_TIME *a)
{
	int days, secs;
	ASN1_TIME *from = ASN1_TIME_set(NULL, t);

	if (from == NULL || ASN1_TIME_diff(&days, &secs, from, a) != 1)
		days = secs = 0;
	ASN1_TIME_free(from);
	return (long long)days * 86400 + secs;
}

/* The leaf of HOST's server context (its own reference). */
static X509 *leaf_of(struct ab_tlsca *ca, const char *host)
{
	struct ab_err err;
	SSL_CTX *c = ab_tlsca_server_ctx(ca, host, &err);
	X509 *x;

	if (c == NULL) {
		fprintf(stderr, "ab_tlsca_server_ctx: %s\n", err.msg);
		exit(1);
	}
	x = SSL_CTX_get0_certificate(c);
	X509_up_ref(x);
	SSL_CTX_free(c);
	return x;
}

static void ca_cert(void)
{
	struct ab_tlsca *ca = ca_made("alloc-1"), *ca2 = ca_made("alloc-2");
	struct ab_buf b, b2;
	X509 *x, *x2;
	ASN1_INTEGER *s;
	BIGNUM *bn;
	char group[64];
	time_t now = time(NULL);

	ca_pem(ca, &b);
	ca_pem(ca2, &b2);
	x = pem_x509(&b);
	x2 = pem_x509(&b2);
	ok(x != NULL && strncmp(b.data, "-----BEGIN CERTIFICATE-----\n", 28)
	    == 0 && strstr(b.data + 1, "-----BEGIN") == NULL,
	    "the CA's PEM is one certificate and no key");
	if (x == NULL || x2 == NULL)
		exit(1);
	ok(verify_as(x, x, NULL, 0, 0) == X509_V_OK,
	    "the CA verifies as its own anchor, strictly");
	ok(strcmp(cn(x), "agentbox allocation alloc-1") == 0 &&
	    X509_check_issued(x, x) == X509_V_OK,
	    "subject CN=agentbox allocation ID, self-signed");
	ok(X509_check_ca(x) == 1 && critical(x, NID_basic_constraints) &&
	    X509_get_pathlen(x) == 0, "basicConstraints critical, CA, "
	    "pathlen 0");
	ok(critical(x, NID_key_usage) && X509_get_key_usage(x) ==
	    (KU_KEY_CERT_SIGN | KU_CRL_SIGN),
	    "keyUsage critical, keyCertSign and cRLSign alone");
	ok(critical(x, NID_name_constraints), "nameConstraints critical");
	ok(EVP_PKEY_get_group_name(X509_get0_pubkey(x), group, sizeof group,
	    NULL) == 1 && strcmp(group, "prime256v1") == 0,
	    "the key is EC P-256");
	s = X509_get_serialNumber(x);
	bn = ASN1_INTEGER_to_BN(s, NULL);
	ok(bn != NULL && !BN_is_negative(bn) && !BN_is_zero(bn) &&
	    BN_num_bits(bn) <= 128 && BN_num_bits(bn) > 64 &&
	    ASN1_INTEGER_cmp(s, X509_get_serialNumber(x2)) != 0,
	    "the serial is random, positive, of 128 bits");
	BN_free(bn);
	ok(llabs(secs_to(now, X509_get0_notBefore(x)) + 3600) <= 2 &&
	    secs_to((time_t)not_after, X509_get0_notAfter(x)) == 0,
	    "valid from an hour ago to the end given");
	ok(EVP_PKEY_eq(X509_get0_pubkey(x), X509_get0_pubkey(x2)) == 0,
	    "each CA has a key of its own");
	X509_free(x);
	X509_free(x2);
	ab_buf_free(&b);
	ab_buf_free(&b2);
	ab_tlsca_free(ca);
	ab_tlsca_free(ca2);
}

static void leaf_cert(void)
{
	struct ab_tlsca *ca = ca_made("alloc-1"), *other = ca_made("alloc-2");
	struct ab_buf b;
	X509 *x, *leaf, *leaf2;
	time_t now = time(NULL);

	ca_pem(ca, &b);
	x = pem_x509(&b);
	leaf = leaf_of(ca, "api.example.com");
	leaf2 = leaf_of(other, "api.example.com");
	ok(verify(x, leaf, "api.example.com", 0) == X509_V_OK,
	    "a leaf for a permitted host verifies, strictly, with its name");
	ok(strcmp(san_only(leaf), "api.example.com") == 0,
	    "its subjectAltName is DNS:HOST alone");
	ok(X509_get_extended_key_usage(leaf) == XKU_SSL_SERVER &&
	    X509_get_key_usage(leaf) == KU_DIGITAL_SIGNATURE &&
	    X509_check_ca(leaf) == 0, "serverAuth, digitalSignature, not a CA");
	ok(X509_cmp_time(X509_get0_notAfter(leaf), NULL) > 0 &&
	    ASN1_TIME_compare(X509_get0_notAfter(leaf),
	    X509_get0_notAfter(x)) == 0 &&
	    ASN1_TIME_compare(X509_get0_notBefore(leaf),
	    X509_get0_notBefore(x)) == 0, "valid as the CA is");
	ok(verify(x, leaf, "auth.example.com", 0) ==
	    X509_V_ERR_HOSTNAME_MISMATCH,
	    "the leaf does not pass for the CA's other host");
	ok(verify(x, leaf, NULL, (time_t)not_after + 60) ==
	    X509_V_ERR_CERT_HAS_EXPIRED, "after the end, it has expired");
	ok(verify(x, leaf, NULL, now - 7200) == X509_V_ERR_CERT_NOT_YET_VALID,
	    "two hours ago, it was not yet valid");
	ok(verify(x, leaf2, "api.example.com", 0) ==
	    X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
	    "another allocation's leaf does not verify under this CA");
	X509_free(x);
	X509_free(leaf);
	X509_free(leaf2);
	ab_buf_free(&b);
	ab_tlsca_free(ca);
	ab_tlsca_free(other);
}

/* --- what the CA's key could sign, and its certificate forbids ---------- */

/* A certificate of CN for PUB, issued by ISSUER and signed with KEY, with
 * the extensions EXT (name, value pairs in openssl.cnf's syntax, NULL
 * ended): what this module never makes. */
static X509 *forge(X509 *issuer, EVP_PKEY *key, EVP_PKEY *pub,
    const char *cn, const char *const *ext)
{
	X509 *x = X509_new();
	X509V3_CTX v;
	X509_EXTENSION *e;
	int good;

	good = x != NULL && X509_set_version(x, X509_VERSION_3) == 1 &&
	    ASN1_INTEGER_set(X509_get_serialNumber(x), 7) == 1 &&
	    X509_gmtime_adj(X509_getm_notBefore(x), -60) != NULL &&
	    X509_gmtime_adj(X509_getm_notAfter(x), 3600) != NULL &&
	    X509_set_pubkey(x, pub) == 1 &&
	    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN",
	    MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0) == 1 &&
	    X509_set_issuer_name(x, X509_get_subject_name(issuer)) == 1;
	X509V3_set_ctx(&v, issuer, x, NULL, NULL, 0);
	for (; good && ext[0] != NULL; ext += 2) {
		e = X509V3_EXT_conf(NULL, &v, ext[0], ext[1]);
		good = e != NULL && X509_add_ext(x, e, -1) == 1;
		X509_EXTENSION_free(e);
	}
	if (!good || X509_sign(x, key, EVP_sha256()) <= 0) {
		fprintf(stderr, "forge %s: cannot\n", cn);
		exit(1);
	}
	return x;
}

/* A server leaf under CA (certificate X) naming SAN, CN a permitted
 * host: only its subjectAltName can be wrong. */
static int forged_leaf(struct ab_tlsca *ca, X509 *x, const char *san,
    const char *host)
{
	const char *const ext[] = { "subjectAltName", san,
	    "basicConstraints", "critical,CA:FALSE",
	    "keyUsage", "critical,digitalSignature",
	    "extendedKeyUsage", "serverAuth",
	    "subjectKeyIdentifier", "hash",
	    "authorityKeyIdentifier", "keyid:always", NULL };
	X509 *leaf = forge(x, ab_tlsca_key_for_test(ca), X509_get0_pubkey(x),
	    "api.example.com", ext);
	int r = verify(x, leaf, host, 0);

	X509_free(leaf);
	return r;
}

static void constraints(void)
{
	struct ab_tlsca *ca = ca_made("alloc-1");
	struct ab_buf b;
	X509 *x;

	ca_pem(ca, &b);
	x = pem_x509(&b);
	ok(forged_leaf(ca, x, "DNS:api.example.com", "api.example.com") ==
	    X509_V_OK, "a leaf the test signs for a permitted host verifies "
	    "(the control)");
	ok(forged_leaf(ca, x, "DNS:evil.example.org", "evil.example.org") ==
	    X509_V_ERR_PERMITTED_VIOLATION,
	    "one for another host fails the name constraints");
	ok(forged_leaf(ca, x, "DNS:api.example.com,DNS:evil.example.org",
	    "api.example.com") == X509_V_ERR_PERMITTED_VIOLATION,
	    "one naming a permitted host and another fails");
	ok(forged_leaf(ca, x, "DNS:example.com", "example.com") ==
	    X509_V_ERR_PERMITTED_VIOLATION &&
	    forged_leaf(ca, x, "DNS:badapi.example.com",
	    "badapi.example.com") == X509_V_ERR_PERMITTED_VIOLATION,
	    "neither a parent domain nor a name ending alike passes");
	ok(forged_leaf(ca, x, "DNS:v1.api.example.com", "v1.api.example.com")
	    == X509_V_OK, "a name under a permitted host passes (the name "
	    "constraints' own rule)");
	ok(forged_leaf(ca, x, "IP:127.0.0.1", NULL) ==
	    X509_V_ERR_EXCLUDED_VIOLATION &&
	    forged_leaf(ca, x, "IP:::1", NULL) ==
	    X509_V_ERR_EXCLUDED_VIOLATION &&
	    forged_leaf(ca, x, "DNS:api.example.com,IP:203.0.113.7",
	    "api.example.com") == X509_V_ERR_EXCLUDED_VIOLATION,
	    "a leaf naming any IPv4 or IPv6 address fails");
	X509_free(x);
	ab_buf_free(&b);
	ab_tlsca_free(ca);
}

/* pathlen:0: a CA the CA's key signs cannot issue. */
static void path_length(void)
{
	const char *const sub_ext[] = {
	    "basicConstraints", "critical,CA:TRUE",
	    "keyUsage", "critical,keyCertSign",
	    "subjectKeyIdentifier", "hash",
	    "authorityKeyIdentifier", "keyid:always", NULL };
	const char *const leaf_ext[] = {
	    "subjectAltName", "DNS:api.example.com",
	    "basicConstraints", "critical,CA:FALSE",
	    "extendedKeyUsage", "serverAuth",
	    "subjectKeyIdentifier", "hash",
	    "authorityKeyIdentifier", "keyid:always", NULL };
	struct ab_tlsca *ca = ca_made("alloc-1");
	EVP_PKEY *k = EVP_EC_gen("P-256");
	STACK_OF(X509) *chain = sk_X509_new_null();
	X509_STORE *st = X509_STORE_new();
	X509_STORE_CTX *c = X509_STORE_CTX_new();
	struct ab_buf b;
	X509 *x, *sub, *leaf;
	int r = 0;

	ca_pem(ca, &b);
	x = pem_x509(&b);
	sub = forge(x, ab_tlsca_key_for_test(ca), k, "sub", sub_ext);
	leaf = forge(sub, k, k, "api.example.com", leaf_ext);
	if (chain != NULL && sk_X509_push(chain, sub) > 0 && st != NULL &&
	    c != NULL && X509_STORE_add_cert(st, x) == 1 &&
	    X509_STORE_CTX_init(c, st, leaf, chain) == 1)
		r = X509_verify_cert(c) == 1 ? X509_V_OK :
		    X509_STORE_CTX_get_error(c);
	ok(r == X509_V_ERR_PATH_LENGTH_EXCEEDED,
	    "a sub-CA's leaf fails: path length exceeded");
	X509_STORE_CTX_free(c);
	X509_STORE_free(st);
	sk_X509_free(chain);
	X509_free(leaf);
	X509_free(sub);
	X509_free(x);
	EVP_PKEY_free(k);
	ab_buf_free(&b);
	ab_tlsca_free(ca);
}

/* --- refusals ---------------------------------------------------------- */

static int new_fails(const char *id, const char *const *h, size_t n,
    long long end, int code)
{
	struct ab_tlsca *ca = (struct ab_tlsca *)1;
	struct ab_err err;
	int r;

	r = ab_tlsca_new(&ca, id, h, n, end, &err);
	if (r == 0)
		ab_tlsca_free(ca);
	return r == -1 && ca == NULL && err.code == code;
}

static void refusals(void)
{
	static const char *const bad[] = { "1.2.3.4", "0x7f000001",
	    "*.example.com", "Api.example.com", "api.example.com.",
	    "api..example.com", "-api.example.com", "api-.example.com",
	    "api_x.example.com", "", "api.example.com:443", "[::1]" };
	const char *dup[] = { "api.example.com", "api.example.com" };
	const char *one[1];
	struct ab_tlsca *ca = ca_made("alloc-1"), *longest;
	struct ab_err err;
	SSL_CTX *c1, *c2;
	size_t i;
	int all = 1;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		one[0] = bad[i];
		all &= new_fails("a", one, 1, not_after, AB_EUSAGE);
	}
	ok(all, "a host that is not a lowercase DNS name is refused");
	ok(new_fails("a", dup, 2, not_after, AB_EUSAGE) &&
	    new_fails("a", hosts, 0, not_after, AB_EUSAGE),
	    "a host twice, or none, is refused");
	ok(new_fails("a b", hosts, 2, not_after, AB_EUSAGE) &&
	    new_fails("", hosts, 2, not_after, AB_EUSAGE) &&
	    new_fails("0123456789012345678901234567890123456789012345", hosts,
	    2, not_after, AB_EUSAGE) &&
	    new_fails("a/b", hosts, 2, not_after, AB_EUSAGE),
	    "an ID that is not one is refused");
	ok(ab_tlsca_new(&longest, "01234567890123456789012345678901234567890_.-",
	    hosts, 2, not_after, &err) == 0, "the longest ID fits its CN");
	ab_tlsca_free(longest);
	ok(new_fails("a", hosts, 2, (long long)time(NULL) - 1, AB_EUSAGE),
	    "an end of validity already past is refused");
	ok(ab_tlsca_server_ctx(ca, "evil.example.org", &err) == NULL &&
	    err.code == AB_EREFUSED && strstr(err.msg, "evil.example.org")
	    != NULL, "a leaf for a host not in the list is refused");
	ok(ab_tlsca_server_ctx(ca, "API.example.com", &err) == NULL &&
	    ab_tlsca_server_ctx(ca, "x.api.example.com", &err) == NULL,
	    "so is another spelling, or a name under a host");
	c1 = ab_tlsca_server_ctx(ca, "auth.example.com", &err);
	c2 = ab_tlsca_server_ctx(ca, "auth.example.com", &err);
	ok(c1 != NULL && c1 == c2, "a host's context is made once");
	SSL_CTX_free(c1);
	SSL_CTX_free(c2);
	ab_tlsca_free(ca);
}

static char tmp_path[] = "/tmp/tlsca-test-XXXXXX";

static void *ask(void *ca)
{
	return ab_tlsca_server_ctx(ca, "api.example.com", NULL);
}

/* Connection threads asking at once for a host's first context. */
static void at_once(void)
{
	struct ab_tlsca *ca = ca_made("alloc-1");
	pthread_t t[8];
	void *c[8];
	int i, same = 1;

	for (i = 0; i < 8; i++)
		if (pthread_create(&t[i], NULL, ask, ca) != 0)
			exit(1);
	for (i = 0; i < 8; i++) {
		pthread_join(t[i], &c[i]);
		same &= c[i] != NULL && c[i] == c[0];
	}
	ok(same, "threads asking at once share one context");
	for (i = 0; i < 8; i++)
		SSL_CTX_free(c[i]);
	ab_tlsca_free(ca);
}

/* A file holding TEXT: tmp_path. */
static const char *tmp_file(const char *text)
{
	FILE *f;
	int fd = mkstemp(tmp_path);

	if (fd < 0 || (f = fdopen(fd, "w")) == NULL ||
	    fputs(text, f) == EOF || fclose(f) != 0) {
		perror("tmp_file");
		exit(1);
	}
	return tmp_path;
}

static int client_fails(const char *anchors, const char *extra, int code,
    const char *says)
{
	struct ab_err err;
	SSL_CTX *c = ab_tls_client_ctx(anchors, extra,
	    extra != NULL ? strlen(extra) : 0, &err);

	SSL_CTX_free(c);
	return c == NULL && err.code == code && strstr(err.msg, says) != NULL;
}

/* Appends a private key, PEM, to B. */
static void key_pem(struct ab_buf *b)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	BIO *bio = BIO_new(BIO_s_mem());
	char *p;
	long n;

	if (k == NULL || bio == NULL || PEM_write_bio_PrivateKey(bio, k, NULL,
	    NULL, 0, NULL, NULL) != 1 || (n = BIO_get_mem_data(bio, &p)) <= 0 ||
	    ab_buf_add(b, p, (size_t)n) < 0)
		exit(1);
	BIO_free(bio);
	EVP_PKEY_free(k);
}

static void client_refusals(void)
{
	struct ab_tlsca *ca = ca_made("alloc-1");
	struct ab_buf b;
	struct ab_buf both;
	struct ab_err err;
	SSL *ssl;
	SSL_CTX *c;

	ca_pem(ca, &b);
	ok(client_fails(NULL, NULL, AB_EUSAGE, "no trust anchors"),
	    "a client trusting nothing is refused");
	ok(client_fails("/nonexistent/bundle.crt", NULL, AB_EUSAGE,
	    "/nonexistent/bundle.crt"), "a missing anchors file is named");
	ok(client_fails(NULL, "", AB_EUSAGE, "no certificate") &&
	    client_fails(NULL, "hello\n", AB_EUSAGE, "no certificate"),
	    "added anchors without a certificate are refused");
	ab_buf_init(&both, AB_TLSCA_EXTRA_MAX);	/* a PEM and a key */
	ab_buf_add(&both, b.data, b.len);
	key_pem(&both);
	ok(client_fails(NULL, both.data, AB_EUSAGE, "other than certificates"),
	    "added anchors holding a key are refused");
	ok(client_fails(NULL, "-----BEGIN CERTIFICATE-----\nAAAA\n"
	    "-----END CERTIFICATE-----\n", AB_EUSAGE, "cannot be read"),
	    "a broken certificate is refused");
	c = ab_tls_client_ctx(NULL, b.data, b.len, &err);
	ssl = c != NULL ? SSL_new(c) : NULL;
	ok(ssl != NULL && ab_tls_client_host(ssl, "1.2.3.4", &err) == -1 &&
	    err.code == AB_EUSAGE && ab_tls_client_host(ssl, "a.example.com",
	    &err) == 0, "the client names a DNS host, never an address");
	SSL_free(ssl);
	SSL_CTX_free(c);
	/* Shared: the same anchors give the same context, other ones
	 * another; each caller's reference is its own to free. */
	{
		SSL_CTX *s1 = ab_tls_client_ctx_shared(NULL, b.data, b.len,
		    &err);
		SSL_CTX *s2 = ab_tls_client_ctx_shared(NULL, b.data, b.len,
		    &err);
		SSL_CTX *s3 = ab_tls_client_ctx_shared(NULL, both.data,
		    both.len, &err);

		ok(s1 != NULL && s1 == s2, "the same anchors share one client "
		    "context");
		ok(s3 == NULL && err.code == AB_EUSAGE, "anchors refused alone "
		    "are refused shared");
		s3 = ab_tls_client_ctx_shared(NULL, b.data, b.len - 1, &err);
		ok(s3 == NULL || s3 != s1, "other anchors, another context");
		SSL_CTX_free(s1);
		SSL_CTX_free(s2);
		SSL_CTX_free(s3);
	}
	ab_buf_free(&both);
	ab_buf_free(&b);
	ab_tlsca_free(ca);
}

/* --- handshakes -------------------------------------------------------- */

struct side {
	int ok;		/* handshake done and "ping" echoed */
	int reused;	/* a session resumed */
	int version;
	char alpn[32];
	char reason[256];
};

struct serving {
	SSL_CTX *ctx;
	int fd;
	struct side s;
};

static void finish(SSL *ssl, struct side *s, int handshake_rc)
{
	const unsigned char *p;
	unsigned int n;

	if (handshake_rc != 1) {
		ab_tls_reason(ssl, s->reason, sizeof s->reason);
		return;
	}
	SSL_get0_alpn_selected(ssl, &p, &n);
	snprintf(s->alpn, sizeof s->alpn, "%.*s", (int)n, (const char *)p);
	s->version = SSL_version(ssl);
	s->reused = SSL_session_reused(ssl);
}

/* The client's last session that echoed (a ticket, with TLS 1.3). */
static SSL_SESSION *session;

static void resume(SSL *ssl)
{
	SSL_set_session(ssl, session);
}

static void *serve(void *arg)
{
	struct serving *sv = arg;
	SSL *ssl = SSL_new(sv->ctx);
	char buf[4];

	if (ssl == NULL || SSL_set_fd(ssl, sv->fd) != 1)
		goto done;
	finish(ssl, &sv->s, SSL_accept(ssl));
	if (sv->s.reason[0] == '\0')
		sv->s.ok = SSL_read(ssl, buf, 4) == 4 &&
		    SSL_write(ssl, buf, 4) == 4;
	if (sv->s.ok)
		SSL_shutdown(ssl);
done:
	SSL_free(ssl);
	close(sv->fd);
	return NULL;
}

/* A handshake between SCTX and a client of CCTX expecting WANT, changed
 * by TWEAK (or NULL) before it starts; each side's view in C and S. */
static void handshake(SSL_CTX *sctx, SSL_CTX *cctx, const char *want,
    void (*tweak)(SSL *), struct side *c, struct side *s)
{
	struct timeval tv = { 10, 0 };
	pthread_attr_t a;
	struct serving sv;
	struct ab_err err;
	pthread_t t;
	SSL *ssl;
	char buf[4];
	int fd[2];

	memset(c, 0, sizeof *c);
	memset(&sv, 0, sizeof sv);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, fd) < 0 ||
	    setsockopt(fd[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 ||
	    setsockopt(fd[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0) {
		perror("socketpair");
		exit(1);
	}
	sv.ctx = sctx;
	sv.fd = fd[1];
	/* The stack of the proxy's connection threads. */
	if (pthread_attr_init(&a) != 0 ||
	    pthread_attr_setstacksize(&a, 256 * 1024) != 0 ||
	    pthread_create(&t, &a, serve, &sv) != 0)
		exit(1);
	pthread_attr_destroy(&a);
	ssl = SSL_new(cctx);
	if (ssl == NULL || SSL_set_fd(ssl, fd[0]) != 1 ||
	    ab_tls_client_host(ssl, want, &err) < 0) {
		fprintf(stderr, "client: %s\n", err.msg);
		exit(1);
	}
	if (tweak != NULL)
		tweak(ssl);
	finish(ssl, c, SSL_connect(ssl));
	if (c->reason[0] == '\0')
		c->ok = SSL_write(ssl, "ping", 4) == 4 &&
		    SSL_read(ssl, buf, 4) == 4 && memcmp(buf, "ping", 4) == 0;
	/* A session ended without close_notify cannot be resumed (the
	 * server may have closed first: what was sent is what counts). */
	if (c->ok) {
		SSL_shutdown(ssl);
		SSL_SESSION_free(session);
		session = SSL_get1_session(ssl);
	}
	SSL_free(ssl);
	close(fd[0]);
	pthread_join(t, NULL);
	*s = sv.s;
}

static void alpn_h2(SSL *ssl)
{
	SSL_set_alpn_protos(ssl, (const unsigned char *)"\x02h2", 3);
}

static void alpn_both(SSL *ssl)
{
	SSL_set_alpn_protos(ssl, (const unsigned char *)"\x02h2\x08http/1.1",
	    12);
}

static void alpn_none(SSL *ssl)
{
	SSL_set_alpn_protos(ssl, NULL, 0);
}

static void after_end(SSL *ssl)
{
	X509_VERIFY_PARAM_set_time(SSL_get0_param(ssl),
	    (time_t)not_after + 60);
}

static void tls12(SSL *ssl)
{
	SSL_set_max_proto_version(ssl, TLS1_2_VERSION);
}

static SSL_CTX *client_of(const char *anchors, const struct ab_buf *extra)
{
	struct ab_err err;
	SSL_CTX *c = ab_tls_client_ctx(anchors, extra ? extra->data : NULL,
	    extra ? extra->len : 0, &err);

	if (c == NULL) {
		fprintf(stderr, "ab_tls_client_ctx: %s\n", err.msg);
		exit(1);
	}
	return c;
}

static void handshakes(void)
{
	struct ab_tlsca *ca = ca_made("alloc-1"), *other = ca_made("alloc-2");
	struct ab_buf b, b2;
	struct ab_err err;
	SSL_CTX *sctx, *cctx, *cfile, *cbundle, *cother, *old;
	struct side c, s;
	const char *bundle = "/etc/ssl/certs/ca-certificates.crt";

	ca_pem(ca, &b);
	ca_pem(other, &b2);
	sctx = ab_tlsca_server_ctx(ca, "api.example.com", &err);
	cctx = client_of(NULL, &b);
	cfile = client_of(tmp_file(b.data), NULL);
	cother = client_of(NULL, &b2);

	handshake(sctx, cctx, "api.example.com", NULL, &c, &s);
	ok(c.ok && s.ok && strcmp(c.alpn, "http/1.1") == 0 &&
	    strcmp(s.alpn, "http/1.1") == 0 && c.version == TLS1_3_VERSION,
	    "a client trusting the CA's PEM reaches the host: TLS 1.3, "
	    "ALPN http/1.1");
	handshake(sctx, cctx, "api.example.com", resume, &c, &s);
	ok(c.ok && s.ok && c.reused && s.reused,
	    "it resumes its session (a ticket: the server keeps nothing)");
	handshake(sctx, cfile, "api.example.com", NULL, &c, &s);
	ok(c.ok && s.ok, "so does one trusting it from an anchors file");
	if (access(bundle, R_OK) == 0) {
		cbundle = client_of(bundle, &b);
		handshake(sctx, cbundle, "api.example.com", NULL, &c, &s);
		ok(c.ok && s.ok, "and one with the system's bundle and the "
		    "CA added");
		SSL_CTX_free(cbundle);
	} else {
		ok(1, "# SKIP no system bundle");
	}
	handshake(sctx, cctx, "api.example.com", tls12, &c, &s);
	ok(c.ok && s.ok && c.version == TLS1_2_VERSION &&
	    strcmp(c.alpn, "http/1.1") == 0, "TLS 1.2 is served too");

	handshake(sctx, cctx, "auth.example.com", NULL, &c, &s);
	ok(!c.ok && !s.ok && strcmp(c.reason, "certificate verify failed: "
	    "hostname mismatch") == 0,
	    "expecting another host fails: hostname mismatch");
	printf("# client: %s; server: %s\n", c.reason, s.reason);
	handshake(sctx, cother, "api.example.com", NULL, &c, &s);
	ok(!c.ok && strstr(c.reason, "unable to get local issuer") != NULL,
	    "a client trusting another allocation's CA refuses it");
	handshake(sctx, cctx, "api.example.com", after_end, &c, &s);
	ok(!c.ok && strcmp(c.reason, "certificate verify failed: "
	    "certificate has expired") == 0, "after the end, it has expired");

	handshake(sctx, cctx, "api.example.com", alpn_h2, &c, &s);
	ok(!c.ok && !s.ok && strstr(s.reason, "no application protocol") &&
	    strstr(c.reason, "no application protocol"),
	    "a client offering only h2 is refused: no application protocol");
	printf("# client: %s; server: %s\n", c.reason, s.reason);
	handshake(sctx, cctx, "api.example.com", alpn_both, &c, &s);
	ok(c.ok && strcmp(c.alpn, "http/1.1") == 0,
	    "one offering h2 and http/1.1 gets http/1.1");
	handshake(sctx, cctx, "api.example.com", alpn_none, &c, &s);
	ok(c.ok && s.ok && c.alpn[0] == '\0',
	    "one offering no ALPN is served (HTTP/1.1 is what it speaks)");

	/* A client of TLS 1.1 alone, at the level where OpenSSL allows it. */
	old = SSL_CTX_new(TLS_client_method());
	SSL_CTX_set_security_level(old, 0);
	SSL_CTX_set_min_proto_version(old, TLS1_1_VERSION);
	SSL_CTX_set_max_proto_version(old, TLS1_1_VERSION);
	SSL_CTX_set_verify(old, SSL_VERIFY_NONE, NULL);
	handshake(sctx, old, "api.example.com", NULL, &c, &s);
	ok(!c.ok && !s.ok && strstr(s.reason, "unsupported protocol"),
	    "a TLS 1.1 client is refused: unsupported protocol");
	printf("# client: %s; server: %s\n", c.reason, s.reason);

	SSL_CTX_free(old);
	SSL_CTX_free(sctx);
	SSL_CTX_free(cctx);
	SSL_CTX_free(cfile);
	SSL_CTX_free(cother);
	unlink(tmp_path);
	SSL_SESSION_free(session);
	session = NULL;
	ab_buf_free(&b);
	ab_buf_free(&b2);
	ab_tlsca_free(ca);
	ab_tlsca_free(other);
}

/* --- what it costs ----------------------------------------------------- */

static double since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 +
	    (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

static void bench(int n)
{
	struct ab_tlsca *ca;
	struct ab_buf b;
	struct ab_err err;
	struct timespec t0;
	struct side c, s;
	SSL_CTX *sctx, *cctx;
	double t_ca = 0, t_leaf = 0, t_hs;
	int i;

	for (i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		ca = ca_made("bench");
		t_ca += since(&t0);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		sctx = ab_tlsca_server_ctx(ca, "api.example.com", &err);
		t_leaf += since(&t0);
		if (sctx == NULL)
			exit(1);
		SSL_CTX_free(sctx);
		ab_tlsca_free(ca);
	}
	ca = ca_made("bench");
	ca_pem(ca, &b);
	sctx = ab_tlsca_server_ctx(ca, "api.example.com", &err);
	cctx = client_of(NULL, &b);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < n; i++) {
		handshake(sctx, cctx, "api.example.com", NULL, &c, &s);
		if (!c.ok || !s.ok)
			exit(1);
	}
	t_hs = since(&t0);
	printf("CA (two keys, one certificate): %.3f ms; leaf and its "
	    "context: %.3f ms; a handshake, both sides: %.3f ms (mean of %d)\n",
	    t_ca / n, t_leaf / n, t_hs / n, n);
	SSL_CTX_free(sctx);
	SSL_CTX_free(cctx);
	ab_buf_free(&b);
	ab_tlsca_free(ca);
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	not_after = (long long)time(NULL) + 86400;
	if (argc == 3 && strcmp(argv[1], "--bench") == 0) {
		bench((int)strtol(argv[2], NULL, 10));
		return 0;
	}
	plan(55);
	ca_cert();
	leaf_cert();
	constraints();
	path_length();
	refusals();
	at_once();
	client_refusals();
	handshakes();
	return done_testing();
}
