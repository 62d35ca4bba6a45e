#include <stdlib.h>
#include <string.h>

#include "listing.h"

static int bad(struct ab_err *err)
{
	return ab_fail(err, AB_EREFUSED, "listing /work: the listing is not "
	    "what find and stat print");
}

static int push(struct ab_listing *w, size_t *cap, const char *path,
    int n)
{
	struct ab_work_entry *nv;

	if (w->n == *cap) {
		*cap = *cap ? *cap * 2 : 1024;
		if ((nv = realloc(w->v, *cap * sizeof *nv)) == NULL)
			return -1;
		w->v = nv;
	}
	w->v[w->n].path = path;
	w->v[w->n].kind = n == 1 ? AB_WORK_FILE : n == 2 ? AB_WORK_SOCKET :
	    n == 3 ? AB_WORK_DIR : AB_WORK_OTHER;
	w->v[w->n].size = 0;
	w->v[w->n].ino = 0;
	w->n++;
	return 0;
}

/* "SIZE LINKS INODE\n" for each regular file, in the names' order. */
static int sizes(struct ab_listing *w, const char *p, const char *end,
    struct ab_err *err)
{
	unsigned long long v[3];
	size_t i;
	int k;

	for (i = 0; i < w->n; i++) {
		if (w->v[i].kind != AB_WORK_FILE)
			continue;
		for (k = 0; k < 3; k++) {
			if (p >= end || *p < '0' || *p > '9')
				return bad(err);
			for (v[k] = 0; p < end && *p >= '0' && *p <= '9'; p++) {
				if (v[k] > (~0ULL - 9) / 10)
					return bad(err);
				v[k] = v[k] * 10 + (unsigned)(*p - '0');
			}
			if (p >= end || *p++ != (k < 2 ? ' ' : '\n'))
				return bad(err);
		}
		if (v[0] > (unsigned long long)(1ULL << 62) || v[1] == 0)
			return bad(err);
		w->v[i].size = (long long)v[0];
		w->v[i].ino = v[1] > 1 ? v[2] : 0;
	}
	return p == end ? 0 : bad(err);
}

static int parse(struct ab_listing *w, const char *out, size_t len,
    struct ab_err *err)
{
	const char *p = out, *end = out + len, *z, *q;
	size_t cap = 0;
	int n;

	memset(w, 0, sizeof *w);
	if (len == 0)
		return bad(err);
	for (;;) {
		if ((z = memchr(p, '\0', (size_t)(end - p))) == NULL)
			return bad(err);
		if (z == p)
			break;
		for (n = 1, q = z + 1; n < 5 && (size_t)(end - q) > (size_t)(z - p) &&
		    memcmp(q, p, (size_t)(z - p) + 1) == 0; n++)
			q += z - p + 1;
		if (n > 4 || strncmp(p, "/work", 5) != 0 ||
		    (p[5] != '\0' && p[5] != '/') || (p[5] == '/' && p[6] == '\0'))
			return bad(err);
		if (p[5] != '\0' && push(w, &cap, p + 6, n) < 0)
			return ab_fail(err, AB_EENGINE, "out of memory");
		p = q;
	}
	return sizes(w, z + 1, end, err);
}

int ab_listing_parse(struct ab_listing *l, const char *out, size_t len,
    struct ab_err *err)
{
	if (parse(l, out, len, err) == 0)
		return 0;
	ab_listing_free(l);
	return -1;
}

void ab_listing_free(struct ab_listing *l)
{
	free(l->v);
	memset(l, 0, sizeof *l);
}
