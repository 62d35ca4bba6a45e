/* oauth-test.c: unit tests for lib/egress/oauth.c and lib/format/jwt.c, TAP output: a
 * JWT's placeholder, and a sign-in's refresh as the proxy answers it, on
 * a vault directory of the test's own (no network: the vendor's answer
 * is given). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "jwt.h"
#include "oauth.h"
#include "tap.h"

static const char real_jwt[] =
    "eyJhbGciOiAiUlMyNTYiLCAidHlwIjogIkpXVCIsICJraWQiOiAiazEifQ."
    "eyJleHAiOiAxODAwMDAwMDAwLCAiaWF0IjogMTcwMDAwMDAwMCwgImVtYWlsIjogImFnZW50"
    "QHZlbmRvci5pbnZhbGlkIiwgImh0dHBzOi8vYXBpLm9wZW5haS5jb20vYXV0aCI6IHsiY2hh"
    "dGdwdF9hY2NvdW50X2lkIjogImFjY3QtMSIsICJjaGF0Z3B0X3BsYW5fdHlwZSI6ICJwbHVz"
    "In0sICJqdGkiOiAianRpLXNlY3JldC0xIiwgInN1YiI6ICJhdXRoMHx4In0."
    "U1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NT"
    "U1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NT"
    "U1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NT"
    "U1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NT"
    "U1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTUw";

static char vault[] = "/tmp/oauth-test.XXXXXX";

static void jwts(void)
{
	char ph[sizeof real_jwt];
	size_t n = strlen(real_jwt);
	struct ab_buf claims;
	struct ab_json j;
	struct ab_err err;
	long long exp = 0;

	ok(ab_jwt_is(real_jwt, n), "a JWT is one");
	ok(!ab_jwt_is("a.b.c", 5) && !ab_jwt_is("rt_opaque", 9),
	    "an opaque token is not");
	ok(ab_jwt_placeholder(real_jwt, n, ph, &err) == 0 &&
	    memcmp(ph, real_jwt, n) != 0 && memchr(ph, '.', n) != NULL,
	    "a placeholder is drawn, of the same length");
	ph[n] = '\0';
	ok(ab_jwt_claims(ph, n, &claims, &err) == 0 &&
	    ab_json_parse(&j, claims.data, claims.len, &err) == 0 &&
	    ab_json_int(&j, ab_json_key(&j, 0, "exp"), &exp) == 0 &&
	    exp == 1800000000 && ab_json_str_eq(&j, ab_json_get(&j,
	    ab_json_key(&j, 0, "https://api.openai.com/auth"),
	    "chatgpt_account_id"), "acct-1") && ab_json_key(&j, 0, "jti") < 0 &&
	    ab_json_key(&j, 0, "sub") < 0, "its claims: the expiry and the "
	    "account kept, the rest left out");
	ab_json_free(&j);
	ab_buf_free(&claims);
	ok(ab_jwt_placeholder(real_jwt, 200, ph, &err) < 0,
	    "a token too short for its claims is refused");
}

static int vault_file(const char *name, char *buf, size_t cap)
{
	char path[512];
	ssize_t k;
	int fd;

	snprintf(path, sizeof path, "%s/%s", vault, name);
	if ((fd = open(path, O_RDONLY)) < 0)
		return -1;
	k = read(fd, buf, cap - 1);
	close(fd);
	buf[k > 0 ? k : 0] = '\0';
	return (int)k;
}

static void put(const char *name, const struct ab_buf *b)
{
	char path[512];
	int fd;

	snprintf(path, sizeof path, "%s/%s", vault, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, b->data, b->len) != (ssize_t)b->len) {
		perror(path);
		exit(1);
	}
	close(fd);
}

/* What ab-validate puts: the files and the state of real tokens R. */
static void given(struct ab_oauth_tokens *r, struct ab_oauth_tokens *ph)
{
	const struct ab_egress_signin *si = ab_egress_signin("codex");
	struct ab_oauth_file f[AB_OAUTH_FILES];
	struct ab_oauth_state st;
	struct ab_buf b;
	struct ab_err err;
	int n, i;

	if (ab_oauth_placeholders(r, ph, &err) < 0 ||
	    ab_oauth_files(si, "p1", "who1", r, ph, NULL, 0, f, &n,
	    &err) < 0) {
		fprintf(stderr, "oauth-test: %s\n", err.msg);
		exit(1);
	}
	memset(&st, 0, sizeof st);
	st.kind = AB_OAUTH_CODEX;
	st.doc = "{}";
	st.doc_len = 2;
	st.t = *r;
	snprintf(st.who, sizeof st.who, "who1");
	for (i = 0; i < n; i++) {
		put(f[i].name, &f[i].data);
		snprintf(st.live[st.nlive++], sizeof st.live[0], "%.*s",
		    AB_OAUTH_NAME_MAX - 1, f[i].name);
	}
	if (ab_oauth_state_encode(&st, &b, &err) < 0)
		exit(1);
	put("signin.p1", &b);
	ab_buf_free(&b);
	ab_oauth_files_free(f, n);
}

static int begin(const char *rt, struct ab_oauth_op *op, struct ab_buf *up)
{
	const struct ab_egress_signin *si = ab_egress_signin("codex");
	char body[512];
	struct ab_err err;

	snprintf(body, sizeof body, "{\"client_id\": \"app\", \"grant_type\": "
	    "\"refresh_token\", \"refresh_token\": \"%s\"}", rt);
	return ab_oauth_begin(vault, si, body, strlen(body), op, up, &err);
}

static void refresh(void)
{
	struct ab_oauth_tokens r = { .access = strdup(real_jwt),
	    .refresh = strdup("rt_REAL0000000000000001"),
	    .id = strdup(real_jwt) }, ph;
	char answer[2048], buf[4096], name[200], old[200];
	struct ab_oauth_op op;
	struct ab_buf up, agent;
	struct ab_json j;
	struct ab_err err;
	char *newph = NULL;
	int rc;

	given(&r, &ph);
	ok(begin("rt_not_a_placeholder", &op, &up) < 0, "a refresh of a "
	    "token the vault does not hold is refused");
	ab_oauth_op_free(&op);
	ok(begin(r.refresh, &op, &up) < 0, "a refresh of the real token "
	    "itself is refused");
	ab_oauth_op_free(&op);
	rc = begin(ph.refresh, &op, &up);
	ok(rc == 0 && memmem(up.data, up.len, r.refresh, strlen(r.refresh)) &&
	    !memmem(up.data, up.len, ph.refresh, strlen(ph.refresh)) &&
	    memmem(up.data, up.len, "\"client_id\": \"app\"", 18),
	    "the placeholder's refresh goes upstream with the real token");
	snprintf(answer, sizeof answer, "{\"id_token\": \"%s\", "
	    "\"access_token\": \"%s\", \"refresh_token\": "
	    "\"rt_REAL0000000000000002\", \"expires_in\": 3600}", real_jwt,
	    real_jwt);
	rc = rc == 0 ? ab_oauth_end(&op, 200, answer, strlen(answer), &agent,
	    &err) : -1;
	ok(rc == 0 && !memmem(agent.data, agent.len, "rt_REAL", 7) &&
	    !memmem(agent.data, agent.len, real_jwt, strlen(real_jwt)) &&
	    agent.len == strlen(answer) && !memmem(agent.data, agent.len,
	    ph.refresh, strlen(ph.refresh)), "the agent is answered new "
	    "placeholders of the tokens' lengths");
	if (rc == 0 && ab_json_parse(&j, agent.data, agent.len, &err) == 0) {
		newph = ab_json_str(&j, ab_json_key(&j, 0, "refresh_token"));
		ab_json_free(&j);
	}
	ab_buf_free(&up);
	ab_buf_free(&agent);
	ab_oauth_op_free(&op);
	ok(vault_file("signin.p1", buf, sizeof buf) > 0 &&
	    strstr(buf, "rt_REAL0000000000000002") &&
	    strstr(buf, "\"refreshes\":1"), "the state holds the new real "
	    "tokens");
	ab_vault_name("auth.openai.com", 443, ph.refresh, strlen(ph.refresh),
	    old, sizeof old, &err);
	ok(vault_file(old, buf, sizeof buf) == 0, "the spent refresh token's "
	    "file is emptied");
	ok(newph != NULL && begin(ph.refresh, &op, &up) < 0, "the spent "
	    "placeholder is refused");
	ab_oauth_op_free(&op);
	ok(newph != NULL && ab_vault_name("auth.openai.com", 443, newph,
	    strlen(newph), name, sizeof name, &err) == 0 &&
	    vault_file(name, buf, sizeof buf) > 0 &&
	    strstr(buf, "rt_REAL0000000000000002"), "the new placeholder "
	    "names the new real token");
	rc = newph != NULL ? begin(newph, &op, &up) : -1;
	snprintf(answer, sizeof answer, "{\"error\": \"reused "
	    "rt_REAL0000000000000002\"}");
	rc = rc == 0 ? ab_oauth_end(&op, 401, answer, strlen(answer), &agent,
	    &err) : -1;
	ok(rc == 0 && !memmem(agent.data, agent.len, "rt_REAL", 7) &&
	    vault_file("signin.p1", buf, sizeof buf) > 0 &&
	    strstr(buf, "refused a refresh: HTTP 401") &&
	    strstr(buf, "\"refreshes\":1"), "a refusal reaches the agent, "
	    "the tokens kept, the refusal said");
	ab_buf_free(&up);
	ab_buf_free(&agent);
	ab_oauth_op_free(&op);
	free(newph);
	ab_oauth_tokens_free(&r);
	ab_oauth_tokens_free(&ph);
}

int main(void)
{
	char cmd[100];

	plan(14);
	jwts();
	if (mkdtemp(vault) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	refresh();
	snprintf(cmd, sizeof cmd, "rm -rf %s", vault);
	if (system(cmd) != 0)
		return 1;
	return done_testing();
}
