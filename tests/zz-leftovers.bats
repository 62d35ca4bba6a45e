#!/usr/bin/env bats
# Runs last: the suite as a whole leaves nothing on the engine.

# shellcheck disable=SC2154 # bats sets status, output, stderr
load helpers

# The suite's shared agents image (tests/run-suite) goes first: it was
# built for the suite, and the suite ends here.
setup_file() {
	if [ -n "${AB_SUITE_STATE:-}" ] && [ -n "${AB_AGENTS_IMAGE:-}" ]; then
		AB_STATE_DIR=$AB_SUITE_STATE ab-clean --sweep --all >/dev/null
		AB_STATE_DIR=$AB_SUITE_STATE ab-image remove "$AB_AGENTS_IMAGE"
	fi
}

@test "no container, volume or network labelled org.agentbox.* is left" {
	run ab_leftovers
	assert_output ""
	run docker network ls -q --filter label=org.agentbox.state
	assert_output ""
}

@test "no image built by the suite is left" {
	run docker images -q --filter label=org.agentbox.state
	assert_output ""
}
