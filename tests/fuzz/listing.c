/* listing.c: libFuzzer harness for the parser of /work's listing
 * (lib/format/listing.c), which ab-export accounts for every entry with: every
 * byte is the agent's doing.  Beyond not crashing: each entry is a path
 * under /work as the bytes hold it, a kind the parser names, a size only
 * for a regular file; and a refusal is one printable line. */
#include <stdint.h>
#include <string.h>

#include "common.h"
#include "listing.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct ab_work_entry *e;
	struct ab_listing l;
	struct ab_err err;
	const char *p = (const char *)data;
	size_t i, len;

	memset(&err, 0, sizeof err);
	if (ab_listing_parse(&l, p, size, &err) < 0) {
		fuzz_err(&err);
		return 0;
	}
	for (i = 0; i < l.n; i++) {
		e = &l.v[i];
		if (e->path < p + 6 || e->path >= p + size ||
		    memcmp(e->path - 6, AB_LISTING_ROOT "/", 6) != 0)
			abort();
		len = strnlen(e->path, (size_t)(p + size - e->path));
		if (len == 0 || e->path + len == p + size)
			abort();
		if (e->kind > AB_WORK_OTHER || e->size < 0 ||
		    (e->kind != AB_WORK_FILE && (e->size != 0 || e->ino != 0)))
			abort();
	}
	ab_listing_free(&l);
	return 0;
}
