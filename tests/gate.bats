#!/usr/bin/env bats
# The combined gate (tests/gate/gate.py) in its reduced form: every kind
# of trial once, alone and then four at a time over two state
# directories, seed 1.  `make gate` draws many trials at random.

# shellcheck disable=SC2154 # bats sets status, output
load helpers

# The two passes run at the same time, each a gate of its own with its own
# state directories: the pass alone is the suite's longest wait.  Neither
# uses the suite's agents state (each imports the agents image into one of
# its own), because the files that share it sweep it after each test, and
# a gate removes everything of the states it ran in when it ends.
@test "the combined gate, reduced: every kind of trial alone and four at a time, every invariant held" {
	local alone=$BATS_TEST_TMPDIR/alone pid st=0
	AB_SUITE_STATE='' AB_AGENTS_IMAGE='' python3 "$AB_ROOT/tests/gate/gate.py" \
		--reduced --parallel 1 >"$alone" 2>&1 3>&- &
	pid=$!
	AB_SUITE_STATE='' AB_AGENTS_IMAGE='' run python3 \
		"$AB_ROOT/tests/gate/gate.py" --reduced --parallel 4
	wait "$pid" || st=$?
	printf '# four at a time: %s\n' "${lines[@]}" >&3
	assert_success
	assert_line --regexp '^[0-9]+ trials, [0-9]+ invariants held, 0 broken$'
	refute_line --partial 'broken: '
	run cat "$alone"
	printf '# alone: %s\n' "${lines[@]}" >&3
	assert_equal "$st" 0
	assert_line --regexp '^[0-9]+ trials, [0-9]+ invariants held, 0 broken$'
	refute_line --partial 'broken: '
}
