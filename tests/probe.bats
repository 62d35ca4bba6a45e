#!/usr/bin/env bats
# image/probe.sh: the entrypoint checks the container from inside and runs
# ARGV only when every check passes.  Until ab-profile and ab-validate make
# these containers, the tests start them with the docker CLI on an
# allocation's volumes: locked down, then with one property weakened.

# shellcheck disable=SC2154 # bats sets status, output, stderr
# shellcheck disable=SC2016 # shell text run inside the container
load helpers

setup_file() {
	ab_setup_file
	ALLOC=$(ab-alloc --image "$AB_IMAGE")
	export ALLOC
}

teardown_file() {
	ab_drop_alloc "$ALLOC"
	ab_teardown_file
}

# probe_run [DOCKER-OPTION...]: the probe with ARGV "echo ran; env", in a
# locked container with an invocation's group (123456); USER_OPT, NET_OPT,
# WRITABLE_ROOT, PHASE, WORK_RO, GIT_RO, NO_GROUP each override one default.
probe_run() {
	local id=${ALLOC#alloc:} digest root=(--read-only) group=(--group-add 123456)
	[ -z "${WRITABLE_ROOT:-}" ] || root=()
	[ -z "${NO_GROUP:-}" ] || group=()
	digest=$(docker inspect "agentbox-$id-keeper" --format '{{.Image}}')
	run docker run --rm --user "${USER_OPT:-10001:10001}" "${root[@]}" "${group[@]}" \
		--cap-drop ALL --security-opt no-new-privileges \
		--network "${NET_OPT:-none}" \
		--label "org.agentbox.state=$(ab_state_sid)" \
		--label "org.agentbox.alloc=$id" \
		--tmpfs /tmp:size=16m,nr_inodes=1000,uid=10001,gid=10001 \
		--tmpfs /home/agent:size=8m,nr_inodes=1000,uid=10001,gid=10001 \
		--mount "type=volume,src=agentbox-$id-task,dst=/work,volume-nocopy${WORK_RO:-}" \
		--mount "type=volume,src=agentbox-$id-git,dst=/work/.git,volume-nocopy${GIT_RO-,readonly}" \
		--mount "type=volume,src=agentbox-$id-inputs,dst=/run/agentbox/inputs,volume-nocopy,readonly" \
		-e AB_PROBE_NONCE=n0nce -e "AB_PROBE_PHASE=${PHASE:-execution}" \
		-e AB_PROBE_HOME=/home/agent -e AB_PROBE_HOME_BYTES=8388608 \
		-e AB_PROBE_TMP_BYTES=16777216 -e AB_PROBE_GROUP=123456 \
		"$@" "$digest" sh -c 'echo ran; env'
}

assert_refused() {
	assert_equal "$status" 126
	assert_output "agentbox-probe: refused: $1"
}

@test "in a locked container the probe says ok with the nonce, unsets its variables and runs ARGV" {
	probe_run
	assert_success
	assert_line --index 0 "agentbox-probe: ok n0nce"
	assert_line --index 1 ran
	refute_output --partial AB_PROBE_
}

@test "the agent runs with the PATH its container was given, not the probe's own" {
	probe_run -e PATH=/opt/none:/usr/bin:/bin
	assert_success
	assert_line --index 1 ran
	assert_line PATH=/opt/none:/usr/bin:/bin
}

@test "planning and questions need /work read-only" {
	local p
	for p in planning questions; do
		PHASE=$p probe_run
		assert_refused "read-only /work"
		PHASE=$p WORK_RO=,readonly probe_run
		assert_success
	done
}

@test "a capability added is refused" {
	probe_run --cap-add NET_BIND_SERVICE
	assert_refused CapBnd
}

@test "a writable root is refused" {
	WRITABLE_ROOT=1 probe_run
	assert_refused "read-only /"
}

@test "a network other than none is refused" {
	NET_OPT=bridge probe_run
	assert_refused "network eth0"
}

@test "the root user is refused" {
	USER_OPT=0:0 probe_run
	assert_refused uid
}

@test "an extra group is refused" {
	probe_run --group-add 0
	assert_refused groups
}

@test "a container without its invocation's group, or another's, is refused" {
	NO_GROUP=1 probe_run
	assert_refused groups
	NO_GROUP=1 probe_run --group-add 123457
	assert_refused groups
	probe_run -e AB_PROBE_GROUP=
	assert_refused AB_PROBE_GROUP
	probe_run -e "AB_PROBE_GROUP=123456 0"
	assert_refused AB_PROBE_GROUP
}

@test "seccomp unconfined is refused" {
	probe_run --security-opt seccomp=unconfined
	assert_refused Seccomp
}

# seccomp_file NAME [SYSCALL...]: a seccomp filter (Seccomp 2, as the
# probe wants) that allows every call but those named, as BATS_TEST_TMPDIR/
# NAME.json: one that lets the agent make a user namespace.
seccomp_file() {
	local f=$BATS_TEST_TMPDIR/$1.json
	shift
	python3 -c 'import json, sys
print(json.dumps({"defaultAction": "SCMP_ACT_ALLOW", "syscalls":
    [{"names": sys.argv[1:], "action": "SCMP_ACT_ERRNO"}] if sys.argv[1:] else []}))' \
		"$@" >"$f"
	echo "$f"
}

@test "a lockdown that lets the agent make a user namespace is refused: Codex's bubblewrap could start there" {
	# The builtin profile closes it: the probe says ok.
	probe_run
	assert_success
	# A filter that allows everything, or everything but unshare(2) (a
	# sandbox's clone(2) still makes one), leaves every other check
	# passing: only the user namespace is refused.
	probe_run --security-opt "seccomp=$(seccomp_file allow)"
	assert_refused "user namespace"
	refute_output --partial ran
	probe_run --security-opt "seccomp=$(seccomp_file clone-only unshare)"
	assert_refused "user namespace"
	# A check that cannot run refuses too: an ab-privs that is not a
	# program, or one that fails without naming what.
	: >"$BATS_TEST_TMPDIR/privs"
	probe_run -v "$BATS_TEST_TMPDIR/privs:/usr/lib/agentbox/ab-privs:ro"
	assert_refused ab-privs
	printf '#!/usr/lib/agentbox/busybox sh\nexit 1\n' >"$BATS_TEST_TMPDIR/privs"
	chmod 0755 "$BATS_TEST_TMPDIR/privs"
	probe_run -v "$BATS_TEST_TMPDIR/privs:/usr/lib/agentbox/ab-privs:ro"
	assert_refused ab-privs
}

@test "/work/.git writable is refused" {
	GIT_RO="" probe_run
	assert_refused "read-only /work/.git"
}

@test "a tmpfs of the wrong size is refused" {
	probe_run -e AB_PROBE_TMP_BYTES=1048576
	assert_refused "size of /tmp"
}

@test "a host path or the docker socket is refused" {
	probe_run -v /var/run/docker.sock:/var/run/docker.sock
	assert_refused "host path /var/run/docker.sock"
	probe_run -v /etc:/hostetc:ro
	assert_refused "host path /hostetc"
}

@test "a missing pinned variable or phase is refused, and ARGV never runs" {
	probe_run -e AB_PROBE_NONCE=
	assert_refused AB_PROBE_NONCE
	probe_run -e AB_PROBE_PHASE=whatever
	assert_refused phase
	refute_output --partial ran
}

@test "/work read-only in execution is refused" {
	WORK_RO=,readonly probe_run
	assert_refused "writable /work"
}

@test "a profile that says gVisor on runc's kernel, or a runtime the probe does not know, is refused" {
	probe_run -e AB_PROBE_RUNTIME=runsc
	assert_refused "gVisor kernel"
	probe_run -e AB_PROBE_RUNTIME=kata
	assert_refused AB_PROBE_RUNTIME
}

# inputs_run SCRIPT [ARG...]: busybox sh -c SCRIPT with the allocation's
# inputs volume writable at /in.
inputs_run() {
	local id=${ALLOC#alloc:} digest
	digest=$(docker inspect "agentbox-$id-keeper" --format '{{.Image}}')
	docker run --rm --network none --user 10001:10001 \
		--label "org.agentbox.state=$(ab_state_sid)" --label "org.agentbox.alloc=$id" \
		--mount "type=volume,src=agentbox-$id-inputs,dst=/in,volume-nocopy" \
		--entrypoint /usr/lib/agentbox/busybox "$digest" sh -c "$@"
}

@test "every check comes before the first effect: a refusal leaves no relay started, nothing written, copied or linked" {
	# The relay is started only once every check passed: a socket that no
	# one answers any more (a proxy's, killed) is not tried before the
	# stdin check refuses.
	inputs_run '/usr/lib/agentbox/ab-proxy --socket /in/eg.sock example.com:443 \
		>/dev/null 2>&1 & p=$!
		until [ -S /in/eg.sock ]; do sleep 0.05; done
		kill -9 "$p"'
	probe_run -e AB_PROBE_EGRESS=/run/agentbox/inputs/eg.sock -e AB_PROBE_STDIN=/nonexistent
	assert_refused stdin
	probe_run -e AB_PROBE_EGRESS=/run/agentbox/inputs/eg.sock
	assert_equal "$status" 126
	assert_line "agentbox-probe: refused: egress relay"
	# Codex's home is not made before the rules link is checked (this
	# image has none).
	probe_run -e AB_PROBE_CODEX_RULES=/etc/passwd -e CODEX_HOME=/work/probe-codex
	assert_refused "codex rules link"
	# A Claude sign-in is not copied into HOME before the stdin check.
	probe_run --tmpfs /run/agentbox/auth -e AB_PROBE_CLAUDE_AUTH=/etc/passwd \
		-e HOME=/work/probe-home -e AB_PROBE_STDIN=/nonexistent
	assert_refused stdin
	run ab_on_alloc "$ALLOC" 'ls -A /work'
	assert_output .git
	# Once every check passed, the copy is made.
	probe_run --tmpfs /run/agentbox/auth -e AB_PROBE_CLAUDE_AUTH=/etc/passwd \
		-e HOME=/work/probe-home
	assert_success
	run ab_on_alloc "$ALLOC" 'cmp /etc/passwd /work/probe-home/.claude/.credentials.json &&
		rm -r /work/probe-home'
	assert_success
	inputs_run 'rm /in/eg.sock'
}

# privs_run [DOCKER-OPTION...]: ab-privs alone in the image, with those
# options and its arguments from PRIVS_ARGS (none by default).
privs_run() {
	local digest args
	digest=$(docker inspect "agentbox-${ALLOC#alloc:}-keeper" --format '{{.Image}}')
	read -r -a args <<<"${PRIVS_ARGS:-}"
	run docker run --rm --network none --read-only \
		--label "org.agentbox.state=$(ab_state_sid)" \
		--entrypoint /usr/lib/agentbox/ab-privs "$@" "$digest" "${args[@]}"
}

@test "ab-privs: the kernel's own answer, silent when nothing is held, the first privilege held named" {
	privs_run --user 10001:10001 --cap-drop ALL --security-opt no-new-privileges
	assert_success
	assert_output ""
	privs_run --user 10001:10001 --cap-drop ALL
	assert_failure 1
	assert_output NoNewPrivs
	privs_run --user 10001:10001 --cap-drop ALL --security-opt no-new-privileges \
		--security-opt seccomp=unconfined
	assert_failure 1
	assert_output Seccomp
	privs_run --user 0:0 --security-opt no-new-privileges
	assert_failure 1
	assert_output CapEff
	privs_run --user 10001:10001 --cap-drop ALL --cap-add NET_RAW \
		--security-opt no-new-privileges
	assert_failure 1
	assert_output CapBnd
	privs_run --user 10001:10001 --cap-drop ALL --security-opt no-new-privileges \
		--security-opt "seccomp=$(seccomp_file allow)"
	assert_failure 1
	assert_output "user namespace"
	privs_run --user 10001:10001 --cap-drop ALL --security-opt no-new-privileges \
		--security-opt "seccomp=$(seccomp_file clone-only unshare)"
	assert_failure 1
	assert_output "user namespace"
	PRIVS_ARGS=extra privs_run --user 10001:10001 --cap-drop ALL \
		--security-opt no-new-privileges
	assert_failure 2
	assert_output "usage: ab-privs [--version | --help]"
}

# probe_fn FUNCTION ARG...: one of the probe's functions, on the host, in
# the busybox the images carry (/bin/busybox is what they copy), with its
# applets alone on PATH as in a container, reading MOUNTINFO (a file) in
# place of /proc/self/mountinfo, and without the look for the engine's
# sockets, which the host has.  At most 10 s: a loop that never ends is a
# failure, not a hang.
probe_fn() {
	local lib=$BATS_TEST_TMPDIR/probe-lib.sh bb=$BATS_TEST_TMPDIR/bb
	# Every line but the last, which runs the checks.
	[ "$(tail -n 1 "$AB_ROOT/image/probe.sh")" = 'main "$@"' ]
	sed '$d' "$AB_ROOT/image/probe.sh" >"$lib"
	if [ ! -d "$bb" ]; then
		mkdir "$bb"
		/bin/busybox --install -s "$bb"
	fi
	run timeout 10 /bin/busybox sh -c \
		'. "$1"; check_sockets() { :; }; PATH=$2; mountinfo=$3; runtime=runc
		shift 3; "$@"' \
		sh "$lib" "$bb" "$MOUNTINFO" "$@"
}

@test "a mountinfo line without its separator, or short of fields after it, is refused, not read forever" {
	local good='21 1 0:19 / / ro,relatime shared:1 - overlay overlay rw,lowerdir=x'
	MOUNTINFO=$BATS_TEST_TMPDIR/mountinfo
	printf '%s\n' "$good" >"$MOUNTINFO"
	probe_fn want_mode / ro
	assert_success
	probe_fn check_host_paths
	assert_success
	printf '%s\n' "$good" '22 21 0:20 / /x rw,relatime shared:2 tmpfs tmpfs rw' >"$MOUNTINFO"
	probe_fn want_mode / ro
	assert_refused mountinfo
	probe_fn check_host_paths
	assert_refused mountinfo
	printf '%s\n' "$good" '22 21 0:20 / /x rw,relatime - tmpfs' >"$MOUNTINFO"
	probe_fn want_mode / ro
	assert_refused mountinfo
	probe_fn check_host_paths
	assert_refused mountinfo
}

@test "one check of a mount's mode: read-only and writable each named when wrong, a missing mount named" {
	MOUNTINFO=$BATS_TEST_TMPDIR/mountinfo
	printf '%s\n' '21 1 0:19 / / ro,relatime shared:1 - overlay overlay rw,lowerdir=x' \
		'22 21 0:20 / /x rw,nosuid - tmpfs tmpfs rw,size=64k' >"$MOUNTINFO"
	probe_fn want_mode / ro
	assert_success
	probe_fn want_mode /x rw
	assert_success
	probe_fn want_mode / rw
	assert_refused "writable /"
	probe_fn want_mode /x ro
	assert_refused "read-only /x"
	probe_fn want_mode /y ro
	assert_refused "mount /y"
}
