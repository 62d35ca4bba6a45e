/* signin-test.c: unit tests for lib/egress/signin.c (what a ChatGPT sign-in is,
 * and when a refreshed one is written back), TAP output.  Works in a
 * fresh temporary directory, removed at the end. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "signin.h"
#include "tap.h"

static char dir[64], path[128];

static const char good[] = "{\"auth_mode\": \"chatgpt\", "
    "\"OPENAI_API_KEY\": null, \"tokens\": {\"id_token\": \"a.b.c\", "
    "\"access_token\": \"d.e.f\", \"refresh_token\": \"rt-1\", "
    "\"account_id\": \"acct-1\"}, \"last_refresh\": \"2026-12-01T00:00:00Z\"}";
static const char refreshed[] = "{\"tokens\": {\"id_token\": \"a.b.c\", "
    "\"access_token\": \"g.h.i\", \"refresh_token\": \"rt-2\", "
    "\"account_id\": \"acct-1\"}}";

static void parse(const char *text, int want, const char *desc)
{
	struct ab_err err;
	char account[65];

	ok((ab_signin_parse(AB_OAUTH_CODEX, text, strlen(text), account, &err) == 0) == want,
	    desc);
}

static void put(const char *text)
{
	struct ab_err err;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);

	if (dfd < 0 || ab_file_write_at(dfd, "auth.json", text, strlen(text),
	    0600, NULL, &err) < 0) {
		perror(dir);
		exit(1);
	}
	close(dfd);
}

static int holds(const char *text)
{
	char buf[1024];
	size_t n;
	struct ab_err err;

	return ab_file_read_small(path, buf, sizeof buf, &n, &err) == 0 &&
	    n == strlen(text) && memcmp(buf, text, n) == 0;
}

/* Reads the sign-in as ab-validate would; then CHANGE runs; then the
 * write-back is tried.  Returns what it returned. */
static int after(void (*change)(void), struct ab_err *err)
{
	struct ab_signin sn;
	struct ab_buf b;

	put(good);
	if (ab_signin_read(AB_OAUTH_CODEX, path, &b, &sn, err) < 0) {
		ab_buf_free(&b);
		return -2;
	}
	ab_buf_free(&b);
	if (change != NULL)
		change();
	return ab_signin_write_back(path, &sn, refreshed, strlen(refreshed),
	    err);
}

static char kept[160];

/* Other bytes written in place: the same inode. */
static void touch_content(void)
{
	int fd = open(path, O_WRONLY | O_TRUNC);

	if (fd < 0 || ab_write_all(fd, "{}", 2) < 0)
		perror(path);
	close(fd);
}

/* The same bytes under a new inode, renamed over it; the old one stays
 * linked so its inode number cannot be reused. */
static void replace_same(void)
{
	snprintf(kept, sizeof kept, "%s/old", dir);
	if (link(path, kept) < 0)
		perror(kept);
	put(good);
}

static void unlink_it(void)
{
	unlink(path);
}

static int locker = -1;

static void take_lock(void)
{
	locker = open(path, O_RDONLY);
	if (locker < 0 || flock(locker, LOCK_EX) < 0)
		perror("flock");
}

static const char claude[] = "{\"claudeAiOauth\": {\"accessToken\": "
    "\"sk-ant-oat01-AAAA\", \"refreshToken\": \"sk-ant-ort01-BBBB\", "
    "\"expiresAt\": 1700000000000, \"scopes\": [\"user:inference\"], "
    "\"subscriptionType\": \"max\"}}";

/* The tokens replaced, every other byte kept: the document as the CLI
 * wrote it, with new values where its tokens were. */
static void splices(void)
{
	struct ab_oauth_tokens t = { .access = "ACC\"1", .refresh = "REF2",
	    .id = "x.y.z", .expires_ms = 1800000000000LL };
	struct ab_oauth_tokens got;
	struct ab_buf out;
	struct ab_err err;

	ok(ab_signin_splice(AB_OAUTH_CODEX, good, strlen(good), &t, 0, &out,
	    &err) == 0 && out.len == strlen(good) - strlen("a.b.cd.e.frt-1") +
	    strlen("x.y.zACC\\\"1REF2") && strstr(out.data, "\"last_refresh\": "
	    "\"2026-12-01T00:00:00Z\"") && strstr(out.data, "\"account_id\": "
	    "\"acct-1\"}") && strstr(out.data, "\"access_token\": "
	    "\"ACC\\\"1\""), "codex: tokens replaced, the rest as it was");
	ok(ab_signin_tokens_get(AB_OAUTH_CODEX, out.data, out.len, &got,
	    &err) == 0 && strcmp(got.access, "ACC\"1") == 0 &&
	    strcmp(got.refresh, "REF2") == 0 && strcmp(got.id, "x.y.z") == 0,
	    "codex: the tokens read back");
	ab_oauth_tokens_free(&got);
	ab_buf_free(&out);
	ok(ab_signin_splice(AB_OAUTH_CODEX, good, strlen(good), &t, 1, &out,
	    &err) == 0 && strstr(out.data, "2026-12-01T00:00:00Z") == NULL,
	    "codex: a write-back stamps last_refresh");
	ab_buf_free(&out);
	ok(ab_signin_splice(AB_OAUTH_CLAUDE, claude, strlen(claude), &t, 1,
	    &out, &err) == 0 && strstr(out.data, "\"expiresAt\": "
	    "1800000000000,") && strstr(out.data, "\"refreshToken\": "
	    "\"REF2\"") && strstr(out.data, "\"scopes\": [\"user:inference\"]"),
	    "claude: tokens and expiresAt replaced, the rest as it was");
	ab_buf_free(&out);
	ok(ab_signin_tokens_get(AB_OAUTH_CLAUDE, claude, strlen(claude), &got,
	    &err) == 0 && got.id == NULL && got.expires_ms == 1700000000000LL &&
	    strcmp(got.refresh, "sk-ant-ort01-BBBB") == 0,
	    "claude: its tokens and expiry read");
	ab_oauth_tokens_free(&got);
	ok(ab_signin_splice(AB_OAUTH_CLAUDE, good, strlen(good), &t, 1, &out,
	    &err) < 0, "a Codex sign-in is no Claude sign-in");
	ab_buf_free(&out);
}

int main(void)
{
	struct ab_err err;
	struct stat st;
	char account[65];

	plan(22);
	splices();
	ok(ab_signin_parse(AB_OAUTH_CLAUDE, claude, strlen(claude), account,
	    &err) == 0, "a Claude sign-in is one");
	ok(ab_signin_parse(AB_OAUTH_CLAUDE, "{\"claudeAiOauth\": "
	    "{\"accessToken\": \"a\"}}", 30, account, &err) < 0,
	    "a Claude sign-in without its refresh token is not");

	parse(good, 1, "a ChatGPT sign-in is one");
	parse(refreshed, 1, "auth_mode may be absent");
	parse("{\"auth_mode\": \"apikey\", \"tokens\": {\"id_token\": \"a\", "
	    "\"access_token\": \"b\", \"refresh_token\": \"c\", "
	    "\"account_id\": \"d\"}}", 0, "another auth_mode is not");
	parse("{\"OPENAI_API_KEY\": \"sk-1\"}", 0, "an API key alone is not");
	parse("{\"tokens\": {\"id_token\": \"a\", \"access_token\": \"b\", "
	    "\"account_id\": \"d\"}}", 0, "no refresh token: not one");
	parse("{\"tokens\": {\"id_token\": \"a\", \"access_token\": \"b\", "
	    "\"refresh_token\": \"c\", \"account_id\": \"\"}}", 0,
	    "an empty account ID: not one");
	parse("[]", 0, "an array is not");
	parse("sk-proj-abc", 0, "text is not");

	snprintf(dir, sizeof dir, "/tmp/signin-test.XXXXXX");
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof path, "%s/auth.json", dir);

	ok(after(NULL, &err) == 0 && holds(refreshed),
	    "unchanged: the refresh is written back");
	ok(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600,
	    "written back with mode 0600");
	ok(after(touch_content, &err) == 1 && strstr(err.msg, "changed") &&
	    !holds(refreshed), "changed meanwhile: left as it is");
	ok(after(replace_same, &err) == 1 && strstr(err.msg, "replaced") &&
	    holds(good), "replaced by the same bytes: left as it is");
	unlink(kept);
	ok(after(take_lock, &err) == 1 && strstr(err.msg, "lock") &&
	    holds(good), "locked by another process: left as it is");
	close(locker);
	ok(after(unlink_it, &err) == 1 && access(path, F_OK) != 0,
	    "removed meanwhile: not made again");
	unlink(path);
	rmdir(dir);
	return done_testing();
}
