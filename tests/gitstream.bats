#!/usr/bin/env bats
# lib/git/gitstream.c against real git: the literal hunks it writes apply with
# git apply, the pack it writes is what git index-pack and verify-pack
# read back, and a blob of 1 GiB costs it a few buffers of memory.  The
# unit program (tests/unit/gitstream-test.c) writes the repository, the
# patches and the pack; no engine is needed.

# shellcheck disable=SC2154 # bats sets status, output, stderr
load helpers

GS_TEST=${AB_UNIT:-$AB_ROOT/build/tests}/gitstream-test
# A bound on memory, not a timing: the loose object's file is read and
# inflated 64 KiB at a time, whatever the blob's size.
GS_MAX_RSS_KIB=$((64 * 1024))

setup_file() {
	GS_DIR=$BATS_FILE_TMPDIR/gs
	mkdir -p "$GS_DIR"
	export GS_DIR
	rc=0
	"$GS_TEST" "$GS_DIR" >"$BATS_FILE_TMPDIR/tap" 2>&1 || rc=$?
	echo "$rc" >"$BATS_FILE_TMPDIR/tap.rc"
}

# The ID of NAME in the unit program's repository.
gs_id() {
	awk -v n="$1" '$1 == n { print $3 }' "$GS_DIR/objects"
}

# The bytes of object ID as git reads them from that repository.
gs_cat() {
	git --git-dir="$GS_DIR/repo" cat-file "$1" "$2"
}

# A fresh repository where the patches are applied: it holds none of the
# objects, so git apply builds each result from the hunk's bytes.
gs_fresh() {
	local d
	d=$(mktemp -d "$BATS_TEST_TMPDIR/apply.XXXXXX")
	git init -q "$d"
	printf '%s\n' "$d"
}

@test "lib/gitstream: every unit check passes" {
	run cat "$BATS_FILE_TMPDIR/tap"
	refute_output --partial "not ok"
	assert_output --partial "ok "
	run cat "$BATS_FILE_TMPDIR/tap.rc"
	assert_output 0
}

@test "a new file's literal hunk applies with git apply, byte for byte" {
	local d name id
	d=$(gs_fresh)
	for name in empty small small2 random zeros packed; do
		id=$(gs_id "$name")
		[ -n "$id" ]
		run git -C "$d" cat-file -e "$id"
		assert_failure
		run git -C "$d" apply "$GS_DIR/new-$name.patch"
		assert_success
		cmp "$d/$name" <(gs_cat blob "$id")
	done
}

@test "a modified file's forward hunk is the new blob's literal" {
	local d
	d=$(gs_fresh)
	gs_cat blob "$(gs_id small)" >"$d/f"
	run git -C "$d" apply "$GS_DIR/mod-text.patch"
	assert_success
	cmp "$d/f" <(gs_cat blob "$(gs_id small2)")
	gs_cat blob "$(gs_id random)" >"$d/f"
	run git -C "$d" apply "$GS_DIR/mod-big.patch"
	assert_success
	cmp "$d/f" <(gs_cat blob "$(gs_id zeros)")
}

@test "a deletion's forward hunk is literal 0, and git apply removes the file" {
	local d
	d=$(gs_fresh)
	gs_cat blob "$(gs_id small)" >"$d/f"
	run git -C "$d" apply "$GS_DIR/del.patch"
	assert_success
	[ ! -e "$d/f" ]
}

@test "the literal of the old blob after the new one is git's reverse hunk" {
	local d
	d=$(gs_fresh)
	gs_cat blob "$(gs_id small)" >"$d/f"
	run git -C "$d" apply "$GS_DIR/both.patch"
	assert_success
	cmp "$d/f" <(gs_cat blob "$(gs_id random)")
	run git -C "$d" apply -R "$GS_DIR/both.patch"
	assert_success
	cmp "$d/f" <(gs_cat blob "$(gs_id small)")
}

@test "git index-pack and verify-pack read the pack back, every object whole" {
	local d idx name type id n=0
	d=$(gs_fresh)
	run git -C "$d" index-pack --stdin <"$GS_DIR/all.pack"
	assert_success
	idx=$(find "$d/.git/objects/pack" -name '*.idx')
	run git -C "$d" verify-pack -v "$idx"
	assert_success
	while read -r name type id; do
		assert_line --regexp "^$id $type +$(gs_cat -s "$id") "
		cmp <(git -C "$d" cat-file "$type" "$id") <(gs_cat "$type" "$id")
		n=$((n + 1))
	done <"$GS_DIR/objects"
	[ "$n" -eq 8 ]
	assert_line "non delta: $n objects"
}

@test "a bundle made of a header and the pack clones to the commit's files" {
	local d name type id
	run git bundle verify "$GS_DIR/all.bundle"
	assert_success
	d=$BATS_TEST_TMPDIR/clone
	run git clone -q -b main "$GS_DIR/all.bundle" "$d"
	assert_success
	assert_equal "$(git -C "$d" rev-parse HEAD)" "$(gs_id commit)"
	while read -r name type id; do
		[ "$type" = blob ] || continue
		cmp "$d/$name" <(gs_cat blob "$id")
	done <"$GS_DIR/objects"
}

# Peak RSS (KiB) of the unit program writing VERB (literal, pack) of blob
# ID in DIR to OUT.
gs_rss() {
	/usr/bin/time -f %M -o "$BATS_TEST_TMPDIR/rss" \
		"$GS_TEST" "$1" "$2" "$3" >"$4"
	cat "$BATS_TEST_TMPDIR/rss"
}

@test "a 1 GiB blob of zeros costs the literal and the pack under 64 MiB" {
	local big=$BATS_TEST_TMPDIR/big id rss d
	mkdir "$big"
	id=$("$GS_TEST" big "$big" 1024 zero)
	rss=$(gs_rss literal "$big" "$id" "$big/lit")
	echo "# literal: peak RSS $rss KiB" >&3
	[ "$rss" -lt "$GS_MAX_RSS_KIB" ]
	assert_equal "$(head -n 1 "$big/lit")" "literal 1073741824"
	rss=$(gs_rss pack "$big" "$id" "$big/pack")
	echo "# pack: peak RSS $rss KiB" >&3
	[ "$rss" -lt "$GS_MAX_RSS_KIB" ]
	d=$(gs_fresh)
	run git -C "$d" index-pack --stdin <"$big/pack"
	assert_success
	assert_equal "$(git -C "$d" cat-file -s "$id")" 1073741824
}

# libgit2's own loose stream maps the whole file: an incompressible blob
# would cost its size there.
@test "an incompressible 128 MiB blob costs them under 64 MiB as well" {
	local big=$BATS_TEST_TMPDIR/big id rss
	mkdir "$big"
	id=$("$GS_TEST" big "$big" 128 random)
	[ "$(stat -c %s "$big/repo/objects/${id:0:2}/${id:2}")" -gt \
		$((128 * 1024 * 1024)) ]
	rss=$(gs_rss literal "$big" "$id" /dev/null)
	echo "# literal: peak RSS $rss KiB" >&3
	[ "$rss" -lt "$GS_MAX_RSS_KIB" ]
	rss=$(gs_rss pack "$big" "$id" /dev/null)
	echo "# pack: peak RSS $rss KiB" >&3
	[ "$rss" -lt "$GS_MAX_RSS_KIB" ]
}
