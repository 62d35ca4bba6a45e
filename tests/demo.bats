#!/usr/bin/env bats
# make demo: the main job on the default offline image, leaving nothing.

# shellcheck disable=SC2154 # bats sets status, output, stderr
# The suite's agents state is this file's too: tests/run-suite runs the
# files tagged agents one after another.
# bats file_tags=agents
load helpers

# demo_sids: the tools the demo runs are these wrappers, which note the
# SID of the state directory the demo makes for itself (its path is the
# demo's own), so that what it leaves is asked of its state alone: other
# files, and other suites, make and remove images meanwhile.  The SIDs are
# registered with the suite too, for its last file.
demo_sids() {
	local bin=$BATS_TEST_TMPDIR/bin t
	mkdir "$bin"
	for t in "$AB_BIN"/ab-*; do
		# shellcheck disable=SC2016 # the wrapper's own expansions
		printf '#!/bin/sh\n[ ! -f "${AB_STATE_DIR:-/nonexistent}/sid" ] ||\n\tcat "$AB_STATE_DIR/sid" >>%q\nexec %q "$@"\n' \
			"$BATS_TEST_TMPDIR/sids" "$t" >"$bin/${t##*/}"
		chmod 0755 "$bin/${t##*/}"
	done
	printf '%s\n' "$bin"
}

@test "the demo runs the agent, shows what it may and may not do, and leaves nothing" {
	local want sid sids=() bin
	bin=$(demo_sids)
	unset AB_STATE_DIR
	AB_BIN=$bin run --separate-stderr sh "$AB_ROOT/sh/demo"
	assert_success
	python3 -c '
import json, sys
r = json.loads(sys.argv[1])
assert r["reason"] == "exited" and r["exit_status"] == 0, r["reason"]
assert r["phase"] == "execution" and r["probe"] == "ok"' "$output"
	for want in "demo-agent: running as 10001:10001 in /work" \
		"demo-agent: wrote /work/agent-was-here" "?? agent-was-here" \
		"demo-agent: /work/.git is read-only" "demo-agent: / is read-only" \
		"demo-agent: no network" "demo: a small repository"; do
		grep -qF -- "$want" <<<"$stderr" || fail "the demo did not show: $want"
	done
	# Its one state, seen by the tools after the first made it.
	mapfile -t sids < <(sort -u "$BATS_TEST_TMPDIR/sids")
	assert_equal "${#sids[@]}" 1
	for sid in "${sids[@]}"; do
		ab_register_sid "$sid"
	done
	run ab_leftovers "${sids[@]}"
	assert_output ""
	run ab_images "${sids[@]}"
	assert_output ""
}

@test "make demo: the build's log on stderr, the result record alone and indented on stdout" {
	local bin sid sids=()
	bin=$(demo_sids)
	unset AB_STATE_DIR
	# A build of its own, so that something is compiled and said.
	AB_BIN=$bin run --separate-stderr make -C "$AB_ROOT" --no-print-directory \
		demo BIN="$BATS_TEST_TMPDIR/b" BUILD="$BATS_TEST_TMPDIR/o"
	assert_success
	grep -q -- "-o $BATS_TEST_TMPDIR/b/ab-run " <<<"$stderr" ||
		fail "the build's log is not on stderr"
	python3 -c '
import json, sys
r = json.loads(sys.argv[1])
assert r["reason"] == "exited" and r["exit_status"] == 0, r["reason"]
assert sys.argv[1].startswith("{\n    \"kind\": \"result\",\n"), sys.argv[1][:80]
' "$output"
	mapfile -t sids < <(sort -u "$BATS_TEST_TMPDIR/sids")
	assert_equal "${#sids[@]}" 1
	for sid in "${sids[@]}"; do
		ab_register_sid "$sid"
		run ab_leftovers "$sid"
		assert_output ""
		run ab_images "$sid"
		assert_output ""
	done
}

@test "demo-agents runs the real Claude Code and Codex CLI against the scripted vendor, and leaves nothing" {
	[ -n "${AB_AGENTS_IMAGE:-}" ] || fail "the suite's agents image was not built"
	AB_STATE_DIR=$AB_SUITE_STATE run --separate-stderr sh "$AB_ROOT/sh/demo-agents"
	assert_success
	python3 -c '
import json, sys
c, x = [json.loads(l) for l in sys.argv[1].splitlines()]
for r in (c, x):
    assert r["reason"] == "exited" and r["exit_status"] == 0, r["reason"]
    assert r["agent"]["status"] == "ok", r["agent"]
assert c["agent"]["provider"] == "claude" and x["agent"]["provider"] == "codex"
assert [d["tool_input"]["command"] for d in c["agent"]["refused"]] == ["curl -s https://example.com"], c
assert x["agent"]["edits"] == [{"path": "/work/README", "kind": "update"}], x
' "$output"
	local want
	for want in "diff --git a/from-claude b/from-claude" \
		"diff --git a/from-codex b/from-codex" \
		"+hello from agentbox, edited by Claude Code" \
		"+hello from agentbox, edited by Codex" \
		"demo-agents: edited: update /work/README" \
		"demo-agents: codex: its sandbox refused a command"; do
		grep -qF -- "$want" <<<"$stderr" || fail "the demo did not show: $want"
	done
	run ab_leftovers "$(ab_state_sid "$AB_SUITE_STATE")"
	assert_output ""
}
