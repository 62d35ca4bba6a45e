#include <stdlib.h>
#include <string.h>

#include "listing.h"

#define R AB_LISTING_ROOT_LEN

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
	w->v[w->n++] = (struct ab_work_entry){ .path = path, .kind = n == 1 ?
	    AB_WORK_FILE : n == 2 ? AB_WORK_SOCKET : n == 3 ? AB_WORK_DIR :
	    AB_WORK_OTHER };
	return 0;
}

/* Digits in BASE (8 or 10) up to SEP, at *P. */
static int num(const char **p, const char *end, unsigned base,
    unsigned long long *v, char sep)
{
	const char *q = *p;

	if (q >= end || *q < '0' || *q >= (char)('0' + base))
		return -1;
	for (*v = 0; q < end && *q >= '0' && *q < (char)('0' + base); q++) {
		if (*v > (~0ULL - 9) / base)
			return -1;
		*v = *v * base + (unsigned)(*q - '0');
	}
	if (q >= end || *q++ != sep)
		return -1;
	*p = q;
	return 0;
}

/* A token of printable bytes up to SEP. */
static const char *token(const char *p, const char *end, char sep)
{
	for (; p < end && *p != sep; p++)
		if (*p <= ' ' || *p > '~')
			return NULL;
	return p < end ? p : NULL;
}

/* "CTIME DATE HH:MM:SS.NNNNNNNNN ZONE\n": the seconds from %Z, the
 * nanoseconds from %z's time of day (its date and zone are the local
 * time's, not needed). */
static int ctime_of(const char **p, const char *end, struct ab_ctime *c)
{
	unsigned long long s;
	const char *q, *dot;
	long ns = 0;
	int i;

	if (num(p, end, 10, &s, ' ') < 0 || s > (1ULL << 40) ||
	    (q = token(*p, end, ' ')) == NULL ||
	    (dot = token(q + 1, end, '.')) == NULL)
		return -1;
	for (i = 0, q = dot + 1; i < 9; i++, q++) {
		if (q >= end || *q < '0' || *q > '9')
			return -1;
		ns = ns * 10 + (*q - '0');
	}
	if (q >= end || *q != ' ' || (q = token(q + 1, end, '\n')) == NULL)
		return -1;
	*p = q + 1;
	c->s = (long long)s;
	c->ns = ns;
	return 0;
}

/* Each regular file's and directory's line, in the names' order. */
static int sizes(struct ab_listing *w, const char **pp, const char *end)
{
	unsigned long long size, links, ino, perm;
	const char *p = *pp;
	size_t i;

	for (i = 0; i < w->n; i++) {
		if (w->v[i].kind != AB_WORK_FILE && w->v[i].kind != AB_WORK_DIR)
			continue;
		if (num(&p, end, 10, &size, ' ') < 0 ||
		    num(&p, end, 10, &links, ' ') < 0 ||
		    num(&p, end, 10, &ino, ' ') < 0 ||
		    num(&p, end, 8, &perm, ' ') < 0 ||
		    ctime_of(&p, end, &w->v[i].ctime) < 0 ||
		    size > (1ULL << 62) || links == 0 || perm > 07777)
			return -1;
		w->v[i].perm = (unsigned)perm;
		if (w->v[i].kind == AB_WORK_DIR)
			continue;
		w->v[i].size = (long long)size;
		w->v[i].ino = links > 1 ? ino : 0;
	}
	*pp = p;
	return 0;
}

static int tail(struct ab_listing *w, const char *p, const char *end,
    struct ab_err *err)
{
	if (sizes(w, &p, end) < 0)
		return bad(err);
	if ((size_t)(end - p) > 5 && memcmp(p, "mark ", 5) == 0) {
		p += 5;
		if (ctime_of(&p, end, &w->mark) < 0)
			return bad(err);
		w->marked = 1;
	}
	return p == end ? 0 : bad(err);
}

int ab_ctime_cmp(struct ab_ctime a, struct ab_ctime b)
{
	if (a.s != b.s)
		return a.s < b.s ? -1 : 1;
	return a.ns < b.ns ? -1 : a.ns > b.ns;
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
		if (n > 4 || strncmp(p, AB_LISTING_ROOT, AB_LISTING_ROOT_LEN) ||
		    (p[R] != '\0' && p[R] != '/') ||
		    (p[R] == '/' && p[R + 1] == '\0'))
			return bad(err);
		if (p[R] != '\0' && push(w, &cap, p + R + 1, n) < 0)
			return ab_fail(err, AB_EENGINE, "out of memory");
		p = q;
	}
	return tail(w, z + 1, end, err);
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
