#!/usr/bin/env bats
# ab-export: the agent's work read back as a patch or a bundle, every entry
# treated as hostile.

# shellcheck disable=SC2154 # bats sets status, output, stderr
# shellcheck disable=SC2016 # shell text run inside the container
load helpers
load lib/forge

setup_file() {
	ab_setup_file
	export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t \
		GIT_COMMITTER_EMAIL=t@t
	REPO=$BATS_FILE_TMPDIR/repo
	git init -q "$REPO"
	printf 'one\ntwo\n' >"$REPO/a.txt"
	echo keep >"$REPO/keep"
	echo gone >"$REPO/gone"
	echo run >"$REPO/tool"
	mkdir "$REPO/sub"
	echo s >"$REPO/sub/f"
	git -C "$REPO" add -A
	git -C "$REPO" commit -qm base
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	DL=$BATS_FILE_TMPDIR/deadline
	ab_deadline_in "$DL" 3600
	export REPO COMMIT DL
}

teardown_file() {
	ab_teardown_file
}

setup() {
	ALLOC=$(ab-alloc --image "$AB_IMAGE" --deadline "$DL" "$@")
	ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" --deadline "$DL" 2>/dev/null
}

teardown() {
	ab-clean "$ALLOC" >/dev/null
}

# seeded_from REPO COMMIT: a new allocation seeded from another repository.
seeded_from() {
	ALLOC=$(ab-alloc --image "$AB_IMAGE" --deadline "$DL")
	ab-seed "$ALLOC" --repo "$1" --commit "$2" --deadline "$DL" 2>/dev/null
}

# peak_kib CMD...: runs CMD with its status and stderr kept as run_exact
# does, and sets PEAK to its peak resident memory in KiB.  Under ASan the
# quarantine, which keeps freed memory on purpose, is held to 8 MiB: the
# bound is on what the program holds.
peak_kib() {
	local t=$BATS_TEST_TMPDIR/time
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:quarantine_size_mb=8} \
		run --separate-stderr /usr/bin/time -o "$t" -f %M "$@"
	PEAK=$(tail -n 1 "$t")
}

# assert_peak_under KIB: the last peak_kib's command stayed under KIB.
assert_peak_under() {
	[ "$PEAK" -lt "$1" ] || {
		echo "peak RSS $PEAK KiB, over $1 KiB" >&2
		return 1
	}
}

# agent PHASE SCRIPT: one invocation on the allocation, run to its end.
agent() {
	local prof ctr
	prof=$(ab-profile --alloc "$ALLOC" --phase "$1" --deadline "$DL" \
		--attempt "x-$BATS_TEST_NUMBER-$RANDOM$RANDOM" -- sh -c "$2") &&
		ctr=$(ab-validate "$prof") && RESULT=$(ab-run "$ctr" 2>/dev/null)
}

checkout() {
	git clone -q "$REPO" "$1"
	git -C "$1" checkout -q "$COMMIT"
}

# The keeper's /work as the engine has it, read out with docker cp.
work_copy() {
	mkdir -p "$1"
	docker cp "agentbox-${ALLOC#alloc:}-keeper:/work/." - | tar -x -C "$1" --exclude=./.git
}

# tree DIR [SKIP...]: every entry but .git and the SKIPped paths, one
# line each with its type, owner-x bit and content hash or link target,
# names escaped: what a tree holds, names of any bytes included.
tree() {
	python3 - "$@" <<'PY'
import hashlib, os, sys
root = os.fsencode(sys.argv[1])
skip = {os.fsencode(a) for a in sys.argv[2:]}
out = []
for d, dirs, files in os.walk(root):
    rel = os.path.relpath(d, root)
    for n in sorted(dirs + files):
        p = os.path.normpath(os.path.join(rel, n))
        if p == b'.git' or p in skip:
            continue
        f = os.path.join(d, n)
        if os.path.islink(f):
            what = b'link ' + os.readlink(f)
        elif os.path.isdir(f):
            what = b'dir'
        else:
            x = b'x' if os.stat(f).st_mode & 0o100 else b'-'
            what = b'file ' + x + b' ' + hashlib.sha256(open(f, 'rb').read()).hexdigest()[:16].encode()
        out.append(repr(p)[2:-1] + ' ' + what.decode())
    dirs[:] = [x for x in dirs if os.path.normpath(os.path.join(rel, x)) != b'.git']
print('\n'.join(sorted(out)))
PY
}

CHANGE='cd /work && echo three >>a.txt && rm gone && chmod +x tool &&
	ln -s a.txt link && printf "\000\001\377bin" >blob.bin && echo new >sub/new &&
	mkdir -p deep/er && echo d >deep/er/file'

@test "the patch applies to the commit and gives exactly what the agent left" {
	local co=$BATS_TEST_TMPDIR/co work=$BATS_TEST_TMPDIR/work
	agent execution "$CHANGE"
	run_exact 0 ab-export "$ALLOC" -o "$BATS_TEST_TMPDIR/p.patch"
	assert_output ""
	assert_equal "$stderr" ""
	grep -q 'GIT binary patch' "$BATS_TEST_TMPDIR/p.patch"
	checkout "$co"
	git -C "$co" apply --index "$BATS_TEST_TMPDIR/p.patch"
	work_copy "$work"
	assert_equal "$(listing "$co")" "$(listing "$work")"
	# The result record names the tree, and the patch makes that tree.
	assert_equal "$(git -C "$co" write-tree)" \
		"$(ab-run --show "$RESULT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["export_tree"])')"
}

@test "the bundle verifies and fetches into a clone of the commit, with the same tree" {
	local co=$BATS_TEST_TMPDIR/co work=$BATS_TEST_TMPDIR/work
	agent execution "$CHANGE"
	run_exact 0 ab-export "$ALLOC" --format bundle --message "agent work" \
		-o "$BATS_TEST_TMPDIR/b.bundle"
	checkout "$co"
	git -C "$co" bundle verify "$BATS_TEST_TMPDIR/b.bundle"
	git -C "$co" fetch -q "$BATS_TEST_TMPDIR/b.bundle" refs/heads/agentbox:refs/heads/agent
	assert_equal "$(git -C "$co" rev-parse agent^)" "$COMMIT"
	assert_equal "$(git -C "$co" log -1 --format='%an <%ae>|%cn|%s' agent)" \
		"agentbox <agentbox@localhost>|agentbox|agent work"
	git -C "$co" checkout -q agent
	work_copy "$work"
	assert_equal "$(listing "$co")" "$(listing "$work")"
}

@test "blobs over 4 MiB go out streamed: added, changed, deleted, mode changed, quoted names" {
	local co=$BATS_TEST_TMPDIR/co work=$BATS_TEST_TMPDIR/work p=$BATS_TEST_TMPDIR/p.patch
	local repo=$BATS_TEST_TMPDIR/big-repo commit
	git init -q "$repo"
	head -c 6291456 /dev/urandom >"$repo/big.bin"
	head -c 5242880 /dev/urandom >"$repo/gone.bin"
	head -c 5242880 /dev/urandom >"$repo/mode.bin"
	echo small >"$repo/small"
	git -C "$repo" add -A
	git -C "$repo" commit -qm base
	commit=$(git -C "$repo" rev-parse HEAD)
	teardown
	seeded_from "$repo" "$commit"
	agent execution 'cd /work && head -c 100 /dev/urandom >>big.bin && rm gone.bin &&
		chmod +x mode.bin && head -c 5242880 /dev/urandom >"$(printf "q\"uote \303\251.bin")" &&
		head -c 67108864 /dev/zero >zeros && echo more >>small'
	peak_kib ab-export "$ALLOC" -o "$p"
	assert_equal "$status" 0
	assert_equal "$stderr" ""
	# None of the blobs is held whole.
	assert_peak_under 65536
	grep -qxF 'diff --git "a/q\"uote \303\251.bin" "b/q\"uote \303\251.bin"' "$p"
	git clone -q "$repo" "$co"
	git -C "$co" apply "$p"
	work_copy "$work"
	assert_equal "$(listing "$co")" "$(listing "$work")"
	git -C "$co" apply -R "$p"
	assert_equal "$(git -C "$co" status --porcelain)" ""
	peak_kib ab-export "$ALLOC" --format bundle -o "$BATS_TEST_TMPDIR/b.bundle"
	assert_equal "$status" 0
	assert_peak_under 65536
	git -C "$co" fetch -q "$BATS_TEST_TMPDIR/b.bundle" refs/heads/agentbox:refs/heads/agent
	git -C "$co" checkout -q agent
	assert_equal "$(listing "$co")" "$(listing "$work")"
}

@test "hostile entries are named and left out; --strict refuses and writes nothing" {
	local p=$BATS_TEST_TMPDIR/p.patch name
	agent execution 'cd /work && mkdir -p sub/.git sub/.GIT/hooks "a/.git. " empty &&
		echo evil >sub/.git/config && echo evil >sub/.GIT/hooks/x &&
		echo evil >"a/.git. /x" && mkfifo fifo && ln keep zz-hardlink &&
		echo fine >ok'
	run_exact 0 ab-export "$ALLOC" -o "$p"
	# Read whole (more entries changed than reading them alone pays
	# for): the second name of keep is "a hard link".
	for name in sub/.git sub/.GIT 'a/.git. ' fifo zz-hardlink empty; do
		grep -qF "ab-export: left out \"$name\":" <<<"$stderr" ||
			fail "not named on stderr: $name"
	done
	assert_equal "$(grep -c '^diff --git' "$p")" 1
	grep -q '^diff --git a/ok b/ok$' "$p"
	run ! grep -qiE 'evil|fifo|hardlink|\.git/|\.GIT' "$p"
	rm -f "$p"
	run_exact 1 ab-export "$ALLOC" --strict -o "$p"
	[[ $stderr == *"--strict: 6 entries were left out" ]]
	[ ! -e "$p" ]
	[ -z "$(find "$BATS_TEST_TMPDIR" -name 'p.patch.*')" ]
}

@test "names are bytes: not ASCII, not UTF-8 or over 100 bytes they export; a control byte is refused" {
	local co=$BATS_TEST_TMPDIR/co p=$BATS_TEST_TMPDIR/p.patch
	local long
	long=$(printf 'd%.0s' {1..60})/$(printf 'e%.0s' {1..60})/$(printf 'f%.0s' {1..90})
	agent execution "cd /work && echo new >dé.txt && echo raw >\"\$(printf 'x\\377y')\" &&
		echo bad >\"\$(printf 'z\\033[2J')\" && ln -s \"\$(printf 'q\\377')\" badlink &&
		mkdir -p ${long%/*} && echo deep >$long && ln -s $long far"
	run_exact 0 ab-export "$ALLOC" -o "$p"
	[[ $stderr == 'ab-export: left out "z\033[2J": '* ]]
	checkout "$co"
	git -C "$co" apply --index "$p"
	assert_equal "$(git -C "$co" status --porcelain)" "A  badlink
A  $long
A  \"d\\303\\251.txt\"
A  far
A  \"x\\377y\""
	assert_equal "$(readlink "$co/far")" "$long"
	assert_equal "$(cat "$co/dé.txt" "$co/$(printf 'x\377y')")" "new
raw"
	assert_equal "$(readlink "$co/badlink")" "$(printf 'q\377')"
}

@test "a symlink out of the tree, directly or through another symlink, is left out" {
	agent execution 'cd /work && ln -s ../../etc/passwd out && ln -s . self &&
		ln -s self/../../x chain && ln -s a.txt fine'
	run_exact 0 ab-export "$ALLOC" -o "$BATS_TEST_TMPDIR/p.patch"
	grep -qF 'left out "out"' <<<"$stderr"
	grep -qF 'left out "chain"' <<<"$stderr"
	grep -q '^diff --git a/fine b/fine$' "$BATS_TEST_TMPDIR/p.patch"
	grep -q '^diff --git a/self b/self$' "$BATS_TEST_TMPDIR/p.patch"
	run ! grep -q 'etc/passwd' "$BATS_TEST_TMPDIR/p.patch"
}

@test "a planning phase exports an empty patch; stdout carries it without -o" {
	agent planning 'echo looked'
	run_exact 0 ab-export "$ALLOC" -o "$BATS_TEST_TMPDIR/p.patch"
	[ -f "$BATS_TEST_TMPDIR/p.patch" ] && [ ! -s "$BATS_TEST_TMPDIR/p.patch" ]
	agent execution 'echo x >/work/new'
	run_exact 0 ab-export "$ALLOC"
	assert_line 'diff --git a/new b/new'
}

@test "-o: a link's target is replaced, a device or FIFO written through, never replaced; - is stdout" {
	local d=$BATS_TEST_TMPDIR pid
	agent execution 'echo x >/work/new'
	echo old >"$d/target"
	ln -s target "$d/link"
	run_exact 0 ab-export "$ALLOC" -o "$d/link"
	[ -L "$d/link" ] && [ "$(readlink "$d/link")" = target ]
	grep -q '^diff --git a/new b/new$' "$d/target"
	mkfifo "$d/fifo"
	# Not holding bats's fd 3: a reader left behind would keep the file
	# from ending.
	cat "$d/fifo" >"$d/from-fifo" 3>&- &
	pid=$!
	# A reader once it waits in open(2) for a writer, not before: a loaded
	# machine may not have run cat that far yet.
	for _ in $(seq 1 200); do
		[ "$(cat "/proc/$pid/wchan" 2>/dev/null)" != wait_for_partner ] || break
		sleep 0.05
	done
	run_exact 0 ab-export "$ALLOC" -o "$d/fifo"
	wait "$pid"
	[ -p "$d/fifo" ]
	grep -q '^diff --git a/new b/new$' "$d/from-fifo"
	# Nobody reads: refused at once, not waited for.
	run_exact 2 ab-export "$ALLOC" -o "$d/fifo"
	assert_equal "$stderr" "ab-export: $d/fifo: a FIFO with no reader"
	# The device that was once replaced by a regular file.
	run_exact 125 ab-export "$ALLOC" -o /dev/full
	assert_regex "$stderr" '^ab-export: .*No space left on device$'
	[ -c /dev/full ]
	run_exact 0 ab-export "$ALLOC" -o /dev/null
	[ -c /dev/null ]
	run_exact 0 ab-export "$ALLOC" -o -
	assert_line 'diff --git a/new b/new'
	run_exact 2 ab-export "$ALLOC" -o "$d"
	assert_equal "$stderr" "ab-export: $d is not a regular file, a character device or a FIFO"
	ln -s nowhere "$d/dangling"
	run_exact 2 ab-export "$ALLOC" -o "$d/dangling"
	[ -z "$(find "$d" -name '*.ab-*')" ]
}

@test "what the engine's archive drops, a socket and a path past PATH_MAX, is named; --strict refuses" {
	local p=$BATS_TEST_TMPDIR/p.patch
	# The tree is made deep by wrapping it in a new top 380 times: no
	# path the agent names is ever long.
	agent execution 'cd /work && mkdir -m 700 s &&
		(git credential-cache--daemon /work/s/sock >/dev/null 2>&1 &) &&
		mkdir E && echo deep >E/f && i=0 &&
		while [ $i -lt 380 ]; do mkdir t && mv E t/E0123456789 && mv t E; i=$((i + 1)); done &&
		echo fine >ok && while [ ! -S s/sock ]; do sleep 0.1; done'
	run_exact 0 ab-export "$ALLOC" -o "$p"
	grep -qxF "ab-export: left out \"s/sock\": a socket: the engine's archive cannot carry it" <<<"$stderr"
	grep -qE '^ab-export: left out "E/E0123456789/[E0-9/]*": its path is longer than the engine.s archive can carry \(PATH_MAX\)$' <<<"$stderr"
	assert_equal "$(grep -c '^ab-export: left out' <<<"$stderr")" 2
	grep -q '^diff --git a/ok b/ok$' "$p"
	run_exact 1 ab-export "$ALLOC" --strict -o "$p"
	[[ $stderr == *"--strict: 2 entries were left out" ]]
	run ab_leftovers "$(ab_state_sid)"
	refute_output --partial listing
}

@test "an export while the agent runs is refused" {
	local prof
	prof=$(ab-profile --alloc "$ALLOC" --phase execution --deadline "$DL" \
		--attempt "busy-$RANDOM$RANDOM" -- sleep 1000)
	docker start "$(ab-validate "$prof" >/dev/null && echo "agentbox-${prof#profile:}")" >/dev/null
	run_exact 1 ab-export "$ALLOC" -o "$BATS_TEST_TMPDIR/p.patch"
	assert_one_error_line ab-export
	[[ $stderr == *"still running"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/p.patch" ]
}

@test "a keeper that is gone is refused: its tmpfs would read back empty" {
	agent execution 'echo x >/work/new'
	docker stop -t 0 "agentbox-${ALLOC#alloc:}-keeper" >/dev/null
	run_exact 1 ab-export "$ALLOC" -o "$BATS_TEST_TMPDIR/p.patch"
	assert_one_error_line ab-export
	[[ $stderr == *"keeper of $ALLOC"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/p.patch" ]
}

@test "a passed deadline is 124 and no FILE appears" {
	local late=$BATS_TEST_TMPDIR/late
	agent execution 'echo x >/work/new'
	ab_deadline_in "$late" -1
	run_exact 124 ab-export "$ALLOC" -o "$BATS_TEST_TMPDIR/p.patch" --deadline "$late"
	[ ! -e "$BATS_TEST_TMPDIR/p.patch" ]
}

@test "a reply slower than the deadline is 124 and no FILE appears" {
	local late=$BATS_TEST_TMPDIR/late
	agent execution 'echo x >/work/new'
	ab_proxy_start --match '/archive' --action delay --seconds 5
	ab_deadline_in "$late" 2
	DOCKER_HOST=unix://$AB_PROXY_SOCK run_exact 124 ab-export "$ALLOC" \
		-o "$BATS_TEST_TMPDIR/p.patch" --deadline "$late"
	ab_proxy_stop
	[ ! -e "$BATS_TEST_TMPDIR/p.patch" ]
	[ -z "$(find "$BATS_TEST_TMPDIR" -name 'p.patch.*')" ]
}

@test "20,000 new files and a 200 MiB file export, and the patch applies" {
	teardown
	setup --task-bytes 512M --task-inodes 40000
	local co=$BATS_TEST_TMPDIR/co
	agent execution 'cd /work && mkdir many && cd many &&
		i=0; while [ $i -lt 200 ]; do mkdir d$i; j=0
			while [ $j -lt 100 ]; do echo "$i.$j" >d$i/f$j; j=$((j + 1)); done
			i=$((i + 1)); done &&
		head -c 209715200 /dev/urandom >/work/big'
	run_exact 0 ab-export "$ALLOC" --max-file 256M -o "$BATS_TEST_TMPDIR/p.patch"
	assert_equal "$(grep -c '^diff --git' "$BATS_TEST_TMPDIR/p.patch")" 20001
	checkout "$co"
	git -C "$co" apply "$BATS_TEST_TMPDIR/p.patch"
	assert_equal "$(find "$co/many" -type f | wc -l)" 20000
	assert_equal "$(stat -c %s "$co/big")" 209715200
	assert_equal "$(cat "$co/many/d199/f99")" 199.99
}

@test "files of holes over --max-file are left out and named, never read; the rest exports; --strict refuses" {
	local p=$BATS_TEST_TMPDIR/p.patch co=$BATS_TEST_TMPDIR/co
	agent execution 'cd /work && dd if=/dev/zero of=holes bs=1 count=0 seek=4096M 2>/dev/null &&
		mkdir -p s/d && truncate -s 1048576000 s/d/holes && echo kept >s/d/ok &&
		echo note >notes.txt && echo three >>a.txt'
	peak_kib ab-export "$ALLOC" -o "$p"
	assert_equal "$status" 0
	assert_equal "$stderr" "ab-export: left out \"holes\": larger than --max-file (100.0 MiB): its bytes were not read
ab-export: left out \"s/d/holes\": larger than --max-file (100.0 MiB): its bytes were not read"
	# The bound of ab-export(1), whatever the files' sizes.
	assert_peak_under 131072
	checkout "$co"
	git -C "$co" apply "$p"
	assert_equal "$(cat "$co/notes.txt" "$co/s/d/ok")" "note
kept"
	assert_equal "$(tail -n 1 "$co/a.txt")" three
	[ ! -e "$co/holes" ] && [ ! -e "$co/s/d/holes" ]
	run_exact 0 ab-export "$ALLOC" --format bundle -o "$BATS_TEST_TMPDIR/b.bundle"
	git -C "$co" bundle verify "$BATS_TEST_TMPDIR/b.bundle" >/dev/null 2>&1
	run_exact 1 ab-export "$ALLOC" --strict -o "$p"
	[[ $stderr == *"--strict: 2 entries were left out" ]]
	# Raised, the file of 1000 MiB is read; the other cannot be.
	peak_kib ab-export "$ALLOC" --max-file 5G -o "$p"
	assert_equal "$status" 0
	assert_equal "$stderr" "ab-export: left out \"holes\": larger than /work can hold (1.0 GiB): holes, its bytes were not read"
	grep -qxF 'diff --git a/s/d/holes b/s/d/holes' "$p"
	assert_peak_under 131072
}

@test "200,000 files of 1 TiB of holes: named, within the deadline and the memory bound" {
	teardown
	setup --task-inodes 210000
	local p=$BATS_TEST_TMPDIR/p.patch late=$BATS_TEST_TMPDIR/late
	agent execution 'cd /work && mkdir many && echo small >many/small &&
		seq 1 200000 | sed "s|^|many/f|" | xargs truncate -s 1099511627776 &&
		echo note >notes.txt'
	ab_deadline_in "$late" 300
	peak_kib ab-export "$ALLOC" -o "$p" --deadline "$late"
	assert_equal "$status" 0
	assert_equal "$(grep -c '^ab-export: left out "many/f[0-9]*": larger than --max-file (100.0 MiB): its bytes were not read$' <<<"$stderr")" 200000
	assert_equal "$(wc -l <<<"$stderr")" 200000
	assert_peak_under 131072
	assert_equal "$(grep '^diff --git' "$p")" "diff --git a/many/small b/many/small
diff --git a/notes.txt b/notes.txt"
}

@test "beside a file of holes, names of any bytes are read, never lost; a commit's file is never deleted for a read that came back empty" {
	local r=$BATS_TEST_TMPDIR/r p=$BATS_TEST_TMPDIR/p.patch co=$BATS_TEST_TMPDIR/co work=$BATS_TEST_TMPDIR/work long
	long=$(printf 'L%.0s' $(seq 1 250))
	git init -q "$r"
	echo keep >"$r/$(printf '\377')keep.txt"
	echo n >"$r/normal.txt"
	mkdir "$r/$(printf 'd\377')"
	echo old >"$r/$(printf 'd\377')/old"
	git -C "$r" add -A
	git -C "$r" commit -qm h
	teardown
	seeded_from "$r" "$(git -C "$r" rev-parse HEAD)"
	agent execution 'cd /work && truncate -s 200M big && echo hi >new.txt &&
		d=$(printf "d\377") && truncate -s 200M "$d/big" &&
		echo x >"$d/$(printf "\377y")" && echo z >"$d/z" && echo changed >"$d/old" &&
		echo nl >"$(printf "new\nline")" && echo dash >-dash && echo bs >"back\\slash" &&
		echo u >"$(printf "\377untracked")" && echo long >'"$long"' &&
		mkdir "$(printf "e\377")" "$(printf "e\377")/$(printf "\377")" &&
		echo deep >"$(printf "e\377/\377/f")" && ln -s "$(printf "\377keep.txt")" "$(printf "\377link")"'
	run_exact 0 ab-export "$ALLOC" -o "$p"
	# Names the path checks refuse are named too (ab-export(1)).
	assert_equal "$stderr" 'ab-export: left out "big": larger than --max-file (100.0 MiB): its bytes were not read
ab-export: left out "d\377/big": larger than --max-file (100.0 MiB): its bytes were not read
ab-export: left out "back\134slash": unsafe path "back\x5cslash": backslash
ab-export: left out "new\012line": unsafe path "new\x0aline": control byte'
	git clone -q "$r" "$co"
	git -C "$co" apply "$p"
	[ "$(cat "$co/$(printf '\377')keep.txt")" = keep ]
	[ "$(grep '^diff --git' "$p" | grep -c 'keep\.txt')" -eq 0 ]
	work_copy "$work"
	assert_equal "$(tree "$co")" "$(tree "$work" big "$(printf 'd\377/big')" \
		'back\slash' "$(printf 'new\nline')")"
	run_exact 0 ab-export "$ALLOC" --format bundle -o "$BATS_TEST_TMPDIR/b.bundle"
	git -C "$r" fetch -q "$BATS_TEST_TMPDIR/b.bundle" refs/heads/agentbox:refs/heads/agent
	rm -rf "$co" && git clone -q -b agent "$r" "$co"
	assert_equal "$(tree "$co")" "$(tree "$work" big "$(printf 'd\377/big')" \
		'back\slash' "$(printf 'new\nline')")"
}

@test "an entry the engine cannot archive alone, beside a file of holes, is read from its folder's archive" {
	local p=$BATS_TEST_TMPDIR/p.patch co=$BATS_TEST_TMPDIR/co target
	# A symlink whose target is as long as a path may be (4,095 bytes):
	# its archive alone is the engine's 500.
	target=$(printf 't%.0s' $(seq 1 200))/$(printf 'u%.0s' $(seq 1 3894))
	agent execution 'cd /work && mkdir d && truncate -s 200M d/big && ln -s '"$target"' d/zz && echo ok >d/ok'
	run_exact 0 ab-export "$ALLOC" -o "$p"
	assert_equal "$stderr" 'ab-export: left out "d/big": larger than --max-file (100.0 MiB): its bytes were not read'
	checkout "$co"
	git -C "$co" apply "$p"
	assert_equal "$(readlink "$co/d/zz")" "$target"
	assert_equal "$(cat "$co/d/ok")" ok
}

@test "what is left out keeps the commit's version: a file of the commit grown into holes is not deleted" {
	local p=$BATS_TEST_TMPDIR/p.patch
	# A folder holding only what is left out is not "an empty directory".
	agent execution 'cd /work && truncate -s 300M keep && rm -r sub && mkfifo sub && echo new >new &&
		mkdir only && truncate -s 300M only/holes'
	run_exact 0 ab-export "$ALLOC" -o "$p"
	assert_equal "$stderr" 'ab-export: left out "keep": larger than --max-file (100.0 MiB): its bytes were not read
ab-export: left out "only/holes": larger than --max-file (100.0 MiB): its bytes were not read
ab-export: left out "sub": not a file, directory or symlink'
	assert_equal "$(grep '^diff --git' "$p")" 'diff --git a/new b/new'
}

@test "a name only its folder's archive carries, in a folder too big to read, is named and keeps the commit's version" {
	local r=$BATS_TEST_TMPDIR/r p=$BATS_TEST_TMPDIR/p.patch
	git init -q "$r"
	echo keep >"$r/$(printf '\377')keep.txt"
	git -C "$r" add -A
	git -C "$r" commit -qm h
	teardown
	seeded_from "$r" "$(git -C "$r" rev-parse HEAD)"
	agent execution 'cd /work && truncate -s 2G holes && echo changed >"$(printf "\377keep.txt")" &&
		echo u >"$(printf "\377new")" && echo ok >ok'
	run_exact 0 ab-export "$ALLOC" -o "$p"
	[[ $stderr == 'ab-export: left out "holes": larger than --max-file (100.0 MiB): its bytes were not read
ab-export: left out "\377keep.txt": its name is not UTF-8, which the engine'\''s archive carries only with its folder, and that folder holds more than is left to read ('*')
ab-export: left out "\377new": its name is not UTF-8, '* ]]
	assert_equal "$(grep '^diff --git' "$p")" 'diff --git a/ok b/ok'
	run_exact 1 ab-export "$ALLOC" --strict -o "$p"
	[[ $stderr == *"--strict: 3 entries were left out" ]]
}

@test "files of holes each under --max-file but together past what /work holds: the largest are named, the rest exports" {
	teardown
	setup --task-bytes 64M
	local p=$BATS_TEST_TMPDIR/p.patch co=$BATS_TEST_TMPDIR/co i
	# 4 to 13 MiB: 85 MiB in all; with 13 and 12 left out, 60 MiB fit.
	# The hard link's bytes are counted once.
	agent execution 'cd /work && mkdir h && for i in 4 5 6 7 8 9 10 11 12 13; do
		truncate -s ${i}M h/f$i; done && ln h/f11 h/link11 && echo small >h/small &&
		echo note >notes.txt'
	run_exact 0 ab-export "$ALLOC" -o "$p"
	assert_equal "$stderr" 'ab-export: left out "h/f12": among the largest files, which together pass what /work can hold (64.0 MiB): holes, its bytes were not read
ab-export: left out "h/f13": among the largest files, which together pass what /work can hold (64.0 MiB): holes, its bytes were not read'
	checkout "$co"
	git -C "$co" apply "$p"
	for i in 4 5 6 7 8 9 10 11; do
		assert_equal "$(stat -c %s "$co/h/f$i")" $((i << 20))
	done
	assert_equal "$(stat -c %s "$co/h/link11")" $((11 << 20))
	assert_equal "$(cat "$co/h/small" "$co/notes.txt")" "small
note"
	[ ! -e "$co/h/f12" ] && [ ! -e "$co/h/f13" ]
	run_exact 1 ab-export "$ALLOC" --strict -o "$p"
	[[ $stderr == *"--strict: 2 entries were left out" ]]
}

# lying_alloc MODE: an allocation of the lying image, seeded, whose
# listing's find lies as tests/lib/lying-sh.sh does in MODE.
lying_alloc() {
	ALLOC=$(ab-alloc --image "$LIE" --deadline "$DL")
	ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" --deadline "$DL" 2>/dev/null
	# Every file of the commit touched: /work is read whole, and the
	# archive is there to catch the lie.  (With files the agent left
	# untouched, only what the listing names is read: the listing is
	# agentbox's busybox in an image the agent cannot change.)
	agent execution "cd /work && echo $1 >.lie && rm gone && truncate -s 200M hidden && echo new >new && touch a.txt keep tool sub/f"
}

@test "a listing that is malformed, past its bound, or that hides a file over the size or names one no archive carries" {
	local d=$BATS_TEST_TMPDIR/lie p=$BATS_TEST_TMPDIR/p.patch
	cp -a "$AB_ROOT/image" "$d"
	cp "$AB_ROOT/tests/lib/lying-sh.sh" "$d/"
	sed -i 's|^link /usr/lib/agentbox/busybox /bin/busybox$|file /usr/lib/agentbox/busybox 0755 lying-sh.sh|' \
		"$d/default.manifest"
	grep -q lying-sh "$d/default.manifest"
	LIE=$(ab-image build --dir "$d" 2>/dev/null)
	teardown
	lying_alloc malformed
	run_exact 1 ab-export "$ALLOC" -o "$p"
	assert_equal "$stderr" "ab-export: listing /work: the listing is not what find and stat print"
	[ ! -e "$p" ]
	teardown
	lying_alloc long
	run_exact 1 ab-export "$ALLOC" -o "$p"
	assert_equal "$stderr" "ab-export: listing /work: more than 32 MiB of names, so not every entry could be accounted for"
	teardown
	lying_alloc hide
	run_exact 1 ab-export "$ALLOC" -o "$p"
	assert_equal "$stderr" "ab-export: a file over --max-file that the listing of /work did not show: /work changed while it was read"
	teardown
	lying_alloc ghost
	run_exact 0 ab-export "$ALLOC" -o "$p"
	assert_equal "$stderr" "ab-export: left out \"hidden\": larger than --max-file (100.0 MiB): its bytes were not read
ab-export: left out \"gone\": listed in /work, but the engine's archive did not carry it"
	# Not carried is not deleted.
	assert_equal "$(grep '^diff --git' "$p")" 'diff --git a/.lie b/.lie
diff --git a/new b/new'
	# Back to an allocation of the suite's image, for teardown.
	teardown
	setup
	run_exact 0 ab-image remove "$LIE"
}

@test "bad invocations: usage 2, unknown handles 1" {
	run_exact 2 ab-export
	run_exact 2 ab-export "$ALLOC" --format zip
	run_exact 2 ab-export "$ALLOC" --message ''
	run_exact 2 ab-export "$ALLOC" --max-file 0
	assert_one_error_line ab-export
	run_exact 2 ab-export "$ALLOC" --max-file 12Q
	run_exact 2 ab-export "$ALLOC" --read some
	assert_equal "$stderr" "ab-export: --read is auto, changed or all"
	run_exact 1 ab-export "alloc:$(printf '%032d' 0)"
	assert_one_error_line ab-export
	run_exact 1 ab-export "ctr:$(printf '%032d' 0)"
	run_exact 0 ab-export --help
	assert_regex "$output" "^usage: ab-export ALLOC"
}

@test "run-task --patch and --bundle export after the run; ab-clean still runs" {
	local p=$BATS_TEST_TMPDIR/t.patch b=$BATS_TEST_TMPDIR/t.bundle co=$BATS_TEST_TMPDIR/co
	run_exact 0 "$AB_ROOT/sh/run-task" --repo "$REPO" --commit HEAD --image "$AB_IMAGE" \
		--phase execution --timeout 120 --patch "$p" --bundle "$b" --max-file 1k -- \
		sh -c 'echo added >/work/added && head -c 2048 /dev/zero >/work/over'
	# Once for each format.
	assert_equal "$(grep -c '^ab-export: left out "over": larger than --max-file (1.0 KiB): its bytes were not read$' <<<"$stderr")" 2
	[[ $(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["export_tree"])' "$output") =~ ^[0-9a-f]{40}$ ]]
	checkout "$co"
	git -C "$co" apply "$p"
	assert_equal "$(cat "$co/added")" added
	git -C "$co" bundle verify "$b" 2>/dev/null
	run_exact 2 "$AB_ROOT/sh/run-task" --repo "$REPO" --commit HEAD --phase planning \
		--timeout 60 --patch "$p" -- true
}

@test "the man page names every option of --help" {
	assert_man_covers_help ab-export 4
}

# export_read: the last result's export_read, as a Python value.
export_read() {
	ab-run --show "$RESULT" | python3 -c 'import json,sys; r = json.load(sys.stdin)["export_read"]; print(r["files"], r["unchanged"], r["archives"], r["since_seed"], r["archives_inside"])'
}

@test "an agent that forges times hides nothing: old mtimes, a rename onto a name, swapped folders, a hard link, a mode, a symlink: each exported, and the files nobody touched are not read" {
	local repo=$BATS_TEST_TMPDIR/forge co=$BATS_TEST_TMPDIR/co work=$BATS_TEST_TMPDIR/work
	local files kept archives marked inside how
	forge_repo "$repo"
	teardown
	seeded_from "$repo" "$(git -C "$repo" rev-parse HEAD)"
	agent execution "$FORGE"
	# Only what changed, however many requests it takes.
	run_exact 0 ab-export "$ALLOC" --read changed -o "$BATS_TEST_TMPDIR/p.patch"
	git clone -q "$repo" "$co"
	git -C "$co" apply --index "$BATS_TEST_TMPDIR/p.patch"
	work_copy "$work"
	assert_equal "$(listing "$co")" "$(listing "$work")"
	assert_equal "$(git -C "$co" diff --cached --name-status HEAD | LC_ALL=C sort)" \
		"$FORGED"
	read -r files kept archives marked inside <<<"$(export_read)"
	# 209 files listed (gone is keep now): the 200 untouched and sub/f are
	# kept, never read; same is read (linked twice), as is every file the
	# agent touched, in one archive made inside.
	assert_equal "$files $kept $archives $marked $inside" "209 201 0 True 1"
	# By default, an archive made inside costs more than 209 files read
	# whole; --read all reads every file.  The same patch either way.
	for how in auto all; do
		run_exact 0 ab-export "$ALLOC" --read "$how" -o "$BATS_TEST_TMPDIR/$how.patch"
		cmp "$BATS_TEST_TMPDIR/p.patch" "$BATS_TEST_TMPDIR/$how.patch"
		read -r files kept archives marked inside <<<"$(export_read)"
		assert_equal "$how: $files $kept $archives $marked $inside" "$how: 209 0 1 True 0"
	done
}

@test "many changed entries are read by one archive made inside: long names and targets, a leading dash; a name not UTF-8; what it cannot read asked of the engine; the patch is /work's" {
	local repo=$BATS_TEST_TMPDIR/forge co=$BATS_TEST_TMPDIR/co work=$BATS_TEST_TMPDIR/work
	local files kept archives marked inside
	forge_repo "$repo"
	teardown
	seeded_from "$repo" "$(git -C "$repo" rev-parse HEAD)"
	# Twelve kept files changed, new entries the container's tar writes
	# with GNU headers (a 150-byte name, a 200-byte target), a name
	# beginning with a dash, one holding a newline (refused by the path
	# rules, and named), one that is not UTF-8; a file the agent made
	# unreadable.
	agent execution 'cd /work && i=1 && while [ $i -le 12 ]; do
		echo changed >>u/$i; i=$((i + 1)); done &&
		mkdir -p new/deep && echo long >new/deep/$(printf "%0150d" 0) &&
		ln -s $(printf "%0200d" 1) new/far && echo dash >./-dash &&
		echo nl >"$(printf "new\nline")" &&
		echo private >locked && chmod 000 locked &&
		echo odd >"$(printf "new/\377odd")"'
	run_exact 0 ab-export "$ALLOC" --read changed -o "$BATS_TEST_TMPDIR/p.patch"
	assert_equal "$stderr" 'ab-export: left out "new\012line": unsafe path "new\x0aline": control byte'
	git clone -q "$repo" "$co"
	git -C "$co" apply --index "$BATS_TEST_TMPDIR/p.patch"
	work_copy "$work"
	assert_equal "$(tree "$co")" "$(tree "$work" "$(printf 'new\nline')")"
	read -r files kept archives marked inside <<<"$(export_read)"
	# The 198 files nobody touched are kept; the rest in one archive made
	# inside, the name not UTF-8 too (its folder is new, archived whole);
	# then locked, unreadable to the container's uid, asked of the engine
	# alone.
	assert_equal "$files $kept $archives $marked $inside" "215 198 1 True 1"
	# The archive container is gone.
	run docker ps -a -q --filter "label=org.agentbox.alloc=${ALLOC#alloc:}" \
		--filter label=org.agentbox.role=work-archive
	assert_output ""
}

@test "ab-export killed while its archive made inside exists: the container is the allocation's, and ab-clean removes it" {
	local repo=$BATS_TEST_TMPDIR/forge pid
	forge_repo "$repo"
	teardown
	seeded_from "$repo" "$(git -C "$repo" rev-parse HEAD)"
	agent execution 'cd /work && for i in 1 2 3 4 5 6; do echo x >>u/$i; done'
	AB_TEST_PAUSE=export-archive-created ab-export "$ALLOC" --read changed \
		-o "$BATS_TEST_TMPDIR/p.patch" 2>/dev/null &
	pid=$!
	ab_wait_stopped "$pid"
	run docker ps -a -q --filter "label=org.agentbox.alloc=${ALLOC#alloc:}" \
		--filter label=org.agentbox.role=work-archive
	[ -n "$output" ] || fail "no archive container while ab-export is stopped"
	kill -KILL "$pid"
	wait "$pid" || true
	[ ! -e "$BATS_TEST_TMPDIR/p.patch" ]
	run_exact 0 ab-clean "$ALLOC"
	run docker ps -a -q --filter "label=org.agentbox.alloc=${ALLOC#alloc:}"
	assert_output ""
}

@test "an allocation without the seed's mark (seeded before there were marks) is read whole: nothing is kept unread" {
	local repo=$BATS_TEST_TMPDIR/forge id files kept archives marked inside
	forge_repo "$repo"
	teardown
	seeded_from "$repo" "$(git -C "$repo" rev-parse HEAD)"
	id=${ALLOC#alloc:}
	# What an older ab-seed left: the same volumes, no mark.
	docker run --rm --network none --user 0 -v "agentbox-$id-git:/g" \
		--entrypoint /usr/lib/agentbox/busybox \
		"$(docker inspect "agentbox-$id-keeper" --format '{{.Image}}')" \
		rm /g/agentbox/seeded
	agent execution 'cd /work && echo changed >>u/1'
	run_exact 0 ab-export "$ALLOC" --read changed -o "$BATS_TEST_TMPDIR/p.patch"
	assert_equal "$(git -C "$repo" apply --numstat "$BATS_TEST_TMPDIR/p.patch")" "1	0	u/1"
	read -r files kept archives marked inside <<<"$(export_read)"
	assert_equal "$files $kept $archives $marked $inside" "210 0 1 False 0"
}

@test "an archive container the engine will not create or start fails the export in one line, writes nothing and leaves no container" {
	local repo=$BATS_TEST_TMPDIR/forge how
	forge_repo "$repo"
	teardown
	seeded_from "$repo" "$(git -C "$repo" rev-parse HEAD)"
	agent execution 'cd /work && for i in 1 2 3 4 5 6; do echo x >>u/$i; done'
	for how in 'create\?name=agentbox-[0-9a-f]+-archive-' 'agentbox-[0-9a-f]+-archive-[0-9a-f]+/start$'; do
		ab_proxy_start --match "^POST /v[0-9.]+/containers/$how" \
			--action fail --status 500 --message "no archive today"
		DOCKER_HOST=unix://$AB_PROXY_SOCK run_exact 125 ab-export "$ALLOC" \
			--read changed -o "$BATS_TEST_TMPDIR/p.patch"
		assert_regex "$stderr" "no archive today"
		assert_one_error_line ab-export
		[ ! -e "$BATS_TEST_TMPDIR/p.patch" ]
		ab_proxy_stop
		run docker ps -a -q --filter "label=org.agentbox.alloc=${ALLOC#alloc:}" \
			--filter label=org.agentbox.role=work-archive
		assert_output ""
	done
}

# ctimes PATH...: each path's change time in the allocation's volumes,
# seconds and nanoseconds, read by a container of the test's own
# (/work, and the git volume at /g), of the keeper's image.
ctimes() {
	local id=${ALLOC#alloc:}
	docker run --rm --network none -v "agentbox-$id-task:/work:ro" \
		-v "agentbox-$id-git:/g:ro" --entrypoint /usr/lib/agentbox/busybox \
		"$(docker inspect "agentbox-$id-keeper" --format '{{.Image}}')" sh -c 'for p; do set -- $(stat -c "%Z %z" "$p"); echo "$1.${3#*.}"; done' sh "$@"
}

@test "a file changed within the clock tick of the seed's mark is read: only a change time strictly older than the mark's is the seed's" {
	local i tar=$BATS_TEST_TMPDIR/t.tar co=$BATS_TEST_TMPDIR/co t
	# The mark written again, and a.txt changed at its size, in one
	# upload: the two land within one tick of the kernel's clock.
	python3 - "$tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], 'w', format=tarfile.PAX_FORMAT) as t:
    for name, data, mode, uid in (('.git/agentbox/seeded', b'the seed ended here\n', 0o444, 0),
                                  ('a.txt', b'ONE\ntwo\n', 0o644, 10001)):
        i = tarfile.TarInfo(name)
        i.size, i.mode, i.uid, i.gid = len(data), mode, uid, uid
        t.addfile(i, io.BytesIO(data))
PY
	for i in $(seq 1 20); do
		docker cp - "agentbox-${ALLOC#alloc:}-keeper:/work" <"$tar"
		t=$(ctimes /g/agentbox/seeded /work/a.txt | uniq | wc -l)
		[ "$t" -ne 1 ] || break
	done
	[ "$t" -eq 1 ] || fail "20 uploads, never one tick: $(ctimes /g/agentbox/seeded /work/a.txt)"
	run_exact 0 ab-export "$ALLOC" -o "$BATS_TEST_TMPDIR/p.patch"
	checkout "$co"
	git -C "$co" apply --index "$BATS_TEST_TMPDIR/p.patch"
	assert_equal "$(git -C "$co" diff --cached --name-only HEAD)" a.txt
	assert_equal "$(cat "$co/a.txt")" "ONE
two"
}
