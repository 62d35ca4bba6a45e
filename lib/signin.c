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

int ab_signin_parse(const char *data, size_t len, char account[65],
    struct ab_err *err)
{
	struct ab_json j;
	int tokens, mode, rc = -1;
	char *id = NULL;

	if (ab_json_parse(&j, data, len, err) < 0)
		return ab_fail(err, AB_EREFUSED, "not a ChatGPT sign-in: not "
		    "JSON");
	tokens = ab_json_key(&j, 0, "tokens");
	mode = ab_json_key(&j, 0, "auth_mode");
	if (ab_json_type(&j, 0) == AB_JSON_OBJECT &&
	    (mode < 0 || ab_json_str_eq(&j, mode, "chatgpt")) &&
	    ab_json_type(&j, tokens) == AB_JSON_OBJECT &&
	    token_ok(&j, tokens, "id_token") &&
	    token_ok(&j, tokens, "access_token") &&
	    token_ok(&j, tokens, "refresh_token") &&
	    (id = ab_json_str(&j, ab_json_key(&j, tokens, "account_id"))) &&
	    *id != '\0')
		rc = sha_hex(id, strlen(id), account, err);
	else
		ab_fail(err, AB_EREFUSED, "not a ChatGPT sign-in (auth.json "
		    "with auth_mode chatgpt, its tokens and account ID)");
	free(id);
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

int ab_signin_read(const char *path, struct ab_buf *b, struct ab_signin *sn,
    struct ab_err *err)
{
	struct stat st;

	ab_buf_init(b, AB_SIGNIN_MAX);
	if (ab_file_read_at(AT_FDCWD, path, b, &st, err) < 0 ||
	    ab_signin_parse(b->data ? b->data : "", b->len, sn->account,
	    err) < 0 || sha_hex(b->data ? b->data : "", b->len, sn->sha,
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

	snprintf(dir, sizeof dir, "%s", path);
	slash = strrchr(dir, '/');
	if (slash == NULL || slash[1] == '\0')
		return not_written(err, "it is not an absolute file name");
	*slash = '\0';
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return not_written(err, "it cannot be opened any more");
	if (ab_lock_within(fd, AB_SIGNIN_LOCK_MS) < 0) {
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

void ab_signin_back(const char *path, const struct ab_signin *was,
    const char *data, size_t len, struct ab_signin_back *o)
{
	struct ab_err err;
	char sha[65], account[65];

	memset(o, 0, sizeof *o);
	if (sha_hex(data, len, sha, &err) < 0) {
		snprintf(o->problem, sizeof o->problem, "%.250s", err.msg);
		return;
	}
	if (strcmp(sha, was->sha) == 0)
		return;
	o->refreshed = 1;
	if (ab_signin_parse(data, len, account, &err) < 0)
		snprintf(o->problem, sizeof o->problem, "the copy the agent "
		    "left is %.250s", err.msg);
	else if (strcmp(account, was->account) != 0)
		snprintf(o->problem, sizeof o->problem, "the copy the agent "
		    "left names another account");
	else if (ab_signin_write_back(path, was, data, len, &err) != 0)
		snprintf(o->problem, sizeof o->problem, "not written back: "
		    "%.250s", err.msg);
	else
		o->written = 1;
}

int ab_signin_keep(struct ab_state *s, const char *name, const char *data,
    size_t len, char *out, size_t cap, struct ab_err *err)
{
	snprintf(out, cap, "%s/signin/%s", s->path, name);
	return ab_record_write(s, "signin", name, data, len, err);
}
