#!/usr/bin/env bats
# ab-seed: a trusted commit into the task and git filesystems, checked
# from inside a container started on the allocation.

# shellcheck disable=SC2154 # bats sets status, output, stderr
# shellcheck disable=SC2030,SC2031 # a test and its teardown share ALLOCS
# shellcheck disable=SC2016 # scripts in single quotes run in the container
load helpers

setup_file() {
	ab_setup_file
	export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com \
		GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com
}

teardown_file() {
	ab_teardown_file
}

ALLOCS=()

teardown() {
	ab_proxy_stop
	local a
	for a in "${ALLOCS[@]}"; do
		ab_drop_alloc "$a"
	done
}

new_alloc() {
	run_exact 0 ab-alloc --image "$AB_IMAGE" "$@"
	ALLOCS+=("$output")
	ALLOC=$output
}

# corrupt_loose OBJ SIZE: the loose object file OBJ holds SIZE other
# random bytes under its old name.
corrupt_loose() {
	chmod u+w "$1"
	python3 -c 'import os, sys, zlib
n = int(sys.argv[2])
head = b"blob %d\0" % n
open(sys.argv[1], "wb").write(zlib.compress(head + os.urandom(n)))' "$1" "$2"
}

# A small repository with history, an executable, a symlink and a subdir.
make_repo() {
	REPO=$BATS_TEST_TMPDIR/repo
	git init -q "$REPO"
	mkdir -p "$REPO/sub/deeper"
	printf 'hello\n' >"$REPO/a.txt"
	printf '#!/bin/sh\necho hi\n' >"$REPO/run.sh"
	chmod +x "$REPO/run.sh"
	printf 'deep\n' >"$REPO/sub/deeper/f"
	head -c 3000 /dev/urandom >"$REPO/sub/binary"
	ln -s ../a.txt "$REPO/sub/link"
	git -C "$REPO" add -A
	git -C "$REPO" commit -qm first
	printf 'more\n' >>"$REPO/a.txt"
	git -C "$REPO" commit -qam second
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
}

# hostile_commit 'MODE|TYPE|NAME|CONTENT'...: a repository whose root tree
# holds exactly these entries (CONTENT is a blob's text), made with git
# plumbing so it may hold what porcelain refuses.
hostile_commit() {
	REPO=$BATS_TEST_TMPDIR/hostile
	rm -rf "$REPO"
	git init -q "$REPO"
	local spec mode type name content oid list=
	for spec in "$@"; do
		IFS='|' read -r mode type name content <<<"$spec"
		oid=$(printf '%s' "$content" | git -C "$REPO" hash-object -w --stdin)
		list+=$(printf '%s %s %s\t%s' "$mode" "$type" "$oid" "$name")$'\n'
	done
	oid=$(printf '%s' "$list" | git -C "$REPO" mktree)
	COMMIT=$(git -C "$REPO" commit-tree -m hostile "$oid")
}

# A listing "TYPE MODE UID SIZE PATH" of the tree inside the container.
inside_listing() {
	AB_RO_GIT=1 ab_on_alloc "$ALLOC" \
		'cd /work && find . -path ./.git -prune -o -mindepth 1 -print |
		 sort | while read -r p; do
			stat -c "%F %a %u:%g %s %n" "$p"; done |
		 sed -E "s/^(directory [0-9]+ [0-9:]+) [0-9]+/\\1 -/"'
}

host_listing() {
	(cd "$1" && find . -path ./.git -prune -o -mindepth 1 -print | sort |
		while read -r p; do
			stat -c "%F %a %s %n" "$p"
		done) | sed -E 's/^(directory [0-9]+) [0-9]+/\1 -/'
}

@test "a seeded tree matches the commit: bytes, modes, owners, links" {
	make_repo
	new_alloc
	run_exact 0 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	assert_equal "$output" "$ALLOC"
	run inside_listing
	assert_success
	local inside
	inside=$output
	# Every entry owned by the agent...
	run grep -vc ' 10001:10001 ' <<<"$inside"
	assert_output 0
	# ...and type, mode, size and path as in a checkout of the commit
	# (git checks out 0644/0755 files, 0755 dirs, 0777 links here).
	(umask 022 && git clone -q "$REPO" "$BATS_TEST_TMPDIR/co")
	assert_equal "${inside// 10001:10001/}" \
		"$(host_listing "$BATS_TEST_TMPDIR/co")"
	run ab_on_alloc "$ALLOC" 'cd /work && sha256sum a.txt run.sh sub/binary sub/deeper/f'
	assert_equal "$output" "$(cd "$BATS_TEST_TMPDIR/co" && sha256sum a.txt run.sh sub/binary sub/deeper/f)"
	run ab_on_alloc "$ALLOC" 'readlink /work/sub/link'
	assert_output ../a.txt
}

@test "names are bytes: not ASCII, not UTF-8, over 100 bytes, and long link targets" {
	make_repo
	local long
	long=$(printf 'd%.0s' {1..60})/$(printf 'e%.0s' {1..60})/$(printf 'f%.0s' {1..90})
	mkdir -p "$REPO/${long%/*}"
	echo deep >"$REPO/$long"
	echo accent >"$REPO/dé.txt"
	echo raw >"$REPO/$(printf 'x\377y')"
	ln -s "$long" "$REPO/far"
	git -C "$REPO" add -A
	git -C "$REPO" commit -qm names
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	new_alloc
	run_exact 0 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	run inside_listing
	assert_success
	(umask 022 && git clone -q "$REPO" "$BATS_TEST_TMPDIR/co")
	assert_equal "${output// 10001:10001/}" \
		"$(host_listing "$BATS_TEST_TMPDIR/co")"
	AB_RO_GIT=1 run ab_on_alloc "$ALLOC" "cd /work && readlink far &&
		cat '$long' dé.txt \"\$(printf 'x\\377y')\" &&
		echo \"status:\$(git status --porcelain)\""
	assert_success
	assert_equal "$output" "$long
deep
accent
raw
status:"
}

@test "git inside sees HEAD at the commit, a clean tree and the history" {
	make_repo
	new_alloc
	run_exact 0 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	AB_RO_GIT=1 run ab_on_alloc "$ALLOC" 'cd /work &&
		git rev-parse HEAD && echo "status:$(git status --porcelain)" &&
		git log --format=%s'
	assert_success
	assert_line --index 0 "$COMMIT"
	assert_line --index 1 "status:"
	assert_line --index 2 second
	assert_line --index 3 first
}

@test "the index is the one git read-tree writes, and git inside checks it" {
	# Names that sort differently as paths and as tree entries, an
	# executable, a symlink, a gitlink, and a 4,000-byte path through
	# directories that hold only a directory.
	hostile_commit '100644|blob|a.b|1' '100644|blob|a-|2' '100644|blob|a0|3'
	local t sub long i
	t=$(printf '100644 blob %s\tb\n' "$(printf 4 | git -C "$REPO" hash-object -w --stdin)" |
		git -C "$REPO" mktree)
	sub=$(printf '040000 tree %s\tc\n100755 blob %s\tc.txt\n' "$t" \
		"$(printf 5 | git -C "$REPO" hash-object -w --stdin)" | git -C "$REPO" mktree)
	long=$sub
	for i in $(seq 1 19); do
		long=$(printf '040000 tree %s\t%s\n' "$long" "$(printf 'd%.0s' $(seq 1 200))" |
			git -C "$REPO" mktree)
	done
	t=$( { git -C "$REPO" ls-tree "$COMMIT"
		printf '040000 tree %s\ta\n040000 tree %s\tab\n' "$t" "$sub"
		printf '040000 tree %s\tlong\n' "$long"
		printf '120000 blob %s\tlink\n' "$(printf a.b | git -C "$REPO" hash-object -w --stdin)"
		printf '160000 commit %s\tsub\n' "$COMMIT"
	} | git -C "$REPO" mktree)
	COMMIT=$(git -C "$REPO" commit-tree -m names "$t")
	new_alloc --task-bytes 64M
	run_exact 0 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	AB_RO_GIT=1 ab_on_alloc "$ALLOC" 'cat /work/.git/index' >"$BATS_TEST_TMPDIR/inside"
	GIT_INDEX_FILE=$BATS_TEST_TMPDIR/host git -C "$REPO" read-tree "$COMMIT"
	run python3 "$AB_ROOT/tests/lib/index-diff.py" "$BATS_TEST_TMPDIR/inside" \
		"$BATS_TEST_TMPDIR/host"
	assert_success
	# fsck reads the index and its tree cache; status compares it.
	AB_RO_GIT=1 run ab_on_alloc "$ALLOC" 'cd /work &&
		git fsck --no-dangling 2>&1 && echo fsck-ok &&
		echo "status:$(git status --porcelain)" && git ls-files | wc -l'
	assert_success
	assert_line fsck-ok
	assert_line status:
	assert_line 10
}

@test "with --depth 1, blobs over 1 MiB go loose, compressed or stored, and git inside reads every object" {
	make_repo
	head -c 2100000 /dev/urandom >"$REPO/old.bin"
	git -C "$REPO" add old.bin
	git -C "$REPO" commit -qm old
	local old text rnd
	old=$(git -C "$REPO" rev-parse HEAD:old.bin)
	git -C "$REPO" rm -q old.bin
	seq 1 400000 >"$REPO/big.txt"
	head -c 2100000 /dev/urandom >"$REPO/big.bin"
	git -C "$REPO" add -A
	git -C "$REPO" commit -qm big
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	text=$(git -C "$REPO" rev-parse HEAD:big.txt)
	rnd=$(git -C "$REPO" rev-parse HEAD:big.bin)
	# Loose in the source, they stream; packed, libgit2 reads them whole.
	new_alloc
	run_exact 0 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" --depth 1
	git -C "$REPO" gc -q
	[ -z "$(find "$REPO/.git/objects" -path '*/objects/??/*' -type f)" ]
	new_alloc
	run_exact 0 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" --depth 1
	AB_RO_GIT=1 run ab_on_alloc "$ALLOC" "cd /work &&
		git fsck --full --strict --no-dangling 2>&1 && echo fsck-ok &&
		echo \"status:\$(git status --porcelain)\" &&
		{ git cat-file -e $old 2>/dev/null || echo no-old; } &&
		stat -c '%n %s' .git/objects/${text:0:2}/${text:2} \
			.git/objects/${rnd:0:2}/${rnd:2}"
	assert_success
	assert_line fsck-ok
	assert_line status:
	assert_line no-old
	# seq's text deflates to a fraction; random bytes are stored whole.
	local tsize rsize
	tsize=$(printf '%s\n' "$output" | awk -v f="${text:2}" '$1 ~ f { print $2 }')
	rsize=$(printf '%s\n' "$output" | awk -v f="${rnd:2}" '$1 ~ f { print $2 }')
	[ "$tsize" -gt 0 ] && [ "$tsize" -lt 1000000 ]
	[ "$rsize" -ge 2100000 ] && [ "$rsize" -lt 2200000 ]
}

# seeded_packs ALLOC: fsck, the count of "+change" lines in the log, and
# a line "pack OBJECTS DELTAS MAXDEPTH ID..." for each pack (verify-pack
# -v: "ID type size packed offset [depth base]").
seeded_packs() {
	AB_RO_GIT=1 run ab_on_alloc "$1" 'cd /work &&
		git fsck --full --strict --no-dangling 2>&1 && echo fsck-ok &&
		git log -p | grep -c "^+change" &&
		for p in .git/objects/pack/pack-*.idx; do
			git verify-pack -v "$p" | awk "
				NF == 7 { d++; if (\$6 > m) m = \$6 }
				NF >= 5 && \$2 ~ /^(commit|tree|blob|tag)\$/ {
				n++; ids = ids \" \" \$1 } END {
				print \"pack\", n, d + 0, m + 0, ids }" || echo verify-failed
		done'
	assert_success
	assert_line fsck-ok
	refute_line verify-failed
}

@test "a history is git's own pack, its stored deltas reused; --depth 1 packs the tip whole" {
	make_repo
	local i tip hist
	# Nine versions of 0.9 MB: past the cross-over a history goes to git.
	seq 1 150000 >"$REPO/log.txt"
	for i in 1 2 3 4 5 6 7 8; do
		echo "change $i" >>"$REPO/log.txt"
		git -C "$REPO" add log.txt
		git -C "$REPO" commit -qm "change $i"
	done
	git -C "$REPO" gc -q
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	new_alloc
	run_exact 0 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	seeded_packs "$ALLOC"
	assert_line --index 1 8
	# One pack: every object the commit reaches, older versions of
	# log.txt as deltas, as the source stores them.
	hist=$(printf '%s\n' "$output" | grep '^pack ')
	[ "$(printf '%s\n' "$hist" | wc -l)" -eq 1 ]
	[ "$(echo "$hist" | cut -d' ' -f2)" -eq \
		"$(git -C "$REPO" rev-list --objects HEAD | wc -l)" ]
	[ "$(echo "$hist" | cut -d' ' -f3)" -ge 5 ]
	for i in $(git -C "$REPO" rev-list --objects HEAD | cut -d' ' -f1); do
		echo "$hist" | grep -q " $i"
	done
	# --depth 1: the commit, 3 trees and 6 blobs in a pack of our own,
	# none a delta.
	new_alloc
	run_exact 0 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" --depth 1
	seeded_packs "$ALLOC"
	assert_line --index 1 8
	tip=$(printf '%s\n' "$output" | grep '^pack ')
	[ "$(echo "$tip" | cut -d' ' -f2,3)" = "10 0" ]
	echo "$tip" | grep -q " $COMMIT"
}

@test "a small history is packed without git, whole; one past the cross-over needs git" {
	make_repo
	echo "change 1" >>"$REPO/a.txt"
	git -C "$REPO" commit -qam third
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	new_alloc
	# No git on PATH: a small history never starts it.
	run_exact 0 env PATH="$AB_BIN" ab-seed "$ALLOC" --repo "$REPO" \
		--commit "$COMMIT"
	seeded_packs "$ALLOC"
	assert_line --index 1 1
	[ "$(printf '%s\n' "$output" | grep -c '^pack ')" -eq 1 ]
	[ "$(printf '%s\n' "$output" | grep '^pack ' | cut -d' ' -f2,3)" = \
		"$(git -C "$REPO" rev-list --objects HEAD | wc -l) 0" ]
	AB_RO_GIT=1 run ab_on_alloc "$ALLOC" 'cd /work && git log --format=%H'
	assert_output "$(git -C "$REPO" log --format=%H)"
	# Over 4 MiB of blobs in the history: git's to pack.
	seq 1 150000 >"$REPO/log.txt"
	local i
	for i in 2 3 4 5 6; do
		echo "change $i" >>"$REPO/log.txt"
		git -C "$REPO" add log.txt
		git -C "$REPO" commit -qm "change $i"
	done
	new_alloc
	run_exact 125 env PATH="$AB_BIN" ab-seed "$ALLOC" --repo "$REPO" \
		--commit "$(git -C "$REPO" rev-parse HEAD)"
	assert_regex "$stderr" "git is not installed"
}

@test "a big blob of the source that does not match its name is refused" {
	make_repo
	head -c 1500000 /dev/urandom >"$REPO/big.bin"
	git -C "$REPO" add big.bin
	git -C "$REPO" commit -qm big
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	local id obj
	id=$(git -C "$REPO" rev-parse HEAD:big.bin)
	obj=$REPO/.git/objects/${id:0:2}/${id:2}
	corrupt_loose "$obj" 1500000
	new_alloc
	run_exact 1 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	assert_regex "$stderr" "blob $id of the source does not match its name"
	assert_one_error_line ab-seed
	run ab_on_alloc "$ALLOC" 'wc -c </work/big.bin 2>/dev/null || echo absent'
	refute_output 1500000
}

@test "a big blob only in the history that does not match its name is refused" {
	make_repo
	head -c 1500000 /dev/urandom >"$REPO/old.bin"
	git -C "$REPO" add old.bin
	git -C "$REPO" commit -qm old
	local id obj
	id=$(git -C "$REPO" rev-parse HEAD:old.bin)
	git -C "$REPO" rm -q old.bin
	git -C "$REPO" commit -qm gone
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	obj=$REPO/.git/objects/${id:0:2}/${id:2}
	# Only the staging clone's copy reads it: the tree does not hold it.
	corrupt_loose "$obj" 1500000
	new_alloc
	run_exact 1 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	assert_regex "$stderr" "object $id of the commit's history is damaged or missing in the repository$"
	assert_one_error_line ab-seed
	run ab_on_alloc "$ALLOC" 'ls -A /work/.git'
	assert_output ""
}

@test "with /work/.git mounted read-only the agent cannot change git metadata" {
	make_repo
	new_alloc
	run_exact 0 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	AB_RO_GIT=1 run ab_on_alloc "$ALLOC" '
		touch /work/.git/x 2>&1 || echo refused-1
		touch /work/.git/objects/x 2>&1 || echo refused-2
		chmod 777 /work/.git/HEAD 2>&1 || echo refused-3
		grep " /work/.git " /proc/self/mountinfo'
	assert_line refused-1
	assert_line refused-2
	assert_line refused-3
	assert_line --regexp '^[0-9]+ [0-9]+ [0-9:]+ / /work/.git ro,'
}

@test "the seeded git directory holds no hooks and a sanitized config" {
	make_repo
	git -C "$REPO" config core.hooksPath /tmp/evil
	git -C "$REPO" remote add origin "$BATS_TEST_TMPDIR/elsewhere"
	new_alloc
	run_exact 0 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	AB_RO_GIT=1 run ab_on_alloc "$ALLOC" 'ls /work/.git; cat /work/.git/config'
	refute_output --partial hooks
	refute_output --partial evil
	refute_output --partial remote
	refute_output --partial elsewhere
}

@test "nothing of the source repository runs, on the host or inside" {
	local m=$BATS_TEST_TMPDIR/marker
	make_repo
	git -C "$REPO" config core.fsmonitor "touch $m.fsmonitor"
	git -C "$REPO" config core.hooksPath "$BATS_TEST_TMPDIR/hooks"
	mkdir -p "$BATS_TEST_TMPDIR/hooks"
	printf '#!/bin/sh\ntouch %s.hook\n' "$m" >"$BATS_TEST_TMPDIR/hooks/post-checkout"
	chmod +x "$BATS_TEST_TMPDIR/hooks/post-checkout"
	printf '[core]\n\tpager = touch %s.include\n' "$m" >"$BATS_TEST_TMPDIR/inc"
	git -C "$REPO" config include.path "$BATS_TEST_TMPDIR/inc"
	git -C "$REPO" config filter.x.clean "touch $m.clean; cat"
	git -C "$REPO" config filter.x.smudge "touch $m.smudge; cat"
	git -C "$REPO" config filter.x.process "touch $m.process"
	printf '* filter=x\n' >"$REPO/.gitattributes"
	git -C "$REPO" -c filter.x.clean=cat -c filter.x.process= add .gitattributes
	git -C "$REPO" -c core.hooksPath=/dev/null -c core.fsmonitor= \
		-c filter.x.clean=cat -c filter.x.process= commit -qm attrs
	rm -f "$m".*
	COMMIT=$(git -C "$REPO" -c core.fsmonitor= rev-parse HEAD)
	new_alloc
	run_exact 0 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	AB_RO_GIT=1 run ab_on_alloc "$ALLOC" "cd /work && git status >/dev/null;
		git diff >/dev/null; git log -1 >/dev/null;
		ls $m.* /work/*marker* 2>/dev/null; echo done"
	assert_output 'done'
	run ls "$m".*
	assert_failure
}

@test "a submodule becomes an empty directory and an LFS pointer stays a pointer" {
	local ptr
	ptr=$'version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345'
	hostile_commit "100644|blob|.gitmodules|[submodule \"m\"]" \
		"100644|blob|big.bin|$ptr"
	# Add a gitlink entry by hand: mode 160000, any commit ID.
	local tree
	tree=$( (git -C "$REPO" ls-tree "$COMMIT"
		printf '160000 commit %s\tmod\n' "$COMMIT") | git -C "$REPO" mktree)
	COMMIT=$(git -C "$REPO" commit-tree -m sub "$tree")
	new_alloc
	run_exact 0 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	run ab_on_alloc "$ALLOC" 'ls -A /work/mod | wc -l; stat -c %F /work/mod; head -c 40 /work/big.bin'
	assert_line --index 0 0
	assert_line --index 1 directory
	assert_line --index 2 "version https://git-lfs.github.com/spec/"
}

@test "hostile tree paths are refused before a byte is sent, naming the path" {
	local spec name
	for spec in ".git" ".GIT" ".Git" ".git." ".git " "git~1" ".."; do
		hostile_commit "100644|blob|ok|fine" "100644|blob|$spec|x"
		new_alloc
		run_exact 1 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
		assert_regex "$stderr" "unsafe path"
		run ab_on_alloc "$ALLOC" 'ls -A /work'
		assert_output .git
	done
	name=$(printf 'a\tb')
	hostile_commit "100644|blob|$name|x"
	new_alloc
	run_exact 1 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
}

@test "a tree out of git's order is refused before a byte is sent" {
	# mktree sorts; a tree is written raw to hold "b" before "a", and
	# "c" twice.
	hostile_commit "100644|blob|ok|fine"
	local one two t names
	one=$(printf 1 | git -C "$REPO" hash-object -w --stdin)
	two=$(printf 2 | git -C "$REPO" hash-object -w --stdin)
	for names in "b a" "c c"; do
		t=$(python3 -c 'import sys
n1, n2 = sys.argv[1].split()
e = lambda n, h: b"100644 " + n.encode() + b"\0" + bytes.fromhex(h)
sys.stdout.buffer.write(e(n1, sys.argv[2]) + e(n2, sys.argv[3]))' \
			"$names" "$one" "$two" |
			git -C "$REPO" hash-object -t tree -w --literally --stdin)
		COMMIT=$(git -C "$REPO" commit-tree -m unsorted "$t")
		new_alloc
		run_exact 1 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
		assert_regex "$stderr" "not in git's order at \"${names#* }\": the repository is damaged"
		run ab_on_alloc "$ALLOC" 'ls -A /work'
		assert_output .git
	done
}

@test "escaping symlinks are refused before a byte is sent" {
	local target
	for target in /etc/passwd ../x ../../x a/../../x .git/config; do
		hostile_commit "100644|blob|ok|fine" "120000|blob|l|$target"
		new_alloc
		run_exact 1 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
		assert_regex "$stderr" "unsafe symlink"
		run ab_on_alloc "$ALLOC" 'ls -A /work'
		assert_output .git
	done
}

@test "a symlink chain that escapes through another symlink is refused" {
	hostile_commit "120000|blob|s|." "120000|blob|l|s/../x"
	new_alloc
	run_exact 1 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	assert_regex "$stderr" "after the symlink"
}

@test "a repository over the byte ceiling is refused before upload, with numbers" {
	make_repo
	head -c 3000000 /dev/urandom >"$REPO/big"
	git -C "$REPO" add big
	git -C "$REPO" commit -qm big
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	new_alloc --task-bytes 2M
	run_exact 1 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	assert_regex "$stderr" "task filesystem: 2.9 MiB needed, 2.0 MiB ceiling \\(ab-alloc --task-bytes\\)$"
	run ab_on_alloc "$ALLOC" 'ls -A /work'
	assert_output .git
}

@test "a repository over the inode ceiling is refused before upload" {
	make_repo
	local i
	for i in $(seq 1 30); do echo "$i" >"$REPO/f$i"; done
	git -C "$REPO" add -A
	git -C "$REPO" commit -qm many
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	new_alloc --task-inodes 20
	run_exact 1 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	assert_regex "$stderr" "task filesystem: [0-9]+ files needed, 20-inode ceiling \\(ab-alloc --task-inodes\\)$"
}

@test "the git filesystem's ceiling is checked too" {
	make_repo
	head -c 300000 /dev/urandom >"$REPO/noise"
	git -C "$REPO" add noise
	git -C "$REPO" commit -qm noise
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	# The tip alone, and a history (git's pack, refused as it arrives).
	new_alloc --git-bytes 64k
	run_exact 1 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" --depth 1
	assert_regex "$stderr" "git filesystem: .* needed, 64.0 KiB ceiling \\(ab-alloc --git-bytes\\)$"
	new_alloc --git-bytes 64k
	run_exact 1 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	assert_regex "$stderr" "git filesystem: .* needed, 64.0 KiB ceiling \\(ab-alloc --git-bytes\\)$"
	run ab_on_alloc "$ALLOC" 'ls -A /work/.git'
	assert_output ""
	# Inodes: HEAD, config, index, a pack and its index, six directories
	# and the root; the seed's mark and its folder.
	new_alloc --git-inodes 8
	run_exact 1 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	assert_regex "$stderr" "git filesystem: 14 files needed, 8-inode ceiling \\(ab-alloc --git-inodes\\)$"
	run ab_on_alloc "$ALLOC" 'ls -A /work/.git'
	assert_output ""
}

@test "a staging clone replaced before the upload is refused" {
	make_repo
	new_alloc
	local pid st=0 stage
	AB_TEST_PAUSE=seed-staged ab-seed "$ALLOC" --repo "$REPO" \
		--commit "$COMMIT" >/dev/null 2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	ab_wait_stopped "$pid"
	stage=$AB_STATE_DIR/stage/${ALLOC#alloc:}
	mv "$stage" "$stage.old"
	cp -a "$stage.old" "$stage"
	kill -CONT "$pid"
	wait "$pid" || st=$?
	assert_equal "$st" 1
	run cat "$BATS_TEST_TMPDIR/err"
	assert_output --partial "was replaced"
	run ab_on_alloc "$ALLOC" 'ls -A /work'
	assert_output .git
}

@test "past the deadline, a sweep may take the staged clone: the deadline is the reason, 124" {
	make_repo
	local pid st=0 dl=$BATS_TEST_TMPDIR/deadline
	ab_deadline_in "$dl" 3
	new_alloc --deadline "$dl"
	AB_TEST_PAUSE=seed-staged ab-seed "$ALLOC" --repo "$REPO" \
		--commit "$COMMIT" >/dev/null 2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	ab_wait_stopped "$pid"
	sleep 4
	# Another run's sweep: the lease ran out, so the allocation is taken.
	run_exact 0 ab-clean --sweep --within 1
	[ ! -e "$AB_STATE_DIR/stage/${ALLOC#alloc:}" ]
	kill -CONT "$pid"
	wait "$pid" || st=$?
	assert_equal "$st" 124
	run cat "$BATS_TEST_TMPDIR/err"
	refute_output --partial "is gone"
}

@test "a ref must come with --expect, and resolve to it" {
	make_repo
	new_alloc
	run_exact 2 ab-seed "$ALLOC" --repo "$REPO" --commit HEAD
	assert_one_error_line ab-seed
	run_exact 1 ab-seed "$ALLOC" --repo "$REPO" --commit HEAD~1 --expect "$COMMIT"
	assert_regex "$stderr" "not the expected"
	run_exact 0 ab-seed "$ALLOC" --repo "$REPO" --commit HEAD --expect "$COMMIT"
}

@test "seeding twice, an unknown commit or another state's handle is refused" {
	make_repo
	new_alloc
	run_exact 1 ab-seed "$ALLOC" --repo "$REPO" --commit "$(printf '%040d' 0)"
	run_exact 0 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	run_exact 1 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	assert_regex "$stderr" "not ready"
	AB_STATE_DIR=$(ab_new_state) run_exact 1 ab-seed "$ALLOC" --repo "$REPO" \
		--commit "$COMMIT"
	assert_regex "$stderr" "unknown handle"
	run_exact 1 ab-seed alloc:0123456789abcdef0123456789abcdef --repo "$REPO" \
		--commit "$COMMIT"
}

@test "a keeper that is gone is refused: nothing may land on the host's disk" {
	make_repo
	new_alloc
	docker kill "agentbox-${ALLOC#alloc:}-keeper" >/dev/null
	run_exact 1 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	assert_regex "$stderr" "State.Running"
}

@test "an unreachable engine is 125, a bad repository 2" {
	make_repo
	new_alloc
	DOCKER_HOST=unix:///nonexistent run_exact 125 ab-seed "$ALLOC" \
		--repo "$REPO" --commit "$COMMIT"
	run_exact 2 ab-seed "$ALLOC" --repo "$BATS_TEST_TMPDIR/none" --commit "$COMMIT"
	run_exact 2 ab-seed "$ALLOC" --commit "$COMMIT"
	run_exact 0 ab-seed --help
	assert_regex "$output" "^usage: ab-seed ALLOC"
}

@test "a deadline that passes mid-upload is 124" {
	make_repo
	new_alloc
	local f=$BATS_TEST_TMPDIR/deadline
	ab_proxy_start --match '^PUT /v[0-9.]+/containers/[0-9a-f]+/archive' \
		--action delay --seconds 6
	ab_deadline_in "$f" 3
	DOCKER_HOST=unix://$AB_PROXY_SOCK run_exact 124 ab-seed "$ALLOC" \
		--repo "$REPO" --commit "$COMMIT" --deadline "$f"
	assert_one_error_line ab-seed
	grep -q '"status":"seeding"' "$AB_STATE_DIR/alloc/${ALLOC#alloc:}"
}

@test "the man page names every option of --help" {
	assert_man_covers_help ab-seed 4
}

@test "a handle whose allocation was removed is refused" {
	make_repo
	new_alloc
	ab_drop_alloc "$ALLOC"
	run_exact 1 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	assert_regex "$stderr" "unknown handle"
}

@test "the staging clone shares no file with the source repository" {
	make_repo
	git -C "$REPO" gc -q
	new_alloc
	run_exact 0 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	local stage=$AB_STATE_DIR/stage/${ALLOC#alloc:}
	run find "$stage" -type f -links +1
	assert_output ""
	# No inode of the source appears in the staging clone.
	comm -12 <(find "$REPO/.git" -type f -printf '%i\n' | sort) \
		<(find "$stage" -type f -printf '%i\n' | sort) >"$BATS_TEST_TMPDIR/shared"
	[ ! -s "$BATS_TEST_TMPDIR/shared" ]
}

# seed_filled OPTION DIR: a seeding whose ceiling check passes, after which
# someone else fills DIR in the allocation made with OPTION 1M; its
# stderr in $output.
seed_filled() {
	make_repo
	head -c 600000 /dev/urandom >"$REPO/big"
	git -C "$REPO" add big
	git -C "$REPO" commit -qm big
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	new_alloc "$1" 1M
	local pid st=0
	AB_TEST_PAUSE=seed-staged ab-seed "$ALLOC" --repo "$REPO" \
		--commit "$COMMIT" >/dev/null 2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	ab_wait_stopped "$pid"
	ab_on_alloc "$ALLOC" "dd if=/dev/zero of=$2/filler bs=4k count=200 2>/dev/null"
	kill -CONT "$pid"
	wait "$pid" || st=$?
	assert_equal "$st" 1
	run cat "$BATS_TEST_TMPDIR/err"
}

@test "a filesystem that fills up during the upload is reported as full" {
	seed_filled --task-bytes /work
	assert_output --partial "task filesystem full: 1.0 MiB"
}

@test "the git filesystem filling up during the same upload is named as such" {
	seed_filled --git-bytes /work/.git
	assert_output --partial "git filesystem full: 1.0 MiB"
	refute_output --partial "task filesystem"
}

# A history with a merge, a branch the commit does not reach, and a tag.
make_history() {
	local i
	REPO=$BATS_TEST_TMPDIR/history
	git init -q -b main "$REPO"
	for i in 1 2 3 4 5; do
		printf '%s\n' "$i" >"$REPO/f"
		git -C "$REPO" add f
		git -C "$REPO" commit -qm "c$i"
		[ "$i" != 3 ] || git -C "$REPO" branch side
	done
	git -C "$REPO" checkout -q side
	printf 's\n' >"$REPO/s"
	git -C "$REPO" add s
	git -C "$REPO" commit -qm side
	git -C "$REPO" checkout -q -b other
	printf 'not the agent'"'"'s\n' >"$REPO/secret"
	git -C "$REPO" add secret
	git -C "$REPO" commit -qm other
	git -C "$REPO" tag -a -m t v-other
	git -C "$REPO" checkout -q main
	git -C "$REPO" merge -q --no-edit side
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	SECRET=$(git -C "$REPO" rev-parse other:secret)
}

@test "--depth N: the commit and N-1 generations as git's own --depth has them; log, diff and fsck work inside" {
	local d clone
	make_history
	local tag side
	tag=$(git -C "$REPO" rev-parse v-other)
	side=$(git -C "$REPO" rev-parse other)
	for d in 1 3 100 all; do
		clone=$BATS_TEST_TMPDIR/clone-$d
		if [ "$d" = all ]; then
			git clone -q --bare --no-local --single-branch --branch main \
				"$REPO" "$clone"
			set --
		else
			git clone -q --bare --depth "$d" --single-branch --branch main \
				"file://$REPO" "$clone"
			set -- --depth "$d"
		fi
		new_alloc
		run_exact 0 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" "$@"
		# Nothing of the other branch: its blob, its commit, its tag.
		AB_RO_GIT=1 run ab_on_alloc "$ALLOC" "cd /work &&
			git log --format=%H | sort; echo shallow:; cat .git/shallow 2>/dev/null;
			git fsck --full --no-dangling >/dev/null 2>&1 && echo fsck-ok;
			for o in $SECRET $side $tag; do
				git cat-file -e \$o 2>/dev/null || echo absent; done"
		assert_success
		assert_output "$(git -C "$clone" log --format=%H | sort; echo shallow:
			sort "$clone/shallow" 2>/dev/null
			echo fsck-ok; echo absent; echo absent; echo absent)"
	done
	# Where the depth allows, a diff against the parent works.
	AB_RO_GIT=1 run ab_on_alloc "$ALLOC" 'cd /work && git diff --stat HEAD~1 HEAD'
	assert_success
	assert_output --partial 's | 1 +'
	run_exact 2 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" --depth 0
	assert_regex "$stderr" '^ab-seed: --depth takes 1 to 1000000000 commits$'
}

# flip_entry REPO ID: one byte flipped in the middle of object ID's stored
# bytes in REPO's only pack.
flip_entry() {
	local idx off len
	idx=$(ls "$1"/.git/objects/pack/pack-*.idx)
	read -r off len < <(git -C "$1" verify-pack -v "$idx" |
		awk -v id="$2" '$1 == id { print $5, $4 }')
	chmod u+w "${idx%.idx}.pack"
	python3 -c 'import sys
p, o = sys.argv[1], int(sys.argv[2])
f = open(p, "r+b"); f.seek(o); b = f.read(1); f.seek(o)
f.write(bytes([b[0] ^ 0x40]))' "${idx%.idx}.pack" "$((off + len / 2))"
}

@test "a deltified object damaged in the source's pack is refused by name, and nothing is left" {
	local i id stage
	make_repo
	seq 1 30000 >"$REPO/log.txt"
	git -C "$REPO" add log.txt
	for i in 1 2 3 4 5 6; do
		echo "change $i" >>"$REPO/log.txt"
		git -C "$REPO" commit -qam "change $i"
	done
	git -C "$REPO" repack -adq
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	# An older log.txt, stored as a delta.
	id=$(git -C "$REPO" rev-parse HEAD~3:log.txt)
	git -C "$REPO" verify-pack -v "$(ls "$REPO"/.git/objects/pack/pack-*.idx)" |
		awk -v id="$id" '$1 == id && NF == 7 { f = 1 } END { exit !f }'
	flip_entry "$REPO" "$id"
	new_alloc
	run_exact 1 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	assert_regex "$stderr" "object $id is damaged in the repository: its bytes in pack-[0-9a-f]{40}\\.pack do not match the pack's index$"
	assert_one_error_line ab-seed
	run ab_on_alloc "$ALLOC" 'ls -A /work/.git'
	assert_output ""
	stage=$AB_STATE_DIR/stage/${ALLOC#alloc:}
	run find "$stage/objects" -type f
	assert_output ""
	# The tip alone never reads it.
	new_alloc
	run_exact 0 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" --depth 1
}

@test "a source whose deltas chain deeper than git's default limit still seeds" {
	local i max
	REPO=$BATS_TEST_TMPDIR/chain
	git init -q "$REPO"
	# Each version shares most with the one before alone: the deltas
	# chain, one version on the next.  Each commit has a second of its
	# own: git orders what it packs by commit time, and commits sharing a
	# second (as many do, more or fewer with the machine's load) chained
	# as little as 34 deep.
	for i in $(seq 1 250); do
		{ seq $((i * 100)) $((i * 100 + 3000)); echo "change $i"; } \
			>"$REPO/log.txt"
		git -C "$REPO" add log.txt
		GIT_AUTHOR_DATE="@$((1700000000 + i)) +0000" \
			GIT_COMMITTER_DATE="@$((1700000000 + i)) +0000" \
			git -C "$REPO" commit -qm "change $i"
	done
	git -C "$REPO" -c pack.threads=1 repack -adfq --depth=1000 --window=250
	max=$(git -C "$REPO" verify-pack -v "$(ls "$REPO"/.git/objects/pack/pack-*.idx)" |
		awk 'NF == 7 && $6 > m { m = $6 } END { print m + 0 }')
	[ "$max" -gt 50 ]
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	new_alloc
	run_exact 0 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	seeded_packs "$ALLOC"
	assert_line --index 1 250
	# git's own limit holds in the copy: chains of at most 50.
	[ "$(printf '%s\n' "$output" | awk '/^pack / { print $4 }')" -le 50 ]
}

@test "a history that takes more than a second reports git's progress, a line a second at most" {
	local i start end n slow=$BATS_TEST_TMPDIR/slow-git
	make_repo
	for i in $(seq 1 40); do
		head -c 1000000 /dev/urandom >"$REPO/r$i"
		git -C "$REPO" add "r$i"
		git -C "$REPO" commit -qm "r$i"
		[ "$i" -ge 30 ] || git -C "$REPO" rm -q "r$i"
	done
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	new_alloc --git-bytes 256M --task-bytes 256M
	# ab-seed runs the git of its PATH: this one starts pack-objects
	# 1.5 s late, so the history takes over a second on any machine,
	# and every line git says comes after its first second.
	mkdir "$slow"
	printf '#!/bin/sh\ncase " $* " in *" pack-objects "*) sleep 1.5 ;; esac\nexec %s "$@"\n' \
		"$(command -v git)" >"$slow/git"
	chmod +x "$slow/git"
	start=$(date +%s%N)
	PATH=$slow:$PATH run_exact 0 ab-seed "$ALLOC" --repo "$REPO" \
		--commit "$COMMIT"
	end=$(date +%s%N)
	n=$(printf '%s\n' "$stderr" | grep -c '^ab-seed: history: ' || true)
	# A seeding over a second says something, and never more than a
	# line a second: none in the first, then one a second at most.
	[ "$n" -ge 1 ]
	[ "$n" -le $(((end - start) / 1000000000)) ]
	# Every one of them is git's own phase.
	local other
	other=$(printf '%s\n' "$stderr" | grep '^ab-seed: history: ' |
		grep -Ev '^ab-seed: history: (Enumerating|Counting|Compressing|Writing|Receiving|Resolving) ' || true)
	[ -z "$other" ]
}

@test "a history still packing when the tree is sent goes up in a second upload, the keeper free meanwhile" {
	local i pid st=0
	REPO=$BATS_TEST_TMPDIR/heavy
	git init -q "$REPO"
	# 60 MB of history that git must deflate; a tree of one small file.
	for i in $(seq 1 40); do
		head -c 1500000 /dev/urandom >"$REPO/r"
		git -C "$REPO" add r
		git -C "$REPO" commit -qm "r$i"
	done
	printf 'small\n' >"$REPO/r"
	git -C "$REPO" commit -qam small
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	new_alloc --git-bytes 256M
	AB_TEST_PAUSE=seed-split ab-seed "$ALLOC" --repo "$REPO" \
		--commit "$COMMIT" >/dev/null 2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	ab_wait_stopped "$pid"
	# The tree's upload has ended: the keeper answers, the tree is in
	# place and nothing of the git directory is.
	run docker inspect --format '{{.State.Running}}' \
		"agentbox-${ALLOC#alloc:}-keeper"
	assert_output true
	run ab_on_alloc "$ALLOC" 'cat /work/r; ls -A /work/.git | wc -l'
	assert_output "$(printf 'small\n0')"
	kill -CONT "$pid"
	wait "$pid" || st=$?
	assert_equal "$st" 0
	AB_RO_GIT=1 run ab_on_alloc "$ALLOC" 'cd /work &&
		git fsck --full --no-dangling >/dev/null 2>&1 && echo fsck-ok;
		git log --oneline | wc -l; git status --porcelain | wc -l'
	assert_output "$(printf 'fsck-ok\n41\n0')"
}

@test "a small blob of the tree that does not match its name is a refusal, not an engine failure" {
	make_repo
	local id obj
	id=$(git -C "$REPO" rev-parse HEAD:a.txt)
	obj=$REPO/.git/objects/${id:0:2}/${id:2}
	corrupt_loose "$obj" 11
	new_alloc
	run_exact 1 ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT"
	assert_regex "$stderr" "ab-seed: the repository is damaged: a blob: object hash mismatch - expected $id"
	assert_one_error_line ab-seed
}

@test "a repository whose pack is done by its tree's end goes up in one upload; the seed's mark follows alone" {
	local i pid st=0 go=$BATS_TEST_TMPDIR/go
	make_repo
	# 10 MB of tree, past what the socket between ab-seed and the engine
	# can hold (ab-seed asks a 4 MiB send buffer, which the kernel
	# doubles at most), so that a stalled upload stops ab-seed mid-tree.
	for i in $(seq 1 10); do
		head -c 1000000 /dev/urandom >"$REPO/big$i"
	done
	git -C "$REPO" add -A
	git -C "$REPO" commit -qm big
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	new_alloc
	# The tree's upload waits up to 40 ms past its last byte for the
	# pack; whether a small pack is done by then is the scheduler's to
	# say, and past it the git directory goes up on its own, as it
	# should (the history test above): a loaded machine took that way
	# for a small repository.  So the tree's upload is held mid-body
	# until the packer's thread has ended: then the pack is done before
	# the tree's end on any machine, and one upload is the only right
	# outcome.
	ab_proxy_start --match '^PUT /v[0-9.]+/containers/[0-9a-f]+/archive\?path=/work&' \
		--action stall --until "$go"
	DOCKER_HOST=unix://$AB_PROXY_SOCK ab-seed "$ALLOC" --repo "$REPO" \
		--commit "$COMMIT" >/dev/null 2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	for i in $(seq 1 600); do
		grep -q '^stall PUT' "$AB_PROXY_LOG" && break
		sleep 0.05
	done
	grep -q '^stall PUT' "$AB_PROXY_LOG"
	# The packer is started before the upload; its thread ends once the
	# pack and the index are written, leaving ab-seed's main thread alone.
	for i in $(seq 1 600); do
		[ "$(awk '/^Threads:/ { print $2 }' "/proc/$pid/status")" = 1 ] &&
			break
		sleep 0.05
	done
	[ "$(awk '/^Threads:/ { print $2 }' "/proc/$pid/status")" = 1 ]
	touch "$go"
	wait "$pid" || st=$?
	assert_equal "$st" 0
	# The tree's and the mark's: the engine sets each folder's times at
	# an upload's end, so a mark in the tree's upload would be older
	# than every folder of /work.
	run grep -cE '^PUT /v[0-9.]+/containers/[0-9a-f]+/archive\?path=/work&' \
		"$AB_PROXY_LOG"
	assert_output 1
	run grep -cE '^PUT /v[0-9.]+/containers/[0-9a-f]+/archive\?path=/work/\.git&' \
		"$AB_PROXY_LOG"
	assert_output 1
	AB_RO_GIT=1 run ab_on_alloc "$ALLOC" 'cd /work &&
		git fsck --full --no-dangling >/dev/null 2>&1 && echo fsck-ok'
	assert_output fsck-ok
}
