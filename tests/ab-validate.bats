#!/usr/bin/env bats
# ab-profile and ab-validate: the frozen invocation, and exact validation of
# what the engine applied.

# shellcheck disable=SC2154 # bats sets status, output, stderr
# shellcheck disable=SC2016 # Python and shell text run elsewhere
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
	ALLOC=$(ab-alloc --image "$AB_IMAGE")
	ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" >/dev/null 2>&1
	DL=$BATS_FILE_TMPDIR/deadline
	ab_deadline_in "$DL" 3600
	export REPO COMMIT ALLOC DL
	PROFILE=$(ab-profile --alloc "$ALLOC" --phase execution \
		--attempt mutations --deadline "$DL" -- sh -c 'echo agent ran')
	# The names this file gives the engine's objects: its state's own, so
	# that another file or suite running at the same time never meets or
	# removes them (nor does an older suite, which removed every name
	# holding ab-mut- or ab-test-).
	NAMES=abtest-$(ab_state_sid | cut -c1-12)
	export PROFILE NAMES
}

teardown_file() {
	ab_drop_alloc "$ALLOC"
	ab_teardown_file
}

teardown() {
	docker ps -aq --filter "label=org.agentbox.alloc=${ALLOC#alloc:}" \
		--filter label=org.agentbox.role=agent | xargs -r docker rm -f >/dev/null
	docker ps -aq --filter "name=$NAMES-" | xargs -r docker rm -f >/dev/null
	docker volume rm -f "$NAMES-plain" >/dev/null 2>&1 || true
}

attempt() {
	printf 'a-%s-%s\n' "$BATS_TEST_NUMBER" "$RANDOM$RANDOM"
}

record() {
	printf '%s/profile/%s\n' "$AB_STATE_DIR" "${1#profile:}"
}

@test "a profile of each phase validates, and the probe passes inside" {
	local phase prof ctr
	for phase in planning questions execution; do
		run_exact 0 ab-profile --alloc "$ALLOC" --phase "$phase" \
			--attempt "$(attempt)" --deadline "$DL" -- sh -c 'echo agent ran'
		prof=$output
		[[ $prof =~ ^profile:[0-9a-f]{32}$ ]]
		run_exact 0 ab-validate "$prof"
		ctr=$output
		[[ $ctr =~ ^ctr:[0-9a-f]{32}$ ]]
		run docker start -a "agentbox-${prof#profile:}"
		assert_success
		assert_line --index 0 --regexp '^agentbox-probe: ok [0-9a-f]{32}$'
		assert_line --index 1 "agent ran"
	done
}

@test "the caller's environment, the host's paths and the state never reach inside" {
	local prof
	FAKE_TOKEN=sk-secret run_exact 0 ab-profile --alloc "$ALLOC" \
		--phase planning --attempt "$(attempt)" --deadline "$DL" -- \
		sh -c "env; ls -d '$REPO' '$AB_STATE_DIR' /var/run/docker.sock 2>&1"
	prof=$output
	FAKE_TOKEN=sk-secret run_exact 0 ab-validate "$prof"
	run docker start -a "agentbox-${prof#profile:}"
	refute_output --partial sk-secret
	refute_output --partial FAKE_TOKEN
	assert_output --partial "$REPO: No such file"
	assert_output --partial "$AB_STATE_DIR: No such file"
	assert_output --partial "docker.sock: No such file"
	run grep -c sk-secret "$(record "$prof")"
	assert_output 0
}

@test "an unchanged copy made through the engine API is accepted" {
	local id
	id=$(python3 "$AB_ROOT/tests/lib/mutate.py" "$(record "$PROFILE")" "$NAMES-mut-copy")
	run_exact 0 ab-validate --container "$id" "$PROFILE"
}

# mutation FIELD STATEMENT: a copy with one property changed is refused,
# naming the field.
mutation() {
	local field=$1 id
	id=$(python3 "$AB_ROOT/tests/lib/mutate.py" "$(record "$PROFILE")" \
		"$NAMES-mut-$BATS_TEST_NUMBER" "$2")
	run_exact 1 ab-validate --container "$id" "$PROFILE"
	assert_one_error_line ab-validate
	assert_regex "$stderr" "lockdown drift: ${field//./\\.}\$"
}

@test "mutation: a capability added" { mutation HostConfig.CapAdd 'b["HostConfig"]["CapAdd"]=["NET_RAW"]'; }
@test "mutation: CapDrop missing" { mutation HostConfig.CapDrop 'b["HostConfig"]["CapDrop"]=[]'; }
@test "mutation: a bind mount of /" { mutation HostConfig.Binds 'b["HostConfig"]["Binds"]=["/:/host:ro"]'; }
@test "mutation: /work/.git writable" { mutation HostConfig.Mounts 'b["HostConfig"]["Mounts"][1]["ReadOnly"]=False'; }
@test "mutation: an extra tmpfs" { mutation HostConfig.Tmpfs 'b["HostConfig"]["Tmpfs"]["/x"]="size=1m"'; }
@test "mutation: a tmpfs option changed" { mutation HostConfig.Tmpfs 'b["HostConfig"]["Tmpfs"]["/tmp"]=b["HostConfig"]["Tmpfs"]["/tmp"].replace("nosuid,","")'; }
@test "mutation: network bridge" { mutation HostConfig.NetworkMode 'b["HostConfig"]["NetworkMode"]="bridge"'; }
@test "mutation: host PID namespace" { mutation HostConfig.PidMode 'b["HostConfig"]["PidMode"]="host"'; }
@test "mutation: host IPC" { mutation HostConfig.IpcMode 'b["HostConfig"]["IpcMode"]="host"'; }
@test "mutation: host UTS namespace" { mutation HostConfig.UTSMode 'b["HostConfig"]["UTSMode"]="host"'; }
@test "mutation: host cgroup namespace" { mutation HostConfig.CgroupnsMode 'b["HostConfig"]["CgroupnsMode"]="host"'; }
@test "mutation: privileged" { mutation HostConfig.Privileged 'b["HostConfig"]["Privileged"]=True'; }
@test "mutation: a device" { mutation HostConfig.Devices 'b["HostConfig"]["Devices"]=[{"PathOnHost":"/dev/null","PathInContainer":"/dev/x","CgroupPermissions":"rwm"}]'; }
@test "mutation: seccomp unconfined" { mutation HostConfig.SecurityOpt 'b["HostConfig"]["SecurityOpt"]=b["HostConfig"]["SecurityOpt"]+["seccomp=unconfined"]'; }
@test "mutation: no-new-privileges missing" { mutation HostConfig.SecurityOpt 'b["HostConfig"]["SecurityOpt"]=[]'; }
@test "mutation: an extra security option" { mutation HostConfig.SecurityOpt 'b["HostConfig"]["SecurityOpt"]=b["HostConfig"]["SecurityOpt"]+["label=disable"]'; }
@test "mutation: runtime changed" { mutation HostConfig.Runtime 'b["HostConfig"]["Runtime"]="io.containerd.runc.v2"'; }
@test "mutation: restart policy always" { mutation HostConfig.RestartPolicy.Name 'b["HostConfig"]["RestartPolicy"]={"Name":"always"}'; }
@test "mutation: swap unlimited" { mutation HostConfig.MemorySwap 'b["HostConfig"]["MemorySwap"]=-1'; }
@test "mutation: memory changed" { mutation HostConfig.Memory 'b["HostConfig"]["Memory"]+=1<<20; b["HostConfig"]["MemorySwap"]=b["HostConfig"]["Memory"]'; }
@test "mutation: pids unlimited" { mutation HostConfig.PidsLimit 'b["HostConfig"]["PidsLimit"]=-1'; }
@test "mutation: CPU changed" { mutation HostConfig.NanoCpus 'b["HostConfig"]["NanoCpus"]=2000000000'; }
@test "mutation: read-only root off" { mutation HostConfig.ReadonlyRootfs 'b["HostConfig"]["ReadonlyRootfs"]=False'; }
@test "mutation: user root" { mutation Config.User 'b["User"]="0:0"'; }
@test "mutation: an extra environment variable" { mutation Config.Env 'b["Env"]=b["Env"]+["EXTRA=1"]'; }
@test "mutation: PATH changed" { mutation Config.Env 'b["Env"]=[e if not e.startswith("PATH=") else "PATH=/tmp:/usr/bin:/bin" for e in b["Env"]]'; }
@test "mutation: entrypoint changed" { mutation Config.Entrypoint 'b["Entrypoint"]=["/bin/sh"]'; }
@test "mutation: argv changed" { mutation Config.Cmd 'b["Cmd"]=["sh","-c","echo other"]'; }
@test "mutation: a label changed" { mutation Config.Labels.org.agentbox.profile 'b["Labels"]["org.agentbox.profile"]="0"*32'; }
@test "mutation: a log without a size cap" { mutation HostConfig.LogConfig.Config.max-size 'b["HostConfig"]["LogConfig"]["Config"].pop("max-size")'; }
@test "mutation: a sysctl" { mutation HostConfig.Sysctls 'b["HostConfig"]["Sysctls"]={"net.ipv4.ip_unprivileged_port_start":"0"}'; }
@test "mutation: an extra group" { mutation HostConfig.GroupAdd 'b["HostConfig"]["GroupAdd"]+=["0"]'; }
@test "mutation: without the invocation's group" { mutation HostConfig.GroupAdd 'b["HostConfig"]["GroupAdd"]=[]'; }
@test "mutation: another invocation's group" { mutation HostConfig.GroupAdd 'b["HostConfig"]["GroupAdd"]=["123456"]'; }
@test "mutation: shm size changed" { mutation HostConfig.ShmSize 'b["HostConfig"]["ShmSize"]=1<<30'; }
@test "mutation: open-files limit changed" { mutation HostConfig.Ulimits 'b["HostConfig"]["Ulimits"][0]["Hard"]=1<<20; b["HostConfig"]["Ulimits"][0]["Soft"]=1<<20'; }
@test "mutation: an init process" { mutation HostConfig.Init 'b["HostConfig"]["Init"]=True'; }
@test "mutation: a TTY" { mutation Config.Tty 'b["Tty"]=True'; }
@test "mutation: /proc unmasked" { mutation HostConfig.MaskedPaths 'b["HostConfig"]["MaskedPaths"]=[]'; }
@test "mutation: /proc/sys writable" { mutation HostConfig.ReadonlyPaths 'b["HostConfig"]["ReadonlyPaths"]=[]'; }
@test "mutation: a device cgroup rule" { mutation HostConfig.DeviceCgroupRules 'b["HostConfig"]["DeviceCgroupRules"]=["c 1:3 rwm"]'; }
# Fields compared since validation denies by default (each was accepted,
# whatever it held, before).  HostConfig.BlkioWeight is not among them:
# this engine drops it (the kernel cannot enforce it), so no container can
# hold it.
@test "mutation: working directory" { mutation Config.WorkingDir 'b["WorkingDir"]="/"'; }
@test "mutation: hostname" { mutation Config.Hostname 'b["Hostname"]="x"'; }
@test "mutation: domain name" { mutation Config.Domainname 'b["Domainname"]="example.com"'; }
@test "mutation: stdin attached" { mutation Config.AttachStdin 'b["AttachStdin"]=True'; }
@test "mutation: stdin once" { mutation Config.StdinOnce 'b["StdinOnce"]=True'; }
@test "mutation: stop signal" { mutation Config.StopSignal 'b["StopSignal"]="SIGKILL"'; }
@test "mutation: stop timeout" { mutation Config.StopTimeout 'b["StopTimeout"]=1'; }
@test "mutation: a health check that runs a command" { mutation Config.Healthcheck 'b["Healthcheck"]={"Test":["CMD","true"]}'; }
@test "mutation: a label added" { mutation Config.Labels.x 'b["Labels"]["x"]="y"'; }
@test "mutation: a shell" { mutation Config.Shell 'b["Shell"]=["/bin/sh","-c"]'; }
@test "mutation: build triggers" { mutation Config.OnBuild 'b["OnBuild"]=["RUN x"]'; }
@test "mutation: a MAC address" { mutation Config.MacAddress 'b["MacAddress"]="02:42:ac:11:00:02"'; }
@test "mutation: escaped arguments" { mutation Config.ArgsEscaped 'b["ArgsEscaped"]=True'; }
@test "mutation: another cgroup parent" { mutation HostConfig.CgroupParent 'b["HostConfig"]["CgroupParent"]="/agentbox-test"'; }
@test "mutation: OOM score" { mutation HostConfig.OomScoreAdj 'b["HostConfig"]["OomScoreAdj"]=-500'; }
@test "mutation: removed when it exits" { mutation HostConfig.AutoRemove 'b["HostConfig"]["AutoRemove"]=True'; }
@test "mutation: CPU shares" { mutation HostConfig.CpuShares 'b["HostConfig"]["CpuShares"]=512'; }
@test "mutation: CPU set" { mutation HostConfig.CpusetCpus 'b["HostConfig"]["CpusetCpus"]="0"'; }
@test "mutation: memory nodes" { mutation HostConfig.CpusetMems 'b["HostConfig"]["CpusetMems"]="0"'; }
@test "mutation: block I/O throttle" { mutation HostConfig.BlkioDeviceReadBps 'b["HostConfig"]["BlkioDeviceReadBps"]=[{"Path":"/dev/null","Rate":1048576}]'; }
@test "mutation: memory reservation" { mutation HostConfig.MemoryReservation 'b["HostConfig"]["MemoryReservation"]=64<<20'; }
@test "mutation: swappiness" { mutation HostConfig.MemorySwappiness 'b["HostConfig"]["MemorySwappiness"]=100'; }
@test "mutation: kernel memory" { mutation HostConfig.KernelMemory 'b["HostConfig"]["KernelMemory"]=64<<20'; }
@test "mutation: kernel TCP memory" { mutation HostConfig.KernelMemoryTCP 'b["HostConfig"]["KernelMemoryTCP"]=64<<20'; }
@test "mutation: DNS servers" { mutation HostConfig.Dns 'b["HostConfig"]["Dns"]=["1.1.1.1"]'; }
@test "mutation: DNS search" { mutation HostConfig.DnsSearch 'b["HostConfig"]["DnsSearch"]=["example.com"]'; }
@test "mutation: DNS options" { mutation HostConfig.DnsOptions 'b["HostConfig"]["DnsOptions"]=["ndots:1"]'; }
@test "mutation: a log option agentbox does not set" { mutation 'HostConfig.LogConfig.Config.compress [(]a field agentbox does not know[)]' 'b["HostConfig"]["LogConfig"]["Config"]["compress"]="true"'; }
@test "mutation: more log files" { mutation HostConfig.LogConfig.Config.max-file 'b["HostConfig"]["LogConfig"]["Config"]["max-file"]="5"'; }
@test "mutation: a volume driver" { mutation HostConfig.VolumeDriver 'b["HostConfig"]["VolumeDriver"]="local"'; }
@test "mutation: a container ID file" { mutation HostConfig.ContainerIDFile 'b["HostConfig"]["ContainerIDFile"]="/tmp/x"'; }
@test "mutation: volume labels on a mount" { mutation HostConfig.Mounts 'b["HostConfig"]["Mounts"][0]["VolumeOptions"]["Labels"]={"a":"b"}'; }
@test "mutation: mount consistency" { mutation HostConfig.Mounts 'b["HostConfig"]["Mounts"][0]["Consistency"]="cached"'; }
@test "mutation: console size" { mutation HostConfig.ConsoleSize 'b["HostConfig"]["ConsoleSize"]=[10,10]'; }
@test "mutation: isolation" { mutation HostConfig.Isolation 'b["HostConfig"]["Isolation"]="default"'; }
@test "mutation: real-time CPU" { mutation HostConfig.CpuRealtimeRuntime 'b["HostConfig"]["CpuRealtimeRuntime"]=1000'; }
@test "mutation: CPU count" { mutation HostConfig.CpuCount 'b["HostConfig"]["CpuCount"]=1'; }
@test "mutation: cgroup of another container" { mutation HostConfig.Cgroup 'b["HostConfig"]["Cgroup"]="x"'; }

@test "the keeper is validated the same way: a field it never had refuses the profile" {
	local prof other
	other=$(ab-alloc --image "$AB_IMAGE")
	ab-seed "$other" --repo "$REPO" --commit "$COMMIT" >/dev/null 2>&1
	run_exact 0 ab-profile --alloc "$other" --phase planning \
		--attempt "$(attempt)" --deadline "$DL" -- true
	prof=$output
	docker update --cpu-shares 512 "agentbox-${other#alloc:}-keeper" >/dev/null
	run_exact 1 ab-validate "$prof"
	assert_one_error_line ab-validate
	assert_regex "$stderr" "keeper of alloc:.*lockdown drift: HostConfig.CpuShares\$"
	run_exact 0 ab-clean "$other"
}

@test "mutation: the task volume replaced by one without a size limit" {
	docker volume create "$NAMES-plain" >/dev/null
	mutation HostConfig.Mounts "b[\"HostConfig\"][\"Mounts\"][0][\"Source\"]=\"$NAMES-plain\""
}

@test "a change made to a validated container is caught at the next check" {
	local prof
	run_exact 0 ab-profile --alloc "$ALLOC" --phase execution \
		--attempt "$(attempt)" --deadline "$DL" -- true
	prof=$output
	run_exact 0 ab-validate "$prof"
	docker update --restart=always "agentbox-${prof#profile:}" >/dev/null
	run_exact 1 ab-validate --container "agentbox-${prof#profile:}" "$prof"
	assert_regex "$stderr" "HostConfig.RestartPolicy.Name"
	docker update --restart=no --memory 900m --memory-swap 900m \
		"agentbox-${prof#profile:}" >/dev/null
	run_exact 1 ab-validate --container "agentbox-${prof#profile:}" "$prof"
	assert_regex "$stderr" "HostConfig.Memory"
}

@test "a container name already held is refused, and that container is left alone" {
	local prof
	run_exact 0 ab-profile --alloc "$ALLOC" --phase planning \
		--attempt "$(attempt)" --deadline "$DL" -- true
	prof=$output
	docker create --name "agentbox-${prof#profile:}" \
		"$(docker inspect "agentbox-${ALLOC#alloc:}-keeper" --format '{{.Image}}')" \
		>/dev/null
	run_exact 1 ab-validate "$prof"
	assert_equal "$stderr" "ab-validate: $prof was validated already: its container agentbox-${prof#profile:} exists (one container per profile; ab-profile makes another)"
	docker inspect "agentbox-${prof#profile:}" >/dev/null
	docker rm -f "agentbox-${prof#profile:}" >/dev/null
}

@test "a profile record edited to relax a value is refused" {
	local prof rec
	run_exact 0 ab-profile --alloc "$ALLOC" --phase planning \
		--attempt "$(attempt)" --deadline "$DL" -- true
	prof=$output
	rec=$(record "$prof")
	sed -i 's/"phase":"planning"/"phase":"execution"/' "$rec"
	run_exact 1 ab-validate "$prof"
	assert_regex "$stderr" "record was altered"
}

@test "an attempt ID is used once, ever" {
	local a
	a=$(attempt)
	run_exact 0 ab-profile --alloc "$ALLOC" --phase planning --attempt "$a" \
		--deadline "$DL" -- true
	run_exact 1 ab-profile --alloc "$ALLOC" --phase execution --attempt "$a" \
		--deadline "$DL" -- true
	assert_regex "$stderr" "used before"
	# Also after the profile's record is gone.
	rm -f "$AB_STATE_DIR"/profile/*
	run_exact 1 ab-profile --alloc "$ALLOC" --phase planning --attempt "$a" \
		--deadline "$DL" -- true
}

@test "an attempt ID stays used after ab-clean of its allocation" {
	local a other
	a=$(attempt)
	other=$(ab-alloc --image "$AB_IMAGE")
	ab-seed "$other" --repo "$REPO" --commit "$COMMIT" >/dev/null 2>&1
	run_exact 0 ab-profile --alloc "$other" --phase planning --attempt "$a" \
		--deadline "$DL" -- true
	run_exact 0 ab-clean "$other"
	other=$(ab-alloc --image "$AB_IMAGE")
	ab-seed "$other" --repo "$REPO" --commit "$COMMIT" >/dev/null 2>&1
	run_exact 1 ab-profile --alloc "$other" --phase planning --attempt "$a" \
		--deadline "$DL" -- true
	assert_regex "$stderr" "used before"
	run_exact 0 ab-clean "$other"
}

@test "bad invocations are refused with their status" {
	run_exact 2 ab-profile --alloc "$ALLOC" --phase planning \
		--attempt "$(attempt)" --deadline "$DL" --allow-command ls -- true
	run_exact 2 ab-profile --alloc "$ALLOC" --phase planning --attempt "$(attempt)" -- true
	assert_regex "$stderr" "needs a deadline"
	run_exact 2 ab-profile --alloc "$ALLOC" --phase sleeping \
		--attempt "$(attempt)" --deadline "$DL" -- true
	run_exact 2 ab-profile --alloc "$ALLOC" --phase planning \
		--attempt 'bad id' --deadline "$DL" -- true
	run_exact 2 ab-profile --alloc "$ALLOC" --phase planning \
		--attempt "$(attempt)" --deadline "$DL"
	run_exact 1 ab-profile --alloc "$ALLOC" --phase execution \
		--attempt "$(attempt)" --deadline "$DL" --memory 64M -- true
	assert_regex "$stderr" "below the writable ceilings"
	local past=$BATS_TEST_TMPDIR/past
	ab_deadline_in "$past" -1
	run_exact 124 ab-profile --alloc "$ALLOC" --phase planning \
		--attempt "$(attempt)" --deadline "$past" -- true
	run_exact 1 ab-validate profile:0123456789abcdef0123456789abcdef
}

@test "a later --deadline does not extend a profile; an earlier one binds" {
	local prof past=$BATS_TEST_TMPDIR/past
	run_exact 0 ab-profile --alloc "$ALLOC" --phase planning \
		--attempt "$(attempt)" --deadline "$DL" -- true
	prof=$output
	ab_deadline_in "$past" -1
	run_exact 124 ab-validate "$prof" --deadline "$past"
}

@test "the man pages name every option of --help" {
	assert_man_covers_help ab-profile 8
	assert_man_covers_help ab-validate 2
}

@test "a schema is snapshotted into the inputs, read-only inside, its SHA-256 recorded" {
	local s=$BATS_TEST_TMPDIR/schema.json prof
	printf '{"type":"object"}\n' >"$s"
	run_exact 0 ab-profile --alloc "$ALLOC" --phase planning \
		--attempt "$(attempt)" --deadline "$DL" --schema "$s" -- \
		sh -c 'cat /run/agentbox/inputs/*/schema.json; touch /run/agentbox/inputs/x 2>&1 || echo refused'
	prof=$output
	grep -q "\"schema_sha256\":\"$(sha256sum "$s" | cut -d' ' -f1)\"" "$(record "$prof")"
	run_exact 0 ab-validate "$prof"
	run docker start -a "agentbox-${prof#profile:}"
	assert_line '{"type":"object"}'
	assert_line refused
}

@test "a schema that is a symlink, a FIFO, too large or missing is refused" {
	local d=$BATS_TEST_TMPDIR
	printf '{}' >"$d/real.json"
	ln -s "$d/real.json" "$d/link.json"
	mkfifo "$d/fifo.json"
	head -c 70000 /dev/zero >"$d/big.json"
	run_exact 1 ab-profile --alloc "$ALLOC" --phase planning \
		--attempt "$(attempt)" --deadline "$DL" --schema "$d/link.json" -- true
	assert_regex "$stderr" "symbolic link"
	run_exact 1 ab-profile --alloc "$ALLOC" --phase planning \
		--attempt "$(attempt)" --deadline "$DL" --schema "$d/fifo.json" -- true
	assert_regex "$stderr" "not a regular file"
	run_exact 1 ab-profile --alloc "$ALLOC" --phase planning \
		--attempt "$(attempt)" --deadline "$DL" --schema "$d/big.json" -- true
	assert_regex "$stderr" "larger than 65536 bytes"
	run_exact 2 ab-profile --alloc "$ALLOC" --phase planning \
		--attempt "$(attempt)" --deadline "$DL" --schema "$d/none.json" -- true
}

# group PROFILE: the invocation's group, from its record.
group() {
	sed -n 's/.*"group":\([0-9]*\).*/\1/p' "$(record "$1")"
}

@test "each invocation has a group of its own, which its container alone is given" {
	local a b ga gb
	run_exact 0 ab-profile --alloc "$ALLOC" --phase planning \
		--attempt "$(attempt)" --deadline "$DL" -- true
	a=$output
	run_exact 0 ab-profile --alloc "$ALLOC" --phase planning \
		--attempt "$(attempt)" --deadline "$DL" -- true
	b=$output
	ga=$(group "$a")
	gb=$(group "$b")
	[ "$ga" -ge 100000 ] && [ "$ga" -lt 1073741824 ]
	[ "$gb" -ge 100000 ] && [ "$gb" -lt 1073741824 ]
	[ "$ga" != "$gb" ]
	run_exact 0 ab-validate "$a"
	assert_equal "$(docker inspect "agentbox-${a#profile:}" --format '{{json .HostConfig.GroupAdd}}')" "[\"$ga\"]"
	assert_equal "$(docker inspect "agentbox-${ALLOC#alloc:}-keeper" --format '{{json .HostConfig.GroupAdd}}')" null
	# A record without its group, or with one out of range, is refused.
	sed -i "s/\"group\":$gb,/\"group\":0,/" "$(record "$b")"
	run_exact 1 ab-validate "$b"
	assert_regex "$stderr" "record was altered|the invocation's group is out of bounds"
}

@test "one invocation's schema is not another agent's to read, and both are root's and its group's" {
	local d=$BATS_TEST_TMPDIR a b ga out
	printf '{"type":"object","description":"mine-%s"}\n' "$RANDOM$RANDOM" >"$d/a.json"
	printf '{"type":"object"}\n' >"$d/b.json"
	run_exact 0 ab-profile --alloc "$ALLOC" --phase planning \
		--attempt "$(attempt)" --deadline "$DL" --schema "$d/a.json" -- true
	a=$output
	run_exact 0 ab-profile --alloc "$ALLOC" --phase planning \
		--attempt "$(attempt)" --deadline "$DL" --schema "$d/b.json" -- \
		sh -c "cat /run/agentbox/inputs/${a#profile:}/schema.json 2>&1;
			ls /run/agentbox/inputs/${a#profile:} 2>&1;
			cat /run/agentbox/inputs/*/schema.json"
	b=$output
	run_exact 0 ab-validate "$b"
	out=$(docker start -a "agentbox-${b#profile:}")
	assert_equal "$(grep -c 'Permission denied' <<<"$out")" 2
	[[ $out != *mine-* ]] || fail "b read a's schema"
	grep -qx '{"type":"object"}' <<<"$out"
	# As the engine extracted them: the tar's owners and modes.
	ga=$(group "$a")
	assert_equal "$(docker exec -u 0 "agentbox-${ALLOC#alloc:}-keeper" \
		stat -c '%u:%g %a %n' "/run/agentbox/inputs/${a#profile:}" \
		"/run/agentbox/inputs/${a#profile:}/schema.json")" \
		"0:$ga 750 /run/agentbox/inputs/${a#profile:}
0:$ga 440 /run/agentbox/inputs/${a#profile:}/schema.json"
}
