#!/usr/bin/env bats
# ab-codex as a process: what it writes before Codex starts, where Codex
# runs, its exit statuses, signals, and its refusals of bad input.  Codex's
# side is tests/lib/app-server.py, a scripted stand-in speaking the same
# JSON-RPC; the real Codex under ab-codex, in a real container, is
# tests/codex.bats.  Its decisions are lib/agent/appserver.c's (tests/unit).

# shellcheck disable=SC2154 # bats sets status, output, stderr
load helpers

CODEX=${AB_BIN:-$AB_ROOT/bin}/ab-codex

setup() {
	ROOT=$BATS_TEST_TMPDIR/work
	CODEX_HOME=$BATS_TEST_TMPDIR/home
	LOG=$BATS_TEST_TMPDIR/server.log
	mkdir -p "$ROOT" "$CODEX_HOME"
	export CODEX_HOME
	printf 'Do the task.\n' >"$BATS_TEST_TMPDIR/prompt"
}

# client MODE [AB-CODEX OPTIONS...]: ab-codex with the stand-in in MODE,
# the prompt on its standard input.
client() {
	local mode=$1
	shift
	"$CODEX" --root "$ROOT" "$@" -- "$(command -v python3)" \
		"$AB_ROOT/tests/lib/app-server.py" "$mode" "$LOG" \
		<"$BATS_TEST_TMPDIR/prompt"
}

# sent EXPR: EXPR, in Python over M (what ab-codex sent, parsed), as JSON.
sent() {
	python3 -c 'import json, sys
L = [json.loads(x) for x in open(sys.argv[1])]
M = L[1:]
print(json.dumps(eval(sys.argv[2])))' "$LOG" "$1"
}

@test "ab-codex: the trust entry first, Codex in the root, an announced edit accepted and reported, exit 0" {
	run_exact 0 client ok --model gpt-5.5
	assert_equal "$(sent '[L[0]["cwd"], L[0]["config"]]')" \
		"[\"$ROOT\", \"[projects.\\\"$ROOT\\\"]\\ntrust_level = \\\"untrusted\\\"\\n\"]"
	assert_equal "$(stat -c %a "$CODEX_HOME/config.toml")" 600
	assert_equal "$(sent '[m.get("method") for m in M]')" \
		'["initialize", "initialized", "thread/start", "turn/start", null]'
	assert_equal "$(sent '[M[2]["params"], M[3]["params"]["input"], M[4]]')" \
		"[{\"cwd\": \"$ROOT\", \"sandbox\": \"workspace-write\", \"approvalPolicy\": \"on-request\", \"approvalsReviewer\": \"user\", \"ephemeral\": true, \"model\": \"gpt-5.5\"}, [{\"type\": \"text\", \"text\": \"Do the task.\\n\"}], {\"jsonrpc\": \"2.0\", \"id\": 0, \"result\": {\"decision\": \"accept\"}}]"
	assert_equal "$output" "{\"type\":\"item.completed\",\"item\":{\"type\":\"file_change\",\"id\":\"f1\",\"status\":\"completed\",\"changes\":[{\"path\":\"$ROOT/a.txt\",\"kind\":\"add\"}]}}
{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"status\":\"completed\",\"text\":\"done\"}}
{\"type\":\"turn.completed\",\"usage\":{}}"
	assert_equal "$stderr" ""
}

@test "ab-codex: a command's output holding NUL bytes goes on as Codex reported it, escaped, and the turn ends: exit 0" {
	run_exact 0 client nul
	assert_equal "$output" '{"type":"item.started","item":{"type":"command_execution","id":"c1","status":"in_progress","command":"cat bin.dat"}}
{"type":"item.completed","item":{"type":"command_execution","id":"c1","status":"completed","command":"cat bin.dat","aggregated_output":"a\u0000b\u0000c\n","exit_code":0}}
{"type":"item.completed","item":{"type":"agent_message","status":"completed","text":"done"}}
{"type":"turn.completed","usage":{}}'
	assert_equal "$stderr" ""
}

@test "ab-codex: a thread with another policy or reviewer, or a remote control, is stopped before its turn: exit 1" {
	local mode
	for mode in policy reviewer remote; do
		rm -f "$LOG"
		run_exact 1 client "$mode"
		assert_regex "$stderr" '^ab-codex: stopped Codex: (the thread Codex started has another (approval policy|reviewer) than agentbox asked for|remote control is not disabled)$'
		# Stopped as soon as it knew: what the stand-in read before
		# it was killed varies, but never a turn.
		assert_equal "$(sent '[M[0]["method"], "turn/start" in [m.get("method") for m in M]]')" \
			'["initialize", false]'
		[[ $output == *'"type":"turn.failed","error":{"message":"ab-codex stopped Codex: '* ]]
	done
}

@test "ab-codex: a request for a thread it did not start stops Codex, unanswered: exit 1" {
	run_exact 1 client other
	assert_equal "$stderr" "ab-codex: stopped Codex: item/commandExecution/requestApproval for a thread agentbox did not start"
	assert_equal "$(sent '[m for m in M if m.get("id") == 0 and "method" not in m]')" '[]'
}

@test "ab-codex: Codex ending mid-turn is exit 1; a signal kills Codex's whole group and is 128+N" {
	run_exact 1 client die
	assert_equal "$stderr" "ab-codex: stopped Codex: Codex ended before its turn did"
	# The first run's turn/start must not pass for the second's.
	rm -f "$LOG"
	"$CODEX" --root "$ROOT" -- "$(command -v python3)" \
		"$AB_ROOT/tests/lib/app-server.py" hang "$LOG" \
		<"$BATS_TEST_TMPDIR/prompt" >"$BATS_TEST_TMPDIR/out" \
		2>"$BATS_TEST_TMPDIR/err" &
	local pid=$! _ st=0
	for _ in $(seq 1 300); do
		grep -q turn/start "$LOG" 2>/dev/null && break
		sleep 0.1
	done
	grep -q turn/start "$LOG" || fail "the turn never started"
	kill -TERM "$pid"
	wait "$pid" || st=$?
	assert_equal "$st" 143
	assert_equal "$(cat "$BATS_TEST_TMPDIR/err")" "ab-codex: stopped Codex: cancelled by signal 15"
	run pgrep -f "app-server.py hang $LOG"
	assert_output ""
}

@test "ab-codex: bad arguments and inputs are usage errors, before Codex starts" {
	run_exact 2 "$CODEX"
	assert_regex "$stderr" '^usage: ab-codex'
	run_exact 2 "$CODEX" --root work -- /bin/true
	run_exact 2 "$CODEX" --root "$ROOT" -- true
	run_exact 2 "$CODEX" --root "$ROOT/a b" -- /bin/true
	printf '\377\376\n' >"$BATS_TEST_TMPDIR/prompt"
	run_exact 2 client ok
	assert_equal "$stderr" "ab-codex: the prompt is not UTF-8 text"
	head -c 262145 /dev/zero | tr '\0' a >"$BATS_TEST_TMPDIR/prompt"
	run_exact 2 client ok
	assert_regex "$stderr" '^ab-codex: the prompt on standard input is not text of at most 256 KiB$'
	printf 'Do it.\n' >"$BATS_TEST_TMPDIR/prompt"
	run_exact 2 client ok --schema "$BATS_TEST_TMPDIR/none.json"
	assert_regex "$stderr" '^ab-codex: --schema .*/none\.json: cannot open: No such file or directory$'
	printf '{"type":' >"$BATS_TEST_TMPDIR/bad.json"
	run_exact 2 client ok --schema "$BATS_TEST_TMPDIR/bad.json"
	assert_regex "$stderr" 'bad.json: not a JSON text of at most 64 KiB$'
	run_exact 2 env -u CODEX_HOME "$CODEX" --root "$ROOT" -- /bin/true \
		<"$BATS_TEST_TMPDIR/prompt"
	assert_equal "$stderr" "ab-codex: CODEX_HOME must be an absolute path"
	CODEX_HOME=$BATS_TEST_TMPDIR/none run_exact 1 client ok
	assert_equal "$stderr" "ab-codex: cannot write $BATS_TEST_TMPDIR/none/config.toml: No such file or directory"
	[ ! -e "$LOG" ]
	run_exact 0 "$CODEX" --version
	assert_regex "$output" '^[0-9]+\.[0-9]+\.[0-9]+$'
}

@test "ab-codex: --help tells the truth, and the man page covers it" {
	PATH=$(dirname "$CODEX"):$PATH assert_man_covers_help ab-codex 5
}
