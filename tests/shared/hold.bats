#!/usr/bin/env bats
# Suite A of tests/shared-engine.bats, run there by tests/run-suite (it is
# no file of the suite itself): an allocation of its own is live on the
# engine, its ab-seed stopped at a pause point, until the test around the
# suite lets it go; then it is seeded, cleaned, and nothing of it is left.
# AB_SHARED_HOLD names the directory where it says what is held.

# shellcheck disable=SC2154 # bats sets status, output, stderr
load ../helpers

setup_file() {
	[ -d "${AB_SHARED_HOLD:-}" ] || {
		echo "AB_SHARED_HOLD names no directory: run by tests/shared-engine.bats" >&2
		return 1
	}
	ab_setup_file
	REPO=$BATS_FILE_TMPDIR/repo
	git init -q "$REPO"
	echo held >"$REPO/a.txt"
	git -C "$REPO" add a.txt
	git -C "$REPO" -c user.name=t -c user.email=t@t commit -qm held
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	export REPO COMMIT
}

teardown_file() {
	ab_teardown_file
}

@test "an allocation held at a pause point, then seeded and cleaned, leaves nothing" {
	local pid st=0
	run_exact 0 ab-alloc --image "$AB_IMAGE"
	ALLOC=$output
	AB_TEST_PAUSE=seed-staged ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" \
		>/dev/null 2>"$BATS_TEST_TMPDIR/seed.err" 3>&- &
	pid=$!
	ab_wait_stopped "$pid"
	# The pid last, and whole: the test around waits for it.
	printf '%s\n' "$ALLOC" >"$AB_SHARED_HOLD/alloc"
	printf '%s\n' "$pid" >"$AB_SHARED_HOLD/pid.tmp"
	mv "$AB_SHARED_HOLD/pid.tmp" "$AB_SHARED_HOLD/pid"
	wait "$pid" || st=$?
	cat "$BATS_TEST_TMPDIR/seed.err" >&2
	assert_equal "$st" 0
	run_exact 0 ab-clean "$ALLOC"
	run ab_leftovers "$(ab_state_sid)"
	assert_output ""
}
