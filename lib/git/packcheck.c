#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "buf.h"
#include "file.h"
#include "packcheck.h"

struct ent {
	uint64_t off;
	uint32_t i;
};

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

static int ent_cmp(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* The entries by offset, from index I of N objects (LEN bytes, checked
 * to hold the tables); -1 on a malformed index. */
static int entries(const unsigned char *ix, size_t len, uint32_t n,
    struct ent *e)
{
	const unsigned char *offs = ix + 8 + 1024 +
	    (size_t)n * (AB_OID_RAW + 4);
	const unsigned char *big = offs + (size_t)n * 4;
	uint32_t k, o;
	size_t at;

	for (k = 0; k < n; k++) {
		o = be32(offs + (size_t)k * 4);
		e[k].i = k;
		e[k].off = o;
		if (!(o & 0x80000000u))
			continue;
		at = (size_t)(o & 0x7fffffffu) * 8;
		if (big + at + 8 > ix + len - 2 * AB_OID_RAW)
			return -1;
		e[k].off = (uint64_t)be32(big + at) << 32 | be32(big + at + 4);
	}
	qsort(e, n, sizeof *e, ent_cmp);
	return 0;
}

/* CRC-32 of LEN bytes of FD at OFF. */
static int crc_of(int fd, uint64_t off, uint64_t len, uint32_t *out)
{
	unsigned char b[65536];
	uLong crc = crc32(0, NULL, 0);
	ssize_t got;
	size_t want;

	while (len > 0) {
		want = len < sizeof b ? (size_t)len : sizeof b;
		if ((got = pread(fd, b, want, (off_t)off)) <= 0)
			return -1;
		crc = crc32(crc, b, (uInt)got);
		off += (uint64_t)got;
		len -= (uint64_t)got;
	}
	*out = (uint32_t)crc;
	return 0;
}

static int scan(int fd, uint64_t size, const unsigned char *ix, size_t len,
    uint32_t n, char hex[AB_OID_HEX + 1])
{
	struct ent *e = calloc(n ? n : 1, sizeof *e);
	uint64_t end;
	uint32_t k, crc;
	int rc = 0, j;

	if (e == NULL || entries(ix, len, n, e) < 0) {
		free(e);
		return -1;
	}
	for (k = 0; k < n && rc == 0; k++) {
		end = k + 1 < n ? e[k + 1].off : size - AB_OID_RAW;
		if (e[k].off < 12 || end <= e[k].off ||
		    end > size - AB_OID_RAW ||
		    crc_of(fd, e[k].off, end - e[k].off, &crc) < 0)
			rc = -1;
		else if (crc != be32(ix + 8 + 1024 + (size_t)n * AB_OID_RAW +
		    (size_t)e[k].i * 4)) {
			rc = 1;
			for (j = 0; j < AB_OID_RAW && rc == 1; j++)
				if (ab_fmt(hex + 2 * j, 3, "%02x",
				    ix[8 + 1024 + (size_t)e[k].i * AB_OID_RAW +
				    j]) < 0)
					rc = -1;
		}
	}
	free(e);
	return rc;
}

int ab_pack_damaged(const char *idx, char hex[AB_OID_HEX + 1],
    struct ab_err *err)
{
	char pack[4200];
	struct ab_buf b;
	struct stat st;
	size_t k = strlen(idx);
	uint32_t n;
	int fd, rc;

	if (k < 4 || strcmp(idx + k - 4, ".idx") != 0 ||
	    ab_fmt(pack, sizeof pack, "%.*s.pack", (int)(k - 4), idx) < 0)
		return ab_fail(err, AB_EENGINE, "%s is not a pack index", idx);
	/* 28 bytes an object and 8 more for a large offset: 2^32 objects
	 * would not fit the index format's 32-bit counts anyway. */
	ab_buf_init(&b, (size_t)1 << 34);
	if (ab_file_read_at(AT_FDCWD, idx, &b, NULL, err) < 0) {
		ab_buf_free(&b);
		return -1;
	}
	rc = 0;
	if (b.len < 8 + 1024 + 2 * AB_OID_RAW ||
	    memcmp(b.data, "\377tOc", 4) != 0 ||
	    be32((unsigned char *)b.data + 4) != 2)
		goto out;	/* version 1: no CRCs to compare */
	n = be32((unsigned char *)b.data + 8 + 1020);
	if ((uint64_t)b.len < 8 + 1024 + (uint64_t)n * (AB_OID_RAW + 8) +
	    2 * AB_OID_RAW) {
		rc = ab_fail(err, AB_EENGINE, "%s is truncated", idx);
		goto out;
	}
	if ((fd = open(pack, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    fstat(fd, &st) < 0 || st.st_size < 12 + AB_OID_RAW) {
		rc = ab_fail_errno(err, AB_EENGINE, "cannot read %s", pack);
		if (fd >= 0)
			close(fd);
		goto out;
	}
	rc = scan(fd, (uint64_t)st.st_size, (unsigned char *)b.data, b.len,
	    n, hex);
	close(fd);
	if (rc < 0)
		rc = ab_fail(err, AB_EENGINE, "%s does not match its index",
		    pack);
out:
	ab_buf_free(&b);
	return rc;
}
