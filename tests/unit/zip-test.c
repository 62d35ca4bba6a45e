/* zip-test.c: unit tests for lib/format/zip.c, TAP output.
 *
 * The archives in fixtures/zip were made by fixtures/zip/make.py with
 * Python's zipfile, the broken ones by patching good ones where a damaged
 * or hostile wheel would be wrong.
 *
 * cc -std=c17 -D_GNU_SOURCE -Ilib -o zip-test tests/unit/zip-test.c \
 *     lib/format/zip.c lib/base/buf.c lib/base/err.c -lz && ./zip-test tests/unit/fixtures/zip
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zip.h"
#include "tap.h"

/* A member read whole: the fixtures' are far smaller. */
#define MEMBER_MAX (64u << 20)

static const char *dir;

static int open_fixture(const char *name)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		printf("Bail out! cannot open %s\n", path);
		exit(1);
	}
	return fd;
}

/* The code is AB_EREFUSED and the message holds want. */
static int refused_with(int rc, const struct ab_err *err, const char *want)
{
	int good = rc == -1 && err->code == AB_EREFUSED &&
	    strstr(err->msg, want) != NULL;

	if (!good)
		printf("# got %d, code %d, \"%s\"; wanted \"%s\"\n", rc,
		    err->code, rc == -1 ? err->msg : "", want);
	return good;
}

/* What make.py's LINES is. */
static void lines(struct ab_buf *b)
{
	int i;

	ab_buf_init(b, MEMBER_MAX);
	for (i = 0; i < 20000; i++)
		ab_buf_addf(b, "line %d of a deflated member\n", i % 100);
}

struct sink {
	struct ab_buf b;
	int calls;
	int fail_at;	/* fail on this call (1-based), or 0 */
};

static int to_sink(void *ctx, const void *p, size_t n, struct ab_err *err)
{
	struct sink *s = ctx;

	if (++s->calls == s->fail_at)
		return ab_fail(err, AB_EDEADLINE, "sink: deadline");
	return ab_buf_add(&s->b, p, n);
}

/* Reads NAME whole: ab_zip_read's result, the bytes in s. */
static int read_member(struct ab_zip *z, const char *name, struct sink *s,
    struct ab_err *err)
{
	struct ab_zip_member m;

	ab_buf_init(&s->b, MEMBER_MAX);
	if (ab_zip_find(z, name, &m, err) != 1)
		return -2;
	return ab_zip_read(z, &m, to_sink, s, err);
}

static int same(const struct ab_zip_member *a,
    const struct ab_zip_member *b)
{
	return strcmp(a->name, b->name) == 0 && a->size == b->size &&
	    a->csize == b->csize && a->crc == b->crc &&
	    a->method == b->method && a->mode == b->mode &&
	    a->local_offset == b->local_offset;
}

static void test_good(void)
{
	struct ab_zip_member m;
	struct ab_zip *z = NULL;
	struct ab_buf want, b;
	struct ab_err err;
	struct sink s = { .fail_at = 0 };
	int fd = open_fixture("good.zip"), rc;
	size_t i;

	ok(ab_zip_open(&z, fd, &err) == 0, "good.zip opens");
	if (z == NULL) {
		printf("Bail out! %s\n", err.msg);
		exit(1);
	}
	ok(ab_zip_count(z) == 6, "good.zip lists its 6 members");
	ok(ab_zip_member_at(z, 1, &m) == 1 &&
	    strcmp(m.name, "data/lines.txt") == 0,
	    "members come in central directory order");
	ok(ab_zip_member_at(z, 6, &m) == 0, "no member past the count");

	ok(ab_zip_find(z, "hello.txt", &m, &err) == 1 && m.method == 0 &&
	    m.size == 13 && m.csize == 13 && m.local_offset == 0,
	    "a stored member is found with its sizes");
	rc = read_member(z, "hello.txt", &s, &err);
	ok(rc == 0 && s.b.len == 13 &&
	    memcmp(s.b.data, "hello, world\n", 13) == 0,
	    "a stored member reads back byte-exact");
	ab_buf_free(&s.b);

	lines(&want);
	ok(ab_zip_find(z, "data/lines.txt", &m, &err) == 1 &&
	    m.method == 8 && m.size == want.len && m.csize < m.size,
	    "a deflated member is found with its sizes");
	s.calls = 0;
	rc = read_member(z, "data/lines.txt", &s, &err);
	ok(rc == 0 && s.b.len == want.len &&
	    memcmp(s.b.data, want.data, want.len) == 0,
	    "a deflated member reads back byte-exact");
	ok(s.calls > 1, "a member over 256 KiB comes in more than one chunk");
	ab_buf_free(&s.b);
	ab_buf_free(&want);

	ok(ab_zip_find(z, "bin/tool", &m, &err) == 1 &&
	    (m.mode & 07777) == 0755 && S_ISREG(m.mode),
	    "a member made on unix has its mode (0755, a regular file)");
	ok(ab_zip_find(z, "dir/", &m, &err) == 1 && S_ISDIR(m.mode),
	    "a directory entry has a directory's mode");
	ok(ab_zip_find(z, "dos.txt", &m, &err) == 1 && m.mode == 0,
	    "a member not made on unix has mode 0");
	rc = read_member(z, "empty", &s, &err);
	ok(rc == 0 && s.b.len == 0, "an empty deflated member reads as empty");
	ab_buf_free(&s.b);

	ok(ab_zip_find(z, "missing.txt", &m, &err) == 0,
	    "a missing name is 0");
	ok(ab_zip_find(z, "hello.tx", &m, &err) == 0 &&
	    ab_zip_find(z, "hello.txt/", &m, &err) == 0 &&
	    ab_zip_find(z, "HELLO.TXT", &m, &err) == 0 &&
	    ab_zip_find(z, "dir", &m, &err) == 0,
	    "names are compared byte for byte");

	for (i = 0, rc = 0; ab_zip_member_at(z, i, &m) == 1; i++) {
		struct ab_zip_member f;

		rc |= ab_zip_find(z, m.name, &f, &err) != 1 ||
		    !same(&f, &m);
	}
	ok(rc == 0, "every listed member is found by its name");

	ok(ab_zip_read_small(z, "bin/tool", &b, 100, &err) == 0 &&
	    b.len == 20 && strcmp(b.data, "#!/bin/sh\necho tool\n") == 0,
	    "read_small reads a small member");
	ab_buf_free(&b);
	ok(ab_zip_read_small(z, "empty", &b, 100, &err) == 0 &&
	    b.len == 0 && b.data != NULL && b.data[0] == '\0',
	    "read_small of an empty member gives \"\"");
	ab_buf_free(&b);
	rc = ab_zip_read_small(z, "bin/tool", &b, 19, &err);
	ok(refused_with(rc, &err, "is over 19 bytes") && b.data == NULL,
	    "read_small refuses a member over its max");
	rc = ab_zip_read_small(z, "nope", &b, 100, &err);
	ok(refused_with(rc, &err, "no member nope"),
	    "read_small refuses a missing member");

	s.calls = 0;
	s.fail_at = 2;
	rc = read_member(z, "data/lines.txt", &s, &err);
	ok(rc == -1 && err.code == AB_EDEADLINE &&
	    strcmp(err.msg, "sink: deadline") == 0 && s.calls == 2,
	    "an error of the sink is passed through and ends the read");
	ab_buf_free(&s.b);

	ok(ab_zip_find(z, "hello.txt", &m, &err) == 1, "found again");
	m.size = 12;
	rc = ab_zip_read(z, &m, to_sink, &s, &err);
	ok(rc == -1 && err.code == AB_EUSAGE,
	    "a member changed by the caller is refused");

	ab_zip_close(z);
	close(fd);
}

/* Opening NAME succeeds, reading MEMBER is refused with WANT. */
static void read_refused(const char *name, const char *member,
    const char *want, const char *desc)
{
	struct ab_zip *z = NULL;
	struct sink s = { .fail_at = 0 };
	struct ab_err err;
	int fd = open_fixture(name), rc;

	memset(&err, 0, sizeof err);
	rc = ab_zip_open(&z, fd, &err);
	if (rc == 0)
		rc = read_member(z, member, &s, &err);
	ok(refused_with(rc, &err, want), desc);
	ab_buf_free(&s.b);
	ab_zip_close(z);
	close(fd);
}

/* Opening NAME is refused with WANT. */
static void open_refused(const char *name, const char *want,
    const char *desc)
{
	struct ab_zip *z = NULL;
	struct ab_err err;
	int fd = open_fixture(name), rc;

	memset(&err, 0, sizeof err);
	rc = ab_zip_open(&z, fd, &err);
	ok(refused_with(rc, &err, want) && z == NULL, desc);
	ab_zip_close(z);
	close(fd);
}

/* NAME opens and MEMBER reads back as WANT. */
static void reads(const char *name, const char *member, const char *want,
    const char *desc)
{
	struct ab_zip *z = NULL;
	struct sink s = { .fail_at = 0 };
	struct ab_err err;
	int fd = open_fixture(name), rc;

	rc = ab_zip_open(&z, fd, &err);
	if (rc == 0)
		rc = read_member(z, member, &s, &err);
	if (rc != 0)
		printf("# %s\n", err.msg);
	ok(rc == 0 && s.b.len == strlen(want) &&
	    (s.b.len == 0 || memcmp(s.b.data, want, s.b.len) == 0), desc);
	ab_buf_free(&s.b);
	ab_zip_close(z);
	close(fd);
}

static void test_other_fds(void)
{
	struct ab_zip *z = NULL;
	struct ab_err err;
	int p[2], rc;

	if (pipe(p) < 0) {
		printf("Bail out! pipe\n");
		exit(1);
	}
	rc = ab_zip_open(&z, p[0], &err);
	ok(refused_with(rc, &err, "not a regular file"),
	    "a pipe is refused");
	close(p[0]);
	close(p[1]);
	rc = ab_zip_open(&z, -1, &err);
	ok(rc == -1 && err.code == AB_EENGINE && z == NULL,
	    "a bad descriptor is an I/O error");
}

int main(int argc, char **argv)
{
	struct ab_zip *z = NULL;
	struct ab_err err;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: zip-test FIXTURES\n");
		return 2;
	}
	plan(45);
	dir = argv[1];
	test_good();

	reads("descriptor.zip", "hello.txt", "hello, world\n",
	    "a member with a data descriptor (bit 3) reads back");
	reads("comment.zip", "hello.txt", "hello, world\n",
	    "an archive with a comment at its end reads back");
	reads("nodata.zip", "empty", "", "an empty member listed as deflated "
	    "with no data at all reads as empty");
	fd = open_fixture("empty.zip");
	ok(ab_zip_open(&z, fd, &err) == 0 && ab_zip_count(z) == 0,
	    "an empty archive opens with no members");
	ab_zip_close(z);
	close(fd);

	open_refused("truncated.zip", "no end of central directory",
	    "a truncated archive is refused");
	open_refused("trailing.zip", "comment does not end the file",
	    "bytes after the comment are refused");
	open_refused("outside.zip", "member b.txt: corrupt: its data points "
	    "outside the file", "an entry pointing outside the file is "
	    "refused");
	open_refused("overlap.zip", "overlaps the next member",
	    "members sharing their data are refused");
	open_refused("dup.zip", "member a.txt: listed twice",
	    "a name listed twice is refused");
	open_refused("encrypted.zip", "member a.txt: encryption is not "
	    "supported", "an encrypted member is refused");
	open_refused("method.zip", "compression method 12 is not supported",
	    "a compression method other than store and deflate is refused");
	open_refused("zip64-end.zip", "zip64 is not supported",
	    "a zip64 end record is refused");
	open_refused("multidisk.zip", "multi-disk archives are not supported",
	    "a multi-disk archive is refused");

	read_refused("zip64-local.zip", "big.txt", "member big.txt: zip64 is "
	    "not supported", "a member with a zip64 local header is refused");
	read_refused("flipped-deflate.zip", "a.txt", "member a.txt: corrupt",
	    "a flipped byte in deflated data is refused");
	read_refused("flipped-stored.zip", "b.txt", "member b.txt: corrupt: "
	    "CRC-32 mismatch", "a flipped byte in stored data is a CRC "
	    "mismatch");
	read_refused("short.zip", "a.txt", "corrupt: 160 bytes, not the 161 "
	    "listed", "fewer bytes than listed are refused");
	read_refused("long.zip", "a.txt", "corrupt: more than its 159 bytes",
	    "more bytes than listed are refused");
	read_refused("badlocal.zip", "a.txt", "the local header names "
	    "another file", "a local header with another name is refused");
	reads("flipped-deflate.zip", "b.txt", "hello, world\n",
	    "the intact member of a damaged archive still reads");

	test_other_fds();
	return done_testing();
}
