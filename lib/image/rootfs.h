/* rootfs.h: the default image's root filesystem, assembled on the host.
 *
 * image/default.manifest names every file: host binaries (with the shared
 * libraries they need, found by reading their ELF headers), files of the
 * recipe directory, directories and symlinks, plus the image's user, PATH,
 * entrypoint and the Debian packages whose versions become its labels.
 * Nothing on the host is run to assemble it.
 */
#ifndef AB_ROOTFS_H
#define AB_ROOTFS_H

#include <stddef.h>
#include <sys/types.h>

#include "err.h"
#include "hashcache.h"
#include "tarstream.h"
#include "wheel.h"

struct ab_rentry {
	char *path;		/* in the image, no leading slash */
	enum ab_tar_type type;
	unsigned mode, uid;
	char *src;		/* the host file read, for files */
	char *link;
	char sha[65];		/* a wheel member: the SHA-256 it must have */
	/* Seen while hashing; the tar pass refuses a file that changed. */
	dev_t dev;
	ino_t ino;
	long long size;
	long long mtime_ns, ctime_ns;
};

struct ab_version {
	char *name, *value;
};

struct ab_rootfs {
	struct ab_rentry *e;
	size_t n;
	struct ab_version *v;
	size_t nv;
	char user[32];
	char path_env[256];
	char entrypoint[256];
	char libdir[256];	/* where ELF libraries go; "" their own paths */
	char recipe[65];	/* SHA-256 of the manifest and every input */
	long long bytes;
	/* the tar source's cursor */
	size_t next;
	int fd;
	long long left;
};

/* Reads DIR/MANIFEST, resolves every input and hashes it all.  WHEELS,
 * for a manifest with "wheel" directives, may be NULL otherwise.  HC,
 * when not NULL, answers for files it knows (hashcache.h). */
int ab_rootfs_load(struct ab_rootfs *r, const char *dir,
    const char *manifest, struct ab_wheels *wheels, struct ab_hashcache *hc,
    struct ab_err *err);
/* A tar source over the entries; each file re-checked against the hash
 * pass (device, inode, size, mtime, ctime). */
void ab_rootfs_source(struct ab_rootfs *r, struct ab_tar_source *src);
void ab_rootfs_free(struct ab_rootfs *r);

#endif
