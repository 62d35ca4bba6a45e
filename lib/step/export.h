/* export.h: the agent's work read back as git objects (ab-export).
 *
 * /work comes back through the archive API as a stream, and every entry
 * is hostile input: the same path checks as ab-seed (pathcheck.h), regular
 * files and symlinks only.  Blobs are streamed one at a time into the
 * staging clone's object store and the tree is built by libgit2 from an
 * in-memory index: nothing is checked out, nothing interpreted, and the
 * only files written on the host are objects in the staging clone.
 * Every entry of the listing of /work (worklist.h) is read, kept as the
 * seed wrote it (a file whose change time, and its folders', is older
 * than the seed's mark: export.c, unchanged()), or named left out, and
 * what is named keeps the commit's version: a deletion is only what the
 * listing shows absent.  A regular file over max_file, or over
 * what the task filesystem can hold, or among the largest of files whose
 * sizes together pass it, is named and never read, and the patch or
 * bundle streams every large blob (changeout.h): no file's size changes
 * the memory.
 */
#ifndef AB_EXPORT_H
#define AB_EXPORT_H

#include "alloc.h"
#include "engine.h"
#include "err.h"
#include "state.h"

/* Called for each entry left out: PATH and why. */
typedef void (*ab_export_skip)(const char *path, const char *why);

#define AB_EXPORT_CREDS 8

/* A credential an agent of the allocation held itself. */
struct ab_export_cred {
	const char *p;
	size_t n;
};

/* How /work was read: the regular files listed, those kept as the seed
 * wrote them, never read (export.c, unchanged()), and the archive
 * requests made; marked is 0 when the allocation has no seed's mark
 * (seeded by an older agentbox), and every file was read. */
struct ab_export_stats {
	long long files, unchanged, archives, inside;
	int marked;
};

/* What is read of /work: the files the seed wrote that the agent never
 * touched are kept unread, and the rest read an entry at a time, when
 * that costs less than reading /work whole (auto), always (changed), or
 * never (all: every file is read). */
enum ab_export_read { AB_READ_AUTO, AB_READ_CHANGED, AB_READ_ALL };

struct ab_export_opts {
	int bundle;		/* 0: a binary patch; 1: a git bundle */
	const char *message;	/* the bundle's commit message */
	int strict;		/* anything left out is a refusal */
	long long max_file;	/* a regular file over this is left out */
	enum ab_export_read read;
	int fd;			/* where the patch or bundle goes */
	ab_export_skip skipped;
	/* The credentials agents held (--credential-in-agent): each entry
	 * exported whose name or bytes (a symlink's target) hold one is
	 * told to HELD, WHERE saying which; --strict refuses. */
	const struct ab_export_cred *creds;
	int ncreds;
	ab_export_skip held;
	struct ab_export_stats *stats;	/* filled when not NULL */
};

/* Writes the change in a's /work against its trusted commit to o->fd;
 * tree (41 bytes) receives the exported tree's ID. */
int ab_export(struct ab_state *s, struct ab_engine *e,
    const struct ab_alloc *a, const struct ab_export_opts *o, char *tree,
    struct ab_err *err);

/* Adds "export_tree" and "export_read" (the stats) to the allocation's
 * latest result record, if any. */
int ab_export_note(struct ab_state *s, const char *alloc, const char *tree,
    const struct ab_export_stats *st, struct ab_err *err);

#endif
