#!/usr/bin/env bats
# agentbox against an engine other than the host's: a second engine of
# the test's own (tests/lib/engine2.bash), in a network namespace of its
# own.  Tagged host: the host's docker0 and packet filter are compared
# before and after, and other files' egress networks change the filter.

# bats file_tags=host
# shellcheck disable=SC2154 # bats sets status, output, stderr
load helpers
load lib/engine2

setup_file() {
	AB_STATE_DIR=$(ab_new_state)
	export AB_STATE_DIR
	unset AB_DEADLINE AB_TEST_PAUSE DOCKER_HOST DOCKER_CONTEXT
	ab_host_net >"$BATS_FILE_TMPDIR/net.before"
	ab_engine2_start e2
}

teardown_file() {
	ab_engine2_stop
}

e2() {
	DOCKER_HOST=$E2_HOST "$@"
}

@test "a second engine of the test's own is another engine: its own ID, no bridge of the host's" {
	local host_id e2_id
	host_id=$(docker info --format '{{.ID}}')
	e2_id=$(e2 docker info --format '{{.ID}}')
	[ -n "$e2_id" ]
	[ "$e2_id" != "$host_id" ]
	# Its bridge is in its own namespace.
	run ip -n "$E2_NS" -br link show docker0
	assert_success
	run e2 docker info --format '{{.Driver}}'
	assert_output vfs
}

@test "a whole task runs on the second engine through DOCKER_HOST, and nothing of it is on either engine after" {
	local repo=$BATS_TEST_TMPDIR/repo sid
	git init -q "$repo"
	echo one >"$repo/a"
	git -C "$repo" add a
	git -C "$repo" -c user.name=t -c user.email=t@t commit -qm m
	sid=$(ab_state_sid)
	DOCKER_HOST=$E2_HOST run_exact 0 "$AB_ROOT/sh/run-task" --repo "$repo" \
		--commit "$(git -C "$repo" rev-parse HEAD)" --phase execution \
		--timeout 300 --attempt "e2-$RANDOM$RANDOM" \
		--patch "$BATS_TEST_TMPDIR/patch" -- \
		sh -c 'echo two >/work/b'
	# shellcheck disable=SC2034 # record_field reads it
	RECORD=$output
	assert_equal "$(record_field 'r["reason"]')" exited
	grep -q '^+two$' "$BATS_TEST_TMPDIR/patch"
	# The image was built there: the host engine has none of this state.
	run e2 docker images -q --filter "label=org.agentbox.state=$sid"
	[ -n "$output" ]
	run docker images -q --filter "label=org.agentbox.state=$sid"
	assert_output ""
	run ab_leftovers "$sid"
	assert_output ""
	run e2 docker ps -aq --filter "label=org.agentbox.state=$sid"
	assert_output ""
	run e2 docker volume ls -q --filter "label=org.agentbox.state=$sid"
	assert_output ""
}

@test "stopping the second engine leaves the host's docker0 and packet filter as they were, and nothing of the engine" {
	local dir=$E2_DIR ns=$E2_NS pid=$E2_PID
	ab_engine2_stop
	ab_host_net >"$BATS_FILE_TMPDIR/net.after"
	run diff "$BATS_FILE_TMPDIR/net.before" "$BATS_FILE_TMPDIR/net.after"
	assert_success
	run ip netns list
	refute_output --partial "$ns"
	[ ! -e "$dir" ]
	run kill -0 "$pid"
	assert_failure
}
