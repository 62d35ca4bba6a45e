#!/usr/bin/env bats
# The combined gate (tests/gate/gate.py) in its reduced form: every kind
# of trial once, alone and then four at a time over two state
# directories, seed 1.  `make gate` draws many trials at random.

# shellcheck disable=SC2154 # bats sets status, output
load helpers

@test "the combined gate, reduced: every kind of trial alone and four at a time, every invariant held" {
	run python3 "$AB_ROOT/tests/gate/gate.py" --reduced
	printf '# %s\n' "${lines[@]}" >&3
	assert_success
	assert_line --regexp '^[0-9]+ trials, [0-9]+ invariants held, 0 broken$'
	refute_line --partial 'broken: '
}
