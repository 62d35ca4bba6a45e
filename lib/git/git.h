/* git.h: the trusted commit, read with libgit2.
 *
 * Nothing of a repository is executed or interpreted: libgit2 runs no
 * hooks, filters, fsmonitor or attributes for what is done here, and no
 * submodule is fetched.  /work/.git is a staging clone in the state
 * directory that shares no file with the source (gitstage.h).  Every
 * object read is hashed and compared with its name (strict hash
 * verification), so a tree read from the source is byte for byte the tree
 * the staging clone holds.
 */
#ifndef AB_GIT_H
#define AB_GIT_H

#include <stddef.h>

#include "err.h"
#include "hash.h"

enum ab_git_type { AB_GIT_FILE, AB_GIT_DIR, AB_GIT_LINK, AB_GIT_GITLINK };

struct ab_git_entry {
	char *path;		/* relative to the tree's root */
	char *link;		/* symlink target */
	long long size;
	unsigned char oid[AB_OID_RAW];
	unsigned short mode;	/* 0644, 0755, 0755 for dirs, 0777 links */
	unsigned char type;	/* enum ab_git_type */
};

/* Paths live in large blocks: a malloc each was a third of the listing
 * on 100,000 files. */
struct ab_git_block;

struct ab_git_tree {
	struct ab_git_entry *e;
	size_t n;
	long long bytes;	/* file and link bytes */
	unsigned char root[AB_OID_RAW];	/* the root tree's ID */
	struct ab_git_block *paths;
};

int ab_git_start(struct ab_err *err);
/* Opens the repository at DIR itself (no search upwards). */
struct git_repository;
int ab_git_open(struct git_repository **repo, const char *dir,
    struct ab_err *err);
/* Fails with CODE: "WHAT: libgit2's last error". */
int ab_git_fail(struct ab_err *err, int code, const char *what);
/* The same for a read that returned RC: a refusal (AB_EREFUSED) when the
 * object is damaged or missing, else AB_EENGINE. */
int ab_git_read_fail(struct ab_err *err, int rc, const char *what);
/* Resolves REV in the repository at DIR to a commit: a full object ID, or
 * a ref that must resolve to EXPECT. */
int ab_git_resolve(const char *dir, const char *rev, const char *expect,
    char oid[AB_OID_HEX + 1], struct ab_err *err);
/* Lists the commit's tree in the repository at DIR, directories before
 * their contents, every path and symlink target checked (pathcheck.h). */
int ab_git_tree(const char *dir, const char *oid, struct ab_git_tree *t,
    struct ab_err *err);
void ab_git_tree_free(struct ab_git_tree *t);

/* Reads one blob at a time from the repository at DIR for a tar source. */
struct ab_git_reader;
int ab_git_reader_open(struct ab_git_reader **r, const char *dir,
    struct ab_err *err);
/* Loads the blob (EXPECT: its size as listed; a big one is streamed);
 * its bytes are then read with ab_git_reader_read: the count, 0 at the
 * end, -1 on failure (a streamed blob that does not match its name fails
 * before its last byte is handed out). */
int ab_git_reader_load(struct ab_git_reader *r,
    const unsigned char oid[AB_OID_RAW], long long expect, long long *size,
    struct ab_err *err);
long ab_git_reader_read(struct ab_git_reader *r, char *p, size_t n,
    struct ab_err *err);
/* 1 and the loaded blob's bytes when it was read whole (and hashed),
 * 0 when it streams. */
int ab_git_reader_whole(const struct ab_git_reader *r, const void **p,
    size_t *n);
/* 1 and a reference of its own to the blob read whole, which stays valid
 * (its bytes those of ab_git_reader_whole) until ab_git_blob_release,
 * from any thread; 0 when it streams. */
int ab_git_reader_share(const struct ab_git_reader *r, void **ref);
void ab_git_blob_release(void *ref);
void ab_git_reader_close(struct ab_git_reader *r);

/* A blob above this is read as a stream and staged loose (gitstage.h). */
#define AB_GIT_BIG (1024 * 1024)

/* A big blob read as a stream, for memory that stays flat: libgit2 streams
 * loose objects only, and does not hash a stream, so it is hashed here;
 * the last byte is handed out only if the whole matches the name. */
struct git_odb;
struct git_odb_stream;
struct ab_git_bstream {
	struct git_odb_stream *st;
	struct ab_sha1 sha;
	unsigned char id[AB_OID_RAW];
	size_t size, pos;
};

/* 1: open; 0: not streamable (a packed object: read it whole); -1. */
int ab_git_bstream_open(struct ab_git_bstream *b, struct git_odb *odb,
    const unsigned char id[AB_OID_RAW], struct ab_err *err);
/* Bytes read, 0 at the end, -1 on failure or a mismatch. */
long ab_git_bstream_read(struct ab_git_bstream *b, char *p, size_t n,
    struct ab_err *err);
void ab_git_bstream_close(struct ab_git_bstream *b);

#endif
