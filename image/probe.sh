#!/bin/sh
# probe.sh: the entrypoint of every agentbox image.  It checks the
# container from inside before anything else runs, then execs ARGV.
# On success it prints "agentbox-probe: ok NONCE"; on failure
# "agentbox-probe: refused: CHECK" and exits 126 without running ARGV.
#
# This first version checks identity and privileges; the lockdown checks
# of mounts, network and ceilings come with ab-profile and ab-validate.
PATH=/usr/bin:/bin
export PATH

refuse() {
	echo "agentbox-probe: refused: $1"
	exit 126
}

field() {
	while read -r k v rest; do
		if [ "$k" = "$1:" ]; then
			echo "$v${rest:+ $rest}"
			return 0
		fi
	done </proc/self/status
	return 1
}

[ "$(id -u)" = 10001 ] || refuse uid
[ "$(id -g)" = 10001 ] || refuse gid
for c in CapInh CapPrm CapEff CapBnd CapAmb; do
	[ "$(field "$c")" = 0000000000000000 ] || refuse "$c"
done
[ "$(field NoNewPrivs)" = 1 ] || refuse NoNewPrivs
[ "$(field Seccomp)" = 2 ] || refuse Seccomp

nonce=${AB_PROBE_NONCE:-}
unset AB_PROBE_NONCE AB_PROBE_PHASE
echo "agentbox-probe: ok $nonce"
[ "$#" -gt 0 ] || refuse argv
exec "$@"
