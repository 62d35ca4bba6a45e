/* gitpack.h: a git pack and its index (version 2), written here.
 *
 * Every object is stored whole (no deltas), deflated at zlib's fastest
 * level.  libgit2 can only write a pack through its indexer, which parses
 * back and hashes each object it was just given and maps the file anew
 * for every object appended: on 100,000 files that was half of a
 * seeding's CPU time.  Here the object IDs are known (each object was read
 * and hashed against its name), so the index is written from them.
 */
#ifndef AB_GITPACK_H
#define AB_GITPACK_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "err.h"
#include "hash.h"

struct ab_pack_ent {
	unsigned char id[AB_OID_RAW];
	uint32_t crc;		/* of the entry's bytes in the pack */
	uint64_t off;
};

struct ab_pack;

/* Starts a pack of exactly N objects in DIR (objects/pack), under a
 * temporary name. */
int ab_pack_start(struct ab_pack **pp, const char *dir, size_t n,
    struct ab_err *err);
/* Appends one object (TYPE: 1 commit, 2 tree, 3 blob, 4 tag); fills in
 * E's offset and CRC.  E->id is the caller's. */
int ab_pack_add(struct ab_pack *p, struct ab_pack_ent *e, int type,
    const void *data, size_t len, struct ab_err *err);
/* Ends the pack, sorts E (the N entries added) and writes the index;
 * renames both into place (the index last) and frees P either way. */
int ab_pack_end(struct ab_pack *p, struct ab_pack_ent *e, size_t n,
    struct ab_err *err);
/* An entry's head into H: TYPE and SIZE, seven bits a byte after the
 * first four, low bits first; its length. */
size_t ab_pack_entry_head(unsigned char h[16], int type, size_t size);
/* Removes what an unfinished pack wrote and frees P. */
void ab_pack_abort(struct ab_pack *p);

/* Where ab_deflate's bytes come from and where they go. */
struct ab_deflate_io {
	/* Points *P at the next piece of input (at most UINT_MAX bytes);
	 * its length, 0 at the end, -1 with ERR set. */
	long (*read)(void *arg, const unsigned char **p, struct ab_err *err);
	/* Takes N deflated bytes, at most OUTCAP; 0, or -1 with ERR set. */
	int (*write)(void *arg, const unsigned char *p, size_t n,
	    struct ab_err *err);
	void *arg;
	unsigned char *out;	/* OUTCAP bytes, for the output */
	size_t outcap;
	/* Not 0: input that does not shrink by a tenth in its first PROBE
	 * bytes (media, archives: compressed already) is stored from there
	 * on, at memcpy speed; zlib's fastest level deflates such bytes at
	 * about 40 MB/s.  Checked where a piece ends: zlib deflates the
	 * rest of the piece before it stores. */
	size_t probe;
};

/* One zlib stream of the input through Z (deflateInit'ed; reset here and
 * back at zlib's fastest level, so one Z serves many streams). */
int ab_deflate(z_stream *z, const struct ab_deflate_io *io,
    struct ab_err *err);

#endif
