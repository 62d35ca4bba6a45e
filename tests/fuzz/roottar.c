/* roottar.c: libFuzzer harness for the pass of a root's tar under
 * agentbox's layer (lib/image/roottar.c), which reads the export of the user's
 * own base image: every name and byte is the base's.  Beyond not
 * crashing: what comes out is whole 512-byte blocks ending in the end
 * marker, no entry of the root's is a path the layer has, and a refusal
 * is one printable line. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"
#include "roottar.h"

#define INPUT_MAX (1 << 20)

/* The layer: a directory and a link of agentbox's own, sorted by path as
 * rootfs.c sorts them. */
static struct ab_rentry layer_e[] = {
	{ .path = (char *)"usr", .type = AB_TAR_DIR, .mode = 0755 },
	{ .path = (char *)"usr/lib/agentbox/cli", .type = AB_TAR_SYMLINK,
	    .mode = 0777, .link = (char *)"busybox" },
};

/* 1 when the plain header at P names PATH (with or without "./"). */
static int names(const unsigned char *p, const char *path)
{
	const char *n = (const char *)p;

	if (strncmp(n, "./", 2) == 0)
		n += 2;
	return strncmp(n, path, 100) == 0;
}

/* A header's size field, octal or base-256, as roottar.c reads it. */
static int size_of(const unsigned char *h, long long *v)
{
	size_t i;

	*v = 0;
	if (h[124] & 0x80) {
		for (i = 125; i < 136; i++)
			*v = (*v << 8) | h[i];
		return *v >= 0 && *v < (1LL << 40) ? 0 : -1;
	}
	for (i = 124; i < 136 && h[i] == ' '; i++)
		;
	for (; i < 136 && h[i] >= '0' && h[i] <= '7'; i++)
		*v = (*v << 3) | (h[i] - '0');
	return *v < (1LL << 40) ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned char out[4 * INPUT_MAX];
	struct ab_rootfs rf;
	struct ab_roottar *t = NULL;
	struct ab_err err;
	size_t len = 0, i;
	long got;
	int fd;

	if (size > INPUT_MAX)
		return 0;
	fd = memfd_create("root", 0);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size ||
	    lseek(fd, 0, SEEK_SET) != 0)
		abort();
	memset(&rf, 0, sizeof rf);
	rf.e = layer_e;
	rf.n = sizeof layer_e / sizeof *layer_e;
	rf.fd = -1;
	memset(&err, 0, sizeof err);
	if (ab_roottar_open(&t, fd, &rf, &err) < 0)
		abort();
	while ((got = ab_roottar_read(t, (char *)out + len,
	    sizeof out - len, &err)) > 0) {
		len += (size_t)got;
		if (len == sizeof out)
			abort();	/* more out than can come of the input */
	}
	ab_roottar_close(t);
	close(fd);
	if (got < 0) {
		fuzz_err(&err);
		return 0;
	}
	if (len % 512 != 0 || len < 1024)
		abort();
	for (i = len - 1024; i < len; i++)
		if (out[i] != 0)
			abort();
	/* Walking the headers: the layer's link and the account files are
	 * named once, by the layer's own entries. */
	{
		int link = 0, passwd = 0, named = 0;
		long long n;

		for (i = 0; i + 512 <= len - 1024;) {
			if (size_of(out + i, &n) < 0)
				abort();	/* passed on a header unread */
			/* A header whose path a long name or a prefix
			 * gives names another path than its name field. */
			if (!named && (memcmp(out + i + 257, "ustar", 5) != 0 ||
			    out[i + 345] == '\0')) {
				link += names(out + i, "usr/lib/agentbox/cli");
				passwd += names(out + i, "etc/passwd");
			}
			named = out[i + 156] == 'x' || out[i + 156] == 'L';
			i += 512 + (size_t)((n + 511) / 512 * 512);
		}
		if (link > 1 || passwd > 1)
			abort();
	}
	return 0;
}
