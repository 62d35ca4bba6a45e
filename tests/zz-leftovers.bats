#!/usr/bin/env bats
# Runs last: the suite as a whole leaves nothing on the engine.

# shellcheck disable=SC2154 # bats sets status, output, stderr
load helpers

@test "no container or volume labelled org.agentbox.* is left" {
	run ab_leftovers
	assert_output ""
}

@test "no image built by the suite is left" {
	run docker images -q --filter label=org.agentbox.state
	assert_output ""
}
