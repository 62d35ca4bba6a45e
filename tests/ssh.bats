#!/usr/bin/env bats
# The engine reached through ssh://, as the docker CLI reaches it: ssh
# runs `docker system dial-stdio` on the host, one ssh per connection.  A
# real sshd of the test's own on 127.0.0.1 (tests/lib/sshd.bash) serves
# the host's engine; the client's home, keys and known hosts are the
# test's own.  A stand-in ssh checks only the arguments and the failure
# paths that a real one cannot be made to take on demand.

# shellcheck disable=SC2154 # bats sets status, output, stderr
# shellcheck disable=SC2030,SC2031 # each @test is a subshell: its exports are its own
load helpers
load lib/sshd

setup_file() {
	ab_setup_file
	SSHD=$BATS_FILE_TMPDIR/sshd
	ab_sshd_start "$SSHD"
	SSH_HOST=ssh://root@127.0.0.1:$(cat "$SSHD/port")
	export SSHD SSH_HOST
}

teardown_file() {
	ab_sshd_stop "$SSHD"
	ab_teardown_file
}

setup() {
	# ssh's sockets and the processes are this test's alone to count.
	export TMPDIR=$BATS_TEST_TMPDIR/tmp
	mkdir -p "$TMPDIR"
}

teardown() {
	local sid
	sid=$(ab_state_sid)
	docker ps -aq --filter "label=org.agentbox.state=$sid" \
		--filter label=org.agentbox.alloc | xargs -r docker rm -f >/dev/null
	ab-clean --sweep --all >/dev/null 2>&1 || true
}

# The processes whose command line names this file's sshd port.
ssh_procs() {
	pgrep -f -- "-p $(cat "$SSHD/port") -- 127\.0\.0\.1 docker system dial-stdio" || true
}

# A stand-in ssh, first on PATH: it records its arguments, then does $1.
stand_in() {
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	cat >"$BATS_TEST_TMPDIR/bin/ssh" <<-SH
	#!/bin/sh
	printf '%s\n' "\$@" >"$BATS_TEST_TMPDIR/argv"
	echo \$\$ >"$BATS_TEST_TMPDIR/ssh.pid"
	$1
	SH
	chmod +x "$BATS_TEST_TMPDIR/bin/ssh"
}

@test "ssh:// runs a whole task through a real sshd, each connection an ssh that ends with it" {
	local repo=$BATS_TEST_TMPDIR/repo sid before after
	ab_repo "$repo"
	sid=$(ab_state_sid)
	before=$(grep -c 'Accepted publickey' "$SSHD/sshd.log" || true)
	DOCKER_HOST=$SSH_HOST run_exact 0 ab_ssh_home "$SSHD" \
		"$AB_ROOT/sh/run-task" --repo "$repo" --commit HEAD \
		--phase execution --image "$AB_IMAGE" --timeout 300 \
		--patch "$BATS_TEST_TMPDIR/patch" -- sh -c 'echo two >/work/b'
	# shellcheck disable=SC2034 # record_field reads it
	RECORD=$output
	assert_equal "$(record_field 'r["reason"]')" exited
	grep -q '^+two$' "$BATS_TEST_TMPDIR/patch"
	after=$(grep -c 'Accepted publickey' "$SSHD/sshd.log")
	[ "$((after - before))" -ge 7 ] ||
		fail "the steps made $((after - before)) ssh connections"
	assert_equal "$(ssh_procs)" ""
	assert_equal "$(ls -A "$TMPDIR")" ""
	run ab_leftovers "$sid"
	assert_output ""
}

@test "an unknown host key is refused, whatever ssh's configuration says, in ssh's own words" {
	cp "$SSHD/home/.ssh/known_hosts" "$BATS_TEST_TMPDIR/known"
	: >"$SSHD/home/.ssh/known_hosts"
	printf 'Host *\n  StrictHostKeyChecking no\n  BatchMode no\n' \
		>"$SSHD/home/.ssh/config"
	DOCKER_HOST=$SSH_HOST run_exact 125 ab_ssh_home "$SSHD" \
		ab-alloc --image "$AB_IMAGE"
	cp "$BATS_TEST_TMPDIR/known" "$SSHD/home/.ssh/known_hosts"
	rm "$SSHD/home/.ssh/config"
	assert_one_error_line ab-alloc
	# Whether curl saw ssh gone before or after its connect is a race.
	assert_regex "$stderr" "^ab-alloc: (cannot reach the engine at $SSH_HOST|the connection to the engine at $SSH_HOST broke before it could answer a ping): .*; ssh said: Host key verification failed\.$"
	assert_equal "$output" ""
	assert_equal "$(ls -A "$AB_STATE_DIR/alloc" 2>/dev/null)" ""
	assert_equal "$(ssh_procs)" ""
}

@test "ssh's own configuration names the host; a host or user ssh would take for an option, or a path, is refused before ssh runs" {
	printf 'Host abtest-engine\n  HostName 127.0.0.1\n  Port %s\n  User root\n' \
		"$(cat "$SSHD/port")" >"$SSHD/home/.ssh/config"
	DOCKER_HOST=ssh://abtest-engine run_exact 0 ab_ssh_home "$SSHD" \
		ab-image verify "$AB_IMAGE"
	rm "$SSHD/home/.ssh/config"
	stand_in 'exit 255'
	export PATH=$BATS_TEST_TMPDIR/bin:$PATH
	DOCKER_HOST=ssh://-oProxyCommand=x run_exact 2 ab-clean --sweep
	assert_equal "$stderr" "ab-clean: DOCKER_HOST ssh://-oProxyCommand=x: not a host name agentbox gives ssh"
	DOCKER_HOST=ssh://-l@h run_exact 2 ab-clean --sweep
	assert_equal "$stderr" "ab-clean: DOCKER_HOST ssh://-l@h: not a user name agentbox gives ssh"
	DOCKER_HOST=ssh://h/var/run/docker.sock run_exact 2 ab-clean --sweep
	assert_equal "$stderr" "ab-clean: DOCKER_HOST ssh://h/var/run/docker.sock: an ssh:// host takes no path or query"
	DOCKER_HOST=ssh://h:x run_exact 2 ab-clean --sweep
	assert_equal "$stderr" "ab-clean: DOCKER_HOST ssh://h:x: a bad port"
	[ ! -e "$BATS_TEST_TMPDIR/argv" ]
}

@test "ssh gets the docker CLI's command with BatchMode and strict host keys forced; its last line is the error's" {
	stand_in 'echo "debug: noise" >&2; echo "stand-in: no route to engine" >&2; exit 255'
	PATH=$BATS_TEST_TMPDIR/bin:$PATH DOCKER_HOST=ssh://alice@example.test:2222 \
		run_exact 125 ab-clean --sweep
	assert_regex "$stderr" "^ab-clean: (cannot reach the engine at ssh://alice@example\.test:2222|the connection to the engine at ssh://alice@example\.test:2222 broke before it could answer a ping): .*; ssh said: stand-in: no route to engine$"
	run cat "$BATS_TEST_TMPDIR/argv"
	assert_output "-o
ConnectTimeout=30
-o
BatchMode=yes
-o
StrictHostKeyChecking=yes
-T
-l
alice
-p
2222
--
example.test
docker
system
dial-stdio"
	# No ssh on PATH: said so.
	DOCKER_HOST=ssh://example.test \
		run_exact 125 env PATH=/nonexistent "$AB_BIN/ab-clean" --sweep
	assert_regex "$stderr" "no ssh on PATH to reach the engine with"
}

@test "the deadline bounds an ssh that never answers: 124, and the ssh is ended" {
	local pid
	stand_in 'exec sleep 600'
	ab_deadline_in "$BATS_TEST_TMPDIR/dl" 3
	PATH=$BATS_TEST_TMPDIR/bin:$PATH DOCKER_HOST=ssh://example.test \
		run_exact 124 timeout 60 ab-alloc --image "$AB_IMAGE" \
		--deadline "$BATS_TEST_TMPDIR/dl"
	assert_one_error_line ab-alloc
	# What was left of the 3 s when ssh started: less on a loaded machine.
	grep -qxE 'ConnectTimeout=[1-3]' "$BATS_TEST_TMPDIR/argv"
	pid=$(cat "$BATS_TEST_TMPDIR/ssh.pid")
	! kill -0 "$pid" 2>/dev/null || fail "ssh $pid outlived the tool"
	assert_equal "$(ls -A "$TMPDIR")" ""
}

@test "an interrupt from the terminal reaches the tool, not its ssh: ab-run still stops its agent" {
	local repo=$BATS_TEST_TMPDIR/repo pid sid
	ab_repo "$repo"
	sid=$(ab_state_sid)
	# setsid: run-task leads a process group of its own, as in a
	# terminal, and the whole group gets the interrupt.
	# shellcheck disable=SC2016 # the inner shell expands them
	DOCKER_HOST=$SSH_HOST ab_ssh_home "$SSHD" setsid sh -c \
		'echo $$ >"$0"; exec "$@"' "$BATS_TEST_TMPDIR/leader" \
		"$AB_ROOT/sh/run-task" --repo "$repo" --commit HEAD \
		--phase execution --image "$AB_IMAGE" --timeout 300 \
		-- sh -c 'sleep 300' \
		>"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	for _ in $(seq 1 600); do
		[ -n "$(docker ps -q --filter "label=org.agentbox.state=$sid" \
			--filter label=org.agentbox.role=agent)" ] && break
		sleep 0.1
	done
	[ -n "$(docker ps -q --filter "label=org.agentbox.state=$sid" \
		--filter label=org.agentbox.role=agent)" ] ||
		fail "the agent never ran: $(cat "$BATS_TEST_TMPDIR/err")"
	kill -INT -- "-$(cat "$BATS_TEST_TMPDIR/leader")"
	wait "$pid" || status=$?
	assert_equal "${status:-0}" 130
	run ab_leftovers "$sid"
	assert_output ""
	assert_equal "$(ssh_procs)" ""
}
