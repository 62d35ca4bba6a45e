#!/usr/bin/env bats
# Two suites on one engine at the same moment, as two CI jobs would run
# them: each one's leftover checks (a file's own "nothing is left", and
# zz-leftovers.bats) see its own states alone, so neither fails the other.
# Suite A (tests/shared/hold.bats) is held at a pause point with an
# allocation of its own live on the engine while suite B (demo.bats, whose
# two tests each check that nothing is left) runs whole; then A resumes
# and ends beside an allocation of this file's, foreign to both.

# shellcheck disable=SC2154 # bats sets status, output, stderr
load helpers

setup_file() {
	ab_setup_file
}

teardown_file() {
	ab_teardown_file
}

teardown() {
	# Suite A is let go whatever happened, and ends by itself.
	[ -z "${HELD:-}" ] || kill -CONT "$HELD" 2>/dev/null || true
	[ -z "${APID:-}" ] || wait "$APID" || true
	[ -z "${ALLOC:-}" ] || ab-clean "$ALLOC" >/dev/null || true
}

# Waits for suite A's ab-seed to be held; sets HELD and AID.
await_hold() {
	local hold=$1 _
	for _ in $(seq 1 1200); do
		[ -s "$hold/pid" ] && break
		kill -0 "$APID" 2>/dev/null || {
			echo "suite A ended before its hold" >&2
			return 1
		}
		sleep 0.1
	done
	HELD=$(cat "$hold/pid")
	ab_wait_stopped "$HELD"
	AID=$(cat "$hold/alloc")
	AID=${AID#alloc:}
}

alloc_objects() {
	docker ps -aq --filter "label=org.agentbox.alloc=$1"
	docker volume ls -q --filter "label=org.agentbox.alloc=$1"
}

@test "two suites at once: B's leftover checks pass while A holds an allocation, then A's pass beside another" {
	local hold=$BATS_TEST_TMPDIR/hold a=$BATS_TEST_TMPDIR/a.out st=0 n
	mkdir "$hold"
	run_exact 0 ab-alloc --image "$AB_IMAGE"
	ALLOC=$output
	AB_SHARED_HOLD=$hold "$AB_ROOT/tests/run-suite" \
		"$AB_ROOT/tests/shared/hold.bats" >"$a" 2>&1 3>&- &
	APID=$!
	await_hold "$hold" || { cat "$a" >&2; return 1; }
	# A's keeper and volumes are on the engine.
	run alloc_objects "$AID"
	assert_equal "${#lines[@]}" 4
	n=$(($(bats --count "$AB_ROOT/tests/demo.bats") +
		$(bats --count "$AB_ROOT/tests/zz-leftovers.bats")))
	run "$AB_ROOT/tests/run-suite" "$AB_ROOT/tests/demo.bats" 3>&-
	printf 'B: %s\n' "${lines[@]}" >&2
	assert_success
	assert_line --index 0 "1..$n"
	assert_line "$n passed, 0 failed"
	# A was held all along, its objects live beside B's checks.
	[ "$(awk '{print $3}' "/proc/$HELD/stat")" = T ]
	run alloc_objects "$AID"
	assert_equal "${#lines[@]}" 4
	kill -CONT "$HELD"
	HELD=
	wait "$APID" || st=$?
	APID=
	sed 's/^/A: /' "$a" >&2
	assert_equal "$st" 0
	assert_equal "$(tail -n 1 "$a")" "3 passed, 0 failed"
	run alloc_objects "$AID"
	assert_output ""
}
