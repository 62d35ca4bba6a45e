#!/usr/lib/agentbox/busybox sh
# shellcheck shell=sh
# versions.sh NAME...: prints "NAME VERSION" for each component asked for,
# as the component itself reports it.  ab-image runs it in a locked
# container and compares every line with the image's version labels.
set -eu
for name in "$@"; do
	case $name in
	busybox)
		v=$(/usr/lib/agentbox/busybox 2>&1 | head -n 1)
		v=${v#BusyBox v}
		v=${v%% *} ;;
	git)
		v=$(git --version)
		v=${v#git version } ;;
	ab-proxy | ab-relay | ab-codex | ab-privs)
		v=$("/usr/lib/agentbox/$name" --version) ;;
	node)
		v=$(node --version)
		v=${v#v} ;;
	codex)
		v=$(codex --version)
		v=${v##* } ;;
	claude-code)
		v=$(claude --version)
		v=${v%% *} ;;
	*)
		echo "versions.sh: unknown component $name" >&2
		exit 1 ;;
	esac
	printf '%s %s\n' "$name" "$v"
done
