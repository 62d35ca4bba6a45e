/* zip.c: libFuzzer harness for the wheel reader (lib/format/zip.c): the input is
 * a file on a memfd, opened, every listed member found by its name and
 * read to a sink that counts.  Beyond not crashing, it checks what the
 * image builder relies on: a listed member is found again as listed, and
 * a read that succeeds handed on exactly the member's size. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "zip.h"

/* Members above this are not read, and reading stops once this much was
 * inflated for one input, so an input costs milliseconds. */
#define MEMBER_MAX (1u << 20)
#define INPUT_MAX (4u << 20)

static int count(void *ctx, const void *p, size_t n, struct ab_err *err)
{
	unsigned long long *got = ctx;

	(void)p;
	(void)err;
	*got += n;
	return 0;
}

static int put(int fd, const uint8_t *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void check_found(struct ab_zip *z, const struct ab_zip_member *m)
{
	struct ab_zip_member f;
	struct ab_err err;

	if (ab_zip_find(z, m->name, &f, &err) != 1 ||
	    strcmp(f.name, m->name) != 0 || f.size != m->size ||
	    f.csize != m->csize || f.crc != m->crc || f.method != m->method ||
	    f.local_offset != m->local_offset || f.mode != m->mode)
		abort();
	if (m->name[0] == '\0' || (m->method != 0 && m->method != 8))
		abort();
}

static void read_all(struct ab_zip *z)
{
	unsigned long long total = 0, got;
	struct ab_zip_member m;
	struct ab_err err;
	struct ab_buf b;
	size_t i;
	int rc;

	for (i = 0; ab_zip_member_at(z, i, &m) == 1; i++) {
		check_found(z, &m);
		if (m.size > MEMBER_MAX || total + m.size > INPUT_MAX)
			continue;
		total += m.size;
		got = 0;
		rc = ab_zip_read(z, &m, count, &got, &err);
		if (rc == 0 ? got != m.size : got > m.size ||
		    (err.code != AB_EREFUSED && err.code != AB_EENGINE))
			abort();
	}
	if (i != ab_zip_count(z))
		abort();
	if (ab_zip_member_at(z, 0, &m) == 1 && m.size <= MEMBER_MAX) {
		if (ab_zip_read_small(z, m.name, &b, 4096, &err) == 0 &&
		    (b.len != m.size || b.data == NULL))
			abort();
		ab_buf_free(&b);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ab_zip *z;
	struct ab_err err;
	int fd = memfd_create("zip-fuzz", MFD_CLOEXEC);

	if (fd < 0)
		abort();
	if (put(fd, data, size) < 0)
		abort();
	if (ab_zip_open(&z, fd, &err) == 0) {
		read_all(z);
		ab_zip_close(z);
	} else if (z != NULL || (err.code != AB_EREFUSED &&
	    err.code != AB_EENGINE)) {
		abort();
	}
	close(fd);
	return 0;
}
