#!/usr/bin/env bats
# An engine lost while its tasks run: the host's engine (A) and an engine
# of the test's own (B, tests/lib/engine2.bash), whose dockerd is killed
# with SIGKILL mid-run and started again on the same roots.  Tagged host:
# it starts and kills engines, and compares the host's docker0 and packet
# filter before and after.

# bats file_tags=host
# shellcheck disable=SC2154 # bats sets status, output, stderr
# shellcheck disable=SC2153 # AB_IMAGE is set by ab_engines_setup_file
# shellcheck disable=SC2034 # RECORD is read by record_field (helpers.bash)
load helpers
load lib/engine2

setup_file() {
	ab_engines_setup_file --image b
	B=$(ab_engine host b) B_IMAGE=$(ab_engine image b)
	export B B_IMAGE
	REPO=$BATS_FILE_TMPDIR/repo
	ab_repo "$REPO"
	export REPO
}

teardown_file() {
	ab_engines_stop
	ab_teardown_file
}

# Whatever a failed test left: its tasks, objects on either engine,
# records, engine B down.
teardown() {
	local p
	for p in "${TASKS[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	ab_state_sweep --alloc
	ab_records_rm
	# The last test stops B for good.
	[ -f "$BATS_FILE_TMPDIR/engines/b/pid" ] || return 0
	kill -0 "$(ab_engine pid b)" 2>/dev/null || ab_engine_restart b
	ab_state_sweep --alloc "$B"
}

TASKS=()

b() {
	DOCKER_HOST=$B "$@"
}

# task NAME [VAR=VALUE...] -- RUN-TASK ARGS: run-task in the background,
# its stdout, stderr and status in $BATS_TEST_TMPDIR/NAME.{out,err,rc}.
task() {
	local n=$BATS_TEST_TMPDIR/$1
	shift
	(
		rc=0
		env "$@" >"$n.out" 2>"$n.err" || rc=$?
		echo "$rc" >"$n.rc"
	) 3>&- &
	TASKS+=("$!")
	printf '%s\n' "$!" >"$n.pid"
}

# Waits until the task NAME has ended (run-task ends by its deadline).
task_wait() {
	wait "$(cat "$BATS_TEST_TMPDIR/$1.pid")" || true
	[ -s "$BATS_TEST_TMPDIR/$1.rc" ]
}

# Waits until the agent of this state runs its sleep on the engine
# DOCKER_HOST names.
agent_sleeps() {
	local c _
	for _ in $(seq 1 1200); do
		for c in $(docker ps -q --filter status=running \
			--filter "label=org.agentbox.state=$(ab_state_sid)" \
			--filter label=org.agentbox.role=agent); do
			docker top "$c" 2>/dev/null | grep -q 'sleep' && return 0
		done
		sleep 0.1
	done
	echo "no agent of this state sleeps on ${DOCKER_HOST:-the host engine}" >&2
	return 1
}

# The objects of this state on engine B: containers, volumes, networks.
b_objects() {
	local sid
	sid=$(ab_state_sid)
	b docker ps -aq --filter "label=org.agentbox.state=$sid"
	b docker volume ls -q --filter "label=org.agentbox.state=$sid"
	b docker network ls -q --filter "label=org.agentbox.state=$sid"
}

@test "an engine lost mid-run: its task ends with 125 before its deadline, naming the engine; the other engine's task finishes; back, a sweep there removes what the task left" {
	local commit m lines line alloc aid lease now err
	commit=$(git -C "$REPO" rev-parse HEAD)
	task a -- "$AB_ROOT/sh/run-task" --repo "$REPO" --commit "$commit" \
		--phase execution --image "$AB_IMAGE" --timeout 300 -- sh -c 'sleep 20'
	# B's agent would sleep past the deadline: a run-task that waited
	# for it would end with 124, at the deadline, not with 125 at once.
	task b DOCKER_HOST="$B" "$AB_ROOT/sh/run-task" --repo "$REPO" \
		--commit "$commit" --phase execution --image "$B_IMAGE" \
		--timeout 60 -- sh -c 'sleep 600'
	agent_sleeps
	DOCKER_HOST=$B agent_sleeps
	# The engine's mark, made by its first allocation.
	m=$(b ab_engine_mark)
	[ -n "$m" ]
	ab_engine_kill b
	task_wait b
	assert_equal "$(cat "$BATS_TEST_TMPDIR/b.rc")" 125
	err=$(cat "$BATS_TEST_TMPDIR/b.err")
	RECORD=$(cat "$BATS_TEST_TMPDIR/b.out")
	assert_equal "$(record_field 'r["reason"]')" engine-error
	lease=$(record_field 'r["deadline_ms"]')
	now=$(date +%s%3N)
	[ "$now" -lt "$lease" ]
	# One line of ab-run's, naming the engine, saying the agent may run
	# on there; then ab-clean's, which could not ask it; the last tells
	# what to run.
	lines=$(grep -c '^ab-run: ' <<<"$err")
	assert_equal "$lines" 1
	line=$(grep '^ab-run: ' <<<"$err")
	[[ $line == "ab-run: the connection to the engine at $B broke before it could "*"; the agent could not be killed and may still run: "*"$B"* ]]
	assert_equal "$(record_field 'r["error"]')" "${line#ab-run: }"
	alloc=$(sed -n 's/^run-task: \(alloc:[0-9a-f]*\) (if run-task is killed.*/\1/p' <<<"$err")
	aid=${alloc#alloc:}
	[ -n "$aid" ]
	[[ $err == *$'\n'"ab-clean: cannot reach the engine at $B: "* ]]
	assert_equal "${err##*$'\n'}" "run-task: $alloc was not cleaned; run: DOCKER_HOST='$B' ab-clean $alloc"
	# Nothing claimed absent: every record of the task is kept.
	[ -f "$AB_STATE_DIR/alloc/$aid" ]
	grep -lq "\"alloc\":\"$aid\"" "$AB_STATE_DIR"/profile/*
	grep -lq "\"alloc\":\"$aid\"" "$AB_STATE_DIR"/ctr/*
	[ ! -e "$AB_STATE_DIR/cleaned/alloc-$aid" ]
	# The other engine's task was not disturbed.
	task_wait a
	assert_equal "$(cat "$BATS_TEST_TMPDIR/a.rc")" 0
	RECORD=$(cat "$BATS_TEST_TMPDIR/a.out")
	assert_equal "$(record_field 'r["reason"]')" exited
	run ab_leftovers "$(ab_state_sid)"
	assert_output ""
	# Back on the same roots: the same engine, its mark and its objects,
	# and its containers stopped (no live-restore).
	ab_engine_restart b
	assert_equal "$(b ab_engine_mark)" "$m"
	assert_equal "$(b docker ps -q --filter "label=org.agentbox.alloc=$aid")" ""
	[ -n "$(b_objects)" ]
	# A sweep from cron takes it once its lease ran out.
	while [ "$(date +%s%3N)" -le $((lease + 1000)) ]; do
		sleep 1
	done
	DOCKER_HOST=$B run_exact 0 ab-clean --sweep --within 1
	assert_output "$alloc"
	assert_equal "${stderr##*$'\n'}" "ab-clean: removed"
	assert_equal "$(b_objects)" ""
	[ ! -e "$AB_STATE_DIR/alloc/$aid" ]
	[ ! -e "$AB_STATE_DIR/stage/$aid" ]
	run ! grep -lq "\"alloc\":\"$aid\"" "$AB_STATE_DIR"/profile/* "$AB_STATE_DIR"/ctr/*
	assert_equal "$(find "$AB_STATE_DIR/alloc" -mindepth 1)" ""
}

@test "with its engine gone, ab-clean claims no absence: a handle and a sweep end with 125 naming the engine, and the records are kept" {
	local alloc aid
	DOCKER_HOST=$B run_exact 0 ab-alloc --image "$B_IMAGE"
	alloc=$output aid=${output#alloc:}
	ab_engine_kill b
	DOCKER_HOST=$B run_exact 125 ab-clean "$alloc"
	assert_one_error_line ab-clean
	[[ $stderr == "ab-clean: cannot reach the engine at $B: "* ]]
	[ -f "$AB_STATE_DIR/alloc/$aid" ]
	DOCKER_HOST=$B run_exact 125 ab-clean --sweep --all
	assert_output ""
	[[ $stderr == "ab-clean: cannot reach the engine at $B: "* ]]
	[ -f "$AB_STATE_DIR/alloc/$aid" ]
	# Back, the same handle is cleaned there.
	ab_engine_restart b
	DOCKER_HOST=$B run_exact 0 ab-clean "$alloc"
	assert_equal "$stderr" "ab-clean: removed"
	assert_equal "$(b_objects)" ""
	[ ! -e "$AB_STATE_DIR/alloc/$aid" ]
}

@test "an engine lost and never started again is stopped whole: no process of it, its namespace and roots gone, the host's network as it was" {
	local dir ns c
	dir=$(ab_engine dir b) ns=$(ab_engine ns b)
	c=$(b docker run -d --label "org.agentbox.state=$(ab_state_sid)" \
		--network none --entrypoint /bin/sleep "$(b docker images -q \
		--filter "label=org.agentbox.state=$(ab_state_sid)" | head -1)" 600)
	[ -n "$c" ]
	ab_engine_kill b
	# Its container's shim runs on without it.
	[ -n "$(ab_engine_procs "$dir")" ]
	ab_engines_stop
	assert_equal "$(ab_engine_procs "$dir")" ""
	run ip netns list
	refute_output --partial "$ns"
	[ ! -e "$dir" ]
	run ab_host_net_unchanged
	assert_success
}
