#!/usr/bin/env bats
# ab-clean: removing allocations, proving absence, sweeping leftovers.

# shellcheck disable=SC2154 # bats sets status, output, stderr
load helpers

setup_file() {
	ab_setup_file
	# A container of the test's own is named for this file's state, so
	# that another file or suite running at the same time never meets it.
	HOLDER=abtest-$(ab_state_sid | cut -c1-12)-holder
	export HOLDER
}

teardown_file() {
	ab_teardown_file
}

teardown() {
	# A cleaner a failed test left stopped at its pause point.
	[ -z "${PAUSED:-}" ] || kill -KILL "$PAUSED" 2>/dev/null || true
	ab_proxy_stop
	docker rm -f "$HOLDER" >/dev/null 2>&1 || true
	ab_purge_allocs
}

# Every allocation of this file's state, whatever a test left.
ab_purge_allocs() {
	ab_state_sweep --alloc
	rm -rf "$AB_STATE_DIR/alloc" "$AB_STATE_DIR/stage"
}

new_alloc() {
	run_exact 0 ab-alloc --image "$AB_IMAGE" "$@"
	ALLOC=$output
	AID=${output#alloc:}
}

objects_of() {
	docker ps -aq --filter "label=org.agentbox.alloc=$1"
	docker volume ls -q --filter "label=org.agentbox.alloc=$1"
}

# seeded_alloc: a fresh allocation (ALLOC, AID) seeded with a repository
# of one commit; DL, a deadline file ten minutes away.
seeded_alloc() {
	local repo=$BATS_TEST_TMPDIR/repo
	DL=$BATS_TEST_TMPDIR/deadline
	ab_repo "$repo" x
	ab_deadline_in "$DL" 600
	new_alloc
	run_exact 0 ab-seed "$ALLOC" --repo "$repo" --commit "$(git -C "$repo" rev-parse HEAD)"
}

# profiled PHASE NAME ARGV...: ALLOC's profile in PHASE for an attempt
# named NAME-..., to run ARGV; PROF is its handle.
profiled() {
	run_exact 0 ab-profile --alloc "$ALLOC" --phase "$1" \
		--attempt "$2-$RANDOM$RANDOM" --deadline "$DL" -- "${@:3}"
	PROF=$output
}

# validated PHASE NAME ARGV...: that profile validated; CTR is its handle.
validated() {
	profiled "$@"
	run_exact 0 ab-validate "$PROF"
	CTR=$output
}

@test "cleaning an allocation removes its containers, volumes, clone and records, idempotently" {
	seeded_alloc
	[ -d "$AB_STATE_DIR/stage/$AID" ]
	validated planning clean true
	[ -n "$(docker ps -aq --filter "label=org.agentbox.profile=${PROF#profile:}")" ]
	run_exact 0 ab-clean "$ALLOC"
	[ ! -e "$AB_STATE_DIR/profile/${PROF#profile:}" ]
	[ -z "$(ls "$AB_STATE_DIR/ctr")" ]
	# The attempt ledger is never cleaned.
	grep -q '^clean-' "$AB_STATE_DIR/attempts"
	assert_output ""
	run objects_of "$AID"
	assert_output ""
	[ ! -e "$AB_STATE_DIR/stage/$AID" ]
	[ ! -e "$AB_STATE_DIR/alloc/$AID" ]
	run_exact 0 ab-clean "$ALLOC"
}

@test "a profile or ctr handle leads ab-clean to its allocation" {
	seeded_alloc
	validated planning lead true
	run_exact 0 ab-clean "$CTR"
	run objects_of "$AID"
	assert_output ""
	[ ! -e "$AB_STATE_DIR/alloc/$AID" ]
}

@test "agent containers of the allocation go first, then the volumes" {
	new_alloc
	AB_RO_WORK=1 ab_on_alloc "$ALLOC" 'true'
	docker create --label "org.agentbox.alloc=$AID" \
		--label "org.agentbox.state=$(ab_state_sid)" \
		--mount "type=volume,src=agentbox-$AID-task,dst=/work" \
		--entrypoint /bin/true "$(docker inspect "agentbox-$AID-keeper" \
		--format '{{.Image}}')" >/dev/null
	run_exact 0 ab-clean "$ALLOC"
	run objects_of "$AID"
	assert_output ""
}

@test "what cannot be removed is named, and the record is kept for a second run" {
	new_alloc
	# A container that is not the allocation's holds its task volume.
	docker run -d --name "$HOLDER" \
		--mount "type=volume,src=agentbox-$AID-task,dst=/x" \
		--entrypoint /bin/sleep "$(docker inspect "agentbox-$AID-keeper" \
		--format '{{.Image}}')" 1000 >/dev/null
	run_exact 1 ab-clean "$ALLOC" --within 10
	assert_one_error_line ab-clean
	assert_regex "$stderr" "volume agentbox-$AID-task"
	assert_regex "$stderr" "record kept"
	[ -f "$AB_STATE_DIR/alloc/$AID" ]
	# The holder is not ours and was left alone.
	docker inspect "$HOLDER" >/dev/null
	docker rm -f "$HOLDER" >/dev/null
	run_exact 0 ab-clean "$ALLOC"
	[ ! -e "$AB_STATE_DIR/alloc/$AID" ]
}

@test "an unreachable engine is 125 and keeps the records; later it succeeds" {
	new_alloc
	DOCKER_HOST=unix:///nonexistent run_exact 125 ab-clean "$ALLOC"
	assert_one_error_line ab-clean
	[ -f "$AB_STATE_DIR/alloc/$AID" ]
	run_exact 0 ab-clean "$ALLOC"
	run objects_of "$AID"
	assert_output ""
}

@test "an engine that fails mid-clean keeps the records" {
	new_alloc
	ab_proxy_start --match '^DELETE /v[0-9.]+/volumes/' --action fail \
		--status 500 --message "volume store jammed" --times 0
	DOCKER_HOST=unix://$AB_PROXY_SOCK run_exact 1 ab-clean "$ALLOC" --within 5
	assert_regex "$stderr" "still there"
	[ -f "$AB_STATE_DIR/alloc/$AID" ]
	ab_proxy_stop
	run_exact 0 ab-clean "$ALLOC"
}

@test "--sweep removes what has no record or an expired lease, and nothing else" {
	local f=$BATS_TEST_TMPDIR/deadline expired held orphan nolease at
	# Long enough for an allocation on a loaded machine (3 s was not),
	# then waited out whole, with --within's 2 s.
	ab_deadline_in "$f" 10
	at=$(cat "$f")
	new_alloc --deadline "$f"
	expired=$AID
	ab_deadline_in "$f" 3600
	new_alloc --deadline "$f"
	held=$AID
	new_alloc
	nolease=$AID
	new_alloc
	orphan=$AID
	rm "$AB_STATE_DIR/alloc/$orphan"
	while [ "$(date +%s)" -le "$((at + 3))" ]; do
		sleep 0.5
	done
	run_exact 0 ab-clean --sweep --within 2
	assert_line "alloc:$expired"
	assert_line "alloc:$orphan"
	assert_equal "${#lines[@]}" 2
	run objects_of "$expired"
	assert_output ""
	run objects_of "$orphan"
	assert_output ""
	[ -n "$(objects_of "$held")" ]
	[ -n "$(objects_of "$nolease")" ]
	run_exact 0 ab-clean --sweep --all
	assert_line "alloc:$held"
	assert_line "alloc:$nolease"
	run objects_of "$held"
	assert_output ""
	run objects_of "$nolease"
	assert_output ""
}

@test "a sweep in another state directory touches nothing of this one's" {
	new_alloc
	local other
	other=$(ab_new_state)
	AB_STATE_DIR=$other run_exact 0 ab-clean --sweep --all
	assert_output ""
	[ "$(objects_of "$AID" | grep -c .)" -eq 4 ]
	run_exact 0 ab-clean "$ALLOC"
}

@test "a tool killed mid-allocation leaves what a sweep removes" {
	local pid id
	AB_TEST_PAUSE=alloc-volumes-created ab-alloc --image "$AB_IMAGE" \
		>/dev/null 2>&1 &
	pid=$!
	ab_wait_stopped "$pid"
	kill -KILL "$pid"
	wait "$pid" || true
	id=$(find "$AB_STATE_DIR/alloc" -mindepth 1 ! -name '.*' -printf '%f\n')
	[ "$(objects_of "$id" | grep -c .)" -eq 3 ]
	# Its creates were in flight: the marker makes ab-clean wait to settle.
	[ -e "$AB_STATE_DIR/alloc/.inflight-$id-$pid" ]
	# No lease: only --all, or the handle, removes it.
	run_exact 0 ab-clean --sweep
	assert_output ""
	run_exact 0 ab-clean --sweep --all
	assert_output "alloc:$id"
	run objects_of "$id"
	assert_output ""
	[ -z "$(find "$AB_STATE_DIR/alloc" -mindepth 1)" ]
}

# log_has REGEX: waits until the fault proxy's log has a line matching it.
log_has() {
	local i
	for i in $(seq 1 600); do
		grep -q "$1" "$AB_PROXY_LOG" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "the proxy never logged $1" >&2
	return 1
}

# stopped_or_ended PID: waits until PID stopped at its pause point, or
# ended (a cleaner that has no such point).
stopped_or_ended() {
	local i state
	for i in $(seq 1 600); do
		state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 0
		case $state in T | Z) return 0 ;; esac
		sleep 0.05
	done
	return 1
}

@test "a create in flight from a tool killed after the sweep's first look: the sweep waits for it to land, removes it, and nothing is left" {
	local apid spid id st=0 rel=$BATS_TEST_TMPDIR/release
	# The allocation's first volume create reaches the engine only when
	# the test lets its body through: in flight, its tool alive.
	ab_proxy_start --match '^POST /v[0-9.]+/volumes/create' --action stall \
		--until "$rel"
	DOCKER_HOST=unix://$AB_PROXY_SOCK ab-alloc --image "$AB_IMAGE" \
		>/dev/null 2>&1 3>&- &
	apid=$!
	log_has '^stall POST /v[0-9.]*/volumes/create'
	id=$(find "$AB_STATE_DIR/alloc" -mindepth 1 ! -name '.*' -printf '%f\n')
	[ -e "$AB_STATE_DIR/alloc/.inflight-$id-$apid" ]
	# While the tool lives its creates may land: a budget that runs out
	# first proves nothing, and the record stays.
	run_exact 124 ab-clean --within 3 --sweep --all
	assert_equal "$stderr" "ab-clean: alloc:$id: cleanup budget ran out waiting for the creates of the tool that was making it"
	[ -e "$AB_STATE_DIR/alloc/$id" ]
	AB_TEST_PAUSE=clean-awaiting ab-clean --sweep --all \
		>"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	spid=$! PAUSED=$!
	stopped_or_ended "$spid"
	# The sweep has looked once and found nothing; now the create lands,
	# and the tool that sent it is killed.
	touch "$rel"
	log_has '^reply 201 POST /v[0-9.]*/volumes/create'
	kill -KILL "$apid"
	wait "$apid" || true
	kill -CONT "$spid" 2>/dev/null || true
	wait "$spid" || st=$?
	cat "$BATS_TEST_TMPDIR/err" >&2
	assert_equal "$st" 0
	assert_equal "$(cat "$BATS_TEST_TMPDIR/out")" "alloc:$id"
	run objects_of "$id"
	assert_output ""
	[ -z "$(find "$AB_STATE_DIR/alloc" -mindepth 1)" ]
}

@test "a second ab-clean of one allocation waits for the first, and finds it cleaned" {
	local pid second
	new_alloc
	# The first stops holding the allocation's lock, nothing removed yet.
	AB_TEST_PAUSE=clean-locked ab-clean "$ALLOC" >/dev/null \
		2>"$BATS_TEST_TMPDIR/first.err" 3>&- &
	pid=$! PAUSED=$!
	ab_wait_stopped "$pid"
	# Within its budget the second takes nothing of what the first holds.
	run_exact 124 ab-clean --within 2 "$ALLOC"
	assert_output ""
	assert_one_error_line ab-clean
	assert_equal "$stderr" "ab-clean: alloc:$AID: cleanup budget ran out while another ab-clean was cleaning it"
	[ "$(objects_of "$AID" | grep -c .)" -eq 4 ]
	[ -e "$AB_STATE_DIR/alloc/$AID" ]
	# Waiting longer, it finds the first's work done.
	ab-clean "$ALLOC" >/dev/null 2>"$BATS_TEST_TMPDIR/second.err" 3>&- &
	second=$!
	sleep 0.5
	kill -CONT "$pid"
	wait "$pid"
	wait "$second"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/first.err")" "ab-clean: removed"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/second.err")" "ab-clean: absent"
	run objects_of "$AID"
	assert_output ""
	[ -z "$(find "$AB_STATE_DIR/alloc" -mindepth 1)" ]
	# A cleaner killed while it holds the lock holds nothing after.
	new_alloc
	AB_TEST_PAUSE=clean-locked ab-clean "$ALLOC" >/dev/null 2>&1 3>&- &
	pid=$! PAUSED=$!
	ab_wait_stopped "$pid"
	kill -KILL "$pid"
	wait "$pid" || true
	run_exact 0 ab-clean --within 5 "$ALLOC"
	assert_equal "$stderr" "ab-clean: removed"
	run objects_of "$AID"
	assert_output ""
	[ -z "$(find "$AB_STATE_DIR/alloc" -mindepth 1)" ]
}

# Seen in the gate: run-task's own clean and another trial's sweep at once
# each said "still there" of what the other was removing, and left it.
@test "two ab-clean of one allocation and a sweep at once all end 0, and nothing is left" {
	local i pid pids n=0 st
	for i in 1 2 3 4 5 6; do
		new_alloc
		pids=
		ab-clean "$ALLOC" >/dev/null 2>"$BATS_TEST_TMPDIR/a$i" & pids="$pids $!"
		ab-clean "$ALLOC" >/dev/null 2>"$BATS_TEST_TMPDIR/b$i" & pids="$pids $!"
		ab-clean --sweep --all >/dev/null 2>"$BATS_TEST_TMPDIR/c$i" & pids="$pids $!"
		for pid in $pids; do
			st=0
			wait "$pid" || st=$?
			[ "$st" -eq 0 ] || n=$((n + 1))
		done
		cat "$BATS_TEST_TMPDIR/a$i" "$BATS_TEST_TMPDIR/b$i" "$BATS_TEST_TMPDIR/c$i" |
			grep -v -x -E 'ab-clean: (removed|absent)' >&2 || true
		run objects_of "$AID"
		assert_output ""
	done
	assert_equal "$n" 0
	[ -z "$(find "$AB_STATE_DIR/alloc" -mindepth 1)" ]
}

@test "a record whose engine is malformed is refused by the steps and by ab-clean; a lock that cannot be taken is 125" {
	new_alloc
	sed -i 's/"engine":"[0-9a-f]*"/"engine":"not-an-engine"/' "$AB_STATE_DIR/alloc/$AID"
	grep -q '"engine":"not-an-engine"' "$AB_STATE_DIR/alloc/$AID"
	run_exact 1 ab-export "$ALLOC"
	assert_equal "$stderr" "ab-export: record of alloc:$AID is corrupt or out of bounds"
	run_exact 1 ab-clean "$ALLOC"
	assert_equal "$stderr" "ab-clean: record of alloc:$AID names no engine agentbox could have marked"
	[ -e "$AB_STATE_DIR/alloc/$AID" ]
	[ "$(objects_of "$AID" | grep -c .)" -eq 4 ]
	# The turn's lock file is no file: nothing removed, one line.
	new_alloc
	mkdir "$AB_STATE_DIR/alloc/.clean-$AID"
	run_exact 125 ab-clean "$ALLOC"
	assert_one_error_line ab-clean
	assert_regex "$stderr" "^ab-clean: cannot lock .*/alloc/.clean-$AID: "
	[ "$(objects_of "$AID" | grep -c .)" -eq 4 ]
	rmdir "$AB_STATE_DIR/alloc/.clean-$AID"
	run_exact 0 ab-clean "$ALLOC"
}

@test "a handle of another state directory removes nothing and is refused" {
	new_alloc
	local other
	other=$(ab_new_state)
	AB_STATE_DIR=$other run_exact 1 ab-clean "$ALLOC"
	assert_one_error_line ab-clean
	assert_regex "$stderr" "alloc:$AID is not an allocation of state directory"
	[ "$(objects_of "$AID" | grep -c .)" -eq 4 ]
	# Nor does a copy of its record make it the other's.
	mkdir -m 0700 "$other/alloc"
	cp "$AB_STATE_DIR/alloc/$AID" "$other/alloc/"
	AB_STATE_DIR=$other run_exact 1 ab-clean "$ALLOC"
	assert_regex "$stderr" "not issued by state directory"
	AB_STATE_DIR=$other run_exact 1 ab-clean --sweep --all
	[ "$(objects_of "$AID" | grep -c .)" -eq 4 ]
	run_exact 0 ab-clean "$ALLOC"
}

@test "an unlabelled object under a derived name survives; a handle never issued is refused" {
	local id=0123456789abcdef0123456789abcdef
	docker volume create "agentbox-$id-task" >/dev/null
	run_exact 1 ab-clean "alloc:$id"
	assert_regex "$stderr" "not an allocation of state directory"
	docker volume inspect "agentbox-$id-task" >/dev/null
	run_exact 0 ab-clean --sweep --all
	docker volume inspect "agentbox-$id-task" >/dev/null
	docker volume rm "agentbox-$id-task" >/dev/null
	# A keeper replaced by a container of someone else's, same name.
	new_alloc
	docker rm -f "agentbox-$AID-keeper" >/dev/null
	docker create --name "agentbox-$AID-keeper" --entrypoint /bin/true \
		"$(docker image inspect "$(ab_image_digest)" --format '{{.Id}}')" >/dev/null
	run_exact 0 ab-clean "$ALLOC"
	docker inspect "agentbox-$AID-keeper" >/dev/null
	docker rm -f "agentbox-$AID-keeper" >/dev/null
	run objects_of "$AID"
	assert_output ""
}

@test "a handle cleaned here cleans again to 0; its profile and ctr handles too" {
	seeded_alloc
	validated planning again true
	run_exact 0 ab-clean "$ALLOC"
	run_exact 0 ab-clean "$ALLOC"
	run_exact 0 ab-clean "$PROF"
	run_exact 0 ab-clean "$CTR"
	assert_output ""
	# A profile handle never issued here is still a refusal.
	run_exact 1 ab-clean profile:0123456789abcdef0123456789abcdef
	assert_regex "$stderr" "unknown handle"
}

@test "the last stderr line says removed when anything went, absent when nothing was there" {
	local first
	new_alloc
	first=$ALLOC
	run_exact 0 ab-clean "$first"
	assert_output ""
	assert_equal "$stderr" "ab-clean: removed"
	run_exact 0 ab-clean "$first"
	assert_equal "$stderr" "ab-clean: absent"
	# One handle of several that removes anything is a change.
	new_alloc
	run_exact 0 ab-clean "$first" "$ALLOC"
	assert_equal "$stderr" "ab-clean: removed"
	# Objects gone behind its back: the record still goes, a change.
	new_alloc
	docker ps -aq --filter "label=org.agentbox.alloc=$AID" |
		xargs -r docker rm -f >/dev/null
	docker volume ls -q --filter "label=org.agentbox.alloc=$AID" |
		xargs -r docker volume rm -f >/dev/null
	run_exact 0 ab-clean "$ALLOC"
	assert_equal "$stderr" "ab-clean: removed"
	[ ! -e "$AB_STATE_DIR/alloc/$AID" ]
	# A sweep: the handles it removed on stdout, its word on stderr.
	new_alloc
	run_exact 0 ab-clean --sweep --all
	assert_output "$ALLOC"
	assert_equal "${stderr##*$'\n'}" "ab-clean: removed"
	run_exact 0 ab-clean --sweep --all
	assert_output ""
	assert_equal "$stderr" "ab-clean: absent"
}

@test "two state directories clean, sweep and remove images while the other's agent runs" {
	local other oimg oalloc pid sid res
	seeded_alloc
	validated execution both sh -c 'sleep 4; echo done'
	ab-run "$CTR" >"$BATS_TEST_TMPDIR/result" 2>/dev/null &
	pid=$!
	other=$(ab_new_state)
	oimg=$(AB_STATE_DIR=$other ab-image build 2>/dev/null)
	oalloc=$(AB_STATE_DIR=$other ab-alloc --image "$oimg")
	AB_STATE_DIR=$other run_exact 0 ab-clean "$oalloc"
	AB_STATE_DIR=$other run_exact 0 ab-clean --sweep
	AB_STATE_DIR=$other run_exact 0 ab-clean --sweep --all
	# Its record edited to name this directory's image removes nothing.
	sed -i "s/\"digest\":\"[^\"]*\"/\"digest\":\"$(ab_image_digest)\"/" \
		"$other/image/${oimg#image:}"
	AB_STATE_DIR=$other run_exact 1 ab-image remove "$oimg"
	assert_regex "$stderr" "not this state directory's"
	docker image inspect "$(ab_image_digest)" >/dev/null
	[ "$(objects_of "$AID" | grep -c .)" -eq 5 ]
	wait "$pid"
	res=$(cat "$BATS_TEST_TMPDIR/result")
	ab-run --show "$res" | grep -q '"reason":"exited"'
	sid=$(ab_state_sid "$other")
	docker images -q --filter "label=org.agentbox.state=$sid" | xargs -r docker rmi -f >/dev/null
	run_exact 0 ab-clean "$ALLOC"
}

@test "records are bounded: an allocation edited to an absurd size is refused downstream" {
	seeded_alloc
	sed -i 's/"role":"task","name":\("[^"]*"\),"bytes":[0-9]*/"role":"task","name":\1,"bytes":4611686018427387904/' \
		"$AB_STATE_DIR/alloc/$AID"
	grep -q 4611686018427387904 "$AB_STATE_DIR/alloc/$AID"
	run_exact 1 ab-profile --alloc "$ALLOC" --phase execution \
		--attempt "bound-$RANDOM$RANDOM" --deadline "$DL" -- true
	assert_one_error_line ab-profile
	assert_regex "$stderr" "record of alloc:$AID is corrupt or out of bounds"
	run_exact 0 ab-clean "$ALLOC"
}

@test "records are bounded: a profile edited consistently to an absurd limit is refused" {
	seeded_alloc
	profiled planning bound true
	# The hash is recomputed: the owner of the directory can, so only
	# the bounds stand between such an edit and the engine.
	python3 "$AB_ROOT/tests/lib/edit-profile.py" \
		"$AB_STATE_DIR/profile/${PROF#profile:}" memory $((1 << 50))
	run_exact 1 ab-validate "$PROF"
	assert_one_error_line ab-validate
	assert_regex "$stderr" "profile:${PROF#profile:}: the memory limit is out of bounds"
	run_exact 0 ab-clean "$ALLOC"
}

@test "bad arguments are usage errors; other handles are refused" {
	run_exact 2 ab-clean
	run_exact 2 ab-clean --all
	run_exact 2 ab-clean --sweep "alloc:$(printf '%032d' 0)"
	run_exact 2 ab-clean --sweep --within 0
	run_exact 2 ab-clean --sweep --within 5k
	run_exact 1 ab-clean image:0123456789abcdef0123456789abcdef
	assert_one_error_line ab-clean
	run_exact 1 ab-clean nonsense
	run_exact 0 ab-clean --help
	assert_regex "$output" "^usage: ab-clean HANDLE"
}

@test "the man page names every option of --help" {
	assert_man_covers_help ab-clean 3
}
