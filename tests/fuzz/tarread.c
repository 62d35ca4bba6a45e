/* tarread.c: libFuzzer harness for the tar reader (lib/tarread.c), which
 * reads back what the agent left in /work for ab-export: every byte is the
 * agent's.  Beyond not crashing: an entry has a path, a file's data is
 * exactly its size, an entry's type is one the reader names, and a
 * refusal is one printable line. */
#include <stdint.h>
#include <string.h>

#include "common.h"
#include "tarread.h"

#define INPUT_MAX (1 << 20)

static int one(struct ab_tarread *t, const struct ab_tarread_entry *e,
    struct ab_err *err)
{
	char buf[4096];
	long long total = 0;
	long got;

	if (e->path == NULL || e->type > AB_TR_OTHER || e->size < 0)
		abort();
	if ((e->type == AB_TR_SYMLINK || e->type == AB_TR_HARDLINK) &&
	    e->link == NULL)
		abort();
	while ((got = ab_tarread_data(t, buf, sizeof buf, err)) > 0)
		total += got;
	if (got < 0)
		return -1;
	if (e->type == AB_TR_FILE && total != e->size)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct ab_tarread_entry *e;
	struct ab_tarread *t = NULL;
	struct ab_err err;
	int rc;

	if (size > INPUT_MAX)
		return 0;
	memset(&err, 0, sizeof err);
	rc = ab_tarread_open_mem(&t, data, size, INPUT_MAX, "archive", &err);
	while (rc == 0 && (rc = ab_tarread_next(t, &e, &err)) == 1)
		rc = one(t, e, &err);
	if (rc < 0)
		fuzz_err(&err);
	ab_tarread_close(t);
	return 0;
}
