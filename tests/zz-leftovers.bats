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

# Scoped to the suite's own states (tests/run-suite): another suite, or
# an operator's agentbox, may share the engine.
suite_networks() {
	docker network ls --filter label=org.agentbox.state \
		--format '{{.Name}} {{.Label "org.agentbox.state"}}' | ab_suite_only
}

suite_images() {
	if [ -n "${AB_SUITE_SIDS:-}" ]; then
		# shellcheck disable=SC2046 # one SID a word
		ab_images $(sort -u "$AB_SUITE_SIDS")
	else
		docker images -q --filter label=org.agentbox.state | sort -u |
			xargs -r docker image inspect --format \
			'{{.Id}} {{index .Config.Labels "org.agentbox.state"}} {{.RepoTags}}'
	fi
}

@test "no container, volume or network of the suite's states is left" {
	run ab_leftovers
	assert_output ""
	run suite_networks
	assert_output ""
}

@test "no image built by the suite is left" {
	run suite_images
	assert_output ""
}
