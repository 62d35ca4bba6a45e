#!/usr/bin/env bats
# The command lines themselves: --version and --help of every program,
# and the one-line errors of run-task's own checks.

# shellcheck disable=SC2154 # bats sets status, output, stderr
# shellcheck disable=SC2034 # RECORD is read by record_field (helpers.bash)
load helpers

RUN_TASK=$AB_ROOT/sh/run-task

setup_file() {
	ab_setup_file
	REPO=$BATS_FILE_TMPDIR/repo
	git init -q "$REPO"
	echo one >"$REPO/a.txt"
	git -C "$REPO" add a.txt
	git -C "$REPO" -c user.name=t -c user.email=t@t commit -qm one
	# The steps a test runs by hand share one deadline file.
	AB_DEADLINE=$BATS_FILE_TMPDIR/deadline
	FILE_STATE=$AB_STATE_DIR
	export REPO AB_DEADLINE FILE_STATE
}

# A test that made a state directory of its own leaves nothing of it.
teardown() {
	[ "$AB_STATE_DIR" = "$FILE_STATE" ] || ab_purge_state "$AB_STATE_DIR"
}

teardown_file() {
	ab_teardown_file
}

# Every program the Makefile builds: the tools and those of the images.
programs() {
	make -s --no-print-directory -C "$AB_ROOT" print-var NAME=TOOLS
	make -s --no-print-directory -C "$AB_ROOT" print-var NAME=IMAGE_PROGS
}

# The version lib/base/version.h defines.
version() {
	sed -n 's/^#define AB_VERSION "\(.*\)"$/\1/p' "$AB_ROOT/lib/base/version.h"
}

@test "every program and run-task print the one version on --version" {
	local v p n=0
	v=$(version)
	[ -n "$v" ]
	for p in $(programs); do
		run_exact 0 "$AB_BIN/$p" --version
		assert_output "$v"
		n=$((n + 1))
	done
	[ "$n" -ge 12 ]
	run_exact 0 "$RUN_TASK" --version
	assert_output "$v"
}

@test "the result record carries the version --version prints" {
	run_exact 0 "$RUN_TASK" --repo "$REPO" --commit HEAD --image "$AB_IMAGE" \
		--phase planning --timeout 60 -- true
	RECORD=$output
	assert_equal "$(record_field 'r["agentbox"]')" "$(version)"
}

@test "every program prints its usage on stdout for --help and exits 0" {
	local p
	for p in $(programs); do
		run_exact 0 "$AB_BIN/$p" --help
		[ -z "$stderr" ] || fail "$p --help wrote on stderr: $stderr"
		[[ $output == "usage: $p "* ]] || fail "$p --help: $output"
		[[ $output == *"--version"* ]] || fail "$p --help lacks --version"
	done
}

@test "every program prints its usage on stderr for an unknown option and exits 2" {
	local p args
	for p in $(programs); do
		args=(--no-such-option)
		[ "$p" != ab-image ] || args=(build --no-such-option)
		run_exact 2 "$AB_BIN/$p" "${args[@]}"
		assert_output ""
		[[ $stderr == "usage: $p "* || $stderr == *$'\n'"usage: $p "* ]] ||
			fail "$p: $stderr"
	done
}

@test "the tools' usage errors are one line of theirs, exit 2" {
	run_exact 2 ab-alloc
	assert_equal "$stderr" "ab-alloc: --image is required"
	run_exact 2 ab-alloc --image "$AB_IMAGE" --egress-conns 3
	assert_equal "$stderr" "ab-alloc: --egress-conns goes with --egress"
	run_exact 2 ab-seed --repo "$REPO" --commit HEAD
	assert_equal "$stderr" "ab-seed: one ALLOC handle is required"
	run_exact 2 ab-seed alloc:x --depth 0
	assert_equal "$stderr" "ab-seed: --depth takes 1 to 1000000000 commits"
	run_exact 2 ab-image frobnicate
	assert_equal "$stderr" "ab-image: unknown verb frobnicate"
	run_exact 2 ab-image verify
	assert_equal "$stderr" "ab-image: verify takes one handle"
	run_exact 2 ab-export alloc:x --format zip
	assert_equal "$stderr" "ab-export: --format is patch or bundle"
	run_exact 2 ab-export alloc:x --max-file 1Q
	assert_equal "$stderr" "ab-export: --max-file: not a size between 1 and 68719476736: 1Q"
	run_exact 2 ab-clean --all
	assert_equal "$stderr" "ab-clean: --all goes with --sweep"
	run_exact 2 ab-proxy --socket /nonexistent/s 'no entry'
	assert_equal "$stderr" "ab-proxy: egress entry no entry: not HOST:PORT: give HOST:PORT with a DNS name"
}

# A line on a terminal cannot be rewritten by the bytes of an argument.
@test "an operand's control bytes stay escaped in the one error line" {
	run_exact 2 ab-alloc --image "$AB_IMAGE" $'a\nb'
	assert_equal "$stderr" 'ab-alloc: unexpected operand a\x0ab'
	run_exact 2 ab-clean --within $'\e[31m9' alloc:x
	assert_equal "$stderr" 'ab-clean: --within takes 1 to 3600 seconds: \x1b[31m9'
}

@test "run-task's --help names it as it was called" {
	run_exact 0 "$RUN_TASK" --help
	[[ ${lines[0]} == "usage: run-task --repo DIR "* ]]
	ln -s "$RUN_TASK" "$BATS_TEST_TMPDIR/ab-run-task"
	run_exact 0 "$BATS_TEST_TMPDIR/ab-run-task" --help
	[[ ${lines[0]} == "usage: ab-run-task --repo DIR "* ]]
	assert_line "       ab-run-task --version | --help"
}

@test "run-task names an unknown option in one line and exits 2" {
	run_exact 2 "$RUN_TASK" --foo
	assert_equal "$stderr" "run-task: unknown option --foo (see run-task --help)"
	run_exact 2 "$RUN_TASK" --repo "$REPO" --foo bar --commit HEAD
	assert_equal "$stderr" "run-task: unknown option --foo (see run-task --help)"
	run_exact 2 "$RUN_TASK" --phase
	assert_equal "$stderr" "run-task: --phase needs a value"
}

@test "run-task's --repo that is no repository is one line of its own, exit 2" {
	local d
	for d in /nonexistent "$BATS_TEST_TMPDIR" "$AB_ROOT/tests"; do
		run_exact 2 "$RUN_TASK" --repo "$d" --commit HEAD \
			--phase planning --timeout 10 -- true
		[ "${#stderr_lines[@]}" -eq 1 ] || fail "$d: $stderr"
		[[ $stderr == "run-task: --repo $d: "* ]] || fail "$d: $stderr"
	done
}

@test "a commit that does not exist exits 1 from run-task and from ab-seed" {
	local none=0123456789abcdef0123456789abcdef01234567 alloc
	run_exact 1 "$RUN_TASK" --repo "$REPO" --commit "$none" \
		--phase planning --timeout 10 -- true
	assert_equal "$stderr" "run-task: $none is not a commit of $REPO"
	run_exact 1 "$RUN_TASK" --repo "$REPO" --commit no-such-branch \
		--phase planning --timeout 10 -- true
	ab_deadline_in "$AB_DEADLINE" 120
	alloc=$(ab-alloc --image "$AB_IMAGE")
	run_exact 1 ab-seed "$alloc" --repo "$REPO" --commit "$none"
	assert_one_error_line ab-seed
	ab-clean "$alloc" 2>/dev/null
}

@test "ab-seed does what its synopsis says: an OID alone, or a name with --expect" {
	local oid alloc
	oid=$(git -C "$REPO" rev-parse HEAD)
	run_exact 0 ab-seed --help
	assert_line --partial "--commit OID [--depth N]"
	assert_line --partial "--commit REV --expect OID"
	ab_deadline_in "$AB_DEADLINE" 120
	alloc=$(ab-alloc --image "$AB_IMAGE")
	run_exact 2 ab-seed "$alloc" --repo "$REPO" --commit HEAD
	run_exact 0 ab-seed "$alloc" --repo "$REPO" --commit HEAD --expect "$oid"
	ab-clean "$alloc" 2>/dev/null
	alloc=$(ab-alloc --image "$AB_IMAGE")
	run_exact 0 ab-seed "$alloc" --repo "$REPO" --commit "$oid"
	ab-clean "$alloc" 2>/dev/null
}

@test "a second ab-validate of one profile is refused in one line of ours" {
	local alloc prof
	ab_deadline_in "$AB_DEADLINE" 120
	alloc=$(ab-alloc --image "$AB_IMAGE")
	ab-seed "$alloc" --repo "$REPO" --commit "$(git -C "$REPO" rev-parse HEAD)" \
		>/dev/null 2>&1
	prof=$(ab-profile --alloc "$alloc" --phase planning --attempt twice -- true)
	run_exact 0 ab-validate "$prof"
	run_exact 1 ab-validate "$prof"
	assert_equal "$stderr" "ab-validate: $prof was validated already: its container agentbox-${prof#profile:} exists (one container per profile; ab-profile makes another)"
	ab-clean "$alloc" 2>/dev/null
}

@test "a handle of another kind is refused in plain words" {
	local id=0123456789abcdef0123456789abcdef
	run_exact 1 ab-run "profile:$id"
	assert_equal "$stderr" "ab-run: profile:$id: the handle must be ctr:ID"
}

@test "ab-image list makes no state directory" {
	local d=$BATS_TEST_TMPDIR/none
	AB_STATE_DIR=$d run_exact 0 ab-image list
	assert_output ""
	[ ! -e "$d" ]
	HOME=$BATS_TEST_TMPDIR/home run_exact 0 env -u AB_STATE_DIR \
		-u XDG_STATE_HOME ab-image list
	[ ! -e "$BATS_TEST_TMPDIR/home" ]
}

@test "ab-image remove says what it removed" {
	local img
	AB_STATE_DIR=$(ab_new_state)
	img=$(ab-image build 2>/dev/null)
	run_exact 0 ab-image remove "$img"
	assert_equal "$stderr" "ab-image: removed $img"
	assert_output ""
	run_exact 0 ab-image list
	assert_output ""
}

@test "ab-clean --sweep --all --images leaves nothing of a state directory on the engine" {
	local img alloc sid
	AB_STATE_DIR=$(ab_new_state)
	sid=$(ab_state_sid)
	run_exact 2 ab-clean --sweep --images
	img=$(ab-image build 2>/dev/null)
	alloc=$(ab-alloc --image "$img")
	run_exact 0 ab-clean --sweep --all --images
	assert_equal "$output" "$alloc"$'\n'"$img"
	assert_equal "${stderr_lines[-1]}" "ab-clean: removed"
	run docker images -q --filter "label=org.agentbox.state=$sid"
	assert_output ""
	run docker ps -aq --filter "label=org.agentbox.state=$sid"
	assert_output ""
	run docker volume ls -q --filter "label=org.agentbox.state=$sid"
	assert_output ""
	run_exact 0 ab-image list
	assert_output ""
	run_exact 0 ab-clean --sweep --all --images
	assert_equal "$stderr" "ab-clean: absent"
}

@test "make uninstall removes what make install put under DESTDIR" {
	local d=$BATS_TEST_TMPDIR/inst
	make -s -C "$AB_ROOT" install DESTDIR="$d" PREFIX=/usr >/dev/null
	[ -x "$d/usr/bin/ab-run-task" ]
	[ -x "$d/usr/lib/agentbox/ab-proxy" ]
	[ -f "$d/usr/share/man/man1/ab-run.1" ]
	[ -f "$d/usr/share/man/man7/agentbox.7" ]
	make -s -C "$AB_ROOT" uninstall DESTDIR="$d" PREFIX=/usr >/dev/null
	run find "$d" ! -type d
	assert_output ""
	[ ! -e "$d/usr/lib/agentbox" ]
	[ ! -e "$d/usr/share/agentbox" ]
}

# The sections of agentbox(7) that the tree's comments cite: the quoted
# capitals on a line naming it or on the next, one a line.
cited_sections() {
	find "$AB_ROOT/lib" "$AB_ROOT/cmd" "$AB_ROOT/sh" "$AB_ROOT/image" \
		"$AB_ROOT/tests" -type f -exec awk '/agentbox\(7\)/ {
		t = $0; if ((getline n) > 0) t = t " " n
		while (match(t, /"[A-Z][A-Z ]*[A-Z]"/)) {
			print substr(t, RSTART + 1, RLENGTH - 2)
			t = substr(t, RSTART + RLENGTH)
		}
	}' {} +
}

@test "every man page points to agentbox(7), which has every section cited" {
	local f s sections n=0
	sections=$(sed -n 's/^\.Sh //p' "$AB_ROOT/man/agentbox.7")
	for f in "$AB_ROOT"/man/*.1; do
		sed -n '/^\.Sh SEE ALSO$/,$p' "$f" | grep -qx '\.Xr agentbox 7' ||
			fail "${f##*/}: no agentbox(7) in SEE ALSO"
	done
	while read -r s; do
		grep -qxF "$s" <<<"$sections" ||
			fail "agentbox(7) has no section $s"
		n=$((n + 1))
	done < <(cited_sections)
	[ "$n" -ge 10 ]
}

@test "the changelog's newest entry is the version" {
	run grep -m1 '^## ' "$AB_ROOT/CHANGELOG.md"
	assert_output "## $(version)"
}
