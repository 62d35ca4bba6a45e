/* oauth.c: libFuzzer harness for lib/egress/oauth.c and lib/format/jwt.c, a sign-in's
 * refresh as the egress proxy answers it: the agent's request body and
 * the vendor's answer are both untrusted.  The input: a byte giving the
 * answer's status (0: 200, else 401), two bytes giving the body's
 * length, the agent's body, then the vendor's answer.
 *
 * A vault of the harness's own is made once: a sign-in with JWT tokens
 * and its state.  Each run puts the state back, offers the body with its
 * refresh placeholder (or the input's own), and, when the body is taken,
 * the answer.  Beyond not crashing, checked: an error is one printable
 * line; a body taken goes upstream holding the real refresh token and
 * not the placeholder; what the agent is answered never holds the real
 * tokens of before, nor the real ones of the answer when they were kept;
 * a kept answer's tokens are what the state then holds; and the claims
 * of a JWT the vendor sends survive into its placeholder's. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "common.h"
#include "json.h"
#include "jwt.h"
#include "oauth.h"

static char vault[] = "/tmp/fuzz-oauth.XXXXXX";
static struct ab_oauth_tokens real, ph;
static struct ab_oauth_file files[AB_OAUTH_FILES];
static int nfiles;
static struct ab_buf state;

static const char jwt_real[] =
    "eyJhbGciOiAiUlMyNTYifQ.eyJleHAiOiAxODAwMDAwMDAwLCAiZW1haWwiOiAiYUBiIn0."
    "c2lnbmF0dXJlLW9mLXRoZS12ZW5kb3Itc2lnbmF0dXJlLW9mLXRoZS12ZW5kb3I";

static void put(const char *name, const char *p, size_t n)
{
	char path[512];
	int fd;

	snprintf(path, sizeof path, "%s/%s", vault, name);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, p, n) != (ssize_t)n)
		abort();
	close(fd);
}

/* The vault goes with the process. */
static void cleanup(void)
{
	char cmd[64];

	snprintf(cmd, sizeof cmd, "rm -rf %s", vault);
	if (system(cmd) != 0)
		fprintf(stderr, "oauth: could not remove %s\n", vault);
}

static void setup(void)
{
	const struct ab_egress_signin *si = ab_egress_signin("codex");
	struct ab_oauth_state st;
	struct ab_err err;
	int i;

	if (mkdtemp(vault) == NULL)
		abort();
	atexit(cleanup);
	real.access = strdup(jwt_real);
	real.refresh = strdup("rt_REALREFRESHTOKEN0000000000001");
	real.id = strdup(jwt_real);
	if (ab_oauth_placeholders(&real, &ph, &err) < 0 ||
	    ab_oauth_files(si, "fz", "who", &real, &ph, NULL, 0, files,
	    &nfiles, &err) < 0)
		abort();
	memset(&st, 0, sizeof st);
	st.kind = AB_OAUTH_CODEX;
	st.doc = "{}";
	st.doc_len = 2;
	st.t = real;
	for (i = 0; i < nfiles; i++)
		snprintf(st.live[st.nlive++], sizeof st.live[0], "%.*s",
		    AB_OAUTH_NAME_MAX - 1, files[i].name);
	if (ab_oauth_state_encode(&st, &state, &err) < 0)
		abort();
}

static int holds(const struct ab_buf *b, const char *s)
{
	return b->len > 0 && memmem(b->data, b->len, s, strlen(s)) != NULL;
}

/* 1 when B is JSON whose refresh_token is S: the body going upstream
 * (a placeholder elsewhere in it is passed on as it is). */
static int refresh_is(const struct ab_buf *b, const char *s)
{
	struct ab_json j;
	struct ab_err err;
	int ok;

	if (ab_json_parse(&j, b->data, b->len, &err) < 0)
		return 0;
	ok = ab_json_str_eq(&j, ab_json_key(&j, 0, "refresh_token"), s);
	ab_json_free(&j);
	return ok;
}

/* The body: the input's, its "@" replaced by the refresh placeholder,
 * so that the taken path is reached. */
static size_t body_of(const uint8_t *p, size_t n, char *out, size_t cap)
{
	size_t i, o = 0, k = strlen(ph.refresh);

	for (i = 0; i < n && o + k < cap; i++)
		if (p[i] == '@') {
			memcpy(out + o, ph.refresh, k);
			o += k;
		} else {
			out[o++] = (char)p[i];
		}
	return o;
}

static void answered(struct ab_oauth_op *op, int status, const uint8_t *a,
    size_t an)
{
	struct ab_buf agent;
	struct ab_err err;
	int rc;

	rc = ab_oauth_end(op, status, (const char *)a, an, &agent, &err);
	if (getenv("FUZZ_OAUTH_SAY"))
		fprintf(stderr, "end %d: %s\n", rc, rc < 0 ? err.msg : "");
	if (rc < 0) {
		fuzz_err(&err);
		return;
	}
	if (holds(&agent, real.refresh) || holds(&agent, jwt_real))
		abort();
	/* Kept, the new real tokens (of a length no JSON word could be
	 * taken for) are the state's, and nowhere in the agent's answer. */
	if (status == 200 && (op->st.t.access == NULL ||
	    op->st.refreshes != 1 || (strlen(op->st.t.access) >= 16 &&
	    holds(&agent, op->st.t.access)) ||
	    (strlen(op->st.t.refresh) >= 16 && holds(&agent,
	    op->st.t.refresh))))
		abort();
	ab_buf_free(&agent);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char body[AB_OAUTH_BODY_MAX];
	struct ab_oauth_op op;
	struct ab_buf up;
	struct ab_err err;
	size_t bn, n;
	int i, status;

	if (vault[sizeof vault - 2] == 'X')
		setup();
	if (size < 3 || size > 2 * AB_OAUTH_BODY_MAX)
		return 0;
	status = data[0] == 0 ? 200 : 401;
	bn = (size_t)data[1] << 8 | data[2];
	data += 3;
	size -= 3;
	if (bn > size)
		bn = size;
	for (i = 0; i < nfiles; i++)
		put(files[i].name, files[i].data.data, files[i].data.len);
	put("signin.fz", state.data, state.len);
	n = body_of(data, bn, body, sizeof body);
	if (ab_oauth_begin(vault, ab_egress_signin("codex"), body, n, &op, &up,
	    &err) < 0) {
		if (getenv("FUZZ_OAUTH_SAY"))
			fprintf(stderr, "begin: %s\n", err.msg);
		fuzz_err(&err);
		ab_oauth_op_free(&op);
		return 0;
	}
	if (!refresh_is(&up, real.refresh))
		abort();
	ab_buf_free(&up);
	answered(&op, status, data + bn, size - bn);
	ab_oauth_op_free(&op);
	return 0;
}
