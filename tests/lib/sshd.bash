# sshd.bash: an ssh server of the test's own on 127.0.0.1, and a home of
# the test's own for the ssh client, for engines reached through ssh://.
#
# ssh reads its configuration, keys and known hosts from the home in the
# password database, never from $HOME, so ab_ssh_home runs a command with
# that directory replaced, in a mount namespace of its own, by a home the
# test made: the user's own ~/.ssh is neither read nor touched.  Starting
# sshd and making a mount namespace need root.

# shellcheck shell=bash

# ab_sshd_start DIR [DOCKER_HOST]: sshd on a free port of 127.0.0.1 with
# a host key, authorized key and client home under DIR; DIR/port names
# the port, DIR/home the client's home (its known_hosts knows this host's
# key).  With DOCKER_HOST, its sessions reach that engine, not the host's.
ab_sshd_start() {
	local d=$1 engine=${2:-} port _
	if [ "$(id -u)" -ne 0 ]; then
		echo "sshd and a mount namespace need root (make check runs as root in CI)" >&2
		return 1
	fi
	mkdir -p "$d/home/.ssh" /run/sshd
	chmod 700 "$d/home/.ssh"
	ssh-keygen -q -t ed25519 -N '' -f "$d/host_key" || return 1
	ssh-keygen -q -t ed25519 -N '' -f "$d/home/.ssh/id_ed25519" || return 1
	cp "$d/home/.ssh/id_ed25519.pub" "$d/authorized_keys"
	for _ in 1 2 3 4 5; do
		port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
		cat >"$d/sshd_config" <<-CONF
		Port $port
		ListenAddress 127.0.0.1
		HostKey $d/host_key
		AuthorizedKeysFile $d/authorized_keys
		PidFile $d/sshd.pid
		UsePAM no
		PermitRootLogin prohibit-password
		StrictModes no
		MaxStartups 100
		MaxSessions 100
		CONF
		[ -z "$engine" ] || printf 'SetEnv DOCKER_HOST=%s\n' "$engine" >>"$d/sshd_config"
		/usr/sbin/sshd -f "$d/sshd_config" -E "$d/sshd.log" || continue
		printf '%s\n' "$port" >"$d/port"
		printf '[127.0.0.1]:%s %s\n' "$port" \
			"$(cut -d' ' -f1,2 "$d/host_key.pub")" >"$d/home/.ssh/known_hosts"
		ab_ssh_home "$d" ssh -o BatchMode=yes -p "$port" -T root@127.0.0.1 true \
			2>/dev/null && return 0
		ab_sshd_stop "$d"
	done
	echo "sshd did not come up on 127.0.0.1 (see $d/sshd.log)" >&2
	return 1
}

ab_sshd_stop() {
	local d=$1 pid
	[ -f "$d/sshd.pid" ] || return 0
	pid=$(cat "$d/sshd.pid")
	kill "$pid" 2>/dev/null || true
	rm -f "$d/sshd.pid"
}

# ab_ssh_home DIR CMD...: CMD with the user's home replaced by DIR/home.
ab_ssh_home() {
	local d=$1 home
	shift
	home=$(getent passwd "$(id -u)" | cut -d: -f6)
	# shellcheck disable=SC2016 # the inner shell expands them
	unshare -m --propagation private sh -c \
		'mount --bind "$1" "$2" && shift 2 && exec "$@"' \
		sh "$d/home" "$home" "$@"
}
