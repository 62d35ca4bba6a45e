#!/usr/bin/env bats
# examples/ansible/fleet: run-task fanned out by Ansible over two engines
# of the test's own (tests/lib/engine2.bash) at once, named by DOCKER_HOST
# and by a docker CLI context: an image built on each, a task per
# inventory host with two in flight, each result collected, and the
# always: block's cleanup when a task fails or its run-task is killed.  Tagged host, as engines.bats: it starts
# engines and compares the host's docker0 and packet filter after.

# bats file_tags=host
# shellcheck disable=SC2154 # bats sets status, output, stderr
# shellcheck disable=SC2030,SC2031 # a test and its teardown share ATTEMPTS, PLAY_PID
load helpers
load lib/ansible
load lib/engine2
load lib/sshd

PLAYBOOK=$AB_ROOT/examples/ansible/fleet/fleet.yml

setup_file() {
	# The run-tasks of the fleet share one state directory: each has
	# its own deadline file and attempt, and every record names its
	# engine.
	ab_engines_setup_file
	ab_ansible_setup_file
	ab_engine_start e1
	ab_engine_start e2
	E1=$(ab_engine host e1) E2=$(ab_engine host e2)
	export E1 E2
	# A docker CLI context for e2, in a configuration of the file's own.
	DOCKER_CONFIG=$BATS_FILE_TMPDIR/docker
	export DOCKER_CONFIG
	docker context create fleet-e2 --docker "host=$E2" >/dev/null
}

teardown_file() {
	ab_sshd_stop "$BATS_FILE_TMPDIR/sshd"
	ab_engines_stop
	ab_teardown_file
}

teardown() {
	local pid
	# A failed test's playbook, and the run-tasks it left stopped: those
	# of the test's own attempt IDs, killed one by one.
	if [ -n "${ATTEMPTS:-}" ]; then
		for pid in $(pgrep -f -- "--attempt $ATTEMPTS"); do
			kill -KILL "$pid" 2>/dev/null || true
		done
	fi
	[ -z "${PLAY_PID:-}" ] || kill -KILL "$PLAY_PID" 2>/dev/null || true
	[ -z "${PLAY_PID:-}" ] || wait "$PLAY_PID" 2>/dev/null || true
	ab_state_sweep "$E1" "$E2" ""
	rm -rf "$AB_STATE_DIR/alloc" "$AB_STATE_DIR/stage" "$BATS_TEST_TMPDIR/results"
}

# inventory LINE...: an INI inventory of those host lines, its path.
inventory() {
	local inv=$BATS_TEST_TMPDIR/hosts.ini
	printf '%s\n' "$@" >"$inv"
	printf '%s\n' "$inv"
}

# fleet INVENTORY EXTRA-VARS...: the playbook over INVENTORY with this
# build's tools, the file's state directory, two tasks in flight (throttle;
# Ansible's forks stay at 5).
fleet() {
	fleet_via "" "$@"
}

# fleet_via SSHD INVENTORY EXTRA-VARS...: the same, with ssh's home that
# of the sshd of the test's own under SSHD (tests/lib/sshd.bash).
fleet_via() {
	local via=$1 inv=$2
	shift 2
	set -- ansible-playbook -i "$inv" "$PLAYBOOK" -e "ab_bin=$AB_BIN" \
		-e "ab_run_task=$AB_ROOT/sh/run-task" \
		-e "ab_state_dir=$AB_STATE_DIR" -e "ab_repo=$REPO" \
		-e "ab_results=$BATS_TEST_TMPDIR/results" -e ab_in_flight=2 "$@"
	if [ -n "$via" ]; then
		ab_ssh_home "$via" "$@"
	else
		"$@"
	fi
}

# An agent that writes its host's name: ab_command for HOST, INI-quoted.
writes() {
	printf "ab_command='[\"sh\", \"-c\", \"echo %s >/work/AGENT.txt\"]'" "$1"
}

# recap HOST: "ok=N changed=N failed=N skipped=N" of HOST's recap line.
recap() {
	sed -n "s/^$1 *: *\(ok=[0-9]*\) *\(changed=[0-9]*\) *unreachable=0 *\(failed=[0-9]*\) *\(skipped=[0-9]*\).*/\1 \2 \3 \4/p" <<<"$output"
}

# said TASK HOST: what the default callback said of HOST at TASK: ok,
# changed, fatal, skipping.
said() {
	awk -v t="TASK [$1] " -v h="[$2]" '
		index($0, "TASK [") == 1 { on = index($0, t) == 1; next }
		on && $2 == h || on && $2 == h ":" { sub(/:.*/, ""); print; exit }' \
		<<<"$output"
}

# The result record collected for HOST, for record_field.
# shellcheck disable=SC2034 # record_field reads it
record_of() {
	RECORD=$(cat "$BATS_TEST_TMPDIR/results/$1.json")
}

# What is left of the file's tasks on the engine at DOCKER_HOST $1 (""
# the host's): containers and volumes; the images are registered and stay.
left_on() {
	local sid
	sid=$(ab_state_sid)
	DOCKER_HOST=$1 docker ps -aq --filter "label=org.agentbox.state=$sid"
	DOCKER_HOST=$1 docker volume ls -q --filter "label=org.agentbox.state=$sid"
}

# What is left in the state directory: allocation and staging records,
# deadline files, run-task's own directories.
left_in_state() {
	find "$AB_STATE_DIR/alloc" "$AB_STATE_DIR/stage" -mindepth 1 \
		-maxdepth 1 2>/dev/null || true
	find "$AB_STATE_DIR" -maxdepth 1 \( -name 'deadline.*' -o -name 'run-task.*' \)
}

# The images of the file's state on the engine at DOCKER_HOST $1.
images_on() {
	DOCKER_HOST=$1 docker images -q --no-trunc \
		--filter "label=org.agentbox.state=$(ab_state_sid)" | sort -u
}

assert_nothing_left() {
	run left_on "$E1"
	assert_output ""
	run left_on "$E2"
	assert_output ""
	run left_on ""
	assert_output ""
	run left_in_state
	assert_output ""
}

@test "the fleet playbook and its example inventory are well formed" {
	run_exact 0 ansible-playbook --syntax-check \
		-i "$AB_ROOT/examples/ansible/fleet/hosts.yml" "$PLAYBOOK"
	run_exact 0 ansible-inventory -i "$AB_ROOT/examples/ansible/fleet/hosts.yml" \
		--host build3
	[[ $output == *'"DOCKER_TLS_VERIFY": "1"'* ]]
}

@test "two engines at once, one named by DOCKER_HOST, one by a context: an image built on each, once per engine; each host's task ran on its engine and its result came back; nothing is left" {
	local inv h d1 d2
	inv=$(inventory "e1 ab_docker_host=$E1 $(writes e1)" \
		"e1-b ab_docker_host=$E1 $(writes e1-b)" \
		"e2 ab_docker_context=fleet-e2 $(writes e2)")
	run_exact 0 fleet "$inv"
	assert_equal "$(recap e1)" "ok=16 changed=6 failed=0 skipped=3"
	assert_equal "$(recap e1-b)" "ok=9 changed=1 failed=0 skipped=7"
	assert_equal "$(recap e2)" "ok=13 changed=5 failed=0 skipped=3"
	# e1-b names e1's engine: it takes the image built for e1.
	assert_equal "$(said 'ab-image build' e1)" changed
	assert_equal "$(said 'ab-image build' e2)" changed
	assert_equal "$(said 'ab-image build' e1-b)" skipping
	for h in e1 e1-b e2; do
		assert_equal "$(said run-task "$h")" changed
		# run-task cleaned; ab-clean proves it absent.
		assert_equal "$(said ab-clean "$h")" ok
		record_of "$h"
		assert_equal "$(record_field 'r["reason"]')" exited
		assert_equal "$(record_field 'r["exit_status"]')" 0
		grep -qxF "+$h" "$BATS_TEST_TMPDIR/results/$h.patch"
		git -C "$REPO" apply --check "$BATS_TEST_TMPDIR/results/$h.patch"
	done
	# Each ran from the image of its own engine: one image on each, none
	# on the host's engine.
	record_of e1
	d1=$(record_field 'r["image"]')
	record_of e1-b
	assert_equal "$(record_field 'r["image"]')" "$d1"
	record_of e2
	d2=$(record_field 'r["image"]')
	[ "$d1" != "$d2" ]
	assert_equal "$(images_on "$E1")" "$d1"
	assert_equal "$(images_on "$E2")" "$d2"
	assert_equal "$(images_on "")" ""
	assert_nothing_left
}

@test "an engine reached through ssh:// beside one named by a context: each host's task ran on its engine" {
	local inv port
	# An sshd of the test's own whose sessions reach e1, as a remote
	# host's docker would.
	ab_sshd_start "$BATS_FILE_TMPDIR/sshd" "$E1"
	port=$(cat "$BATS_FILE_TMPDIR/sshd/port")
	inv=$(inventory "e1 ab_docker_host=ssh://root@127.0.0.1:$port $(writes e1)" \
		"e2 ab_docker_context=fleet-e2 $(writes e2)")
	run_exact 0 fleet_via "$BATS_FILE_TMPDIR/sshd" "$inv"
	assert_equal "$(said run-task e1)" changed
	assert_equal "$(said run-task e2)" changed
	record_of e1
	assert_equal "$(record_field 'r["reason"]')" exited
	grep -qxF "+e1" "$BATS_TEST_TMPDIR/results/e1.patch"
	grep -q 'Accepted publickey' "$BATS_FILE_TMPDIR/sshd/sshd.log"
	# It ran on e1, through ssh: e1's image, nothing on the host's.
	assert_equal "$(images_on "$E1")" "$(record_field 'r["image"]')"
	assert_nothing_left
}

@test "an agent that fails on one engine: that host fails, always: proves its allocation gone, the other engine's task finishes" {
	local inv
	inv=$(inventory \
		"e1 ab_docker_host=$E1 ab_command='[\"sh\", \"-c\", \"echo no >/work/AGENT.txt; exit 3\"]'" \
		"e2 ab_docker_host=$E2 $(writes e2)")
	run_exact 2 fleet "$inv"
	assert_equal "$(recap e1)" "ok=15 changed=4 failed=1 skipped=3"
	assert_equal "$(recap e2)" "ok=13 changed=4 failed=0 skipped=3"
	# The images are the engines' own from before: reused.
	assert_equal "$(said 'ab-image build' e1)" ok
	assert_equal "$(said 'ab-image build' e2)" ok
	assert_equal "$(said run-task e1)" fatal
	assert_equal "$(said ab-clean e1)" ok
	# The failed agent's record and patch still come back.
	record_of e1
	assert_equal "$(record_field 'r["reason"]')" exited
	assert_equal "$(record_field 'r["exit_status"]')" 3
	grep -qxF '+no' "$BATS_TEST_TMPDIR/results/e1.patch"
	record_of e2
	assert_equal "$(record_field 'r["exit_status"]')" 0
	grep -qxF '+e2' "$BATS_TEST_TMPDIR/results/e2.patch"
	assert_nothing_left
}

@test "a run-task killed outright on one engine: always: removes what it left, the other engine's task finishes" {
	local inv att sid out=$BATS_TEST_TMPDIR/play.out st=0 pid=''
	ATTEMPTS=fleet-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
	att=$ATTEMPTS-e1
	sid=$(ab_state_sid)
	# e1's run-task stops itself once its allocation is seeded.
	inv=$(inventory \
		"e1 ab_docker_host=$E1 ab_attempt=$att ab_engine_env='{\"AB_TEST_PAUSE\": \"after-ab-seed\"}'" \
		"e2 ab_docker_host=$E2 $(writes e2)")
	fleet "$inv" >"$out" 2>&1 3>&- &
	PLAY_PID=$!
	for _ in $(seq 1 1200); do
		pid=$(pgrep -f -- "/sh/run-task .*--attempt $att") && break
		kill -0 "$PLAY_PID" 2>/dev/null || break
		sleep 0.1
	done
	[ -n "$pid" ]
	ab_wait_stopped "$pid"
	# Its allocation is on e1 and nothing will clean it but always:.
	[ -n "$(DOCKER_HOST=$E1 docker volume ls -q --filter "label=org.agentbox.state=$sid")" ]
	kill -KILL "$pid"
	wait "$PLAY_PID" || st=$?
	PLAY_PID=
	output=$(cat "$out")
	assert_equal "$st" 2
	assert_equal "$(recap e1)" "ok=17 changed=7 failed=1 skipped=1"
	assert_equal "$(recap e2)" "ok=13 changed=4 failed=0 skipped=3"
	assert_equal "$(said run-task e1)" fatal
	assert_equal "$(said ab-clean e1)" changed
	assert_equal "$(said 'Remove what a killed run-task left' e1)" changed
	assert_equal "$(said 'Remove an empty result file' e1)" changed
	[ ! -e "$BATS_TEST_TMPDIR/results/e1.json" ]
	[ ! -e "$BATS_TEST_TMPDIR/results/e1.patch" ]
	record_of e2
	assert_equal "$(record_field 'r["exit_status"]')" 0
	grep -qxF '+e2' "$BATS_TEST_TMPDIR/results/e2.patch"
	assert_nothing_left
}

# The test's run-tasks (not their steps: ab-profile is given the attempt
# too).
run_tasks() {
	local all pid ppid
	all=$(pgrep -f -- "/sh/run-task .*--attempt $ATTEMPTS" || true)
	# A subshell run-task forks (a command substitution) has its
	# parent's command line: it is not another task.  One that ended
	# since pgrep saw it has no parent to read: it was no task either.
	for pid in $all; do
		ppid=$(awk '{ print $4 }' "/proc/$pid/stat" 2>/dev/null) || continue
		[ -n "$ppid" ] || continue
		grep -qx "$ppid" <<<"$all" || echo "$pid"
	done
}

# The test's run-tasks that are stopped at their pause point.
stopped() {
	local pid
	for pid in $(run_tasks); do
		[ "$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null)" != T ] ||
			echo "$pid"
	done
}

@test "no more than ab_in_flight run-tasks at once: while two hold their slots, the third host's has not started; it runs when one ends" {
	local inv out=$BATS_TEST_TMPDIR/play.out st=0 h n pid
	local pause="ab_engine_env='{\"AB_TEST_PAUSE\": \"after-ab-seed\"}'"
	ATTEMPTS=fleet-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
	# Each run-task stops itself once its allocation is seeded.
	inv=$(inventory \
		"e1 ab_docker_host=$E1 ab_attempt=$ATTEMPTS-e1 $(writes e1) $pause" \
		"e2 ab_docker_host=$E2 ab_attempt=$ATTEMPTS-e2 $(writes e2) $pause" \
		"e1-b ab_docker_host=$E1 ab_attempt=$ATTEMPTS-e1-b $(writes e1-b) $pause")
	fleet "$inv" >"$out" 2>&1 3>&- &
	PLAY_PID=$!
	for _ in $(seq 1 1200); do
		[ "$(stopped | wc -l)" -lt 2 ] || break
		kill -0 "$PLAY_PID" 2>/dev/null || break
		sleep 0.1
	done
	assert_equal "$(stopped | wc -l)" 2
	# Both slots are held: the third run-task was never started.
	assert_equal "$(run_tasks | wc -l)" 2
	# Each goes on from its pause; the third starts, stops, goes on.
	n=0
	while kill -0 "$PLAY_PID" 2>/dev/null; do
		for pid in $(stopped); do
			kill -CONT "$pid"
			n=$((n + 1))
		done
		if [ "$(run_tasks | wc -l)" -gt 2 ]; then
			pgrep -af -- "/sh/run-task .*--attempt $ATTEMPTS" >&2
			false
		fi
		sleep 0.1
	done
	wait "$PLAY_PID" || st=$?
	PLAY_PID=
	output=$(cat "$out")
	assert_equal "$st" 0
	assert_equal "$n" 3
	for h in e1 e2 e1-b; do
		record_of "$h"
		assert_equal "$(record_field 'r["attempt"]')" "$ATTEMPTS-$h"
		assert_equal "$(record_field 'r["exit_status"]')" 0
		grep -qxF "+$h" "$BATS_TEST_TMPDIR/results/$h.patch"
	done
	assert_nothing_left
}

@test "stopping the engines leaves the host's docker0 and packet filter as they were, and nothing of the fleet on the host's engine" {
	ab_engines_stop
	run ab_host_net_unchanged
	assert_success
	run left_on ""
	assert_output ""
	assert_equal "$(images_on "")" ""
}
