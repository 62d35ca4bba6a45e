#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "endpoint.h"
#include "file.h"
#include "hash.h"
#include "json.h"

#define DEFAULT_SOCKET "/var/run/docker.sock"
/* config.json holds registry credentials too: big, but bounded. */
#define CONFIG_MAX (1u << 20)

static int set(const char *name)
{
	const char *v = getenv(name);

	return v != NULL && *v != '\0';
}

/* The three TLS files, checked before the first call: a missing one is
 * named, and an encrypted key is refused, since libcurl would have
 * OpenSSL prompt for its pass phrase on the terminal, past any deadline.
 * WHENCE says where they were named, for the message. */
static int tls_files(struct ab_endpoint *ep, const char *dir,
    const char *whence, struct ab_err *err)
{
	const char *files[3] = { ep->ca, ep->cert, ep->key };
	char head[8192];
	size_t n;
	int i;

	if (ab_fmt_err(err, ep->ca, sizeof ep->ca, whence, "%s/ca.pem",
	    dir) < 0 || ab_fmt_err(err, ep->cert, sizeof ep->cert, whence,
	    "%s/cert.pem", dir) < 0 || ab_fmt_err(err, ep->key,
	    sizeof ep->key, whence, "%s/key.pem", dir) < 0)
		return -1;
	for (i = 0; i < 3; i++)
		if (access(files[i], R_OK) < 0)
			return ab_fail_errno(err, AB_EUSAGE, "%s: %s", whence,
			    files[i]);
	if (ab_file_read_small(ep->key, head, sizeof head, &n, err) < 0)
		return ab_err_wrap(err, "%s: %s", whence, ep->key);
	if (strstr(head, "ENCRYPTED") != NULL)
		return ab_fail(err, AB_EUSAGE, "%s: %s is encrypted: agentbox "
		    "never prompts for a pass phrase; give it the key "
		    "decrypted (openssl pkey -in KEY -out KEY.pem)", whence,
		    ep->key);
	return 0;
}

static int env_tls(struct ab_endpoint *ep, struct ab_err *err)
{
	const char *certdir = getenv("DOCKER_CERT_PATH");
	const char *home = getenv("HOME");
	char dir[400];

	if (certdir != NULL && *certdir != '\0') {
		if (ab_fmt_err(err, dir, sizeof dir, "DOCKER_CERT_PATH", "%s",
		    certdir) < 0)
			return -1;
	} else if (home != NULL) {
		if (ab_fmt_err(err, dir, sizeof dir, "HOME", "%s/.docker",
		    home) < 0)
			return -1;
	} else
		return ab_fail(err, AB_EUSAGE, "DOCKER_TLS_VERIFY is set but "
		    "neither DOCKER_CERT_PATH nor HOME is");
	return tls_files(ep, dir, "DOCKER_TLS_VERIFY", err);
}

/* tcp://HOST[:PORT][/] as the docker CLI reads it: without a port, 2376
 * with TLS and 2375 without. */
static int parse_tcp(struct ab_endpoint *ep, const char *h, const char *what,
    int tls, struct ab_err *err)
{
	char host[256];
	const char *colon;
	size_t n = strlen(h + 6);

	if (n > 0 && h[6 + n - 1] == '/')
		n--;
	if (n == 0 || n >= sizeof host)
		return ab_fail(err, AB_EUSAGE, "%s: no host", what);
	memcpy(host, h + 6, n);
	host[n] = '\0';
	if (strpbrk(host, "/?#@ ") != NULL)
		return ab_fail(err, AB_EUSAGE, "%s: a tcp:// host takes no "
		    "user, path or query", what);
	ep->kind = AB_EP_TCP;
	ep->tls = tls;
	colon = strrchr(host, ':');
	if (colon != NULL && strchr(colon, ']') == NULL) {
		if (colon[1] == '\0' || strspn(colon + 1, "0123456789") !=
		    strlen(colon + 1))
			return ab_fail(err, AB_EUSAGE, "%s: a bad port",
			    what);
		return ab_fmt_err(err, ep->base, sizeof ep->base, what,
		    "%s://%s", tls ? "https" : "http", host);
	}
	return ab_fmt_err(err, ep->base, sizeof ep->base, what, "%s://%s:%d",
	    tls ? "https" : "http", host, tls ? 2376 : 2375);
}

/* A name ssh would take for an option, or one holding what no host or
 * user name holds, is refused: it goes on ssh's command line. */
static int ssh_word(const char *s)
{
	const char *p;

	if (*s == '\0' || *s == '-')
		return 0;
	for (p = s; *p; p++)
		if ((unsigned char)*p <= ' ' || strchr("'\"\\`$;&|<>()", *p))
			return 0;
	return 1;
}

/* ssh://[USER@]HOST[:PORT], nothing after the host, as the docker CLI
 * takes it. */
static int parse_ssh(struct ab_endpoint *ep, const char *h, const char *what,
    struct ab_err *err)
{
	char rest[300], *at, *host, *port = NULL, *end;

	if (ab_fmt_err(err, rest, sizeof rest, what, "%s", h + 6) < 0)
		return -1;
	if (strpbrk(rest, "/?#") != NULL)
		return ab_fail(err, AB_EUSAGE, "%s: an ssh:// host takes no "
		    "path or query", what);
	at = strrchr(rest, '@');
	host = at ? at + 1 : rest;
	if (at != NULL) {
		*at = '\0';
		if (!ssh_word(rest) || strlen(rest) >= sizeof ep->user)
			return ab_fail(err, AB_EUSAGE, "%s: not a user name "
			    "agentbox gives ssh", what);
		memcpy(ep->user, rest, strlen(rest) + 1);
	}
	if (*host == '[' && (end = strchr(host, ']')) != NULL) {
		*end = '\0';
		port = end[1] == ':' ? end + 2 : end[1] ? end + 1 : NULL;
		host++;
	} else if ((port = strchr(host, ':')) != NULL)
		*port++ = '\0';
	if (port != NULL && (*port == '\0' || strlen(port) > 5 ||
	    strspn(port, "0123456789") != strlen(port)))
		return ab_fail(err, AB_EUSAGE, "%s: a bad port", what);
	if (!ssh_word(host) || strlen(host) >= sizeof ep->host)
		return ab_fail(err, AB_EUSAGE, "%s: not a host name agentbox "
		    "gives ssh", what);
	memcpy(ep->host, host, strlen(host) + 1);
	if (ab_fmt_err(err, ep->port, sizeof ep->port, what, "%s",
	    port ? port : "") < 0)
		return -1;
	ep->kind = AB_EP_SSH;
	return ab_fmt_err(err, ep->base, sizeof ep->base, what,
	    "http://docker");
}

/* Host H, which WHAT names in messages ("DOCKER_HOST H", or a
 * context's).  TLS as the environment says with ENVTLS: for DOCKER_HOST
 * and the default context, not for a context of one's own. */
static int parse_host(struct ab_endpoint *ep, const char *h, const char *what,
    int envtls, struct ab_err *err)
{
	if (strncmp(h, "unix://", 7) == 0) {
		if (strlen(h + 7) >= sizeof ep->sock || h[7] != '/')
			return ab_fail(err, AB_EUSAGE,
			    "%s: not an absolute socket path", what);
		ep->kind = AB_EP_UNIX;
		if (ab_fmt_err(err, ep->sock, sizeof ep->sock, what, "%s",
		    h + 7) < 0)
			return -1;
		return ab_fmt_err(err, ep->base, sizeof ep->base, what,
		    "http://localhost");
	}
	if (strlen(h) > 250)
		return ab_fail(err, AB_EUSAGE, "%.80s...: too long", what);
	if (strncmp(h, "ssh://", 6) == 0)
		return parse_ssh(ep, h, what, err);
	if (strncmp(h, "tcp://", 6) != 0)
		return ab_fail(err, AB_EUSAGE, "%s: only unix:///PATH, "
		    "tcp://HOST[:PORT] and ssh://[USER@]HOST[:PORT] are "
		    "supported", what);
	if (!envtls)
		return parse_tcp(ep, h, what, 0, err);
	if (set("DOCKER_TLS") && !set("DOCKER_TLS_VERIFY"))
		return ab_fail(err, AB_EUSAGE, "DOCKER_TLS without "
		    "DOCKER_TLS_VERIFY: agentbox does not talk to an engine it "
		    "cannot verify; set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH");
	if (parse_tcp(ep, h, what, set("DOCKER_TLS_VERIFY"), err) < 0)
		return -1;
	return ep->tls ? env_tls(ep, err) : 0;
}

static int config_dir(char *out, size_t cap, struct ab_err *err)
{
	const char *d = getenv("DOCKER_CONFIG"), *home = getenv("HOME");

	if (d != NULL && *d != '\0')
		return ab_fmt_err(err, out, cap, "DOCKER_CONFIG", "%s", d);
	if (home != NULL && *home != '\0')
		return ab_fmt_err(err, out, cap, "HOME", "%s/.docker", home);
	return ab_fail(err, AB_EUSAGE, "a docker context is asked for "
	    "but neither DOCKER_CONFIG nor HOME is set");
}

static int read_json(const char *path, struct ab_json *j, struct ab_err *err)
{
	struct ab_buf b;
	int rc;

	ab_buf_init(&b, CONFIG_MAX);
	rc = ab_file_read_at(AT_FDCWD, path, &b, NULL, err);
	if (rc == 0 && ab_json_parse(j, b.data ? b.data : "", b.len, err) < 0)
		rc = ab_err_wrap(err, "%s", path);
	ab_buf_free(&b);
	return rc;
}

/* config.json's currentContext into name ("" when none is set). */
static int current_context(const char *dir, char *name, size_t cap,
    struct ab_err *err)
{
	struct ab_json j;
	char path[600];
	char *v;
	int t;

	name[0] = '\0';
	if (ab_fmt_err(err, path, sizeof path, "the docker config's path",
	    "%s/config.json", dir) < 0)
		return -1;
	if (access(path, F_OK) < 0 && errno == ENOENT)
		return 0;
	if (read_json(path, &j, err) < 0) {
		err->code = AB_EUSAGE;
		return -1;
	}
	t = ab_json_key(&j, 0, "currentContext");
	v = t < 0 ? NULL : ab_json_str(&j, t);
	if (t >= 0 && (v == NULL || strlen(v) >= cap)) {
		free(v);
		ab_json_free(&j);
		return ab_fail(err, AB_EUSAGE, "%s: currentContext is not a "
		    "context's name", path);
	}
	t = ab_fmt_err(err, name, cap, "currentContext", "%s", v ? v : "");
	free(v);
	ab_json_free(&j);
	return t;
}

/* As the docker CLI names contexts; the name is hashed into a path, so
 * this only keeps a typo from reading as some other file's absence. */
static int context_name_ok(const char *n)
{
	size_t k = strlen(n);

	return k >= 2 && k < 100 && strchr("-_.+", n[0]) == NULL &&
	    strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789_.+-") == k;
}

/* The context's host into host, from DIR/contexts/meta/HASH/meta.json.
 * A context that skips TLS verification is refused, as DOCKER_TLS
 * without DOCKER_TLS_VERIFY is. */
static int context_host(const char *path, const char *name, char *host,
    size_t cap, struct ab_err *err)
{
	struct ab_json j;
	char *h = NULL;
	int skip = 0, rc = 0;

	if (access(path, F_OK) < 0 && errno == ENOENT)
		return ab_fail(err, AB_EUSAGE, "context %s: no such context "
		    "(%s is missing)", name, path);
	if (read_json(path, &j, err) < 0) {
		err->code = AB_EUSAGE;
		return ab_err_wrap(err, "context %s", name);
	}
	if (!ab_json_str_eq(&j, ab_json_key(&j, 0, "Name"), name))
		rc = ab_fail(err, AB_EUSAGE, "context %s: %s names another "
		    "context", name, path);
	else if ((h = ab_json_str(&j, ab_json_get(&j, 0,
	    "Endpoints.docker.Host"))) == NULL || *h == '\0' ||
	    strlen(h) >= cap)
		rc = ab_fail(err, AB_EUSAGE, "context %s: %s gives no "
		    "Endpoints.docker.Host", name, path);
	else if (ab_json_bool(&j, ab_json_get(&j, 0,
	    "Endpoints.docker.SkipTLSVerify"), &skip) == 0 && skip)
		rc = ab_fail(err, AB_EUSAGE, "context %s skips TLS "
		    "verification (SkipTLSVerify): agentbox does not talk to an "
		    "engine it cannot verify; give the context its CA "
		    "(docker context update --docker ...,ca=...)", name);
	else
		rc = ab_fmt_err(err, host, cap, "Endpoints.docker.Host", "%s",
		    h);
	free(h);
	ab_json_free(&j);
	return rc;
}

/* Context NAME of config directory DIR: its host, and for tcp:// the TLS
 * files stored with it, all three, when it has any. */
static int from_context(struct ab_endpoint *ep, const char *dir,
    const char *name, struct ab_err *err)
{
	struct ab_sha256 sh;
	char hash[65], path[800], host[300], what[400];

	if (!context_name_ok(name))
		return ab_fail(err, AB_EUSAGE, "context %.100s: not a context "
		    "name", name);
	if (ab_sha256_init(&sh, err) < 0)
		return -1;
	ab_sha256_add(&sh, name, strlen(name));
	if (ab_sha256_hex(&sh, hash, err) < 0)
		return -1;
	if (ab_fmt_err(err, path, sizeof path, "the context's path",
	    "%s/contexts/meta/%s/meta.json", dir, hash) < 0 ||
	    context_host(path, name, host, sizeof host, err) < 0 ||
	    ab_fmt_err(err, what, sizeof what, "the context's name",
	    "context %.100s: host %.250s", name, host) < 0 ||
	    ab_fmt_err(err, path, sizeof path, "the context's path",
	    "%s/contexts/tls/%s/docker", dir, hash) < 0)
		return -1;
	if (strncmp(host, "tcp://", 6) != 0 ||
	    (access(path, F_OK) < 0 && errno == ENOENT)) {
		if (parse_host(ep, host, what, 0, err) < 0)
			return -1;
	} else {
		if (ab_fmt_err(err, what, sizeof what, "the context's name",
		    "context %.100s's TLS files", name) < 0 ||
		    parse_tcp(ep, host, what, 1, err) < 0 ||
		    tls_files(ep, path, what, err) < 0)
			return -1;
	}
	return ab_fmt_err(err, ep->where, sizeof ep->where,
	    "the context's name", "%.250s (context %.100s)",
	    ep->kind == AB_EP_TCP ? ep->base : host, name);
}

int ab_endpoint_find(struct ab_endpoint *ep, struct ab_err *err)
{
	const char *h = getenv("DOCKER_HOST"), *c = getenv("DOCKER_CONTEXT");
	char dir[512], name[128], what[300];

	memset(ep, 0, sizeof *ep);
	name[0] = '\0';
	if (h == NULL || *h == '\0') {
		if (c != NULL && *c != '\0') {
			if (ab_fmt_err(err, name, sizeof name, "DOCKER_CONTEXT",
			    "%s", c) < 0)
				return -1;
		} else if (config_dir(dir, sizeof dir, err) < 0)
			name[0] = '\0';		/* no config: the default */
		else if (current_context(dir, name, sizeof name, err) < 0)
			return -1;
		if (name[0] != '\0' && strcmp(name, "default") != 0) {
			if (config_dir(dir, sizeof dir, err) < 0)
				return -1;
			return from_context(ep, dir, name, err);
		}
		h = "unix://" DEFAULT_SOCKET;
	}
	if (ab_fmt_err(err, what, sizeof what, "DOCKER_HOST",
	    "DOCKER_HOST %.250s", h) < 0 || parse_host(ep, h, what, 1, err) < 0)
		return -1;
	/* tcp://: the URL dialled, port and scheme said. */
	return ab_fmt_err(err, ep->where, sizeof ep->where, "DOCKER_HOST",
	    "%s", ep->kind == AB_EP_TCP ? ep->base : h);
}
