#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "file.h"
#include "hash.h"
#include "json.h"
#include "signin.h"

static int sha_hex(const void *p, size_t n, char out[65], struct ab_err *err)
{
	struct ab_sha256 h;

	if (ab_sha256_init(&h, err) < 0)
		return -1;
	ab_sha256_add(&h, p, n);
	return ab_sha256_hex(&h, out, err);
}

static int token_ok(const struct ab_json *j, int tokens, const char *key)
{
	char *v = ab_json_str(j, ab_json_key(j, tokens, key));
	int ok = v != NULL && *v != '\0';

	if (v != NULL)
		explicit_bzero(v, strlen(v));
	free(v);
	return ok;
}

/* PATH is left as it is: why, in err; 1. */
static int not_written(struct ab_err *err, const char *why)
{
	ab_fail(err, AB_EREFUSED, "%s", why);
	return 1;
}

/* Where KIND keeps its tokens: the object's key, and the keys of the
 * access token, the refresh token, the id_token (none: NULL) and the
 * stamp a write-back sets (last_refresh, expiresAt). */
struct shape {
	const char *obj, *access, *refresh, *id, *stamp;
	const char *what;
};

static const struct shape shapes[] = {
	[AB_OAUTH_CODEX] = { "tokens", "access_token", "refresh_token",
	    "id_token", "last_refresh", "not a ChatGPT sign-in (auth.json "
	    "with auth_mode chatgpt, its tokens and account ID)" },
	[AB_OAUTH_CLAUDE] = { "claudeAiOauth", "accessToken", "refreshToken",
	    NULL, "expiresAt", "not a Claude sign-in (.credentials.json with "
	    "claudeAiOauth, its accessToken and refreshToken)" },
};

/* The object holding the tokens, or -1 when DATA is not KIND's. */
static int tokens_obj(enum ab_oauth_kind kind, const struct ab_json *j)
{
	const struct shape *sh = &shapes[kind];
	int obj = ab_json_key(j, 0, sh->obj), mode;

	if (ab_json_type(j, 0) != AB_JSON_OBJECT ||
	    ab_json_type(j, obj) != AB_JSON_OBJECT)
		return -1;
	mode = ab_json_key(j, 0, "auth_mode");
	if (kind == AB_OAUTH_CODEX && mode >= 0 &&
	    !ab_json_str_eq(j, mode, "chatgpt"))
		return -1;
	if (!token_ok(j, obj, sh->access) || !token_ok(j, obj, sh->refresh) ||
	    (sh->id != NULL && !token_ok(j, obj, sh->id)))
		return -1;
	return obj;
}

int ab_signin_parse(enum ab_oauth_kind kind, const char *data, size_t len,
    char account[65], struct ab_err *err)
{
	struct ab_json j;
	int obj, rc = -1;
	char *id = NULL;

	if (ab_json_parse(&j, data, len, err) < 0)
		return ab_fail(err, AB_EREFUSED, "%s: not JSON",
		    shapes[kind].what);
	obj = tokens_obj(kind, &j);
	if (obj >= 0 && kind == AB_OAUTH_CLAUDE)
		rc = sha_hex("", 0, account, err);
	else if (obj >= 0 && (id = ab_json_str(&j, ab_json_key(&j, obj,
	    "account_id"))) != NULL && *id != '\0')
		rc = sha_hex(id, strlen(id), account, err);
	if (rc < 0)
		ab_fail(err, AB_EREFUSED, "%s", shapes[kind].what);
	free(id);
	ab_json_free(&j);
	return rc;
}

static char *token(const struct ab_json *j, int obj, const char *key)
{
	char *v;
	size_t n;

	if (key == NULL)
		return NULL;
	v = ab_json_strn(j, ab_json_key(j, obj, key), &n);
	if (v != NULL && (n == 0 || n > AB_OAUTH_TOKEN_MAX ||
	    strlen(v) != n)) {
		explicit_bzero(v, n);
		free(v);
		v = NULL;
	}
	return v;
}

int ab_signin_tokens_get(enum ab_oauth_kind kind, const char *data,
    size_t len, struct ab_oauth_tokens *t, struct ab_err *err)
{
	const struct shape *sh = &shapes[kind];
	struct ab_json j;
	int obj, ok;

	memset(t, 0, sizeof *t);
	if (ab_json_parse(&j, data, len, err) < 0)
		return ab_fail(err, AB_EREFUSED, "%s: not JSON", sh->what);
	obj = tokens_obj(kind, &j);
	t->access = obj < 0 ? NULL : token(&j, obj, sh->access);
	t->refresh = obj < 0 ? NULL : token(&j, obj, sh->refresh);
	t->id = obj < 0 ? NULL : token(&j, obj, sh->id);
	if (kind == AB_OAUTH_CLAUDE && obj >= 0 &&
	    ab_json_int(&j, ab_json_key(&j, obj, sh->stamp), &t->expires_ms) < 0)
		t->expires_ms = 0;
	ok = t->access != NULL && t->refresh != NULL &&
	    (sh->id == NULL || t->id != NULL);
	explicit_bzero(j.text, j.len);
	ab_json_free(&j);
	if (!ok) {
		ab_oauth_tokens_free(t);
		return ab_fail(err, AB_EREFUSED, "%s (each token 1 to %d "
		    "bytes)", sh->what, AB_OAUTH_TOKEN_MAX);
	}
	return 0;
}

/* The edits of T to KIND's document J: at most four. */
static int edits(enum ab_oauth_kind kind, const struct ab_json *j, int obj,
    const struct ab_oauth_tokens *t, const char *now,
    struct ab_json_edit *e)
{
	const struct shape *sh = &shapes[kind];
	int n = 0, k;

	e[n++] = (struct ab_json_edit){ .t = ab_json_key(j, obj, sh->access),
	    .s = t->access };
	e[n++] = (struct ab_json_edit){ .t = ab_json_key(j, obj, sh->refresh),
	    .s = t->refresh };
	if (sh->id != NULL && t->id != NULL)
		e[n++] = (struct ab_json_edit){ .t = ab_json_key(j, obj,
		    sh->id), .s = t->id };
	k = ab_json_key(j, kind == AB_OAUTH_CLAUDE ? obj : 0, sh->stamp);
	if (kind == AB_OAUTH_CLAUDE && t->expires_ms > 0 &&
	    ab_json_type(j, k) == AB_JSON_NUMBER)
		e[n++] = (struct ab_json_edit){ .t = k, .num = t->expires_ms };
	if (kind == AB_OAUTH_CODEX && now != NULL &&
	    ab_json_type(j, k) == AB_JSON_STRING)
		e[n++] = (struct ab_json_edit){ .t = k, .s = now };
	return n;
}

int ab_signin_splice(enum ab_oauth_kind kind, const char *data, size_t len,
    const struct ab_oauth_tokens *t, int stamp, struct ab_buf *out,
    struct ab_err *err)
{
	struct ab_json_edit e[4];
	struct ab_json j;
	char now[32];
	time_t s = time(NULL);
	struct tm tm;
	int obj, rc = 0;

	ab_buf_init(out, AB_SIGNIN_MAX + 4 * AB_OAUTH_TOKEN_MAX);
	if (ab_json_parse(&j, data, len, err) < 0 ||
	    (obj = tokens_obj(kind, &j)) < 0) {
		ab_json_free(&j);
		return ab_fail(err, AB_EREFUSED, "%s", shapes[kind].what);
	}
	stamp = stamp && gmtime_r(&s, &tm) != NULL &&
	    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm) > 0;
	if (ab_json_splice(&j, e, edits(kind, &j, obj, t, stamp ? now : NULL,
	    e), out) < 0)
		rc = ab_fail(err, AB_EREFUSED, "the sign-in's tokens could not "
		    "be replaced (not text, or past %d bytes)", AB_SIGNIN_MAX);
	explicit_bzero(j.text, j.len);
	ab_json_free(&j);
	return rc;
}

static void describe(const struct stat *st, struct ab_signin *sn)
{
	sn->dev = (long long)st->st_dev;
	sn->ino = (long long)st->st_ino;
	sn->size = (long long)st->st_size;
	sn->mtime_ns = (long long)st->st_mtim.tv_sec * 1000000000LL +
	    st->st_mtim.tv_nsec;
}

int ab_signin_read(enum ab_oauth_kind kind, const char *path,
    struct ab_buf *b, struct ab_signin *sn, struct ab_err *err)
{
	struct stat st;

	ab_buf_init(b, AB_SIGNIN_MAX);
	if (ab_file_read_at(AT_FDCWD, path, b, &st, err) < 0 ||
	    ab_signin_parse(kind, b->data ? b->data : "", b->len,
	    sn->account, err) < 0 || sha_hex(b->data ? b->data : "", b->len, sn->sha,
	    err) < 0)
		return -1;
	describe(&st, sn);
	return 0;
}

/* 0 when PATH, read again under the lock held on FD, is what sn says;
 * 1 (err says how) when it is not. */
static int unchanged(const char *path, int fd, const struct ab_signin *sn,
    struct ab_err *err)
{
	struct ab_signin now;
	struct stat held;
	struct ab_buf b;
	int rc;

	ab_buf_init(&b, AB_SIGNIN_MAX);
	rc = fstat(fd, &held) < 0 ? -1 :
	    ab_file_read_at(AT_FDCWD, path, &b, NULL, err);
	if (rc == 0)
		rc = sha_hex(b.data ? b.data : "", b.len, now.sha, err);
	if (b.data != NULL)
		explicit_bzero(b.data, b.len);
	ab_buf_free(&b);
	if (rc < 0)
		return not_written(err, "it can no longer be read");
	describe(&held, &now);
	/* The name must still lead to the inode locked and first read. */
	if (now.dev != sn->dev || now.ino != sn->ino ||
	    stat(path, &held) < 0 || (long long)held.st_ino != sn->ino ||
	    (long long)held.st_dev != sn->dev)
		return not_written(err, "it was replaced since it was read");
	if (now.size != sn->size || now.mtime_ns != sn->mtime_ns ||
	    strcmp(now.sha, sn->sha) != 0)
		return not_written(err, "it was changed since it was read");
	return 0;
}

int ab_signin_write_back(const char *path, const struct ab_signin *sn,
    const char *data, size_t len, struct ab_err *err)
{
	char dir[4096], *slash;
	int fd, dfd, rc;

	if (ab_fmt(dir, sizeof dir, "%s", path) < 0)
		return not_written(err, "its name is too long");
	slash = strrchr(dir, '/');
	if (slash == NULL || slash[1] == '\0')
		return not_written(err, "it is not an absolute file name");
	*slash = '\0';
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return not_written(err, "it cannot be opened any more");
	if (ab_flock_within(fd, AB_SIGNIN_LOCK_MS) < 0) {
		close(fd);
		return not_written(err, "another process holds its lock");
	}
	rc = unchanged(path, fd, sn, err);
	dfd = rc != 0 ? -1 : open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC);
	if (rc == 0 && (dfd < 0 || ab_file_write_at(dfd, slash + 1, data,
	    len, 0600, NULL, err) < 0))
		rc = not_written(err, "it could not be replaced");
	if (dfd >= 0)
		close(dfd);
	close(fd);	/* the lock goes with it */
	return rc;
}

int ab_signin_keep(struct ab_state *s, const char *name, const char *data,
    size_t len, char *out, size_t cap, struct ab_err *err)
{
	if (ab_fmt_err(err, out, cap, "the sign-in's copy", "%s/signin/%s",
	    s->path, name) < 0)
		return -1;
	return ab_record_write(s, "signin", name, data, len, err);
}
