/* keeper.h: the allocation's keeper and staging clone: the files put
 * on, and read back from, the volumes of its keeper (and of its proxy),
 * and the identity of the staging clone ab-seed made. */
#ifndef AB_KEEPER_H
#define AB_KEEPER_H

#include <stddef.h>

#include "alloc.h"
#include "buf.h"
#include "engine.h"
#include "err.h"
#include "state.h"
#include "tarstream.h"

/* The staging clone of allocation a: $STATE/stage/ID. */
int ab_stage_path(const struct ab_state *s, const struct ab_alloc *a,
    char *out, size_t cap);
/* The staging clone's identity as ab-seed records it in the allocation:
 * the device and inode of STAGE and of its objects directory. */
int ab_stage_identity(const char *stage, long long *dev, long long *ino,
    long long *objects, struct ab_err *err);
/* Refuses a staging clone that is not the one ab-seed recorded. */
int ab_stage_check(const char *stage, const struct ab_alloc *a,
    struct ab_err *err);
/* The allocation's keeper is running and locked as it was created. */
int ab_keeper_ready(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, struct ab_err *err);
/* Uploads the archive src into DEST of the keeper's volumes; the caller
 * checked the keeper (ab_keeper_ready).  A full filesystem is said as
 * the one that filled, with its ceiling. */
int ab_keeper_upload(struct ab_engine *e, const struct ab_alloc *a,
    const char *dest, const struct ab_tar_source *src, struct ab_err *err);
/* One file of one invocation on the keeper's volumes: DIR/SUB/NAME, DIR
 * a volume's mount point, SUB the invocation's own directory.  Both SUB
 * and NAME are owned by UID and GID, with their modes. */
struct ab_keeper_file {
	const char *dir;
	char sub[AB_ID_LEN + 1];
	char name[128];
	unsigned uid, gid, sub_mode, mode;
};

/* Puts f through the running, locked keeper, replacing what was there:
 * SUB first (made, or its owner and mode set again), then NAME. */
int ab_keeper_put(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_keeper_file *f,
    const char *data, size_t len, struct ab_err *err);
/* The same for N files of one DIR and SUB, in one upload: each upload
 * costs the engine its lock, the mounts and an unpacking process. */
struct ab_keeper_item {
	struct ab_keeper_file f;
	const char *data;
	size_t len;
};
int ab_keeper_put_all(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_keeper_item *f, int n,
    struct ab_err *err);
/* Puts f through the running, locked proxy onto the egress volume, as
 * ab_keeper_put does through the keeper: the vault's files (vault.h),
 * which no volume of the keeper holds. */
int ab_proxy_put(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_keeper_file *f,
    const char *data, size_t len, struct ab_err *err);
/* The same for N files of one DIR and SUB, in one upload. */
int ab_proxy_put_all(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_keeper_item *f, int n,
    struct ab_err *err);
/* Reads back FILE, a regular file on the keeper's volumes, into b (at
 * most b->max bytes). */
int ab_keeper_get(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const char *file, struct ab_buf *b,
    struct ab_err *err);
/* Reads back FILE, a regular file of the proxy's egress volume (the
 * vault's, which the proxy's uid alone may read inside), into b. */
int ab_proxy_get(struct ab_engine *e, const struct ab_alloc *a,
    const char *file, struct ab_buf *b, struct ab_err *err);

#endif
