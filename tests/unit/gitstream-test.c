/* gitstream-test.c: unit tests for lib/git/gitstream.c, TAP output, and the
 * files tests/gitstream.bats gives to real git.
 *
 *   gitstream-test DIR              TAP checks; leaves in DIR a bare repo
 *                                   (repo), the list of its objects
 *                                   (objects: NAME TYPE ID), patches
 *                                   (*.patch), a pack and a bundle
 *   gitstream-test big DIR MIB zero|random
 *                                   writes a blob of MIB MiB loose into
 *                                   DIR/repo by streaming, prints its ID
 *   gitstream-test literal DIR ID   the literal hunk of blob ID, to stdout
 *   gitstream-test pack DIR ID...   a pack of the objects, to stdout
 */
#include <errno.h>
#include <fcntl.h>
#include <git2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "file.h"
#include "git.h"
#include "gitstream.h"
#include "tap.h"

#define MIB (1024 * 1024)

static char dir[4096];
static git_repository *repo;

static void die(const char *what)
{
	const git_error *g = git_error_last();

	fprintf(stderr, "gitstream-test: %s: %s\n", what, g && g->message ?
	    g->message : strerror(errno));
	exit(125);
}

static void open_repo(const char *d)
{
	char path[4200];

	snprintf(dir, sizeof dir, "%s", d);
	snprintf(path, sizeof path, "%s/repo", d);
	if (git_repository_open_bare(&repo, path) < 0 &&
	    git_repository_init(&repo, path, 1) < 0)
		die(path);
}

/* Bytes of a blob written by streaming: ZERO zeros, else a fixed
 * pseudo-random sequence (xorshift64), so a failure repeats. */
static void blob_stream(git_oid *id, size_t size, int zero)
{
	static unsigned char buf[MIB];
	uint64_t x = 0x9e3779b97f4a7c15u;
	git_odb_stream *st;
	git_odb *odb;
	size_t i, k;

	if (git_repository_odb(&odb, repo) < 0 ||
	    git_odb_open_wstream(&st, odb, size, GIT_OBJECT_BLOB) < 0)
		die("cannot write a blob");
	memset(buf, 0, sizeof buf);
	for (; size > 0; size -= k) {
		k = size < sizeof buf ? size : sizeof buf;
		for (i = 0; !zero && i + 8 <= k; i += 8) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			memcpy(buf + i, &x, 8);
		}
		if (git_odb_stream_write(st, (const char *)buf, k) < 0)
			die("cannot write a blob");
	}
	if (git_odb_stream_finalize_write(id, st) < 0)
		die("cannot write a blob");
	git_odb_stream_free(st);
	git_odb_free(odb);
}

static void blob_text(git_oid *id, const char *text)
{
	if (git_blob_create_from_buffer(id, repo, text, strlen(text)) < 0)
		die("cannot write a blob");
}

static char *loose_path(const char *hex)
{
	static char path[4300];

	snprintf(path, sizeof path, "%s/repo/objects/%.2s/%s", dir, hex,
	    hex + 2);
	return path;
}

/* A loose object file written here, deflated RAW then TAIL as is, under
 * the name HEX (which it may not match). */
static void put_loose(const char *hex, const char *raw, size_t n,
    const char *tail)
{
	unsigned char z[4096];
	uLongf zn = sizeof z;
	char d[4300];
	int fd;

	snprintf(d, sizeof d, "%s/repo/objects/%.2s", dir, hex);
	unlink(loose_path(hex));
	if (compress2(z, &zn, (const unsigned char *)raw, n, 1) != Z_OK ||
	    (mkdir(d, 0755) < 0 && errno != EEXIST) ||
	    (fd = open(loose_path(hex), O_WRONLY | O_CREAT | O_TRUNC, 0444)) <
	    0 || ab_write_all(fd, z, zn) < 0 ||
	    ab_write_all(fd, tail, strlen(tail)) < 0 || close(fd) < 0)
		die(loose_path(hex));
}

static int out_file(const char *name)
{
	char path[4300];
	int fd;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) <
	    0)
		die(path);
	return fd;
}

static void put_text(int fd, const char *s)
{
	if (ab_write_all(fd, s, strlen(s)) < 0)
		die("cannot write");
}

static const char *hex(const git_oid *id)
{
	static char h[4][GIT_OID_HEXSZ + 1];
	static int i;

	i = (i + 1) % 4;
	return git_oid_tostr(h[i], sizeof h[i], id);
}

static const char zero_hex[] = "0000000000000000000000000000000000000000";

/* A patch of one file, the header as git writes it for a binary change,
 * the forward hunk from OLD to NEW (NULL: none), and with REVERSE the
 * reverse hunk git adds. */
static void patch(const char *name, const char *path, const git_oid *old,
    const git_oid *new, int reverse)
{
	struct ab_err err;
	char head[1024];
	int fd = out_file(name);

	if (old == NULL)
		snprintf(head, sizeof head, "diff --git a/%s b/%s\nnew file mode "
		    "100644\nindex %s..%s\nGIT binary patch\n", path, path,
		    zero_hex, hex(new));
	else if (new == NULL)
		snprintf(head, sizeof head, "diff --git a/%s b/%s\ndeleted file "
		    "mode 100644\nindex %s..%s\nGIT binary patch\n", path, path,
		    hex(old), zero_hex);
	else
		snprintf(head, sizeof head, "diff --git a/%s b/%s\nindex %s..%s "
		    "100644\nGIT binary patch\n", path, path, hex(old), hex(new));
	put_text(fd, head);
	if (ab_gitstream_literal(repo, new, fd, &err) < 0 ||
	    (reverse && ab_gitstream_literal(repo, old, fd, &err) < 0)) {
		fprintf(stderr, "gitstream-test: %s: %s\n", name, err.msg);
		exit(1);
	}
	close(fd);
}

/* The literal of ID into a file: the call's result, the file's text. */
static int literal_text(const git_oid *id, char *text, size_t cap,
    struct ab_err *err)
{
	char path[4300];
	ssize_t n;
	int fd, rc;

	snprintf(path, sizeof path, "%s/scratch", dir);
	if ((fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		die(path);
	rc = ab_gitstream_literal(repo, id, fd, err);
	n = pread(fd, text, cap - 1, 0);
	text[n < 0 ? 0 : n] = '\0';
	close(fd);
	return rc;
}

/* Fails with CODE and a message holding WANT. */
static int fails_with(int rc, const struct ab_err *err, int code,
    const char *want)
{
	int good = rc == -1 && err->code == code &&
	    strstr(err->msg, want) != NULL;

	if (!good)
		printf("# got %d, code %d, \"%s\"; wanted %d, \"%s\"\n", rc,
		    err->code, rc == -1 ? err->msg : "", code, want);
	return good;
}

static void refused(const char *hex_id, const char *want, const char *desc)
{
	char text[256];
	struct ab_err err;
	git_oid id;

	git_oid_fromstr(&id, hex_id);
	ok(fails_with(literal_text(&id, text, sizeof text, &err), &err,
	    AB_EREFUSED, want), desc);
}

/* What can be wrong in a loose object file, each refused. */
static void damaged(void)
{
	static const char hello[] = "b6fc4c620b67d95f953a5c1c1230aaab5db5a1b0";
	char big[20000], text[64];
	struct ab_err err;
	struct stat st;
	git_oid id;
	size_t n;
	int fd;

	put_loose("1000000000000000000000000000000000000001", "blob 3\0hello",
	    12, "");
	refused("1000000000000000000000000000000000000001", "is longer than "
	    "its header says", "content past the header's size is refused");
	put_loose("1000000000000000000000000000000000000002", "blob 9\0hello",
	    12, "");
	refused("1000000000000000000000000000000000000002", "is shorter than "
	    "its header says", "content short of the header's size is refused");
	put_loose(hello, "blob 5\0hello", 12, "junk");
	refused(hello, "has bytes after its end", "bytes after the deflated "
	    "stream are refused");
	put_loose(hello, "blob 5\0hellp", 12, "");
	refused(hello, "does not match its name", "content that does not hash "
	    "to the object's name is refused");
	put_loose(hello, "blob 05\0hello", 13, "");
	refused(hello, "has a malformed header", "a size with a leading zero "
	    "is refused");
	put_loose(hello, "blub 5\0hello", 12, "");
	refused(hello, "has a malformed header", "an unknown type is refused");
	put_loose(hello, "blob 5 hello", 12, "");
	refused(hello, "has no header", "a header without its NUL is refused");
	put_loose(hello, "blob 5\0hello", 12, "");
	ok(git_oid_fromstr(&id, hello) == 0 &&
	    literal_text(&id, text, sizeof text, &err) == 0 &&
	    strncmp(text, "literal 5\n", 10) == 0,
	    "the same object written right is read");

	/* Cut in half: zlib's stream ends early. */
	for (n = 0; n < sizeof big - 1; n++)
		big[n] = (char)('a' + n * 7 % 26);
	big[n] = '\0';
	blob_text(&id, big);
	if (stat(loose_path(hex(&id)), &st) < 0 ||
	    chmod(loose_path(hex(&id)), 0644) < 0 ||
	    truncate(loose_path(hex(&id)), st.st_size / 2) < 0)
		die("truncate");
	refused(hex(&id), "ends early", "a truncated loose object is refused");

	refused("2000000000000000000000000000000000000002", "the repository "
	    "is damaged", "an object that is not there is refused");
	fd = out_file("damaged.pack");
	git_oid_fromstr(&id, "1000000000000000000000000000000000000001");
	ok(fails_with(ab_gitstream_pack(repo, &id, 1, fd, &err), &err,
	    AB_EREFUSED, "is longer than its header says"), "the pack refuses "
	    "a damaged object as the literal does");
	close(fd);
}

struct blob {
	const char *name;
	git_oid id;
};

/* One blob only in a pack (written by libgit2, its loose file removed):
 * read whole by libgit2. */
static void pack_only(git_oid *id)
{
	git_packbuilder *pb;
	struct stat st;

	blob_text(id, "this blob lives in a pack only\n");
	if (git_packbuilder_new(&pb, repo) < 0 ||
	    git_packbuilder_insert(pb, id, NULL) < 0 ||
	    git_packbuilder_write(pb, NULL, 0, NULL, NULL) < 0)
		die("cannot pack a blob");
	git_packbuilder_free(pb);
	if (unlink(loose_path(hex(id))) < 0)
		die("unlink");
	ok(stat(loose_path(hex(id)), &st) < 0 && errno == ENOENT,
	    "the packed blob has no loose file");
}

static void list_objects(const struct blob *b, size_t nb, const git_oid *tree,
    const git_oid *commit)
{
	char line[256];
	int fd = out_file("objects");
	size_t i;

	for (i = 0; i < nb; i++) {
		snprintf(line, sizeof line, "%s blob %s\n", b[i].name,
		    hex(&b[i].id));
		put_text(fd, line);
	}
	snprintf(line, sizeof line, "root tree %s\ncommit commit %s\n",
	    hex(tree), hex(commit));
	put_text(fd, line);
	close(fd);
}

static void tree_and_commit(const struct blob *b, size_t nb, git_oid *tree,
    git_oid *commit)
{
	git_treebuilder *tb;
	git_signature *sig;
	git_tree *t;
	size_t i;

	if (git_treebuilder_new(&tb, repo, NULL) < 0)
		die("cannot build a tree");
	for (i = 0; i < nb; i++)
		if (git_treebuilder_insert(NULL, tb, b[i].name, &b[i].id,
		    GIT_FILEMODE_BLOB) < 0)
			die("cannot build a tree");
	if (git_treebuilder_write(tree, tb) < 0 ||
	    git_tree_lookup(&t, repo, tree) < 0 ||
	    git_signature_new(&sig, "agentbox", "agentbox@localhost",
	    1700000000, 0) < 0 ||
	    git_commit_create(commit, repo, NULL, sig, sig, NULL, "streamed\n",
	    t, 0, NULL) < 0)
		die("cannot make a commit");
	git_signature_free(sig);
	git_tree_free(t);
	git_treebuilder_free(tb);
}

static void writers(void)
{
	struct blob b[] = { { "empty", { { 0 } } }, { "small", { { 0 } } },
	    { "small2", { { 0 } } }, { "random", { { 0 } } },
	    { "zeros", { { 0 } } }, { "packed", { { 0 } } } };
	size_t nb = sizeof b / sizeof b[0], i;
	git_oid ids[sizeof b / sizeof b[0] + 2], tree, commit;
	char text[256];
	struct ab_err err;
	struct stat st;
	int fd;

	blob_stream(&b[0].id, 0, 1);
	blob_text(&b[1].id, "hello, world\nsecond line\n");
	blob_text(&b[2].id, "hello, world\nthe second line, changed\n");
	blob_stream(&b[3].id, 3 * MIB, 0);
	blob_stream(&b[4].id, 64 * MIB, 1);
	pack_only(&b[5].id);
	tree_and_commit(b, nb, &tree, &commit);
	list_objects(b, nb, &tree, &commit);

	for (i = 0; i < nb; i++) {
		snprintf(text, sizeof text, "new-%s.patch", b[i].name);
		patch(text, b[i].name, NULL, &b[i].id, 0);
	}
	patch("mod-text.patch", "f", &b[1].id, &b[2].id, 0);
	patch("mod-big.patch", "f", &b[3].id, &b[4].id, 0);
	patch("del.patch", "f", &b[1].id, NULL, 0);
	patch("both.patch", "f", &b[1].id, &b[3].id, 1);

	for (i = 0; i < nb; i++)
		ids[i] = b[i].id;
	ids[nb] = tree;
	ids[nb + 1] = commit;
	fd = out_file("all.pack");
	ok(ab_gitstream_pack(repo, ids, nb + 2, fd, &err) == 0,
	    "a pack of blobs, a tree and a commit is written");
	/* The random blob is stored from its second MiB on; the 64 MiB of
	 * zeros after it, deflated again, are a few hundred KiB. */
	ok(fstat(fd, &st) == 0 && st.st_size > 3 * MIB &&
	    st.st_size < 4 * MIB, "after an incompressible blob, the next one "
	    "is deflated again");
	close(fd);
	/* A bundle as ab-export writes one: its header, then the pack. */
	fd = out_file("all.bundle");
	snprintf(text, sizeof text, "# v2 git bundle\n%s refs/heads/main\n\n",
	    hex(&commit));
	put_text(fd, text);
	ok(ab_gitstream_pack(repo, ids, nb + 2, fd, &err) == 0,
	    "a bundle's pack is written after its header");
	close(fd);

	ok(fails_with(literal_text(&tree, text, sizeof text, &err), &err,
	    AB_EREFUSED, "is a tree, not a blob"), "the literal of a tree is "
	    "refused");
	ids[1] = ids[0];
	fd = out_file("twice.pack");
	ok(fails_with(ab_gitstream_pack(repo, ids, nb + 2, fd, &err), &err,
	    AB_EUSAGE, "is named twice"), "a pack naming an object twice is "
	    "refused");
	close(fd);
	ok(literal_text(NULL, text, sizeof text, &err) == 0 &&
	    strncmp(text, "literal 0\n", 10) == 0 && strlen(text) == 23 &&
	    strcmp(text + 21, "\n\n") == 0, "no blob is \"literal 0\", the "
	    "empty stream's one line and an empty line");
}

/* A file system that is full, and a descriptor that is not open. */
static void write_errors(void)
{
	struct ab_err err;
	git_oid id;
	int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		die("/dev/full");
	blob_text(&id, "bytes for a full disk\n");
	ok(fails_with(ab_gitstream_literal(repo, &id, fd, &err), &err,
	    AB_EENGINE, "cannot write the binary patch: No space left"),
	    "a literal that cannot be written fails, saying why");
	ok(fails_with(ab_gitstream_pack(repo, &id, 1, fd, &err), &err,
	    AB_EENGINE, "cannot write the pack: No space left"),
	    "a pack that cannot be written fails, saying why");
	close(fd);
	ok(fails_with(ab_gitstream_literal(repo, &id, -1, &err), &err,
	    AB_EENGINE, "Bad file descriptor"), "a descriptor that is not open "
	    "fails");
}

static int tool(int argc, char **argv)
{
	struct ab_err err;
	git_oid *ids;
	int i, rc;

	open_repo(argv[2]);
	if (strcmp(argv[1], "big") == 0 && argc == 5) {
		ids = calloc(1, sizeof *ids);
		if (ids == NULL)
			die("calloc");
		blob_stream(ids, (size_t)strtoull(argv[3], NULL, 10) * MIB,
		    strcmp(argv[4], "zero") == 0);
		printf("%s\n", hex(ids));
		free(ids);
		return 0;
	}
	if (argc < 4 || (strcmp(argv[1], "literal") != 0 &&
	    strcmp(argv[1], "pack") != 0))
		return 2;
	if ((ids = calloc((size_t)argc, sizeof *ids)) == NULL)
		die("calloc");
	for (i = 3; i < argc; i++)
		if (git_oid_fromstr(&ids[i - 3], argv[i]) < 0) {
			free(ids);
			return 2;
		}
	rc = argv[1][0] == 'l' ?
	    ab_gitstream_literal(repo, &ids[0], 1, &err) :
	    ab_gitstream_pack(repo, ids, (size_t)argc - 3, 1, &err);
	free(ids);
	if (rc < 0) {
		fprintf(stderr, "gitstream-test: %s\n", err.msg);
		return err.code;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ab_err err;

	if (ab_git_start(&err) < 0) {
		fprintf(stderr, "gitstream-test: %s\n", err.msg);
		return 125;
	}
	if (argc >= 3)
		return tool(argc, argv);
	if (argc != 2) {
		fprintf(stderr, "usage: gitstream-test DIR\n");
		return 2;
	}
	plan(21);
	open_repo(argv[1]);
	writers();
	damaged();
	write_errors();
	git_repository_free(repo);
	return done_testing();
}
