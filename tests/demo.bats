#!/usr/bin/env bats
# make demo: the main job on the default offline image, leaving nothing.

# shellcheck disable=SC2154 # bats sets status, output, stderr
load helpers

@test "the demo runs the agent, shows what it may and may not do, and leaves nothing" {
	local images_before want
	images_before=$(docker images -q | sort)
	unset AB_STATE_DIR
	run --separate-stderr sh "$AB_ROOT/sh/demo"
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
	run ab_leftovers
	assert_output ""
	assert_equal "$(docker images -q | sort)" "$images_before"
}

@test "demo-agents runs the real Claude Code against the scripted vendor, and leaves nothing" {
	[ -n "${AB_AGENTS_IMAGE:-}" ] || fail "the suite's agents image was not built"
	AB_STATE_DIR=$AB_SUITE_STATE run --separate-stderr sh "$AB_ROOT/sh/demo-agents"
	assert_success
	python3 -c '
import json, sys
r = json.loads(sys.argv[1])
a = r["agent"]
assert r["reason"] == "exited" and r["exit_status"] == 0, r["reason"]
assert a["provider"] == "claude" and a["status"] == "ok", a
assert [d["tool_input"]["command"] for d in a["refused"]] == ["curl -s https://example.com"], a
' "$output"
	grep -qF "diff --git a/from-claude b/from-claude" <<<"$stderr" ||
		fail "the demo did not show the change"
	run ab_leftovers
	assert_output ""
}
