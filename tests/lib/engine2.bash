# engine2.bash: a second Docker engine of the test's own, for the tests of
# agentbox against more than one engine.
#
# It runs in a network namespace of its own (nsenter --net, not ip netns
# exec, which remounts /sys and hides the cgroup mounts), with its own
# configuration file (the host's daemon.json names a data root and a
# storage driver that conflict with the flags), data and exec roots, the
# vfs storage driver, its own containerd namespaces, and its own key file,
# so that its /info ID differs from the host engine's.  Its bridge is made
# inside its namespace; it never touches the host's iptables.  Never start
# one with --bridge none in the host's namespace: that deletes the host's
# docker0.  Starting an engine needs root.

# shellcheck shell=bash

# The host's bridge and packet filter as text, to compare before and after.
ab_host_net() {
	ip -br link show docker0 2>&1 || true
	{ iptables-save || true; } 2>/dev/null | grep -v '^#' || true
	{ ip6tables-save || true; } 2>/dev/null | grep -v '^#' || true
}

# ab_engine2_start NAME: starts the engine; sets E2_HOST (a DOCKER_HOST
# value), E2_DIR, E2_NS and E2_PID.
ab_engine2_start() {
	local name=$1 _
	if [ "$(id -u)" -ne 0 ]; then
		echo "starting a second engine needs root (make check runs as root in CI)" >&2
		return 1
	fi
	# Short: containerd's socket under the exec root must fit sun_path.
	E2_DIR=$(mktemp -d /tmp/abe2.XXXXXX)
	E2_NS=abtest-$(ab_state_sid | cut -c1-12)-$name
	E2_HOST=unix://$E2_DIR/d.sock
	export E2_DIR E2_NS E2_HOST
	printf '{"deprecated-key-path": "%s/key.json"}\n' "$E2_DIR" \
		>"$E2_DIR/daemon.json"
	ip netns add "$E2_NS" || return 1
	ip -n "$E2_NS" link set lo up
	nsenter --net="/run/netns/$E2_NS" dockerd \
		--config-file "$E2_DIR/daemon.json" -H "$E2_HOST" \
		--data-root "$E2_DIR/data" --exec-root "$E2_DIR/exec" \
		--pidfile "$E2_DIR/pid" --storage-driver vfs \
		--iptables=false --ip6tables=false --ip-forward=false \
		--ip-masq=false --containerd-namespace "$E2_NS" \
		--containerd-plugins-namespace "$E2_NS-p" \
		>"$E2_DIR/log" 2>&1 3>&- &
	E2_PID=$!
	export E2_PID
	for _ in $(seq 1 300); do
		if DOCKER_HOST=$E2_HOST docker version >/dev/null 2>&1; then
			return 0
		fi
		kill -0 "$E2_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "the second engine did not start: $(tail -1 "$E2_DIR/log")" >&2
	return 1
}

# Stops the engine and removes its namespace and roots; 0 when none runs.
ab_engine2_stop() {
	local _
	[ -n "${E2_DIR:-}" ] || return 0
	if [ -n "${E2_PID:-}" ] && kill -TERM "$E2_PID" 2>/dev/null; then
		for _ in $(seq 1 200); do
			kill -0 "$E2_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$E2_PID" 2>/dev/null || true
		wait "$E2_PID" 2>/dev/null || true
	fi
	ip netns del "$E2_NS" 2>/dev/null || true
	# Mounts the engine left (its own, in the host's mount namespace).
	grep -F " $E2_DIR/" /proc/self/mountinfo | awk '{ print $5 }' |
		sort -r | xargs -r -n1 umount -l 2>/dev/null || true
	rm -rf "$E2_DIR"
	E2_DIR='' E2_PID=''
}
