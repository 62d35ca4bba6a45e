#!/usr/bin/env bats
# sh/run-task: the whole pipeline under one deadline, signals, concurrent
# tasks, and crashes at every point that a sweep must clean up after.

# shellcheck disable=SC2154 # bats sets status, output, stderr
# shellcheck disable=SC2016 # shell text run inside the container
load helpers

RUN_TASK=$AB_ROOT/sh/run-task

setup_file() {
	ab_setup_file
	export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t \
		GIT_COMMITTER_EMAIL=t@t
	REPO=$(make_repo "$BATS_FILE_TMPDIR/repo" a.txt)
	export REPO
}

teardown_file() {
	ab_teardown_file
}

teardown() {
	local sid
	# A run-task a failed test left stopped in its cleanup: let it finish.
	if [ -n "${TASK_PID:-}" ]; then
		pkill -CONT -P "$TASK_PID" || true
		kill -CONT "$TASK_PID" 2>/dev/null || true
		wait "$TASK_PID" 2>/dev/null || true
	fi
	sid=$(ab_state_sid)
	docker ps -aq --filter "label=org.agentbox.state=$sid" \
		--filter label=org.agentbox.alloc | xargs -r docker rm -f >/dev/null
	docker volume ls -q --filter "label=org.agentbox.state=$sid" |
		xargs -r docker volume rm -f >/dev/null
	rm -rf "$AB_STATE_DIR/alloc" "$AB_STATE_DIR/stage"
}

# make_repo DIR FILE: a one-commit repository holding FILE; prints DIR.
make_repo() {
	git init -q "$1"
	echo "this is $2" >"$1/$2"
	git -C "$1" add "$2"
	git -C "$1" commit -qm "$2"
	printf '%s\n' "$1"
}

# Engine objects and allocation state of this file's state directory.
state_objects() {
	local sid
	sid=$(ab_state_sid)
	docker ps -aq --filter "label=org.agentbox.state=$sid" --filter label=org.agentbox.alloc
	docker volume ls -q --filter "label=org.agentbox.state=$sid"
	find "$AB_STATE_DIR/alloc" "$AB_STATE_DIR/stage" -mindepth 1 -maxdepth 1 \
		2>/dev/null || true
}

field() {
	python3 -c '
import json, sys
r = json.loads(sys.argv[1])
v = eval(sys.argv[2])
print(json.dumps(v) if not isinstance(v, str) else v)' "$1" "$2"
}

task() {
	"$RUN_TASK" --repo "$REPO" --commit HEAD --image "$AB_IMAGE" "$@"
}

@test "a task runs end to end and leaves nothing; the allocation is named on stderr" {
	run_exact 0 task --phase execution --timeout 120 -- \
		sh -c 'cat /work/a.txt; git -C /work log -1 --format=%s; echo new >/work/b'
	assert_equal "$(field "$output" '[r["reason"], r["exit_status"], r["phase"], r["stdout"]["text"]]')" \
		'["exited", 0, "execution", "this is a.txt\na.txt\n"]'
	[[ $stderr =~ run-task:\ alloc:([0-9a-f]{32}) ]]
	assert_equal "$(field "$output" 'r["alloc"]')" "${BASH_REMATCH[1]}"
	run state_objects
	assert_output ""
}

@test "each phase runs through run-task; a commit can be named or given whole" {
	local phase
	for phase in planning questions; do
		run_exact 0 task --phase "$phase" --timeout 120 -- true
		assert_equal "$(field "$output" 'r["phase"]')" "$phase"
	done
	run_exact 0 "$RUN_TASK" --repo "$REPO" --commit "$(git -C "$REPO" rev-parse HEAD)" \
		--phase execution --timeout 120 -- true
	run state_objects
	assert_output ""
}

@test "the agent's exit status is run-task's, with the result on stdout" {
	run_exact 3 task --phase execution --timeout 120 -- sh -c 'exit 3'
	assert_equal "$(field "$output" '[r["reason"], r["exit_status"]]')" '["exited", 3]'
	run state_objects
	assert_output ""
}

@test "a deadline ends the task with 124 and cleans up" {
	# Long enough for the steps before the agent on a loaded machine: the
	# deadline must fall while the agent runs, or there is no result.
	run_exact 124 task --phase execution --timeout 20 --grace 1 -- sleep 1000
	assert_equal "$(field "$output" 'r["reason"]')" deadline
	run state_objects
	assert_output ""
}

@test "SIGTERM to run-task mid-run: 130, reason cancelled, nothing left" {
	local out=$BATS_TEST_TMPDIR/out pid st=0 i sid
	sid=$(ab_state_sid)
	"$RUN_TASK" --repo "$REPO" --commit HEAD --image "$AB_IMAGE" --phase execution \
		--timeout 120 --grace 1 -- sleep 1000 >"$out" 2>/dev/null 3>&- &
	pid=$!
	for i in $(seq 1 200); do
		docker ps -q --filter "label=org.agentbox.state=$sid" \
			--filter label=org.agentbox.role=agent --filter status=running | grep -q . && break
		sleep 0.1
	done
	kill -TERM "$pid"
	wait "$pid" || st=$?
	assert_equal "$st" 130
	assert_equal "$(field "$(cat "$out")" 'r["reason"]')" cancelled
	run state_objects
	assert_output ""
}

stopped() {
	[ -n "$1" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = T ]
}

@test "a signal before ab-run stops the chain there: 130, no result, nothing left" {
	local point out=$BATS_TEST_TMPDIR/out pid st
	# ab-seed does not catch the signal and dies of it: still 130.
	for point in after-ab-seed alloc-volumes-created seed-staged; do
		AB_TEST_PAUSE=$point "$RUN_TASK" --repo "$REPO" --commit HEAD \
			--image "$AB_IMAGE" --phase execution --timeout 120 -- true \
			>"$out" 2>/dev/null 3>&- &
		pid=$!
		# The stopped process is run-task itself, or the step inside it.
		until stopped "$pid" || stopped "$(pgrep -P "$pid")"; do sleep 0.05; done
		kill -TERM "$pid"
		pkill -CONT -P "$pid" || true
		kill -CONT "$pid"
		st=0
		wait "$pid" || st=$?
		assert_equal "$st" 130
		assert_equal "$(cat "$out")" ""
		run state_objects
		assert_output ""
	done
}

@test "bad arguments are usage errors, one line each, before anything runs" {
	run_exact 2 "$RUN_TASK" --commit HEAD --phase execution --timeout 5 -- true
	assert_one_error_line run-task
	[[ $stderr == "run-task: --repo is required" ]]
	run_exact 2 task --phase execution --timeout 5
	run_exact 2 task --phase execution --timeout 0 -- true
	run_exact 2 task --phase execution --timeout 5s -- true
	run_exact 2 task --phase execution --timeout 5 --bogus 1 -- true
	run_exact 2 task --phase execution --timeout 5 stray -- true
	# A commit that does not exist is 1, as from ab-seed.
	run_exact 1 "$RUN_TASK" --repo "$REPO" --commit no-such-rev --phase execution \
		--timeout 5 -- true
	assert_one_error_line run-task
	run_exact 2 task --phase execution --timeout
	# Numbers the shell's test and arithmetic cannot hold, and a cleanup
	# budget ab-clean would refuse only once the task had run.
	local bad
	for bad in "--timeout 99999999999999999999" "--within 0" "--within x" \
		"--within 99999999999999999999"; do
		# shellcheck disable=SC2086 # an option and its value
		run_exact 2 task --phase execution --timeout 5 $bad -- true
		assert_one_error_line run-task
	done
	run_exact 0 "$RUN_TASK" --help
	assert_regex "$output" "^usage: run-task --repo DIR"
	[ ! -d "$AB_STATE_DIR/alloc" ] || [ -z "$(ls -A "$AB_STATE_DIR/alloc")" ]
	run find "$AB_STATE_DIR" -maxdepth 1 -name 'run-task.*'
	assert_output ""
}

# fake NAME SCRIPT: a program NAME, first on PATH in $BATS_TEST_TMPDIR/fake
# (after the tools), running SCRIPT with the real NAME as $REAL.
fake() {
	local dir=$BATS_TEST_TMPDIR/fake
	mkdir -p "$dir"
	printf '#!/bin/sh\nREAL=%s\n%s\n' "$(command -v "$1")" "$2" >"$dir/$1"
	chmod +x "$dir/$1"
}

# faked ARG...: task with the fakes first on run-task's PATH alone (bats's
# own run uses mktemp).
faked() {
	PATH=$BATS_TEST_TMPDIR/fake:$PATH "$RUN_TASK" --repo "$REPO" --commit HEAD \
		--image "$AB_IMAGE" "$@"
}

# The run-task directories left in the state directory.
run_dirs() {
	find "$AB_STATE_DIR" -maxdepth 1 -name 'run-task.*'
}

@test "an attempt ID od could not make stops the task before it starts: 125, one line, nothing made" {
	fake od 'exit 1'
	run_exact 125 faked --phase execution --timeout 60 -- true
	assert_equal "$stderr" "run-task: cannot make an attempt ID from /dev/urandom"
	run state_objects
	assert_output ""
	run run_dirs
	assert_output ""
}

@test "run-task's own directory and deadline file: each failure is 125 in one line with its reason, and leaves no directory" {
	local f=$BATS_TEST_TMPDIR/file
	touch "$f"
	AB_STATE_DIR=$f/state run_exact 125 task --phase execution --timeout 60 -- true
	assert_equal "$stderr" "run-task: cannot make the state directory $f/state: Not a directory"
	fake mktemp 'echo "mktemp: failed to create directory via template: No space left on device" >&2
exit 1'
	run_exact 125 faked --phase execution --timeout 60 -- true
	assert_equal "$stderr" "run-task: cannot make a directory in $AB_STATE_DIR: No space left on device"
	# The directory made, its deadline file not: a directory is in the way.
	fake mktemp 'd=$("$REAL" "$@") && mkdir "$d/deadline" && echo "$d"'
	run_exact 125 faked --phase execution --timeout 60 -- true
	assert_one_error_line run-task
	assert_regex "$stderr" "^run-task: cannot write the deadline file $AB_STATE_DIR/run-task\.[0-9]+\.[A-Za-z0-9]{6}/deadline: Is a directory\$"
	run run_dirs
	assert_output ""
	rm "$BATS_TEST_TMPDIR/fake/mktemp"
	fake date 'exit 1'
	run_exact 125 faked --phase execution --timeout 60 -- true
	assert_equal "$stderr" "run-task: cannot read the clock (date +%s)"
	run run_dirs
	assert_output ""
	run state_objects
	assert_output ""
}

@test "an exit no path chose, after the allocation was made, still cleans up: 125, said, nothing left" {
	# A sed that breaks the quoting of the allocation's handle: the eval
	# of ab-seed's command line is a syntax error, which ends the shell.
	fake sed 'in=$(cat)
case $in in
alloc:*) printf "%s'"'"'" "$in" ;;
*) printf "%s" "$in" | "$REAL" "$@" ;;
esac'
	run_exact 125 faked --phase execution --timeout 60 -- true
	assert_regex "$stderr" "run-task: stopped unexpectedly \(status 2\); cleaning up"
	assert_output ""
	run state_objects
	assert_output ""
	run run_dirs
	assert_output ""
}

@test "AB_TIMING with a date that does not know %N (busybox's) runs the task and says no times" {
	fake date 'if [ "$1" = +%s%N ]; then echo "$("$REAL" +%s)%N"; else exec "$REAL" "$@"; fi'
	AB_TIMING=1 run_exact 0 faked --phase execution --timeout 60 -- true
	assert_equal "$(field "$output" 'r["reason"]')" exited
	refute_regex "$stderr" "run-task: time"
	run state_objects
	assert_output ""
}

@test "a failing step's status is run-task's, and ab-clean still runs" {
	# The task filesystem is too small for the tree: ab-seed refuses.
	local big=$BATS_TEST_TMPDIR/big
	make_repo "$big" small >/dev/null
	head -c 3000000 /dev/urandom >"$big/large"
	git -C "$big" add large
	git -C "$big" commit -qm large
	run_exact 1 "$RUN_TASK" --repo "$big" --commit HEAD --image "$AB_IMAGE" \
		--phase execution --timeout 60 --task-bytes 1M -- true
	# The step's error stays the last line: ab-clean's word is not passed on.
	[[ ${stderr##*$'\n'} == "ab-seed: "* ]]
	assert_output ""
	run state_objects
	assert_output ""
}

@test "four tasks in parallel each see only their own files, and all clean up" {
	local i pids=() st
	for i in 1 2 3 4; do
		make_repo "$BATS_TEST_TMPDIR/r$i" "only-$i" >/dev/null
		"$RUN_TASK" --repo "$BATS_TEST_TMPDIR/r$i" --commit HEAD --image "$AB_IMAGE" \
			--phase execution --timeout 300 -- sh -c 'ls /work; echo x >/work/mine' \
			>"$BATS_TEST_TMPDIR/out$i" 2>"$BATS_TEST_TMPDIR/err$i" 3>&- &
		pids+=($!)
	done
	for i in 1 2 3 4; do
		st=0
		wait "${pids[$((i - 1))]}" || st=$?
		assert_equal "$st" 0
		assert_equal "$(field "$(cat "$BATS_TEST_TMPDIR/out$i")" 'r["stdout"]["text"]')" "only-$i"
	done
	run state_objects
	assert_output ""
}

# crash POINT [TIMEOUT]: run-task (--timeout TIMEOUT, default 8) in a
# session and process group of its own, stopped at POINT, then the whole
# group SIGKILLed at once: run-task and the step it was in.
crash() {
	local pid
	AB_TEST_PAUSE=$1 setsid "$RUN_TASK" --repo "$REPO" --commit HEAD \
		--image "$AB_IMAGE" --phase execution --timeout "${2:-8}" --grace 0 \
		-- true >/dev/null 2>"$BATS_TEST_TMPDIR/crash.err" 3>&- &
	pid=$!
	# No job notice: the kill is the point.
	disown "$pid"
	# shellcheck disable=SC2009 # a process state, which pgrep cannot match
	until ps -o stat= -s "$pid" | grep -q T; do
		kill -0 "$pid" 2>/dev/null || {
			echo "run-task ended before $1:" >&2
			cat "$BATS_TEST_TMPDIR/crash.err" >&2
			return 1
		}
		sleep 0.05
	done
	# One kill(2) of the group, not pkill's one by one in PID order: a
	# step whose PID had wrapped below run-task's died first, and
	# run-task, seeing it killed, started ab-clean before its own
	# SIGKILL came; that ab-clean, not in pkill's list, cleaned the
	# allocation behind the test.  The kernel signals a group whole, a
	# fork in progress included.
	kill -KILL -- "-$pid"
	while kill -0 -- "-$pid" 2>/dev/null; do sleep 0.05; done
}

POINTS="record-written alloc-recorded alloc-volumes-created after-ab-alloc seed-staged
after-ab-seed after-ab-profile after-ab-validate run-started after-ab-run"

@test "20 crashes at every point: a sweep after the lease leaves nothing, and another state's sweep touches none" {
	local p n=0 other
	for p in $POINTS $POINTS; do
		crash "$p"
		n=$((n + 1))
	done
	assert_equal "$n" 20
	[ -n "$(state_objects)" ]
	other=$(ab_new_state)
	AB_STATE_DIR=$other run_exact 0 ab-clean --sweep --all
	assert_output ""
	local before
	before=$(state_objects | grep -c .)
	# Every lease (8 s deadline plus the 2 s budget) has run out.
	sleep 11
	[ "$(state_objects | grep -c .)" -eq "$before" ]
	run_exact 0 ab-clean --sweep --within 2
	[ "${#lines[@]}" -ge 10 ]
	assert_regex "$stderr" "removed 20 directories of killed run-tasks"
	run state_objects
	assert_output ""
	run run_dirs
	assert_output ""
}

@test "crashes swept at once with --sweep --all leave nothing" {
	local p allocs
	# Time enough to reach each point on a loaded machine: --all needs no
	# lease to have run out.
	for p in alloc-volumes-created seed-staged run-started after-ab-validate; do
		crash "$p" 120
	done
	# Each killed run-task left its own directory too.
	[ "$(find "$AB_STATE_DIR" -maxdepth 1 -name 'run-task.*' | grep -c .)" -eq 4 ]
	# Each left its allocation, and the sweep takes exactly those.
	allocs=$(find "$AB_STATE_DIR/alloc" -mindepth 1 -maxdepth 1 -printf '%f\n' |
		sed -n 's/^[0-9a-f]\{32\}$/alloc:&/p' | sort)
	[ "$(grep -c . <<<"$allocs")" -eq 4 ]
	run_exact 0 ab-clean --sweep --all
	# Shown only if a check below fails.
	printf 'stdout: %s\nstderr: %s\n' "$output" "$stderr"
	assert_equal "$(sort <<<"$output")" "$allocs"
	run state_objects
	assert_output ""
	# The directories stay while their deadlines hold, --all or not; once
	# passed (written so here, as two minutes would), the next sweep
	# takes them.
	[ "$(run_dirs | grep -c .)" -eq 4 ]
	refute_regex "$stderr" "directories of killed run-tasks"
	for p in $(run_dirs); do
		echo "$(($(date +%s) - 10))" >"$p/deadline"
	done
	run_exact 0 ab-clean --sweep --within 1
	assert_regex "$stderr" "removed 4 directories of killed run-tasks"
	run run_dirs
	assert_output ""
}

# run_dir NAME [DEADLINE]: a directory NAME in the state directory as a
# run-task leaves it, its deadline file holding DEADLINE (none without).
run_dir() {
	mkdir "$AB_STATE_DIR/$1"
	[ $# -lt 2 ] || printf '%s\n' "$2" >"$AB_STATE_DIR/$1/deadline"
	echo "alloc:0123" >"$AB_STATE_DIR/$1/alloc"
}

@test "a sweep takes a run-task's directory once its deadline and the cleanup budget have passed, whatever its PID; never before" {
	local now gone
	now=$(date +%s)
	# A PID that no process has, and one that is alive (this shell's):
	# neither counts, only the deadline.
	gone=$(sh -c 'echo $$')
	run_dir "run-task.$gone.future" "$((now + 600))"
	run_dir "run-task.$$.passed" "$((now - 5))"
	run_dir "run-task.$gone.fraction" "$((now - 5)).250"
	run_dir "run-task.$gone.nofile"
	run_dir "run-task.$gone.garbage" soon
	mkdir "$BATS_TEST_TMPDIR/target"
	touch "$BATS_TEST_TMPDIR/target/keep"
	ln -s "$BATS_TEST_TMPDIR/target" "$AB_STATE_DIR/run-task.$gone.link"
	touch "$AB_STATE_DIR/run-task.$gone.file"
	# Within the budget the passed ones stay.
	run_exact 0 ab-clean --sweep --all --within 30
	run run_dirs
	assert_equal "${#lines[@]}" 7
	run_exact 0 ab-clean --sweep --within 1
	assert_regex "$stderr" "removed 2 directories of killed run-tasks"
	run bash -c "cd '$AB_STATE_DIR' && ls -d run-task.*"
	assert_output "run-task.$gone.file
run-task.$gone.future
run-task.$gone.garbage
run-task.$gone.link
run-task.$gone.nofile"
	# Without a deadline to read: a day and an hour after the last change.
	touch -d '-24 hours' "$AB_STATE_DIR/run-task.$gone.nofile" \
		"$AB_STATE_DIR/run-task.$gone.garbage"
	run_exact 0 ab-clean --sweep --within 1
	refute_regex "$stderr" "of killed run-tasks"
	touch -d '-26 hours' "$AB_STATE_DIR/run-task.$gone.nofile" \
		"$AB_STATE_DIR/run-task.$gone.garbage"
	run_exact 0 ab-clean --sweep --within 1
	assert_regex "$stderr" "removed 2 directories of killed run-tasks"
	# A link is not followed, nor a file taken.
	[ -f "$BATS_TEST_TMPDIR/target/keep" ]
	rm -r "$AB_STATE_DIR/run-task.$gone.future" "$AB_STATE_DIR/run-task.$gone.link" \
		"$AB_STATE_DIR/run-task.$gone.file"
}

@test "a run-task cleaning up past its deadline keeps its directory from a sweep whose budget has run out" {
	local pid child st=0 start
	start=$(date +%s)
	# The deadline ends the agent; ab-clean, run by run-task, stops with
	# the allocation's lock held.
	AB_TEST_PAUSE=clean-locked "$RUN_TASK" --repo "$REPO" --commit HEAD \
		--image "$AB_IMAGE" --phase execution --timeout 10 --grace 0 -- sleep 100 \
		>/dev/null 2>&1 3>&- &
	pid=$!
	TASK_PID=$pid
	until child=$(pgrep -P "$pid") && stopped "$child"; do
		kill -0 "$pid" || fail "run-task ended before its ab-clean stopped"
		sleep 0.1
	done
	# Past the deadline and a sweep's budget of one second.
	while [ "$(date +%s)" -le $((start + 12)) ]; do sleep 0.2; done
	# The sweep waits its budget for the allocation's lock, and gives up;
	# the directory it leaves, as its file says run-task's own cleanup
	# budget has not run out.
	run_exact 124 ab-clean --sweep --within 1
	assert_regex "$stderr" "cleanup budget ran out while another ab-clean was cleaning it"
	refute_regex "$stderr" "of killed run-tasks"
	run run_dirs
	assert_output --regexp "/run-task\.$pid\.[^/]+\$"
	kill -CONT "$child"
	wait "$pid" || st=$?
	assert_equal "$st" 124
	run run_dirs
	assert_output ""
	run state_objects
	assert_output ""
}

@test "a sweep leaves a live run-task's directory; it removes its own when it ends" {
	local pid st=0
	AB_TEST_PAUSE=after-ab-seed "$RUN_TASK" --repo "$REPO" --commit HEAD \
		--image "$AB_IMAGE" --phase execution --timeout 60 -- true \
		>/dev/null 2>&1 3>&- &
	pid=$!
	ab_wait_stopped "$pid"
	run_exact 0 ab-clean --sweep
	run find "$AB_STATE_DIR" -maxdepth 1 -name "run-task.$pid.*"
	[ "${#lines[@]}" -eq 1 ]
	kill -CONT "$pid"
	wait "$pid" || st=$?
	assert_equal "$st" 0
	run find "$AB_STATE_DIR" -maxdepth 1 -name 'run-task.*'
	assert_output ""
}

@test "the man page names every option of --help" {
	local word
	run_exact 0 "$RUN_TASK" --help
	while read -r word; do
		grep -q -- "${word#--}" "$AB_ROOT/man/ab-run-task.1" ||
			fail "man/ab-run-task.1 does not name $word"
	done < <(grep -o -- '--[a-z][a-z-]*' <<<"$output" | sort -u)
}

@test "installed, run-task finds the tools next to it" {
	local d=$BATS_TEST_TMPDIR/inst
	make -s -C "$AB_ROOT" install DESTDIR="$d" PREFIX=/usr >/dev/null
	[ -x "$d/usr/bin/ab-run-task" ]
	[ -f "$d/usr/share/man/man1/ab-run-task.1" ]
	[ -f "$d/usr/share/man/man1/ab-run.1" ]
	PATH=/usr/bin:/bin AB_BIN='' run_exact 0 "$d/usr/bin/ab-run-task" --repo "$REPO" \
		--commit HEAD --image "$AB_IMAGE" --phase planning --timeout 60 -- true
	assert_equal "$(field "$output" 'r["reason"]')" exited
}
