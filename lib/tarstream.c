#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "tarstream.h"

#define CHUNK (64 * 1024)

struct ab_tar {
	struct archive *a;
	struct ab_tar_source src;
	struct ab_buf out;	/* what libarchive wrote, not yet handed out */
	size_t pos;
	long long remaining;	/* of the current file */
	const char *path;	/* of the current file, for messages */
	char path_copy[4096];
	int in_file;
	int finished;
	long long handed;
	char chunk[CHUNK];
	struct ab_err werr;
	int wfailed;
};

static la_ssize_t on_write(struct archive *a, void *arg, const void *p,
    size_t n)
{
	struct ab_tar *t = arg;

	(void)a;
	if (ab_buf_add(&t->out, p, n) < 0) {
		ab_fail(&t->werr, AB_EENGINE, "out of memory writing a tar");
		t->wfailed = 1;
		return -1;
	}
	return (la_ssize_t)n;
}

int ab_tar_open(struct ab_tar **tp, const struct ab_tar_source *src,
    struct ab_err *err)
{
	struct ab_tar *t;

	t = calloc(1, sizeof *t);
	if (t == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	t->src = *src;
	ab_buf_init(&t->out, 0);
	t->a = archive_write_new();
	/* pax for long names; no blocking, so each piece comes out at once. */
	if (t->a == NULL ||
	    archive_write_set_format_pax_restricted(t->a) != ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(t->a, 0) != ARCHIVE_OK ||
	    archive_write_open2(t->a, t, NULL, on_write, NULL, NULL) !=
	    ARCHIVE_OK) {
		ab_tar_close(t);
		return ab_fail(err, AB_EENGINE, "cannot start a tar stream");
	}
	*tp = t;
	return 0;
}

static int arch_fail(struct ab_tar *t, const char *what, struct ab_err *err)
{
	if (t->wfailed) {
		*err = t->werr;
		return -1;
	}
	return ab_fail(err, AB_EENGINE, "tar %s: %s", what,
	    archive_error_string(t->a));
}

static int put_header(struct ab_tar *t, const struct ab_tar_entry *e,
    struct ab_err *err)
{
	struct archive_entry *ae = archive_entry_new();
	int rc;

	if (ae == NULL)
		return ab_fail(err, AB_EENGINE, "out of memory");
	archive_entry_copy_pathname(ae, e->path);
	archive_entry_set_perm(ae, e->mode & 07777);
	archive_entry_set_uid(ae, e->uid);
	archive_entry_set_gid(ae, e->gid);
	archive_entry_set_mtime(ae, e->mtime, 0);
	if (e->type == AB_TAR_DIR) {
		archive_entry_set_filetype(ae, AE_IFDIR);
	} else if (e->type == AB_TAR_SYMLINK) {
		archive_entry_set_filetype(ae, AE_IFLNK);
		archive_entry_copy_symlink(ae, e->link);
	} else {
		archive_entry_set_filetype(ae, AE_IFREG);
		archive_entry_set_size(ae, e->size);
	}
	rc = archive_write_header(t->a, ae);
	archive_entry_free(ae);
	if (rc != ARCHIVE_OK)
		return arch_fail(t, e->path, err);
	if (e->type == AB_TAR_FILE && e->size > 0) {
		t->in_file = 1;
		t->remaining = e->size;
		snprintf(t->path_copy, sizeof t->path_copy, "%s", e->path);
	}
	return 0;
}

static int put_data(struct ab_tar *t, struct ab_err *err)
{
	size_t want = t->remaining < CHUNK ? (size_t)t->remaining : CHUNK;
	long got;

	got = t->src.data(t->src.ctx, t->chunk, want, err);
	if (got < 0)
		return -1;
	if (got == 0)
		return ab_fail(err, AB_EREFUSED, "%s shrank while it was read",
		    t->path_copy);
	if (archive_write_data(t->a, t->chunk, (size_t)got) != got)
		return arch_fail(t, t->path_copy, err);
	t->remaining -= got;
	if (t->remaining == 0)
		t->in_file = 0;
	return 0;
}

/* Produces the next piece of the archive into t->out. */
static int step(struct ab_tar *t, struct ab_err *err)
{
	struct ab_tar_entry e;
	int rc;

	if (t->in_file)
		return put_data(t, err);
	memset(&e, 0, sizeof e);
	rc = t->src.next(t->src.ctx, &e, err);
	if (rc < 0)
		return -1;
	if (rc > 0)
		return put_header(t, &e, err);
	if (archive_write_close(t->a) != ARCHIVE_OK)
		return arch_fail(t, "end", err);
	t->finished = 1;
	return 0;
}

long ab_tar_read(void *arg, char *p, size_t n, struct ab_err *err)
{
	struct ab_tar *t = arg;
	size_t k;

	/* Keep only what is not handed out yet: the buffer stays about one
	 * read's size, never the whole archive (a 50 MiB file would sit in
	 * it whole otherwise). */
	if (t->pos > 0) {
		ab_buf_consume(&t->out, t->pos);
		t->pos = 0;
	}
	/* Fill the caller's whole buffer when we can: one piece per read
	 * would be one small socket write per tar header. */
	while (t->out.len - t->pos < n && !t->finished)
		if (step(t, err) < 0)
			return -1;
	k = t->out.len - t->pos;
	if (k > n)
		k = n;
	if (k > 0)
		memcpy(p, t->out.data + t->pos, k);
	t->pos += k;
	t->handed += (long long)k;
	return (long)k;
}

long long ab_tar_bytes(const struct ab_tar *t)
{
	return t->handed;
}

void ab_tar_close(struct ab_tar *t)
{
	if (t == NULL)
		return;
	if (t->a != NULL)
		archive_write_free(t->a);
	ab_buf_free(&t->out);
	free(t);
}
