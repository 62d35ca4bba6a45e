#!/usr/bin/env bats
# The libFuzzer harnesses (tests/fuzz), a few seconds each from their
# committed corpus: `make fuzz` runs them longer.

# shellcheck disable=SC2154 # bats sets status, output, stderr
load helpers

fuzz() {
	local work=$BATS_TEST_TMPDIR/new
	mkdir -p "$work"
	run "${AB_FUZZ:-$AB_ROOT/build/fuzz}/$1" -max_total_time=3 -seed=1 \
		-artifact_prefix="$BATS_TEST_TMPDIR/" "$work" \
		"$AB_ROOT/tests/fuzz/corpus/$1"
	assert_success
	assert_output --partial "Done "
}

@test "fuzz: the egress proxy's request, authority and address checks" {
	fuzz egress
}

@test "fuzz: the proxy's HTTP/1.1 framing: split anywhere, against a chunked decoder and a re-serialised head of the harness's own" {
	fuzz httpmsg
}

@test "fuzz: a sign-in's refresh at the proxy: the agent's body and the vendor's answer, no real token to the agent" {
	fuzz oauth
}

@test "fuzz: the zip reader that takes files out of wheels" {
	fuzz zip
}

@test "fuzz: the answer's schema check and validation" {
	fuzz schema
}

@test "fuzz: the tar reader that ab-export reads the agent's files with" {
	fuzz tarread
}

@test "fuzz: the JSON reader and writer agree on every document" {
	fuzz json
}

@test "fuzz: what ab-run reads of the CLIs' event streams, in pieces of any size" {
	fuzz agent
}

@test "fuzz: the path and symlink checks, against a resolver of the harness's own" {
	fuzz pathcheck
}

@test "fuzz: ab-codex's reader of Codex's app-server, and its file change decisions against a rule of the harness's own" {
	fuzz appserver
}

@test "fuzz: what ab-run shows of the model's text in an agent line: printable, cut, the credential masked" {
	fuzz progress
}

@test "fuzz: the parser of /work's listing, which ab-export accounts for every entry with" {
	fuzz listing
}

@test "fuzz: the pass of the user's base image's tar under agentbox's layer" {
	fuzz roottar
}

@test "fuzz: the credential's placeholder, and its swap in a stream cut anywhere, against a plain replace" {
	fuzz secret
}
