#!/usr/bin/env bats
# README.md as a newcomer follows it: its examples, extracted from it and
# run as written, in order, in a copy of the tree; its package lists,
# the Makefile's own.
#
# An example is the indented block after a line "<!-- example -->".  A
# block marked "<!-- example: pending REASON -->" is named and skipped: it
# waits for what REASON says, and runs once its marker is "<!-- example -->".

# shellcheck disable=SC2154 # bats sets status, output, stderr
load helpers

README=$AB_ROOT/README.md

# examples: the script of every example block, each after a line that
# names its place; "pending LINE REASON" lines on fd 3.
examples() {
	awk '
	/^<!-- example -->$/ { want = 1; next }
	/^<!-- example: pending .* -->$/ {
		r = $0; sub(/^<!-- example: pending /, "", r); sub(/ -->$/, "", r)
		printf "pending %d %s\n", NR, r > "/dev/fd/3"; next
	}
	want && /^    / {
		if (!inb) printf "echo \"== README.md line %d\" >&2\n", NR
		inb = 1; sub(/^    /, ""); print; next
	}
	want && inb && /^$/ { print; next }
	inb { want = 0; inb = 0 }
	' "$README"
}

# packages VARS: the backquoted words of the paragraph after the marker
# "<!-- packages: VARS -->".
packages() {
	awk -v m="<!-- packages: $* -->" '
	$0 == m { on = 1; next }
	on && /^$/ { exit }
	on { while (match($0, /`[^`]*`/)) {
		print substr($0, RSTART + 1, RLENGTH - 2)
		$0 = substr($0, RSTART + RLENGTH) } }
	' "$README"
}

# What a failed run left of its state, whose directory may be gone.
teardown() {
	[ ! -f "$BATS_TEST_TMPDIR/keep/sid" ] || ab_purge_state "$BATS_TEST_TMPDIR/keep"
}

make_words() {
	local v
	for v in "$@"; do
		make -s --no-print-directory -C "$AB_ROOT" print-var NAME="$v"
	done | tr ' ' '\n' | sed '/^$/d'
}

@test "the README's package lists are the Makefile's" {
	local vars
	for vars in "BUILD_PACKAGES RUN_PACKAGES" "TEST_PACKAGES"; do
		# shellcheck disable=SC2086 # one word per variable
		assert_equal "$(packages $vars)" "$(make_words $vars)"
	done
}

@test "the README's examples run as written, in order, in a copy of the tree" {
	local top=$BATS_TEST_TMPDIR/clone state sid script pending
	state=$(ab_new_state)
	sid=$(ab_state_sid "$state")
	mkdir "$BATS_TEST_TMPDIR/keep"
	cp "$state/sid" "$BATS_TEST_TMPDIR/keep/"
	script=$(examples 3>"$BATS_TEST_TMPDIR/pending")
	[ -n "$script" ]
	# The tree as committed and as edited, with a commit of its own: a
	# fresh clone.  What make built already comes along, so that only
	# what changed is built again.
	mkdir "$top"
	git -C "$AB_ROOT" ls-files -z | tar -C "$AB_ROOT" --null -T - -cf - |
		tar -C "$top" -xf -
	[ ! -d "$AB_ROOT/build" ] || cp -a "$AB_ROOT/build" "$top/"
	[ ! -d "$AB_ROOT/bin" ] || cp -a "$AB_ROOT/bin" "$top/"
	git -C "$top" init -q
	git -C "$top" add -A
	git -C "$top" -c user.name=t -c user.email=t@t commit -qm 'a clone'
	# A newcomer's shell: no tools on PATH, nothing of the suite's but
	# the state directory, which the README's last step removes.
	cd "$top"
	run env -u AB_BIN -u AB_DEADLINE -u AB_TEST_PAUSE -u DOCKER_HOST \
		AB_STATE_DIR="$state" PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		bash -e -c "$script"
	[ "$status" -eq 0 ] || fail "an example failed (status $status): $output"
	while read -r pending; do
		echo "# skipped: README.md line ${pending#pending }" >&3
	done <"$BATS_TEST_TMPDIR/pending"
	# "Removing everything" did.
	[ ! -e "$state" ]
	run ab_leftovers "$sid"
	assert_output ""
	run ab_images "$sid"
	assert_output ""
}
