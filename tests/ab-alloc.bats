#!/usr/bin/env bats
# ab-alloc: capped tmpfs volumes and a locked keeper that holds them.

# shellcheck disable=SC2154 # bats sets status, output, stderr
# shellcheck disable=SC2030,SC2031 # a test and its teardown share ALLOCS
load helpers

setup_file() {
	ab_setup_file
}

teardown_file() {
	ab_teardown_file
}

teardown() {
	ab_proxy_stop
	local a
	for a in "${ALLOCS[@]}"; do
		ab_drop_alloc "$a"
	done
	if [ -n "${FOREIGN_VOLUME:-}" ]; then
		docker volume rm -f "$FOREIGN_VOLUME" >/dev/null 2>&1 || true
	fi
}

ALLOCS=()

new_alloc() {
	run_exact 0 ab-alloc --image "$AB_IMAGE" "$@"
	[[ $output =~ ^alloc:[0-9a-f]{32}$ ]]
	ALLOCS+=("$output")
	ALLOC=$output
	AID=${output#alloc:}
}

alloc_objects() {
	docker ps -aq --filter "label=org.agentbox.alloc=$1"
	docker volume ls -q --filter "label=org.agentbox.alloc=$1"
}

@test "an allocation is three labelled tmpfs volumes and a running keeper" {
	new_alloc --task-bytes 8M --task-inodes 500 --git-bytes 4M \
		--git-inodes 300 --inputs-bytes 64k --inputs-inodes 16
	local sid role o
	sid=$(ab_state_sid)
	for role in task git inputs; do
		run docker volume inspect "agentbox-$AID-$role" --format \
			'{{.Driver}} {{json .Labels}}'
		assert_output "local {\"org.agentbox.alloc\":\"$AID\",\"org.agentbox.role\":\"$role\",\"org.agentbox.state\":\"$sid\"}"
	done
	o=$(docker volume inspect "agentbox-$AID-task" --format '{{index .Options "o"}}')
	assert_equal "$o" "size=8388608,nr_inodes=500,uid=10001,gid=10001,mode=0755"
	run docker inspect "agentbox-$AID-keeper" --format \
		'{{.State.Running}} {{.Config.User}} {{.HostConfig.ReadonlyRootfs}} {{json .HostConfig.CapDrop}} {{json .HostConfig.SecurityOpt}} {{.HostConfig.NetworkMode}} {{.HostConfig.Privileged}} {{.HostConfig.Memory}} {{.HostConfig.MemorySwap}} {{.HostConfig.PidsLimit}} {{index .Config.Labels "org.agentbox.alloc"}}'
	assert_output "true 10001:10001 true [\"ALL\"] [\"no-new-privileges\"] none false 33554432 33554432 8 $AID"
	[ -f "$AB_STATE_DIR/alloc/$AID" ]
}

@test "the ceilings are real: bytes and inodes run out with ENOSPC inside" {
	new_alloc --task-bytes 1M --task-inodes 100
	# shellcheck disable=SC2016 # expanded inside the container
	run ab_on_alloc "$ALLOC" '
		grep " /work " /proc/self/mountinfo
		dd if=/dev/zero of=/work/big bs=64k count=64 2>&1
		rm -f /work/big
		used=$(df -i /work | awk "NR==2 {print \$3}")
		n=0
		while e=$(touch /work/f$n 2>&1); do n=$((n + 1)); done
		echo "created=$n used_before=$used"
		echo "$e"' 
	assert_success
	assert_line --partial "size=1024k,nr_inodes=100"
	assert_line --partial "No space left on device"
	local created used
	created=$(sed -n 's/^created=\([0-9]*\) .*/\1/p' <<<"$output")
	used=$(sed -n 's/.*used_before=\([0-9]*\)$/\1/p' <<<"$output")
	assert_equal "$created" "$((100 - used))"
}

@test "the volumes outlive a container that used them: the keeper holds them" {
	new_alloc --task-bytes 1M
	run ab_on_alloc "$ALLOC" 'echo kept >/work/file'
	assert_success
	run ab_on_alloc "$ALLOC" 'cat /work/file'
	assert_output kept
}

@test "bad sizes and missing options are usage errors before any engine call" {
	local bad
	for bad in 0 -1 1T 12q k "" 99999999G; do
		DOCKER_HOST=unix:///nonexistent run_exact 2 \
			ab-alloc --image "$AB_IMAGE" --task-bytes "$bad"
		assert_one_error_line ab-alloc
	done
	DOCKER_HOST=unix:///nonexistent run_exact 2 ab-alloc
	DOCKER_HOST=unix:///nonexistent run_exact 2 ab-alloc --image "$AB_IMAGE" extra
	run_exact 0 ab-alloc --help
	assert_regex "$output" "^usage: ab-alloc --image IMAGE"
}

@test "an image that is not registered is refused and nothing is created" {
	run_exact 1 ab-alloc --image image:0123456789abcdef0123456789abcdef
	assert_one_error_line ab-alloc
	run_exact 1 ab-alloc --image ubuntu:latest
	[ ! -d "$AB_STATE_DIR/alloc" ] || [ -z "$(ls "$AB_STATE_DIR/alloc")" ]
}

@test "a deadline already passed is 124 and creates nothing" {
	local f=$BATS_TEST_TMPDIR/deadline
	ab_deadline_in "$f" -1
	run_exact 124 ab-alloc --image "$AB_IMAGE" --deadline "$f"
	assert_one_error_line ab-alloc
	run docker volume ls -q --filter "label=org.agentbox.state=$(ab_state_sid)"
	assert_output ""
}

@test "an unreachable engine is 125" {
	DOCKER_HOST=unix:///nonexistent run_exact 125 ab-alloc --image "$AB_IMAGE"
	assert_regex "$stderr" "unix:///nonexistent"
}

@test "a failure after the volumes exist removes them, and the record" {
	ab_proxy_start --match '^POST /v[0-9.]+/containers/[0-9a-f]+/start$' \
		--action fail --status 500 --message "no keeper today"
	DOCKER_HOST=unix://$AB_PROXY_SOCK run_exact 125 ab-alloc --image "$AB_IMAGE"
	assert_regex "$stderr" "no keeper today"
	run docker ps -aq --filter "label=org.agentbox.state=$(ab_state_sid)"
	assert_output ""
	run docker volume ls -q --filter "label=org.agentbox.state=$(ab_state_sid)"
	assert_output ""
	[ -z "$(ls "$AB_STATE_DIR/alloc" 2>/dev/null)" ]
}

@test "an engine's message holding a newline and an escape sequence is one printable line" {
	ab_proxy_start --match '^POST /v[0-9.]+/containers/[0-9a-f]+/start$' \
		--action fail --status 500 --message $'no keeper\ntoday \e[31mred\e[0m \xc2\x9b caf\xc3\xa9'
	DOCKER_HOST=unix://$AB_PROXY_SOCK run_exact 125 ab-alloc --image "$AB_IMAGE"
	assert_equal "$(printf '%s\n' "$stderr" | wc -l)" 1
	assert_regex "$stderr" 'no keeper\\x0atoday \\x1b\[31mred\\x1b\[0m \\xc2\\x9b caf\\xc3\\xa9$'
}

@test "a reply after the deadline is 124 and leaves nothing behind" {
	local f=$BATS_TEST_TMPDIR/deadline
	ab_proxy_start --match '^GET /v[0-9.]+/containers/[0-9a-f]+/json$' \
		--action delay --seconds 6
	ab_deadline_in "$f" 4
	DOCKER_HOST=unix://$AB_PROXY_SOCK run_exact 124 \
		ab-alloc --image "$AB_IMAGE" --deadline "$f"
	assert_one_error_line ab-alloc
	run docker ps -aq --filter "label=org.agentbox.state=$(ab_state_sid)"
	assert_output ""
	run docker volume ls -q --filter "label=org.agentbox.state=$(ab_state_sid)"
	assert_output ""
	[ -z "$(ls "$AB_STATE_DIR/alloc" 2>/dev/null)" ]
}

@test "a volume name already held with other options is refused and left alone" {
	local pid id
	AB_TEST_PAUSE=alloc-recorded ab-alloc --image "$AB_IMAGE" \
		>/dev/null 2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	ab_wait_stopped "$pid"
	id=$(ls "$AB_STATE_DIR/alloc")
	ALLOCS+=("alloc:$id")
	docker volume create --driver local --opt type=tmpfs --opt device=tmpfs \
		--opt o=size=1m "agentbox-$id-git" >/dev/null
	FOREIGN_VOLUME=agentbox-$id-git
	kill -CONT "$pid"
	local st=0
	wait "$pid" || st=$?
	assert_equal "$st" 1
	run cat "$BATS_TEST_TMPDIR/err"
	assert_output --partial "exists with other options or labels"
	# The foreign volume is still there; everything ab-alloc made is gone.
	run docker volume inspect "agentbox-$id-git" --format '{{index .Options "o"}}'
	assert_output "size=1m"
	run docker volume ls -q --filter "label=org.agentbox.alloc=$id"
	assert_output ""
}

@test "killed after the volumes exist, the record names every object left" {
	local pid id
	AB_TEST_PAUSE=alloc-volumes-created ab-alloc --image "$AB_IMAGE" \
		>"$BATS_TEST_TMPDIR/out" 2>/dev/null &
	pid=$!
	ab_wait_stopped "$pid"
	kill -KILL "$pid"
	wait "$pid" || true
	[ ! -s "$BATS_TEST_TMPDIR/out" ]
	id=$(ls "$AB_STATE_DIR/alloc")
	ALLOCS+=("alloc:$id")
	run docker volume ls -q --filter "label=org.agentbox.alloc=$id"
	assert_equal "$(grep -c . <<<"$output")" 3
	local v
	for v in $output; do
		grep -q "\"name\":\"$v\"" "$AB_STATE_DIR/alloc/$id"
	done
	grep -q '"status":"creating"' "$AB_STATE_DIR/alloc/$id"
}

@test "the man page names every option of --help" {
	assert_man_covers_help ab-alloc 8
}
