#!/usr/lib/agentbox/busybox sh
# shellcheck shell=sh
# probe.sh [ARGV...]: the entrypoint of every agentbox image.  It checks the
# container from inside before anything else runs, then execs ARGV.
#
# The profile pins what it checks through the environment: AB_PROBE_NONCE,
# AB_PROBE_PHASE (planning, questions, execution), AB_PROBE_GROUP (the
# invocation's own group, its one supplementary group), AB_PROBE_HOME and
# AB_PROBE_HOME_BYTES, AB_PROBE_TMP_BYTES (page-rounded tmpfs ceilings);
# with egress AB_PROBE_EGRESS (the proxy's socket: the relay is started
# on 127.0.0.1:3128 before the agent), with --ca AB_PROBE_CA (the given
# trust anchors, put together with the image's into /tmp/agentbox-ca.pem);
# with a provider AB_PROBE_STDIN (the prompt, the agent's standard input)
# and, with a credential, AB_PROBE_SECRET and AB_PROBE_SECRET_VAR (the
# snapshot ab-validate wrote, exported as that variable just before the
# exec, and never printed); for Codex AB_PROBE_CODEX_RULES (the profile's
# approvals, copied to where /etc/codex/rules points) and CODEX_HOME, and
# with a ChatGPT sign-in AB_PROBE_CODEX_AUTH (the copy on the allocation's
# auth volume, linked as CODEX_HOME/auth.json so a refresh lands there).
# Those files are in the invocation's own directories, which only its
# group opens.
# Every check comes first; only then are the files the agent needs
# written, copied or linked and the relay started, so a container the
# probe refuses gets none of them.
# On success it prints "agentbox-probe: ok NONCE", unsets every AB_PROBE_*
# variable and execs ARGV; on failure it prints
# "agentbox-probe: refused: CHECK" and exits 126 without running ARGV.
# The probe's own commands are agentbox's busybox's applets (it runs them
# whatever PATH says), never a program of the image's: an image built on
# the user's own base (ab-image build --base) has none or others.  The
# agent gets the PATH the profile pinned (the image's), restored at exec.
agent_path=${PATH:-/usr/bin:/bin}
# shellcheck disable=SC2123 # on purpose: no directory of the image's
PATH=/usr/lib/agentbox
export PATH

# Where the mounts are read; set here, never from the environment (the
# tests read their own through the probe's functions).
mountinfo=/proc/self/mountinfo

refuse() {
	echo "agentbox-probe: refused: $1"
	exit 126
}

status_field() {
	while read -r k v; do
		if [ "$k" = "$1:" ]; then
			echo "$v"
			return 0
		fi
	done </proc/self/status
	return 1
}

# mount_opts MOUNTPOINT: "FSTYPE MOUNT-OPTIONS SUPER-OPTIONS", or nothing.
# Each line's optional fields end at "-", and three fields follow it: a
# line without them is status 2.  The loop stops at the line's last field
# (busybox's awk makes every field it is asked for, until it runs out of
# memory).
mount_opts() {
	awk -v m="$1" '{
		for (i = 7; i <= NF && $i != "-"; i++) ;
		if (i + 3 > NF) exit 2
		if ($5 == m) { r = $(i + 1) " " $6 " " $(i + 3) }
	} END { if (r != "") print r }' "$mountinfo"
}

# want_mode MOUNTPOINT ro|rw: mounted there, read-only or writable.  Word
# splitting of mount_opts is wanted: its three fields.
# shellcheck disable=SC2086
want_mode() {
	o=$(mount_opts "$1") || refuse mountinfo
	set -- "$1" "$2" $o
	[ -n "${3:-}" ] || refuse "mount $1"
	case ",$4," in *,"$2",*) return 0 ;; esac
	[ "$2" = ro ] && refuse "read-only $1"
	refuse "writable $1"
}

# want_tmpfs MOUNTPOINT BYTES: a tmpfs of exactly that size.
# shellcheck disable=SC2086
want_tmpfs() {
	o=$(mount_opts "$1") || refuse mountinfo
	set -- "$1" "$2" $o
	[ "${3:-}" = tmpfs ] || refuse "tmpfs $1"
	case ",$5," in
	*,size=$(($2 / 1024))k,*) ;;
	*) refuse "size of $1" ;;
	esac
}

check_identity() {
	[ "$(id -u)" = 10001 ] || refuse uid
	[ "$(id -g)" = 10001 ] || refuse gid
	case ${AB_PROBE_GROUP:-} in
	'' | *[!0-9]*) refuse AB_PROBE_GROUP ;;
	esac
	[ "$(id -G)" = "10001 $AB_PROBE_GROUP" ] || refuse groups
	if [ "$runtime" = runsc ]; then
		check_sentry
		return
	fi
	for c in CapInh CapPrm CapEff CapBnd CapAmb; do
		[ "$(status_field "$c")" = 0000000000000000 ] || refuse "$c"
	done
	[ "$(status_field NoNewPrivs)" = 1 ] || refuse NoNewPrivs
	[ "$(status_field Seccomp)" = 2 ] || refuse Seccomp
	check_kernel
}

# The kernel's own answer (ab-privs): no privilege held, and no user
# namespace can be made, so a sandbox that needs one (Codex's bubblewrap)
# cannot start, and every command Codex runs comes to agentbox's approval.
# Without that answer the container is refused.
check_kernel() {
	[ -x /usr/lib/agentbox/ab-privs ] || refuse "ab-privs"
	bad=$(/usr/lib/agentbox/ab-privs) || refuse "${bad:-ab-privs}"
}

# Under gVisor the kernel the agent talks to is gVisor's own (its Sentry):
# it says so in /proc/version, its /proc/self/status has no NoNewPrivs or
# CapAmb line, and ab-privs asks it for what /proc leaves out.  Seccomp 2
# is the engine's profile applied inside the sandbox (--oci-seccomp).
check_sentry() {
	read -r version </proc/version || refuse kernel
	case $version in
	"Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016") ;;
	*) refuse "gVisor kernel" ;;
	esac
	for c in CapInh CapPrm CapEff CapBnd; do
		[ "$(status_field "$c")" = 0000000000000000 ] || refuse "$c"
	done
	[ "$(status_field Seccomp)" = 2 ] || refuse Seccomp
	check_kernel
}

check_mounts() {
	want_mode / ro
	case ${AB_PROBE_PHASE:-} in
	execution) want_mode /work rw ;;
	planning | questions) want_mode /work ro ;;
	*) refuse phase ;;
	esac
	want_mode /work/.git ro
	want_mode /run/agentbox/inputs ro
	for v in AB_PROBE_TMP_BYTES AB_PROBE_HOME AB_PROBE_HOME_BYTES; do
		eval "[ -n \"\${$v:-}\" ]" || refuse "$v"
	done
	if [ "$runtime" = runsc ]; then
		want_volume /tmp "$AB_PROBE_TMP_BYTES"
		want_volume "$AB_PROBE_HOME" "$AB_PROBE_HOME_BYTES"
		return
	fi
	want_tmpfs /tmp "$AB_PROBE_TMP_BYTES"
	want_tmpfs "$AB_PROBE_HOME" "$AB_PROBE_HOME_BYTES"
}

# want_volume MOUNTPOINT BYTES: under runsc, HOME and /tmp are tmpfs
# volumes of the host's, which gVisor mounts through its gofer: writable,
# and as large as the profile says (ab-validate checked the volume's
# options, inodes included, as the engine created it).
want_volume() {
	want_mode "$1" rw
	set -- "$1" "$2" "$(stat -f -c '%b %S' "$1")"
	[ "$3" = "$(($2 / 4096)) 4096" ] || refuse "size of $1"
}

# Nothing of the host but the engine's own three files: every other mount
# is the image, a volume, a tmpfs, or the kernel's own filesystems.  Under
# gVisor every mount comes through its gofer, so the mount points are
# checked instead: the image's root, the kernel's own, the engine's three
# files, and the profile's volumes, each at its place.
check_host_paths() {
	if [ "$runtime" = runsc ]; then
		bad=$(awk -v home="$AB_PROBE_HOME" -v eg="${AB_PROBE_EGRESS%/*}" '{
			m = $5
			if (m ~ /^\/(proc|sys|dev)(\/|$)/ || m == "/") next
			if (m == "/etc/hosts" || m == "/etc/hostname" || m == "/etc/resolv.conf") next
			if (m == "/work" || m == "/work/.git" || m == "/tmp" || m == home) next
			if (m == "/run/agentbox/inputs" || m == "/run/agentbox/auth") next
			if (eg != "" && m == eg) next
			print m; exit
		}' "$mountinfo")
		[ -z "$bad" ] || refuse "host path $bad"
		check_sockets
		return
	fi
	bad=$(awk '{
		for (i = 7; i <= NF && $i != "-"; i++) ;
		if (i + 3 > NF) exit 2
		t = $(i + 1); m = $5
		if (m ~ /^\/(proc|sys|dev)(\/|$)/ || m == "/" || t == "tmpfs") next
		if (m == "/etc/hosts" || m == "/etc/hostname" || m == "/etc/resolv.conf") next
		print m; exit
	}' "$mountinfo") || refuse mountinfo
	[ -z "$bad" ] || refuse "host path $bad"
	check_sockets
}

check_sockets() {
	for s in /var/run/docker.sock /run/docker.sock /run/containerd/containerd.sock; do
		[ ! -e "$s" ] || refuse "docker socket $s"
	done
}

check_network() {
	for n in /sys/class/net/*; do
		[ "${n##*/}" = lo ] || refuse "network ${n##*/}"
	done
}

# The agent reaches the proxy only through the socket on its read-only
# egress mount; the relay must be listening before the agent starts
# (start_relay).
check_egress() {
	[ -n "${AB_PROBE_EGRESS:-}" ] || return 0
	want_mode "${AB_PROBE_EGRESS%/*}" ro
	[ -S "$AB_PROBE_EGRESS" ] || refuse "egress socket"
}

# The trust anchors the profile adds, and the proxy's CA, which the proxy
# wrote when it started: put together with the image's (make_ca).
check_ca() {
	if [ -n "${AB_PROBE_CA:-}" ]; then
		[ -f "$AB_PROBE_CA" ] || refuse "trust anchors"
	fi
	if [ -n "${AB_PROBE_PROXY_CA:-}" ]; then
		[ "$AB_PROBE_PROXY_CA" = "${AB_PROBE_EGRESS%/*}/ca.pem" ] ||
			refuse "proxy CA"
		[ -f "$AB_PROBE_PROXY_CA" ] || refuse "proxy CA"
	fi
}

# Codex's approvals: the profile's rules, for where /etc/codex/rules
# points (this container's /tmp), and with a ChatGPT sign-in its copy on
# the auth volume (make_codex).
check_codex() {
	[ -n "${AB_PROBE_CODEX_RULES:-}" ] || return 0
	[ -f "$AB_PROBE_CODEX_RULES" ] || refuse "codex rules"
	[ -n "${CODEX_HOME:-}" ] || refuse CODEX_HOME
	[ "$(readlink /etc/codex/rules)" = /tmp/agentbox-codex-rules ] ||
		refuse "codex rules link"
	[ -n "${AB_PROBE_CODEX_AUTH:-}" ] || return 0
	want_mode /run/agentbox/auth rw
	[ -f "$AB_PROBE_CODEX_AUTH" ] || refuse "codex sign-in"
	[ -s "$AB_PROBE_CODEX_AUTH" ] || refuse "codex sign-in"
}

# A Claude sign-in: its copy (placeholders) on the auth volume
# (make_claude).
check_claude() {
	[ -n "${AB_PROBE_CLAUDE_AUTH:-}" ] || return 0
	want_mode /run/agentbox/auth rw
	[ -s "$AB_PROBE_CLAUDE_AUTH" ] || refuse "claude sign-in"
}

check_stdin() {
	stdin=${AB_PROBE_STDIN:-/dev/null}
	[ -f "$stdin" ] || [ "$stdin" = /dev/null ] || refuse stdin
}

# Only the variables a provider reads its credential from.
check_secret() {
	[ -n "${AB_PROBE_SECRET:-}" ] || return 0
	case ${AB_PROBE_SECRET_VAR:-} in
	ANTHROPIC_API_KEY | CLAUDE_CODE_OAUTH_TOKEN | CODEX_API_KEY) ;;
	*) refuse "credential variable" ;;
	esac
	[ -s "$AB_PROBE_SECRET" ] || refuse credential
}

# The effects, once every check passed: nothing is written, copied,
# linked or started for a container the probe refuses.

# The trust anchor bundle the profile's environment names.
make_ca() {
	[ -n "${AB_PROBE_CA:-}${AB_PROBE_PROXY_CA:-}" ] || return 0
	# The image's own anchors; agentbox's where its root has none.
	anchors=/etc/ssl/certs/ca-certificates.crt
	[ -f "$anchors" ] || anchors=/usr/lib/agentbox/ca-certificates.crt
	(umask 022 && cat ${AB_PROBE_CA:+"$AB_PROBE_CA"} \
		${AB_PROBE_PROXY_CA:+"$AB_PROBE_PROXY_CA"} \
		>/tmp/agentbox-ca-extra.pem &&
		cat "$anchors" /tmp/agentbox-ca-extra.pem \
		>/tmp/agentbox-ca.pem) || refuse "trust anchor bundle"
}

# Codex's rules copied where the link points, its CODEX_HOME under HOME,
# and the sign-in linked there: Codex rewrites auth.json in place, so
# through the link, onto the copy.
make_codex() {
	[ -n "${AB_PROBE_CODEX_RULES:-}" ] || return 0
	(umask 077 && mkdir -p /tmp/agentbox-codex-rules "$CODEX_HOME" &&
		cp "$AB_PROBE_CODEX_RULES" /tmp/agentbox-codex-rules/agentbox.rules) ||
		refuse "codex rules"
	[ -n "${AB_PROBE_CODEX_AUTH:-}" ] || return 0
	ln -s "$AB_PROBE_CODEX_AUTH" "$CODEX_HOME/auth.json" ||
		refuse "codex sign-in link"
}

# The Claude sign-in copied into HOME, the agent's own, where the CLI
# rewrites it when it refreshes; what it writes there is never read back
# (ab-run writes back what the proxy holds).
make_claude() {
	[ -n "${AB_PROBE_CLAUDE_AUTH:-}" ] || return 0
	(umask 077 && mkdir -p "$HOME/.claude" &&
		cp "$AB_PROBE_CLAUDE_AUTH" "$HOME/.claude/.credentials.json") ||
		refuse "claude sign-in copy"
}

# Last, as it goes on running: the relay, which checks that the socket
# answers and listens before it returns.
start_relay() {
	[ -n "${AB_PROBE_EGRESS:-}" ] || return 0
	/usr/lib/agentbox/ab-relay --socket "$AB_PROBE_EGRESS" \
		--listen 127.0.0.1:3128 || refuse "egress relay"
}

# The checks, then ARGV; a function, so that the tests can load the ones
# above (every line but the last) without running them.
main() {
	# AB_PROBE_RUNTIME=runsc: the profile runs the agent under gVisor.
	runtime=${AB_PROBE_RUNTIME:-runc}
	case $runtime in
	runc | runsc) ;;
	*) refuse AB_PROBE_RUNTIME ;;
	esac
	check_identity
	check_mounts
	check_host_paths
	check_network
	check_egress
	check_ca
	check_codex
	check_claude
	check_stdin
	check_secret
	[ "$#" -gt 0 ] || refuse argv
	[ -n "${AB_PROBE_NONCE:-}" ] || refuse AB_PROBE_NONCE
	nonce=$AB_PROBE_NONCE
	# ARGV's program as execvp(3) finds it on the agent's PATH, named by its
	# path: busybox's shell would otherwise run an applet of the same name
	# (sh, cat) in place of the image's own program.
	if [ "${1#*/}" = "$1" ]; then
		prog=
		IFS=:
		for d in $agent_path; do
			case $d in /*) ;; *) continue ;; esac
			if [ -f "$d/$1" ] && [ -x "$d/$1" ]; then
				prog=$d/$1
				break
			fi
		done
		unset IFS
		[ -n "$prog" ] || refuse "no program $1 on the image's PATH"
		shift
		set -- "$prog" "$@"
	fi
	if [ -n "${AB_PROBE_SECRET:-}" ]; then
		secret=$(cat "$AB_PROBE_SECRET") || refuse credential
	fi

	make_ca
	make_codex
	make_claude
	start_relay

	if [ -n "${AB_PROBE_SECRET:-}" ]; then
		export "$AB_PROBE_SECRET_VAR=$secret"
		unset secret
	fi
	unset AB_PROBE_NONCE AB_PROBE_PHASE AB_PROBE_GROUP AB_PROBE_HOME AB_PROBE_HOME_BYTES \
		AB_PROBE_RUNTIME AB_PROBE_TMP_BYTES AB_PROBE_EGRESS AB_PROBE_CA AB_PROBE_STDIN \
		AB_PROBE_PROXY_CA \
		AB_PROBE_SECRET AB_PROBE_SECRET_VAR AB_PROBE_CODEX_RULES \
		AB_PROBE_CODEX_AUTH AB_PROBE_CLAUDE_AUTH
	echo "agentbox-probe: ok $nonce"
	PATH=$agent_path
	exec "$@" <"$stdin"
}

main "$@"
