#!/usr/bin/env bats
# The C unit tests of lib/ (JSON, path checks, the lockdown comparison),
# run as TAP programs.

# shellcheck disable=SC2154 # bats sets status, output, stderr
load helpers

@test "lib/json: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/json-test"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}

@test "lib/lines: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/lines-test"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}

@test "lib/pathcheck: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/pathcheck-test"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}

@test "lib/gitpack's deflate loop: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/gitpack-test"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}

@test "lib/lockcheck: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/lockcheck-test" \
		"$AB_ROOT/tests/unit/fixtures"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}

@test "lib/run: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/run-test"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}

@test "lib/runtime: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/runtime-test"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}

@test "lib/egress: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/egress-test"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}

@test "lib/httpmsg: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/httpmsg-test"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}

@test "lib/tally: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/tally-test"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}

@test "lib/signin: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/signin-test"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}

@test "lib/oauth and lib/jwt: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/oauth-test"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}

@test "lib/zip: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/zip-test" \
		"$AB_ROOT/tests/unit/fixtures/zip"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}

@test "lib/progress: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/progress-test"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}

@test "lib/schema: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/schema-test"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}

@test "lib/agent: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/agent-test"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}

@test "lib/appserver: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/appserver-test"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}

@test "lib/secret: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/secret-test"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}

@test "lib/tlsca: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/tlsca-test"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}

@test "lib/intercept: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/intercept-test"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}

@test "lib/err: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/err-test"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}

@test "lib/buf: every unit check passes" {
	run "${AB_UNIT:-$AB_ROOT/build/tests}/buf-test"
	assert_success
	refute_output --partial "not ok"
	assert_output --partial "ok "
}
