/* wheel.h: files taken out of hash-pinned Python wheels, for the agents
 * image (ab-image build --recipe agents).
 *
 * Both agent CLIs are published on PyPI as native binaries inside wheels.
 * A lock file pins each wheel by distribution, version, SHA-256 and file
 * name.  The wheels are fetched with `pip download --no-deps` into a cache
 * outside any state directory (${XDG_CACHE_HOME:-$HOME/.cache}/agentbox),
 * or read from a directory the user names; a wheel whose SHA-256 differs
 * from the lock is refused, and nothing is installed on the host.  A
 * member is extracted once into the cache, checked against the SHA-256
 * the wheel's own RECORD gives it, and checked again by the caller each
 * time it is read.
 */
#ifndef AB_WHEEL_H
#define AB_WHEEL_H

#include <limits.h>
#include <stddef.h>

#include "deadline.h"
#include "err.h"
#include "hashcache.h"

#define AB_WHEELS_MAX 8

struct ab_wheel_pin {
	char dist[64], version[64], sha[65], file[256];
	char path[PATH_MAX];	/* the verified wheel, once found */
};

struct ab_wheels {
	const char *dir;	/* --wheels DIR, or NULL: the cache */
	char cache[1024];
	struct ab_deadline dl;
	void (*progress)(const char *line);
	struct ab_hashcache *hc;	/* NULL: every wheel hashed */
	int n;
	struct ab_wheel_pin pin[AB_WHEELS_MAX];
};

/* Reads LOCK: lines "wheel DIST VERSION SHA256 FILE", '#' comments. */
int ab_wheels_init(struct ab_wheels *w, const char *lock, const char *dir,
    const struct ab_deadline *dl, struct ab_err *err);
/* The host path (cap bytes) of MEMBER of DIST's pinned wheel, extracted
 * into the cache when it is not there yet; sha receives the SHA-256 (hex)
 * the wheel's RECORD gives the member, which the caller must find when it
 * reads the file. */
int ab_wheel_member(struct ab_wheels *w, const char *dist,
    const char *member, char *path, size_t cap, char sha[65],
    struct ab_err *err);

#endif
