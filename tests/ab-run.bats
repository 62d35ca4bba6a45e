#!/usr/bin/env bats
# ab-run: the last check, the probe, bounded output, the deadline, the
# cancellation, the settled result.

# shellcheck disable=SC2154 # bats sets status, output, stderr
# shellcheck disable=SC2016 # shell text run inside the container
# shellcheck disable=SC2030,SC2031 # each @test is a subshell: PROF, CTR are its own
load helpers

setup_file() {
	ab_setup_file
	export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t \
		GIT_COMMITTER_EMAIL=t@t
	REPO=$BATS_FILE_TMPDIR/repo
	git init -q "$REPO"
	echo hello >"$REPO/a.txt"
	git -C "$REPO" add a.txt
	git -C "$REPO" commit -qm one
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	DL=$BATS_FILE_TMPDIR/deadline
	ab_deadline_in "$DL" 3600
	# Small ceilings, so the smallest memory limit a profile may have
	# is small enough for a memory bomb to reach quickly.
	ALLOC=$(ab-alloc --image "$AB_IMAGE" --deadline "$DL" \
		--task-bytes 8M --git-bytes 8M)
	ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" --deadline "$DL" \
		>/dev/null 2>&1
	export REPO COMMIT DL ALLOC
}

teardown_file() {
	ab-clean "$ALLOC" >/dev/null || true
	ab_teardown_file
}

teardown() {
	ab_proxy_stop
	docker ps -aq --filter "label=org.agentbox.alloc=${ALLOC#alloc:}" \
		--filter label=org.agentbox.role=agent | xargs -r docker rm -f >/dev/null
}

# ctr_for PHASE [PROFILE-OPTION...] -- ARGV: profile and validate; sets CTR.
ctr_for() {
	local phase=$1
	shift
	run_exact 0 ab-profile --alloc "$ALLOC" --phase "$phase" \
		--attempt "r-$BATS_TEST_NUMBER-$RANDOM$RANDOM" --deadline "${PDL:-$DL}" "$@"
	PROF=$output
	run_exact 0 ab-validate "$PROF"
	CTR=$output
}

# field RESULT EXPR: a Python expression on the result record `r`.
field() {
	ab-run --show "$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)
v = eval(sys.argv[1])
print(json.dumps(v) if not isinstance(v, str) else v)' "$2"
}

@test "each phase runs: probe ok, the agent's output, the result's fields" {
	local phase res work
	for phase in planning questions execution; do
		ctr_for "$phase" -- sh -c 'echo "out $(cat /work/a.txt)"; echo err >&2
			touch /work/x 2>/dev/null && echo writable || echo read-only'
		run_exact 0 ab-run "$CTR"
		res=$output
		[[ $res =~ ^result:[0-9a-f]{32}$ ]]
		work=read-only
		[ "$phase" != execution ] || work=writable
		assert_equal "$(field "$res" 'r["stdout"]["text"]')" "out hello
$work"
		assert_equal "$(field "$res" 'r["stderr"]["text"]')" "err"
		assert_equal "$(field "$res" '[r["reason"], r["exit_status"], r["signal"], r["probe"], r["phase"], r["started"], r["output_complete"]]')" \
			"[\"exited\", 0, null, \"ok\", \"$phase\", true, true]"
		assert_equal "$(field "$res" 'r["profile"]')" "${PROF#profile:}"
		assert_equal "$(field "$res" 'r["ctr"]')" "${CTR#ctr:}"
		assert_equal "$(field "$res" 'r["profile_sha256"]')" \
			"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["body_sha256"])' \
			"$AB_STATE_DIR/profile/${PROF#profile:}")"
		assert_equal "$(field "$res" 'r["image"]')" \
			"$(docker inspect --format '{{.Image}}' "agentbox-${ALLOC#alloc:}-keeper")"
		# What was enforced, as the engine reported it.
		assert_equal "$(field "$res" '[r["lockdown"]["HostConfig.ReadonlyRootfs"], r["lockdown"]["HostConfig.CapDrop"], r["lockdown"]["HostConfig.NetworkMode"], r["lockdown"]["Config.User"]]')" \
			'[true, ["ALL"], "none", "10001:10001"]'
		assert_equal "$(field "$res" '[m["RW"] for m in r["lockdown"]["Mounts"] if m["Destination"] == "/work"]')" \
			"[$([ "$phase" = execution ] && echo true || echo false)]"
		[ "$(field "$res" 'r["ended_ms"] >= r["started_ms"] > 0')" = true ]
		run_exact 0 ab-run --show "$res"
		[[ $output != *AB_PROBE_NONCE* ]]
	done
	ab_on_alloc "$ALLOC" 'rm -f /work/x'
}

@test "the agent's own exit status is ab-run's" {
	ctr_for execution -- sh -c 'exit 3'
	run_exact 3 ab-run "$CTR"
	assert_equal "$(field "$output" '[r["reason"], r["exit_status"]]')" '["exited", 3]'
	[[ $stderr == "ab-run: the agent exited with status 3" ]]
}

@test "a plain command (no --provider) gets no agent line, even printing a CLI's stream" {
	ctr_for execution -- sh -c 'printf "%s\n" "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"Bash\",\"input\":{\"command\":\"git status\"}}]}}" "{\"type\":\"item.started\",\"item\":{\"type\":\"command_execution\",\"id\":\"c\",\"command\":\"ls\"}}"; exit 3'
	run_exact 3 ab-run "$CTR"
	assert_equal "$stderr" "ab-run: the agent exited with status 3"
	[[ $(field "$output" 'r["stdout"]["text"]') == *'"name":"Bash"'* ]]
	assert_equal "$(field "$output" '"agent" in r')" false
}

@test "ab-run --quiet: accepted without a provider too, where it changes nothing" {
	ctr_for execution -- true
	run_exact 0 ab-run "$CTR" --quiet
	assert_equal "$stderr" ""
}

@test "at the deadline the container is stopped: 124, reason deadline, within the grace" {
	local pdl=$BATS_TEST_TMPDIR/pdl res
	ab_deadline_in "$pdl" 4
	PDL=$pdl ctr_for execution -- sleep 1000
	run_exact 124 ab-run "$CTR" --grace 1
	res=$output
	assert_equal "$(field "$res" '[r["reason"], r["exit_status"], r["signal"]]')" \
		'["deadline", 137, 9]'
	# Stopped at the deadline, killed after the 1 s grace, settled soon
	# after: a correctness bound with room for a slow engine.
	[ "$(field "$res" '0 <= r["ended_ms"] - r["deadline_ms"] < 1000 + 15000')" = true ]
	[ "$(docker inspect --format '{{.State.Running}}' "agentbox-${PROF#profile:}")" = false ]
}

@test "a later --deadline does not extend the profile's; an earlier one binds" {
	local pdl=$BATS_TEST_TMPDIR/pdl late=$BATS_TEST_TMPDIR/late res
	ab_deadline_in "$pdl" 3
	ab_deadline_in "$late" 600
	PDL=$pdl ctr_for execution -- sleep 1000
	run_exact 124 ab-run "$CTR" --deadline "$late" --grace 0
	assert_equal "$(field "$output" 'r["deadline_ms"]')" "$(($(cat "$pdl") * 1000))"
	ctr_for execution -- sleep 1000
	ab_deadline_in "$late" 2
	run_exact 124 ab-run "$CTR" --deadline "$late" --grace 0
	assert_equal "$(field "$output" 'r["deadline_ms"]')" "$(($(cat "$late") * 1000))"
}

@test "SIGTERM or SIGINT is a cancellation: 130, reason cancelled, settled" {
	local sig pid st out=$BATS_TEST_TMPDIR/out
	for sig in TERM INT; do
		ctr_for execution -- sleep 1000
		AB_TEST_PAUSE=run-started ab-run "$CTR" --grace 1 >"$out" 2>/dev/null 3>&- &
		pid=$!
		ab_wait_stopped "$pid"
		kill -CONT "$pid"
		kill -s "$sig" "$pid"
		st=0
		wait "$pid" || st=$?
		assert_equal "$st" 130
		assert_equal "$(field "$(cat "$out")" '[r["reason"], r["exit_status"]]')" \
			'["cancelled", 137]'
		[ "$(docker inspect --format '{{.State.Running}}' "agentbox-${PROF#profile:}")" = false ]
	done
}

# Waits until process $1 stops at its pause point (0) or ends (1).
stopped_or_ended() {
	local state _
	for _ in $(seq 1 600); do
		state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
		[ "$state" = T ] && return 0
		[ "$state" = Z ] && return 1
		sleep 0.05
	done
	echo "process $1 neither stopped nor ended" >&2
	return 1
}

# 0 when a SIGTERM is pending for process $1, taken by no thread yet.
term_pending() {
	local line
	while read -r line; do
		case $line in
		SigPnd:* | ShdPnd:*)
			[ $((0x${line##*[[:space:]]} & 0x4000)) -eq 0 ] || return 0 ;;
		esac
	done <"/proc/$1/status"
	return 1
}

@test "the first reason wins: a SIGTERM in the deadline's grace keeps deadline" {
	local late=$BATS_TEST_TMPDIR/late out=$BATS_TEST_TMPDIR/out
	local go=$BATS_TEST_TMPDIR/go pid='' st=0 n _
	# ab-run's SIGTERM to the agent at the deadline is held by the
	# proxy until the test lets it through: meanwhile the stop has begun
	# with its reason and the grace cannot end, since the SIGKILL that
	# ends it comes from ab-run alone (PID 1 ignores SIGTERM).
	ab_proxy_start --match '^POST /v[0-9.]+/containers/[0-9a-f]+/kill\?signal=SIGTERM$' \
		--action delay --until "$go"
	# The deadline must find the agent started: a deadline N s after
	# ab-run's launch, stopped once the agent has started; one that
	# passed first ended ab-run before the start, and a later one is
	# tried.
	for n in 2 4 8 16 32; do
		ctr_for execution -- sleep 1000
		ab_deadline_in "$late" "$n"
		AB_TEST_PAUSE=run-started DOCKER_HOST=unix://$AB_PROXY_SOCK \
			ab-run "$CTR" --deadline "$late" --grace 2 >"$out" 2>/dev/null 3>&- &
		pid=$!
		stopped_or_ended "$pid" && break
		wait "$pid" || true
		pid=
	done
	[ -n "$pid" ]
	while [ "$(date +%s)" -lt "$(cat "$late")" ]; do
		sleep 0.1
	done
	kill -CONT "$pid"
	for _ in $(seq 1 600); do
		grep -q '^delay POST .*kill?signal=SIGTERM$' "$AB_PROXY_LOG" && break
		sleep 0.05
	done
	grep -q '^delay POST .*kill?signal=SIGTERM$' "$AB_PROXY_LOG"
	kill -TERM "$pid"
	# Taken by ab-run's handler (pending no more), then the reply goes.
	for _ in $(seq 1 600); do
		term_pending "$pid" || break
		sleep 0.05
	done
	if term_pending "$pid"; then
		fail "ab-run never took the SIGTERM"
	fi
	touch "$go"
	wait "$pid" || st=$?
	assert_equal "$st" 124
	# Killed at the grace's end, the reason still the deadline's.
	assert_equal "$(field "$(cat "$out")" '[r["reason"], r["exit_status"], r["signal"]]')" \
		'["deadline", 137, 9]'
}

@test "the first reason wins: a deadline in the cancellation's grace keeps cancelled" {
	local pdl=$BATS_TEST_TMPDIR/pdl out=$BATS_TEST_TMPDIR/out pid st
	ab_deadline_in "$pdl" 3
	PDL=$pdl ctr_for execution -- sleep 1000
	AB_TEST_PAUSE=run-started ab-run "$CTR" --grace 6 >"$out" 2>/dev/null 3>&- &
	pid=$!
	ab_wait_stopped "$pid"
	kill -CONT "$pid"
	kill -TERM "$pid"
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 130
	assert_equal "$(field "$(cat "$out")" 'r["reason"]')" cancelled
	# The grace outlasted the deadline: it did pass during the stop.
	[ "$(field "$(cat "$out")" 'r["ended_ms"] > r["deadline_ms"]')" = true ]
}

@test "/work persists across invocations on one allocation; HOME and /tmp do not" {
	ctr_for planning -- sh -c 'ls /work; echo home >"$HOME/h"; echo tmp >/tmp/t'
	run_exact 0 ab-run "$CTR"
	assert_equal "$(field "$output" 'r["stdout"]["text"]')" "a.txt"
	ctr_for execution -- sh -c 'echo kept >/work/made-by-execution
		echo home >"$HOME/h"; echo tmp >/tmp/t'
	run_exact 0 ab-run "$CTR"
	ctr_for planning -- sh -c 'cat /work/made-by-execution; ls -A "$HOME" /tmp'
	run_exact 0 ab-run "$CTR"
	assert_equal "$(field "$output" 'r["stdout"]["text"]')" "kept
/home/agent:

/tmp:"
	ab_on_alloc "$ALLOC" 'rm -f /work/made-by-execution'
}

@test "a change after validation is drift: 126, and the agent never ran" {
	ctr_for execution -- sh -c 'echo ran >/work/drifted'
	docker update --restart=always "agentbox-${PROF#profile:}" >/dev/null
	run_exact 126 ab-run "$CTR"
	assert_one_error_line ab-run
	[[ $stderr == *"RestartPolicy"*"the agent did not start"* ]]
	assert_equal "$(field "$output" '[r["reason"], r["started"], r["exit_status"]]')" \
		'["drift", false, null]'
	assert_equal "$(docker inspect --format '{{.State.StartedAt}}' "agentbox-${PROF#profile:}")" \
		"0001-01-01T00:00:00Z"
	run ab_on_alloc "$ALLOC" 'ls /work'
	refute_output --partial drifted
}

@test "a container runs once: a second ab-run is drift" {
	ctr_for execution -- true
	run_exact 0 ab-run "$CTR"
	run_exact 126 ab-run "$CTR"
	[[ $stderr == *"State.Status"* ]]
}

@test "a probe that does not say ok with the nonce is refused and the agent stopped" {
	# An image whose probe lies about the nonce, then runs the agent: it
	# is built and registered like any other, so only the line tells.
	local dir=$BATS_TEST_TMPDIR/image img alloc res
	cp -r "$AB_ROOT/image" "$dir"
	sed -i 's/echo "agentbox-probe: ok $nonce"/echo "agentbox-probe: ok 0123"/' \
		"$dir/probe.sh"
	grep -q 'ok 0123' "$dir/probe.sh"
	img=$(ab-image build --dir "$dir" 2>/dev/null)
	alloc=$(ab-alloc --image "$img" --deadline "$DL")
	ab-seed "$alloc" --repo "$REPO" --commit "$COMMIT" --deadline "$DL" 2>/dev/null
	PROF=$(ab-profile --alloc "$alloc" --phase execution --attempt "lie-$RANDOM$RANDOM" \
		--deadline "$DL" -- sh -c 'echo agent-output; sleep 1000')
	CTR=$(ab-validate "$PROF")
	run_exact 126 ab-run "$CTR" --grace 30
	res=$output
	assert_equal "$(field "$res" '[r["reason"], r["probe"], r["stdout"]["kept"]]')" \
		'["probe-refused", "agentbox-probe: ok 0123", 0]'
	[[ $stderr == "ab-run: probe-refused: agentbox-probe: ok 0123" ]]
	# Killed at once, not after the 30 s grace.
	[ "$(field "$res" 'r["ended_ms"] - r["started_ms"] < 15000')" = true ]
	run_exact 0 ab-clean "$alloc"
	run_exact 0 ab-image remove "$img"
}

@test "a probe that cannot finish (the profile's pids starve it) is refused before the agent" {
	ctr_for execution --pids 1 -- sh -c 'echo agent-ran >/work/starved'
	run_exact 126 ab-run "$CTR"
	# The probe cannot fork its checks: it dies without its ok line.
	assert_equal "$(field "$output" '[r["reason"], r["exit_status"] != 0, r["probe"], r["stdout"]["kept"]]')" \
		'["probe-refused", true, null, 0]'
	[[ $(field "$output" 'r["stderr"]["text"]') == *"can't fork"* ]]
	run ab_on_alloc "$ALLOC" 'ls /work'
	refute_output --partial starved
}

@test "1 GiB of output: the limit is kept, the rest counted, the engine's log capped" {
	local res logpath
	ctr_for execution -- sh -c 'head -c 1073741824 /dev/zero; echo done >&2'
	run_exact 0 ab-run "$CTR" --output-limit 64k --stdout "$BATS_TEST_TMPDIR/o" \
		--stderr "$BATS_TEST_TMPDIR/e"
	res=$output
	assert_equal "$(field "$res" '[r["stdout"]["kept"], r["stdout"]["dropped"], r["stdout"]["truncated"], r["stdout"]["file"]]')" \
		"[65536, $((1073741824 - 65536)), true, \"$BATS_TEST_TMPDIR/o\"]"
	assert_equal "$(stat -c %s "$BATS_TEST_TMPDIR/o")" 65536
	assert_equal "$(cat "$BATS_TEST_TMPDIR/e")" "done"
	logpath=$(docker inspect --format '{{.LogPath}}' "agentbox-${PROF#profile:}")
	# max-size 1m, max-file 1: the engine rotates at a megabyte.
	[ "$(stat -c %s "$logpath")" -le $((2 << 20)) ]
}

@test "--stdout and --stderr: a link's target replaced whole, a FIFO written through, - refused" {
	local d=$BATS_TEST_TMPDIR pid
	ctr_for execution -- sh -c 'echo out; echo err >&2'
	echo old >"$d/target"
	ln -s target "$d/link"
	mkfifo "$d/fifo"
	cat "$d/fifo" >"$d/from-fifo" &
	pid=$!
	run_exact 0 ab-run "$CTR" --stdout "$d/link" --stderr "$d/fifo"
	wait "$pid"
	[ -L "$d/link" ] && [ -p "$d/fifo" ]
	assert_equal "$(cat "$d/target")" out
	assert_equal "$(cat "$d/from-fifo")" err
	[ -z "$(find "$d" -name '*.ab-*')" ]
	ctr_for execution -- true
	run_exact 2 ab-run "$CTR" --stdout -
	assert_equal "$stderr" "ab-run: --stdout -: standard output carries the result's handle"
}

# kill_from_outside HOW: runs a sleeping agent, has HOW kill it once it
# runs; sets RES and STATUS (ab-run's).
kill_from_outside() {
	local name pid _
	# PID 1 ignores a TERM it has no handler for: the kill waits for the
	# agent's trap (the probe runs first, and a TERM it gets is lost).
	ctr_for execution -- sh -c 'trap "exit 143" TERM; echo trapped; sleep 600 & wait'
	name=agentbox-${PROF#profile:}
	ab-run "$CTR" >"$BATS_TEST_TMPDIR/res" 2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	for _ in $(seq 1 300); do
		docker logs "$name" 2>/dev/null | grep -q '^trapped$' && break
		sleep 0.1
	done
	eval "$1"
	STATUS=0
	wait "$pid" || STATUS=$?
	RES=$(cat "$BATS_TEST_TMPDIR/res")
}

@test "a kill from outside is its own reason, never the agent exiting by itself" {
	kill_from_outside 'docker kill "$name" >/dev/null'
	assert_equal "$STATUS" 137
	assert_equal "$(cat "$BATS_TEST_TMPDIR/err")" \
		"ab-run: killed: a signal ab-run did not send stopped the agent (status 137)"
	assert_equal "$(field "$RES" '[r["reason"], r["exit_status"], r["signal"], r["oom_killed"]]')" \
		'["killed", 137, 9, false]'
	# A signal the agent sends itself is its own exit (PID 1 cannot get
	# one from inside: a child does, and its status is the agent's).
	ctr_for execution -- sh -c 'sh -c "kill -KILL \$\$"; exit $?'
	run_exact 137 ab-run "$CTR"
	assert_equal "$(field "$output" '[r["reason"], r["signal"]]')" '["exited", 9]'
	# TERM from outside, which the agent obeys: still not its own doing.
	kill_from_outside 'docker kill -s TERM "$name" >/dev/null'
	assert_equal "$(field "$RES" '[r["reason"], r["signal"]]')" '["killed", 15]'
	# The allocation cleaned under a running agent.
	ALLOC=$(ab-alloc --image "$AB_IMAGE" --deadline "$DL")
	ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" --deadline "$DL" \
		>/dev/null 2>&1
	kill_from_outside 'ab-clean "$ALLOC" >/dev/null'
	assert_equal "$STATUS" 137
	assert_equal "$(field "$RES" '[r["reason"], r["signal"]]')" '["killed", 9]'
}

# Seen under load: ab-clean removed the container between its death and
# ab-run's inspect of it, and the run was 125 instead of killed.
@test "a container removed after it died is still the agent's own status, from its wait" {
	local pid name st=0
	ctr_for execution -- sh -c 'exit 3'
	name=agentbox-${PROF#profile:}
	AB_TEST_PAUSE=run-exited ab-run "$CTR" >"$BATS_TEST_TMPDIR/res" \
		2>"$BATS_TEST_TMPDIR/err" 3>&- &
	pid=$!
	ab_wait_stopped "$pid"
	docker rm -f "$name" >/dev/null
	kill -CONT "$pid"
	wait "$pid" || st=$?
	assert_equal "$st" 3
	assert_equal "$(field "$(cat "$BATS_TEST_TMPDIR/res")" '[r["reason"], r["exit_status"], r["oom_killed"]]')" \
		'["exited", 3, false]'
}

@test "output that is not UTF-8 is kept as base64 in the record" {
	ctr_for execution -- sh -c 'printf "\377\376ok"'
	run_exact 0 ab-run "$CTR"
	assert_equal "$(field "$output" 'r["stdout"]["base64"]')" "//5vaw=="
}

@test "a memory bomb is oom" {
	ctr_for execution --memory 600M -- \
		awk 'BEGIN { s = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"; while (1) s = s s }'
	run_exact 137 ab-run "$CTR"
	assert_equal "$(field "$output" '[r["reason"], r["oom_killed"]]')" '["oom", true]'
}

# It counts the host's processes, and the next one measures the host's
# disk: tests/run-suite runs tests tagged host alone, after the others.
# bats test_tags=host
@test "a fork bomb meets the pids limit, leaves the host's process count alone, and ends" {
	local pdl=$BATS_TEST_TMPDIR/pdl out=$BATS_TEST_TMPDIR/out pid st before peak=0 n
	ab_deadline_in "$pdl" 8
	PDL=$pdl ctr_for execution --pids 64 -- \
		sh -c 'cat /sys/fs/cgroup/pids/pids.max; b() { b | b & }; b; exec sleep 1000'
	before=$(ps -e --no-headers | wc -l)
	ab-run "$CTR" --grace 1 >"$out" 2>/dev/null 3>&- &
	pid=$!
	for _ in $(seq 1 10); do
		sleep 0.5
		n=$(ps -e --no-headers | wc -l)
		[ "$n" -le "$peak" ] || peak=$n
	done
	st=0
	wait "$pid" || st=$?
	assert_equal "$st" 124
	assert_equal "$(field "$(cat "$out")" 'r["stdout"]["text"]')" 64
	# The container holds at most its 64; the rest is this test's own.
	[ "$peak" -le $((before + 64 + 16)) ]
}

# bats test_tags=host
@test "filling /work, /tmp and HOME is ENOSPC inside, and the host's disk is untouched" {
	local before after
	before=$(df -k --output=used /var/lib/docker | tail -1)
	ctr_for execution -- sh -c '
		for d in /work /tmp "$HOME"; do
			head -c 400000000 /dev/zero >"$d/fill" 2>/dev/null && echo "$d filled" ||
				echo "$d full"
			rm -f "$d/fill"
		done'
	run_exact 0 ab-run "$CTR"
	assert_equal "$(field "$output" 'r["stdout"]["text"]')" "/work full
/tmp full
/home/agent full"
	after=$(df -k --output=used /var/lib/docker | tail -1)
	# tmpfs only: the engine's disk moved by less than the 8 MiB ceiling.
	[ $((after - before)) -lt 8192 ]
}

@test "an unreachable engine is 125 with a result saying so" {
	ctr_for execution -- true
	DOCKER_HOST=unix://$BATS_TEST_TMPDIR/nothing.sock run_exact 125 ab-run "$CTR"
	assert_one_error_line ab-run
	assert_equal "$(field "$output" '[r["reason"], r["started"]]')" '["engine-error", false]'
	[[ $(field "$output" 'r["error"]') == *nothing.sock* ]]
}

@test "output cut mid-frame is recorded as incomplete, not passed off as whole" {
	local res
	ctr_for execution -- sh -c 'printf "%4000s\n" x; sleep 1'
	# The reply head (68 bytes) and the probe's output come first, in one
	# frame or several as the engine happened to read it (cut at byte 140,
	# this was a frame's end now and then); the agent's line is one write
	# of 4,001 bytes, one frame, and byte 1,200 lies inside it.
	ab_proxy_start --match '/attach' --action cut --after-bytes 1200
	DOCKER_HOST=unix://$AB_PROXY_SOCK run_exact 0 ab-run "$CTR"
	res=$output
	grep -q '^cut POST .*/attach' "$AB_PROXY_LOG"
	assert_equal "$(field "$res" '[r["reason"], r["probe"], r["output_complete"]]')" \
		'["exited", "ok", false]'
}

@test "an engine that vanishes mid-run is 125 with reason engine-error; ab-clean removes the agent" {
	local out=$BATS_TEST_TMPDIR/out pid st=0 alloc prof
	alloc=$(ab-alloc --image "$AB_IMAGE" --deadline "$DL")
	ab-seed "$alloc" --repo "$REPO" --commit "$COMMIT" --deadline "$DL" >/dev/null 2>&1
	prof=$(ab-profile --alloc "$alloc" --phase execution --deadline "$DL" \
		--attempt "vanish-$RANDOM$RANDOM" -- sleep 1000)
	CTR=$(ab-validate "$prof")
	ab_proxy_start
	DOCKER_HOST=unix://$AB_PROXY_SOCK AB_TEST_PAUSE=run-started ab-run "$CTR" \
		>"$out" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	pid=$!
	ab_wait_stopped "$pid"
	ab_proxy_stop
	kill -CONT "$pid"
	wait "$pid" || st=$?
	assert_equal "$st" 125
	assert_equal "$(field "$(cat "$out")" '[r["reason"], r["started"]]')" '["engine-error", true]'
	[ "$(wc -l <"$BATS_TEST_TMPDIR/err")" -eq 1 ]
	grep -q '^ab-run: ' "$BATS_TEST_TMPDIR/err"
	# The kill could not reach the engine either: the agent still runs
	# until ab-clean, which needs no ab-run.
	[ "$(docker inspect --format '{{.State.Running}}' "agentbox-${prof#profile:}")" = true ]
	run_exact 0 ab-clean "$alloc"
	run docker inspect "agentbox-${prof#profile:}"
	assert_failure
}

@test "a deadline already passed is 124 and the agent never starts" {
	local late=$BATS_TEST_TMPDIR/late
	ctr_for execution -- sh -c 'echo ran >/work/too-late'
	ab_deadline_in "$late" -1
	run_exact 124 ab-run "$CTR" --deadline "$late"
	assert_equal "$(field "$output" '[r["reason"], r["started"]]')" '["deadline", false]'
	run ab_on_alloc "$ALLOC" 'ls /work'
	refute_output --partial too-late
}

@test "bad invocations: usage 2, unknown or forged handles 1" {
	run_exact 2 ab-run
	run_exact 2 ab-run "ctr:$(printf '%032d' 0)" --grace x
	run_exact 2 ab-run "ctr:$(printf '%032d' 0)" --output-limit 0
	run_exact 2 ab-run "ctr:$(printf '%032d' 0)" --output-limit 2M
	run_exact 2 ab-run --show
	run_exact 1 ab-run "ctr:$(printf '%032d' 0)"
	assert_one_error_line ab-run
	run_exact 1 ab-run "profile:$(printf '%032d' 0)"
	run_exact 1 ab-run --show "result:$(printf '%032d' 0)"
	run_exact 0 ab-run --help
	assert_regex "$output" "^usage: ab-run CTR"
}

@test "a ctr record bound to another allocation is refused" {
	local rec
	ctr_for execution -- true
	rec=$AB_STATE_DIR/ctr/${CTR#ctr:}
	python3 -c '
import json, sys
p = sys.argv[1]
r = json.load(open(p))
r["alloc"] = "0" * 32
open(p, "w").write(json.dumps(r))' "$rec"
	run_exact 1 ab-run "$CTR"
	assert_one_error_line ab-run
}

@test "the man page names every option of --help" {
	assert_man_covers_help ab-run 7
}
