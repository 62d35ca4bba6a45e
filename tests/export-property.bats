#!/usr/bin/env bats
# export-property: ab-export's patch and bundle held against the tree the
# agent left in /work, by an oracle of the test's own
# (tests/lib/export-prop.py; the trees come from tests/lib/treegen.py).
# The drawn trees run ten to a commit, each in a folder of its own, and
# some alone; the fixed cases are trees that once broke the export.  Any
# failure prints the command that replays it.  `make property` runs
# thousands more.

# shellcheck disable=SC2154 # bats sets status, output
load helpers

setup_file() {
	ab_setup_file
}

teardown_file() {
	ab_teardown_file
}

# prop ARGS...: the driver on this file's state and image; its report
# is the failure's message.
prop() {
	run python3 "$AB_ROOT/tests/lib/export-prop.py" "$@"
	if [ "$status" -ne 0 ]; then
		printf '%s\n' "$output" >&2
		return 1
	fi
}

@test "ordinary work passes the oracle, and a patch that lost a file fails it" {
	prop --case plain
	run python3 "$AB_ROOT/tests/lib/export-prop.py" --case plain --tamper
	assert_equal "$status" 1
	assert_line --partial 'FAIL python3 tests/lib/export-prop.py --case plain'
	assert_line --partial 'differs from /work'
}

@test "drawn trees 1-10, side by side in one commit, export as /work holds them" {
	prop --batch 1,2,3,4,5,6,7,8,9,10
}

@test "drawn trees 11-20, side by side in one commit, export as /work holds them" {
	prop --batch 11,12,13,14,15,16,17,18,19,20
}

@test "drawn trees 21-30, side by side in one commit beside 12,000 files nobody touches: those are kept unread, the rest is read by an archive made inside and what it cannot carry by requests, and all export as /work holds them" {
	prop --batch 21,22,23,24,25,26,27,28,29,30 --quiet 12000
	assert_output --regexp 'runs that kept files unread: 1 \(1[0-9]{4} of .*; archives made inside: [1-9]'
}

@test "drawn trees 31-40, side by side in one commit, export as /work holds them" {
	prop --batch 31,32,33,34,35,36,37,38,39,40
}

@test "drawn trees 41-50, side by side in one commit beside 12,000 files nobody touches: those are kept unread, the rest is read by an archive made inside and what it cannot carry by requests, and all export as /work holds them" {
	prop --batch 41,42,43,44,45,46,47,48,49,50 --quiet 12000
	assert_output --regexp 'runs that kept files unread: 1 \(1[0-9]{4} of .*; archives made inside: [1-9]'
}

@test "drawn trees 51-53, each alone in its commit, export as /work holds them" {
	prop --long 3 --start 51 --alone-every 1
}

@test "a name that is not UTF-8 beside a file of holes is never a deletion (issue36)" {
	prop --case issue36
}

@test "untracked names that are not UTF-8 or hold a newline beside a file of holes are accounted for" {
	prop --case issue36-untracked
}

@test "an entry with a long path beside a file of holes is read, not a usage error" {
	prop --case long-beside-big
}

@test "a binary file made executable, its bytes unchanged, gives a patch git applies" {
	prop --case binary-mode
}

@test "a base file hard-linked from a refused name is not lost as a hard link" {
	prop --case hardlink-refused
}

@test "long names left out are named whole, each told from the others" {
	prop --case long-names-cut
}

@test "empty folders whose names are not UTF-8, beside a file of holes, are named" {
	prop --case empty-not-utf8
}

@test "a hard link whose name is not UTF-8, to a refused name, is read as itself" {
	prop --case hardlink-not-utf8
}

@test "a file in a folder the engine cannot archive, beside a file of holes, is named, and the export goes on" {
	prop --case deep-folder
	refute_output --partial 'ab-export refused'
}

@test "a symlink refused for its chain, hard-linked under more names, is that symlink under each" {
	prop --case hardlink-chained-symlink
}

@test "a name that is not UTF-8, hard-linked into a refused folder beside a file of holes, is read as itself" {
	prop --case hardlink-under-refused
}
