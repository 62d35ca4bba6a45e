#!/usr/bin/env bats
# The agent under gVisor (ab-profile --runtime): on an engine of the test's
# own (tests/lib/engine2.bash) with Debian's runsc registered, with the
# default image (the engine's vfs storage copies a whole image per
# container).  The keeper and the proxy stay on runc; every proof the
# probe gives under runc is given under runsc too, and every ceiling
# still holds.

# shellcheck disable=SC2154 # bats sets status, output, stderr
# shellcheck disable=SC2016 # shell text run inside the container
# shellcheck disable=SC2030,SC2031 # each @test is a subshell: PROF, CTR are its own
# shellcheck disable=SC2034 # RECORD is read by record_field
load helpers
load lib/engine2
load lib/bases
load lib/forge

# What the operator registers (README, ab-profile(1)), and registrations
# agentbox must refuse.  $1: the wrapper script's path.
runtimes() {
	python3 -c 'import json, sys
ok = ["--network=none", "--oci-seccomp", "--host-uds=open", "--platform=ptrace"]
print(json.dumps({
    "runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ok},
    "runsc-closed": {"path": "/usr/bin/runsc",
                     "runtimeArgs": ["--network=none", "--oci-seccomp"]},
    "runsc-noseccomp": {"path": "/usr/bin/runsc",
                        "runtimeArgs": ["--network=none"]},
    "runsc-net": {"path": "/usr/bin/runsc", "runtimeArgs": ["--oci-seccomp"]},
    "runsc-udsall": {"path": "/usr/bin/runsc",
                     "runtimeArgs": ok[:2] + ["--host-uds=all"]},
    "runsc-wrap": {"path": sys.argv[1]},
}))' "$1"
}

setup_file() {
	ab_engines_setup_file
	if ! [ -x /usr/bin/runsc ]; then
		echo "runsc is not installed (make check installs Debian's runsc)" >&2
		return 1
	fi
	local wrap=$BATS_FILE_TMPDIR/runsc-wrap dir=$BATS_FILE_TMPDIR/image
	printf '#!/bin/sh\nexec /usr/bin/runsc --network=none --oci-seccomp "$@"\n' >"$wrap"
	chmod 0755 "$wrap"
	AB_ENGINE_RUNTIMES=$(runtimes "$wrap") ab_engine_start gv
	E2=$(ab_engine host gv)
	export E2
	# openssl, for the egress test's client.
	cp -r "$AB_ROOT/image" "$dir"
	echo 'elf /usr/bin/openssl 0755' >>"$dir/default.manifest"
	E2_IMAGE=$(ab_engine_build "$E2" --dir "$dir") || return 1
	export E2_IMAGE
	DL=$BATS_FILE_TMPDIR/deadline
	ab_deadline_in "$DL" 3600
	REPO=$BATS_FILE_TMPDIR/repo
	ab_repo "$REPO"
	export DL REPO
}

teardown_file() {
	ab_engines_stop
	ab_teardown_file
}

teardown() {
	ab_state_sweep "$E2"
	ab_records_rm
	[ -z "${VPID:-}" ] || kill "$VPID" 2>/dev/null || true
}

e2() {
	DOCKER_HOST=$E2 "$@"
}

# gv_alloc [AB-ALLOC OPTION...]: a seeded allocation on the engine; ALLOC.
gv_alloc() {
	DOCKER_HOST=$E2 run_exact 0 ab-alloc --image "$E2_IMAGE" --deadline "$DL" "$@"
	ALLOC=$output
	DOCKER_HOST=$E2 run_exact 0 ab-seed "$ALLOC" --repo "$REPO" \
		--commit "$(git -C "$REPO" rev-parse HEAD)" --deadline "$DL"
}

# gv_ctr [AB-PROFILE OPTION...] -- ARGV: a validated container on ALLOC;
# PROF, CTR and CID (the engine's ID).
gv_ctr() {
	DOCKER_HOST=$E2 run_exact 0 ab-profile --alloc "$ALLOC" --phase execution \
		--attempt "gv-$BATS_TEST_NUMBER-$RANDOM$RANDOM" --deadline "$DL" "$@"
	PROF=$output
	DOCKER_HOST=$E2 run_exact 0 ab-validate "$PROF"
	CTR=$output
	CID=$(sed -n 's/.*"container":"\([0-9a-f]*\)".*/\1/p' \
		"$AB_STATE_DIR/ctr/${CTR#ctr:}")
}

# gv_run: ab-run of CTR; RESULT is its handle, RECORD the result.  The
# agent's output is shown when the run fails.
gv_run() {
	DOCKER_HOST=$E2 run --separate-stderr ab-run "$CTR"
	RESULT=$output
	RECORD=$(DOCKER_HOST=$E2 ab-run --show "$output")
	if [ "$status" -ne 0 ]; then
		echo "ab-run $status: $stderr" >&2
		record_field 'r["stdout"]["text"], r["stderr"]["text"]' >&2
		return 1
	fi
}

runtime_of() {
	e2 docker inspect --format '{{.HostConfig.Runtime}}' "$1"
}

# The containers' processes of this file's engine: runsc's sandboxes and
# gofers, and the shims, found by the engine's roots in their arguments
# (by name they are all "exe": pgrep without -f misses them).
runsc_procs() {
	local p
	for p in $(ab_engine_procs "$(ab_engine dir gv)"); do
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null |
			grep -q -E 'runsc|containerd-shim' && echo "$p"
	done
	return 0
}

@test "an agent under runsc: the probe proves the lockdown from inside gVisor; the record and the result name the runtime; the keeper stays on runc" {
	local keeper
	gv_alloc
	gv_ctr --runtime runsc -- sh -c 'head -c 40 /proc/version; echo; id -u; ls /sys/class/net'
	assert_equal "$(runtime_of "$CID")" runsc
	grep -q '"runtime":"runsc"' "$AB_STATE_DIR/profile/${PROF#profile:}"
	keeper=$(sed -n 's/.*"keeper_id":"\([0-9a-f]*\)".*/\1/p' \
		"$AB_STATE_DIR/alloc/${ALLOC#alloc:}")
	assert_equal "$(runtime_of "$keeper")" runc
	gv_run
	assert_equal "$(record_field 'r["reason"]')" exited
	assert_equal "$(record_field 'r["lockdown"]["HostConfig.Runtime"]')" runsc
	assert_equal "$(record_field 'r["stdout"]["text"]')" "Linux version 4.4.0 #1 SMP Sun Jan 10 15
10001
lo"
	DOCKER_HOST=$E2 run_exact 0 ab-clean "$ALLOC"
	assert_equal "$(e2 docker ps -aq --filter "label=org.agentbox.alloc=${ALLOC#alloc:}")" ""
	assert_equal "$(e2 docker volume ls -q --filter "label=org.agentbox.alloc=${ALLOC#alloc:}")" ""
}

@test "run-task --runtime runsc: the whole task under gVisor, nothing left" {
	DOCKER_HOST=$E2 run_exact 0 "$AB_ROOT/sh/run-task" --repo "$REPO" \
		--commit HEAD --phase execution --image "$E2_IMAGE" --timeout 300 \
		--runtime runsc --patch "$BATS_TEST_TMPDIR/patch" -- \
		sh -c 'head -c 19 /proc/version >/work/b'
	RECORD=$output
	assert_equal "$(record_field 'r["reason"]')" exited
	assert_equal "$(record_field 'r["lockdown"]["HostConfig.Runtime"]')" runsc
	grep -q '^+Linux version 4.4.0$' "$BATS_TEST_TMPDIR/patch"
	run ab_leftovers "$(ab_state_sid)"
	assert_output ""
	assert_equal "$(e2 docker ps -aq --filter "label=org.agentbox.state=$(ab_state_sid)")" ""
	assert_equal "$(e2 docker volume ls -q --filter "label=org.agentbox.state=$(ab_state_sid)")" ""
}

@test "without --runtime, an agent on the same engine runs under runc" {
	gv_alloc
	gv_ctr -- sh -c 'head -c 14 /proc/version; echo; uname -r | grep -c "^4\.4\.0$" || true'
	assert_equal "$(runtime_of "$CID")" runc
	gv_run
	assert_equal "$(record_field 'r["lockdown"]["HostConfig.Runtime"]')" runc
	assert_equal "$(record_field 'r["stdout"]["text"]')" "Linux version 
0"
	DOCKER_HOST=$E2 run_exact 0 ab-clean "$ALLOC"
}

@test "runtimes that cannot show the guarantees are refused by ab-profile: unregistered, a wrapper, no --network=none, no --oci-seccomp, --host-uds=all, egress without --host-uds=open" {
	local n=0 rt says
	gv_alloc
	while IFS='|' read -r rt says; do
		DOCKER_HOST=$E2 run_exact 1 ab-profile --alloc "$ALLOC" --phase execution \
			--attempt "gv-refused-$n-$RANDOM" --deadline "$DL" --runtime "$rt" -- true
		assert_one_error_line ab-profile
		assert_regex "$stderr" "$says"
		n=$((n + 1))
	done <<'EOF'
kata|runtime kata is not registered on the engine at .* \(it has: .*runsc.*\)
runsc-wrap|runs .*runsc-wrap: agentbox proves its lockdown under runc and gVisor's runsc only
runsc-net|lacks --network=none
runsc-noseccomp|lacks --oci-seccomp
runsc-udsall|--host-uds=all lets the agent create host sockets
EOF
	[ ! -d "$AB_STATE_DIR/profile" ] || [ -z "$(ls "$AB_STATE_DIR/profile")" ]
	run_exact 2 ab-profile --alloc "$ALLOC" --phase execution --attempt x \
		--deadline "$DL" --runtime 'a b' -- true
	assert_equal "$stderr" "ab-profile: --runtime: 1 to 63 of [A-Za-z0-9._-]"
	DOCKER_HOST=$E2 run_exact 0 ab-clean "$ALLOC"
	# With egress the agent must reach the proxy's socket.
	gv_alloc --egress api.anthropic.com:443
	DOCKER_HOST=$E2 run_exact 1 ab-profile --alloc "$ALLOC" --phase execution \
		--attempt "gv-refused-eg-$RANDOM" --deadline "$DL" --runtime runsc-closed -- true
	assert_regex "$stderr" "lacks --host-uds=open among its runtimeArgs"
	DOCKER_HOST=$E2 run_exact 0 ab-clean "$ALLOC"
}

@test "a runtime the operator registers while the engine runs (SIGHUP) is taken; one unregistered meanwhile is refused by ab-validate" {
	local wrap=$BATS_FILE_TMPDIR/runsc-wrap all
	gv_alloc
	all=$(runtimes "$wrap" | python3 -c 'import json, sys
r = json.load(sys.stdin)
r["runsc-late"] = r["runsc"]
print(json.dumps(r))')
	ab_engine_reload gv "$all"
	gv_ctr --runtime runsc-late -- true
	assert_equal "$(runtime_of "$CID")" runsc-late
	# Its arguments change under a profile made before: ab-validate asks
	# the engine again, and so does ab-run.
	DOCKER_HOST=$E2 run_exact 0 ab-profile --alloc "$ALLOC" --phase execution \
		--attempt "gv-late-$RANDOM" --deadline "$DL" --runtime runsc-late -- true
	PROF=$output
	all=$(python3 -c 'import json, sys
r = json.loads(sys.argv[1])
r["runsc-late"]["runtimeArgs"] = ["--network=none"]
print(json.dumps(r))' "$all")
	ab_engine_reload gv "$all"
	DOCKER_HOST=$E2 run_exact 1 ab-validate "$PROF"
	assert_regex "$stderr" "runtime runsc-late lacks --oci-seccomp"
	DOCKER_HOST=$E2 run_exact 126 ab-run "$CTR"
	assert_regex "$stderr" "drift: runtime runsc-late lacks --oci-seccomp.*the agent did not start"
	ab_engine_reload gv "$(runtimes "$wrap")"
	DOCKER_HOST=$E2 run_exact 0 ab-clean "$ALLOC"
}

@test "a container of a runsc profile made under runc, or with tmpfs HOME and /tmp, is drift" {
	local id
	gv_alloc
	gv_ctr --runtime runsc -- true
	id=$(DOCKER_HOST=$E2 python3 "$AB_ROOT/tests/lib/mutate.py" \
		"$AB_STATE_DIR/profile/${PROF#profile:}" "gv-mut-rt-$RANDOM" \
		'b["HostConfig"]["Runtime"]="runc"; b["Labels"]["org.agentbox.profile"]="x"')
	DOCKER_HOST=$E2 run_exact 1 ab-validate --container "$id" "$PROF"
	assert_regex "$stderr" "lockdown drift: HostConfig\.Runtime$"
	id=$(DOCKER_HOST=$E2 python3 "$AB_ROOT/tests/lib/mutate.py" \
		"$AB_STATE_DIR/profile/${PROF#profile:}" "gv-mut-tmpfs-$RANDOM" \
		'b["HostConfig"]["Tmpfs"]={"/x": "size=1m"}')
	DOCKER_HOST=$E2 run_exact 1 ab-validate --container "$id" "$PROF"
	assert_regex "$stderr" "lockdown drift: HostConfig\.Tmpfs$"
	DOCKER_HOST=$E2 run_exact 0 ab-validate --container "$CID" "$PROF"
	DOCKER_HOST=$E2 run_exact 0 ab-clean "$ALLOC"
}

@test "a HOME volume's name held by someone else: ab-validate refuses in one line, makes no container, and leaves that volume alone" {
	local prof
	gv_alloc
	DOCKER_HOST=$E2 run_exact 0 ab-profile --alloc "$ALLOC" --phase execution \
		--attempt "gv-held-$RANDOM" --deadline "$DL" --runtime runsc -- true
	prof=$output
	e2 docker volume create "agentbox-${prof#profile:}-home" >/dev/null
	DOCKER_HOST=$E2 run_exact 1 ab-validate "$prof"
	assert_one_error_line ab-validate
	assert_regex "$stderr" "volume agentbox-${prof#profile:}-home exists with other options or labels"
	assert_equal "$(e2 docker ps -aq --filter "name=agentbox-${prof#profile:}")" ""
	assert_equal "$(e2 docker volume ls -q --filter "name=agentbox-${prof#profile:}")" \
		"agentbox-${prof#profile:}-home"
	e2 docker volume rm "agentbox-${prof#profile:}-home" >/dev/null
	DOCKER_HOST=$E2 run_exact 0 ab-clean "$ALLOC"
}

@test "the probe under runsc refuses what it sees from inside: a HOME of another size, a mount of the host's" {
	local small id sid
	sid=$(ab_state_sid)
	gv_alloc
	gv_ctr --runtime runsc -- true
	small=gv-small-$RANDOM
	e2 docker volume create --opt type=tmpfs --opt device=tmpfs \
		--opt o=size=1m,uid=10001,gid=10001,mode=0700 \
		--label "org.agentbox.state=$sid" \
		--label "org.agentbox.alloc=${ALLOC#alloc:}" "$small" >/dev/null
	id=$(DOCKER_HOST=$E2 python3 "$AB_ROOT/tests/lib/mutate.py" \
		"$AB_STATE_DIR/profile/${PROF#profile:}" "gv-mut-home-$RANDOM" \
		"[m.update(Source='$small') for m in b['HostConfig']['Mounts'] if m['Target'] == '/home/agent']")
	run e2 docker start -a "$id"
	assert_equal "$status" 126
	assert_output "agentbox-probe: refused: size of /home/agent"
	id=$(DOCKER_HOST=$E2 python3 "$AB_ROOT/tests/lib/mutate.py" \
		"$AB_STATE_DIR/profile/${PROF#profile:}" "gv-mut-mnt-$RANDOM" \
		"b['HostConfig']['Mounts'].append(dict(Type='volume', Source='$small', Target='/mnt'))")
	run e2 docker start -a "$id"
	assert_equal "$status" 126
	assert_output "agentbox-probe: refused: host path /mnt"
	DOCKER_HOST=$E2 run_exact 0 ab-clean "$ALLOC"
	assert_equal "$(e2 docker volume ls -q --filter "label=org.agentbox.alloc=${ALLOC#alloc:}")" ""
}

@test "ceilings under runsc: /work, HOME and /tmp hold their bytes and inodes (HOME and /tmp on host tmpfs volumes); /work/.git stays read-only" {
	gv_alloc --task-inodes 500 --task-bytes 4m
	gv_ctr --runtime runsc -- sh -c '
		for d in /work /tmp "$HOME"; do
			n=0
			# Not ":", a special builtin: its failed redirection would end sh.
			while [ "$n" -lt 30000 ] && printf "" >"$d/i$n" 2>/dev/null; do
				n=$((n + 1))
			done
			echo "$d $n"
			rm -f "$d"/i*
			head -c 400000000 /dev/zero >"$d/fill" 2>/dev/null && echo "$d filled" ||
				echo "$d full $(($(wc -c <"$d/fill") / 1048576))"
			rm -f "$d/fill"
		done
		touch /work/.git/x 2>/dev/null && echo .git writable || echo .git read-only'
	assert_equal "$(e2 docker volume inspect "agentbox-${PROF#profile:}-home" \
		--format '{{.Options.type}} {{.Options.o}}')" \
		"tmpfs size=67108864,nr_inodes=10000,uid=10001,gid=10001,mode=0700"
	assert_equal "$(e2 docker volume inspect "agentbox-${PROF#profile:}-tmp" \
		--format '{{.Options.o}}')" \
		"size=268435456,nr_inodes=20000,uid=10001,gid=10001,mode=1777"
	gv_run
	# Shown only if a check below fails.
	record_field 'r["stdout"]["text"]'
	python3 - "$(record_field 'r["stdout"]["text"]')" <<'EOF'
import sys
got = dict()
lines = sys.argv[1].splitlines()
for l in lines:
    k, _, v = l.partition(" ")
    got.setdefault(k, []).append(v)
# Files a filesystem takes before its inode ceiling: at most the ceiling,
# and not far below it (what is there already: the seed, the probe's).
for d, limit in (("/work", 500), ("/tmp", 20000), ("/home/agent", 10000)):
    n = int(got[d][0])
    assert limit - 64 <= n <= limit, (d, n)
# Bytes: full, near each ceiling in MiB.
for d, mib in (("/work", 4), ("/tmp", 256), ("/home/agent", 64)):
    word, have = got[d][1].split()
    assert word == "full" and mib - 2 <= int(have) <= mib, (d, got[d][1])
assert got[".git"] == ["read-only"], got[".git"]
EOF
	DOCKER_HOST=$E2 run_exact 0 ab-clean "$ALLOC"
	assert_equal "$(e2 docker volume ls -q --filter "label=org.agentbox.alloc=${ALLOC#alloc:}")" ""
}

@test "a fork bomb under runsc: the agent's cgroup never passes the default pids limit, and gVisor ends the sandbox there" {
	local out=$BATS_TEST_TMPDIR/out pid st peak=0 n cg hit=0 m
	gv_alloc
	gv_ctr --runtime runsc -- sh -c 'b() { b | b & }; b; exec sleep 1000'
	assert_equal "$(e2 docker inspect --format '{{.HostConfig.PidsLimit}}' "$CID")" 1024
	DOCKER_HOST=$E2 ab-run "$CTR" --grace 1 >"$out" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	pid=$!
	cg=/sys/fs/cgroup/pids/docker/$CID
	# Read by the shell itself, every 10 ms: the bomb climbs the last
	# few hundred pids, and gVisor ends the sandbox (its cgroup gone with
	# it), within one tenth of a second (seen: 765, then nothing).
	while kill -0 "$pid" 2>/dev/null; do
		if read -r n <"$cg/pids.current" 2>/dev/null; then
			[ "$n" -le "$peak" ] || peak=$n
		fi
		# Forks the limit refused, as the kernel counts them: "max N".
		if read -r _ m <"$cg/pids.events" 2>/dev/null; then
			[ "${m:-0}" -le "$hit" ] || hit=$m
		fi
		sleep 0.01
	done
	st=0
	wait "$pid" || st=$?
	echo "peak $peak of 1024, $hit refused; ab-run $st: $(cat "$BATS_TEST_TMPDIR/err")" >&2
	# Under the ptrace platform gVisor cannot start another stub and ends
	# the sandbox: exit 2, long before the profile's deadline.
	assert_equal "$st" 2
	RECORD=$(DOCKER_HOST=$E2 ab-run --show "$(cat "$out")")
	assert_equal "$(record_field 'r["reason"]')" exited
	# The bomb met the limit: the kernel refused it at least once, or it
	# was seen near it; and it never passed it.
	[ "$hit" -gt 0 ] || [ "$peak" -ge 900 ]
	[ "$peak" -le 1024 ]
	DOCKER_HOST=$E2 run_exact 0 ab-clean "$ALLOC"
}

@test "a start that fails under runsc (too few pids for gVisor itself) is ab-run's failure; nothing of it is left, no runsc process among them" {
	gv_alloc
	gv_ctr --runtime runsc --pids 8 -- true
	DOCKER_HOST=$E2 run --separate-stderr ab-run "$CTR"
	[ "$status" -ne 0 ]
	echo "ab-run $status: $stderr" >&2
	DOCKER_HOST=$E2 run_exact 0 ab-clean "$ALLOC"
	run runsc_procs
	assert_output ""
}

@test "egress under runsc: the agent reaches the proxy through the socket, and what it may not reach is refused" {
	local ns gw dir=$BATS_TEST_TMPDIR _
	ns=$(ab_engine ns gv)
	gw=$(e2 docker network inspect bridge --format '{{json .IPAM.Config}}' |
		python3 -c 'import ipaddress, json, sys
c = json.load(sys.stdin)[0]
print(c.get("Gateway") or next(ipaddress.ip_network(c["Subnet"]).hosts()))')
	ab_test_ca "$dir/ca" api.anthropic.com
	nsenter --net="/run/netns/$ns" python3 "$AB_ROOT/tests/lib/vendor.py" \
		--listen "$gw" --ready "$dir/vendor.port" --cert "$dir/ca/leaf.pem" \
		--key "$dir/ca/leaf.key" 3>&- &
	VPID=$!
	for _ in $(seq 1 100); do
		[ -s "$dir/vendor.port" ] && break
		sleep 0.05
	done
	gv_alloc --egress "api.anthropic.com:443=$gw:$(cat "$dir/vendor.port")"
	gv_ctr --runtime runsc --ca "$dir/ca/ca.pem" -- sh -c \
		'echo hi | openssl s_client -quiet -proxy 127.0.0.1:3128 -connect api.anthropic.com:443 -verify_return_error 2>/dev/null; printf "CONNECT evil.test:443 HTTP/1.1\r\n\r\n" | nc 127.0.0.1 3128 | head -n 1'
	gv_run
	assert_equal "$(record_field 'r["stdout"]["text"].splitlines()')" \
		'["vendor saw: hi", "HTTP/1.1 403 Forbidden"]'
	DOCKER_HOST=$E2 run_exact 0 ab-clean "$ALLOC"
}

@test "a hostile agent under runsc: no mount, no privilege, no network but lo, no host socket, no kernel log" {
	gv_alloc
	gv_ctr --runtime runsc -- sh -c '
		mount -t tmpfs x /tmp/m 2>/dev/null && echo mounted || echo no-mount
		unshare -r true 2>/dev/null && echo userns || echo no-userns
		chroot / true 2>/dev/null && echo chroot || echo no-chroot
		dmesg >/dev/null 2>&1 && echo dmesg || echo no-dmesg
		echo 1 >/proc/sys/kernel/panic 2>/dev/null && echo sysctl || echo no-sysctl
		touch /x 2>/dev/null && echo root-writable || echo root-read-only
		ls /sys/class/net
		ls /var/run/docker.sock /run/containerd 2>/dev/null || echo no-sockets
		nc -w 2 1.1.1.1 443 </dev/null 2>/dev/null && echo net || echo no-net'
	gv_run
	assert_equal "$(record_field 'r["stdout"]["text"]')" "no-mount
no-userns
no-chroot
no-dmesg
no-sysctl
root-read-only
lo
no-sockets
no-net"
	DOCKER_HOST=$E2 run_exact 0 ab-clean "$ALLOC"
}

# privs_gv DIGEST [DOCKER-OPTION...]: ab-privs alone under runsc, locked
# down as an agent is, with those options.
privs_gv() {
	local digest=$1
	shift
	DOCKER_HOST=$E2 run docker run --rm --runtime runsc --network none \
		--user 10001:10001 --cap-drop ALL --security-opt no-new-privileges \
		--label "org.agentbox.state=$(ab_state_sid)" "$@" \
		--entrypoint /usr/lib/agentbox/ab-privs "$digest"
}

@test "under runsc the agent can make no user namespace either: the probe's check passes in the lockdown, and ab-privs names one a weaker seccomp lets be made" {
	local digest allow=$BATS_TEST_TMPDIR/allow.json
	gv_alloc
	gv_ctr --runtime runsc -- sh -c 'unshare -U true 2>/dev/null && echo userns || echo no-userns'
	gv_run
	assert_equal "$(record_field '[r["reason"], r["probe"]]')" '["exited", "ok"]'
	assert_equal "$(record_field 'r["stdout"]["text"]')" no-userns
	# ab-privs, which the probe runs, alone: silent in the lockdown; a
	# filter that allows every call lets gVisor make one, and it says so.
	digest=$(e2 docker inspect "agentbox-${ALLOC#alloc:}-keeper" --format '{{.Image}}')
	privs_gv "$digest"
	assert_success
	assert_output ""
	printf '{"defaultAction": "SCMP_ACT_ALLOW"}\n' >"$allow"
	privs_gv "$digest" --security-opt "seccomp=$allow"
	assert_failure 1
	assert_output "user namespace"
	DOCKER_HOST=$E2 run_exact 0 ab-clean "$ALLOC"
}

@test "an image on the user's own base (--base: Python, no shell), under runsc: python3 -m unittest runs, and the probe proves the lockdown from inside gVisor" {
	local base img tag repo=$BATS_TEST_TMPDIR/prepo
	tag=abtest-gv-python-$RANDOM$RANDOM
	base=$(export DOCKER_HOST=$E2 && ab_python_base "$tag")
	img=$(DOCKER_HOST=$E2 ab-image build --base "$base")
	ab_unittest_repo "$repo"
	DOCKER_HOST=$E2 run_exact 0 ab-alloc --image "$img" --deadline "$DL"
	ALLOC=$output
	DOCKER_HOST=$E2 run_exact 0 ab-seed "$ALLOC" --repo "$repo" \
		--commit "$(git -C "$repo" rev-parse HEAD)" --deadline "$DL"
	gv_ctr --runtime runsc -- python3 -m unittest
	assert_equal "$(runtime_of "$CID")" runsc
	gv_run
	assert_equal "$(record_field '[r["probe"], r["exit_status"]]')" '["ok", 0]'
	assert_regex "$(record_field 'r["stderr"]["text"]')" $'Ran 1 test.*\nOK'
	DOCKER_HOST=$E2 ab-clean "$ALLOC" >/dev/null
	DOCKER_HOST=$E2 ab-image remove "$img" >/dev/null
	e2 docker rmi "$tag" >/dev/null
}

@test "an agent under runsc that forges times hides nothing from ab-export: each change exported, the files it left alone kept, never read" {
	local repo=$BATS_TEST_TMPDIR/forge co=$BATS_TEST_TMPDIR/co work=$BATS_TEST_TMPDIR/work
	forge_repo "$repo"
	DOCKER_HOST=$E2 run_exact 0 ab-alloc --image "$E2_IMAGE" --deadline "$DL"
	ALLOC=$output
	DOCKER_HOST=$E2 run_exact 0 ab-seed "$ALLOC" --repo "$repo" \
		--commit "$(git -C "$repo" rev-parse HEAD)" --deadline "$DL"
	gv_ctr --runtime runsc -- sh -c "$FORGE"
	gv_run
	assert_equal "$(record_field 'r["lockdown"]["HostConfig.Runtime"]')" runsc
	DOCKER_HOST=$E2 run_exact 0 ab-export "$ALLOC" --read changed \
		-o "$BATS_TEST_TMPDIR/p.patch"
	git clone -q "$repo" "$co"
	git -C "$co" apply --index "$BATS_TEST_TMPDIR/p.patch"
	mkdir "$work"
	e2 docker cp "agentbox-${ALLOC#alloc:}-keeper:/work/." - |
		tar -x -C "$work" --exclude=./.git
	assert_equal "$(listing "$co")" "$(listing "$work")"
	assert_equal "$(git -C "$co" diff --cached --name-status HEAD | LC_ALL=C sort)" "$FORGED"
	# The listing reads change times on the host's tmpfs, where gVisor's
	# gofer made each change: the 201 files left alone are kept.
	assert_equal "$(DOCKER_HOST=$E2 ab-run --show "$RESULT" |
		python3 -c 'import json,sys; r = json.load(sys.stdin)["export_read"]; print(r["files"], r["unchanged"], r["since_seed"])')" \
		"209 201 True"
	DOCKER_HOST=$E2 run_exact 0 ab-clean "$ALLOC"
}

@test "stopping the engine leaves no runsc process, and nothing of the file's state on it" {
	local dir
	dir=$(ab_engine dir gv)
	run ab_leftovers "$(ab_state_sid)"
	assert_output ""
	ab_engine_stop gv
	run ab_engine_procs "$dir"
	assert_output ""
	run pgrep -f "runsc.*$dir"
	assert_output ""
}
