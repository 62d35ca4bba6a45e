# engine2.bash: Docker engines of the test's own besides the host's, for
# the tests of agentbox against more than one engine.
#
# Each runs in a network namespace of its own (nsenter --net, not ip netns
# exec, which remounts /sys and hides the cgroup mounts), with its own
# configuration file (the host's daemon.json names a data root and a
# storage driver that conflict with the flags), data and exec roots, the
# vfs storage driver, its own containerd namespaces, and its own key file,
# so that its /info ID differs from the host engine's unless a test gives
# two the same key.  Its bridge is made inside its namespace; it never
# touches the host's iptables.  Never start one with --bridge none in the
# host's namespace: that deletes the host's docker0.  Starting an engine
# needs root.  What a test needs of an engine is kept in files under
# $BATS_FILE_TMPDIR/engines/NAME, so every test of the file finds it.

# shellcheck shell=bash

# The host's bridge and packet filter as text, to compare before and after.
# The rules of the host engine's own user-defined networks (br-ID) are
# left out: other suites sharing the engine make and remove egress
# networks meanwhile, and an engine of the test's own makes no rule of the
# host's (--iptables=false, in its own namespace).
ab_host_net() {
	ip -br link show docker0 2>&1 || true
	{ iptables-save || true; } 2>/dev/null |
		grep -v -E '^#|br-[0-9a-f]{12}\b' || true
	{ ip6tables-save || true; } 2>/dev/null |
		grep -v -E '^#|br-[0-9a-f]{12}\b' || true
}

# ab_engine_start NAME [KEYFILE]: starts engine NAME, with a copy of
# KEYFILE as its key when given (the same /info ID as KEYFILE's engine).
# AB_ENGINE_RUNTIMES, when set, is the "runtimes" object of its
# configuration (the OCI runtimes registered on it, gVisor's among them).
ab_engine_start() {
	local name=$1 key=${2:-} e dir ns host
	if [ "$(id -u)" -ne 0 ]; then
		echo "starting an engine needs root (make check runs as root in CI)" >&2
		return 1
	fi
	e=$BATS_FILE_TMPDIR/engines/$name
	mkdir -p "$e"
	# Short: containerd's socket under the exec root must fit sun_path.
	dir=$(mktemp -d /tmp/abe.XXXXXX)
	ns=abtest-$(ab_state_sid | cut -c1-12)-$name
	host=unix://$dir/d.sock
	printf '%s\n' "$dir" >"$e/dir"
	printf '%s\n' "$ns" >"$e/ns"
	printf '%s\n' "$host" >"$e/host"
	[ -z "$key" ] || cp "$key" "$dir/key.json"
	ab_engine_config "$dir" "${AB_ENGINE_RUNTIMES:-}"
	ip netns add "$ns" || return 1
	ip -n "$ns" link set lo up
	ab_engine_launch "$name"
}

# ab_engine_config DIR RUNTIMES: the configuration file of the engine
# whose roots are DIR, with RUNTIMES (JSON, or "") as its runtimes.
ab_engine_config() {
	printf '{"deprecated-key-path": "%s/key.json"%s}\n' "$1" \
		"${2:+, \"runtimes\": $2}" >"$1/daemon.json"
}

# ab_engine_reload NAME RUNTIMES: engine NAME's runtimes replaced, as an
# operator does it: the configuration file rewritten, then SIGHUP, which
# makes the running daemon read its runtimes again.  Returns once /info
# shows the change.
ab_engine_reload() {
	local e=$BATS_FILE_TMPDIR/engines/$1 dir host want _
	dir=$(cat "$e/dir") host=$(cat "$e/host")
	ab_engine_config "$dir" "$2"
	kill -HUP "$(cat "$e/pid")" || return 1
	want=${2:-"{}"}
	for _ in $(seq 1 100); do
		DOCKER_HOST=$host docker info --format '{{json .Runtimes}}' |
			python3 -c 'import json, sys
sys.exit(not set(json.loads(sys.argv[1])) <= set(json.load(sys.stdin)))' \
				"$want" && return 0
		sleep 0.1
	done
	echo "engine $1 did not take runtimes $want" >&2
	return 1
}

# Runs the dockerd of engine NAME on its roots, in its namespace, and
# waits until it answers.  Its log is appended to: a restart keeps what
# the engine said before it was lost.
ab_engine_launch() {
	local name=$1 e dir ns host _
	e=$BATS_FILE_TMPDIR/engines/$name
	dir=$(cat "$e/dir") ns=$(cat "$e/ns") host=$(cat "$e/host")
	nsenter --net="/run/netns/$ns" dockerd \
		--config-file "$dir/daemon.json" -H "$host" \
		--data-root "$dir/data" --exec-root "$dir/exec" \
		--pidfile "$dir/pid" --storage-driver vfs \
		--iptables=false --ip-forward=false --ip-masq=false \
		--containerd-namespace "$ns" \
		--containerd-plugins-namespace "$ns-p" \
		>>"$dir/log" 2>&1 3>&- &
	printf '%s\n' "$!" >"$e/pid"
	# Not this shell's job: its death by ab_engine_kill is no news.
	disown "$!"
	for _ in $(seq 1 300); do
		DOCKER_HOST=$host docker version >/dev/null 2>&1 && return 0
		kill -0 "$(cat "$e/pid")" 2>/dev/null || break
		sleep 0.1
	done
	echo "engine $name did not start: $(tail -1 "$dir/log")" >&2
	return 1
}

# ab_engine FIELD NAME: the engine's dir, ns, host or pid, or the image
# ab_engines_setup_file built on it.
ab_engine() {
	cat "$BATS_FILE_TMPDIR/engines/$2/$1"
}

# ab_engine_kill NAME: engine NAME lost, as a crash or an OOM kill loses
# it: its dockerd killed with SIGKILL, and waited for until it is gone.
# Its containerd goes with it (dockerd starts it with a parent-death
# signal); the shims, and so the containers, run on, as they would.  Its
# roots, its namespace and its data (the mark volume among them) stay,
# for ab_engine_restart.
ab_engine_kill() {
	local e=$BATS_FILE_TMPDIR/engines/$1 pid _
	pid=$(cat "$e/pid") || return 1
	kill -KILL "$pid" || return 1
	for _ in $(seq 1 200); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.05
	done
	echo "engine $1 (dockerd $pid) did not die of SIGKILL" >&2
	return 1
}

# ab_engine_restart NAME: engine NAME again, after ab_engine_kill, on the
# same roots and socket: the same engine, its mark and objects as it left
# them.  Without live-restore it kills the containers it finds running.
ab_engine_restart() {
	local e=$BATS_FILE_TMPDIR/engines/$1
	if kill -0 "$(cat "$e/pid")" 2>/dev/null; then
		echo "engine $1 is running: kill it first" >&2
		return 1
	fi
	ab_engine_launch "$1"
}

# The processes of the engine whose roots are $1, by their PIDs: those
# with an argument under its roots (its dockerd, its containerd, and the
# shims that outlive them when it is lost).  The roots are a fresh mktemp
# directory, so no other engine's process has one.
ab_engine_procs() {
	local p
	for p in /proc/[0-9]*; do
		tr '\0' '\n' 2>/dev/null <"$p/cmdline" |
			awk -v d="$1/" 'index($0, d) == 1 { f = 1 } END { exit !f }' &&
			echo "${p#/proc/}"
	done
	return 0
}

# Stops engine NAME and removes its namespace and roots; 0 when it is not
# running (stopped before, or never started).
ab_engine_stop() {
	local e=$BATS_FILE_TMPDIR/engines/$1 dir pid p _
	[ -f "$e/dir" ] || return 0
	dir=$(cat "$e/dir")
	pid=$(cat "$e/pid" 2>/dev/null) || pid=
	# An engine lost (ab_engine_kill) and not restarted left its shims,
	# and its containers, running: started again it kills them (no
	# live-restore), and then stops as any other.  Should it not start,
	# its containers are killed through their shims' children.
	if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null &&
		[ -n "$(ab_engine_procs "$dir")" ]; then
		if ab_engine_launch "$1"; then
			pid=$(cat "$e/pid")
		else
			for p in $(ab_engine_procs "$dir"); do
				pgrep -P "$p" | xargs -r kill -KILL 2>/dev/null
				kill -KILL "$p" 2>/dev/null
			done
		fi
	fi
	if [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; then
		for _ in $(seq 1 200); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	ip netns del "$(cat "$e/ns")" 2>/dev/null || true
	# Mounts the engine left (its own, in the host's mount namespace).
	grep -F " $dir/" /proc/self/mountinfo | awk '{ print $5 }' |
		sort -r | xargs -r -n1 umount -l 2>/dev/null || true
	rm -rf "$dir" "$e"
}

# Every engine the file started.
ab_engines_stop() {
	local e
	for e in "$BATS_FILE_TMPDIR"/engines/*; do
		[ -d "$e" ] || continue
		ab_engine_stop "$(basename "$e")"
	done
}

# ab_engines_setup_file [--image] [NAME...]: how a file of engines
# begins: a state directory of its own, no engine named by the
# environment, and the host's bridge and packet filter as they were
# before any engine (net.before, for ab_host_net_unchanged).  With
# --image, AB_IMAGE is an image built on the host's engine.  Then each
# engine NAME is started, with an image of its own (ab_engine image NAME).
ab_engines_setup_file() {
	local name
	AB_STATE_DIR=$(ab_new_state)
	export AB_STATE_DIR
	unset AB_DEADLINE AB_TEST_PAUSE DOCKER_HOST DOCKER_CONTEXT
	ab_host_net >"$BATS_FILE_TMPDIR/net.before"
	if [ "${1:-}" = --image ]; then
		shift
		AB_IMAGE=$(ab_engine_build "") || return 1
		export AB_IMAGE
	fi
	for name in "$@"; do
		ab_engine_start "$name" || return 1
		ab_engine_build "$(ab_engine host "$name")" \
			>"$BATS_FILE_TMPDIR/engines/$name/image" || return 1
	done
}

# ab_engine_build HOST [AB-IMAGE BUILD OPTION...]: the handle of an image
# built on the engine HOST names ("" for the host's): each engine builds
# its own, there is no registry.  ab-image's errors are shown on failure.
ab_engine_build() {
	local host=$1 err=$BATS_FILE_TMPDIR/b.err
	shift
	DOCKER_HOST=$host ab-image build "$@" 2>"$err" ||
		{ cat "$err" >&2; return 1; }
}

# The records a failed test left in the state directory.
ab_records_rm() {
	rm -rf "$AB_STATE_DIR/alloc" "$AB_STATE_DIR/stage" \
		"$AB_STATE_DIR/profile" "$AB_STATE_DIR/ctr"
}

# ab_host_net_unchanged: succeeds when the host's bridge and packet
# filter are as ab_engines_setup_file found them; shows the difference.
ab_host_net_unchanged() {
	ab_host_net >"$BATS_FILE_TMPDIR/net.after"
	diff "$BATS_FILE_TMPDIR/net.before" "$BATS_FILE_TMPDIR/net.after"
}

# The agentbox mark of the engine DOCKER_HOST names ("" for none).
ab_engine_mark() {
	docker volume inspect agentbox-engine \
		--format '{{index .Labels "org.agentbox.engine"}}' 2>/dev/null || true
}
