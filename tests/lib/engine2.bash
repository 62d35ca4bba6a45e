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
ab_host_net() {
	ip -br link show docker0 2>&1 || true
	{ iptables-save || true; } 2>/dev/null | grep -v '^#' || true
	{ ip6tables-save || true; } 2>/dev/null | grep -v '^#' || true
}

# ab_engine_start NAME [KEYFILE]: starts engine NAME, with a copy of
# KEYFILE as its key when given (the same /info ID as KEYFILE's engine).
ab_engine_start() {
	local name=$1 key=${2:-} e dir ns host _
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
	printf '{"deprecated-key-path": "%s/key.json"}\n' "$dir" \
		>"$dir/daemon.json"
	ip netns add "$ns" || return 1
	ip -n "$ns" link set lo up
	nsenter --net="/run/netns/$ns" dockerd \
		--config-file "$dir/daemon.json" -H "$host" \
		--data-root "$dir/data" --exec-root "$dir/exec" \
		--pidfile "$dir/pid" --storage-driver vfs \
		--iptables=false --ip-forward=false --ip-masq=false \
		--containerd-namespace "$ns" \
		--containerd-plugins-namespace "$ns-p" \
		>"$dir/log" 2>&1 3>&- &
	printf '%s\n' "$!" >"$e/pid"
	for _ in $(seq 1 300); do
		DOCKER_HOST=$host docker version >/dev/null 2>&1 && return 0
		kill -0 "$(cat "$e/pid")" 2>/dev/null || break
		sleep 0.1
	done
	echo "engine $name did not start: $(tail -1 "$dir/log")" >&2
	return 1
}

# ab_engine FIELD NAME: the engine's dir, ns, host or pid.
ab_engine() {
	cat "$BATS_FILE_TMPDIR/engines/$2/$1"
}

# Stops engine NAME and removes its namespace and roots; 0 when it is not
# running (stopped before, or never started).
ab_engine_stop() {
	local e=$BATS_FILE_TMPDIR/engines/$1 dir pid _
	[ -f "$e/dir" ] || return 0
	dir=$(cat "$e/dir")
	pid=$(cat "$e/pid" 2>/dev/null) || pid=
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
