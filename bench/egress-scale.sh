#!/bin/sh
# bench/egress-scale.sh [N]: N egress allocations at once on one engine
# (default 100), made one after another: every proxy must be running and
# validated, all on the engine's one egress network; then all are cleaned
# and nothing may be left.  Prints the time per allocation and the proxies'
# total memory as the engine counts it.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
PATH=$here/bin:$PATH
n=${1:-100}
tmp=$(mktemp -d)
AB_STATE_DIR=$tmp/state
export AB_STATE_DIR
mkdir -m 0700 "$AB_STATE_DIR"
img=
cleanup() {
	ab-clean --sweep --all >/dev/null 2>&1 || true
	[ -z "$img" ] || ab-image remove "$img" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
img=$(ab-image build 2>/dev/null)
t0=$(date +%s.%N)
i=0
while [ "$i" -lt "$n" ]; do
	ab-alloc --image "$img" --egress claude >>"$tmp/allocs"
	i=$((i + 1))
done
t1=$(date +%s.%N)
sid=$(cat "$AB_STATE_DIR/sid")
running=$(docker ps -q --filter "label=org.agentbox.state=$sid" \
	--filter label=org.agentbox.role=proxy | wc -l)
# shellcheck disable=SC2046 # one container ID a word
nets=$(docker inspect --format '{{range .NetworkSettings.Networks}}{{.NetworkID}}{{end}}' \
	$(docker ps -q --filter "label=org.agentbox.state=$sid" \
	--filter label=org.agentbox.role=proxy) | sort -u | wc -l)
# shellcheck disable=SC2046 # one container ID a word
mem=$(docker stats --no-stream --format '{{.MemUsage}}' $(docker ps -q \
	--filter "label=org.agentbox.state=$sid" \
	--filter label=org.agentbox.role=proxy) |
	awk '{ v = $1; u = v; sub(/[0-9.]+/, "", u); sub(/[A-Za-z]+/, "", v)
		if (u == "KiB") v /= 1024; if (u == "GiB") v *= 1024; s += v }
		END { printf "%.1f", s }')
# shellcheck disable=SC2046 # one handle a word
ab-clean $(cat "$tmp/allocs")
t2=$(date +%s.%N)
left=$(docker ps -aq --filter "label=org.agentbox.state=$sid" | wc -l)
left=$((left + $(docker network ls -q --filter "label=org.agentbox.state=$sid" | wc -l)))
left=$((left + $(docker volume ls -q --filter "label=org.agentbox.state=$sid" | wc -l)))
echo "egress-scale: $n allocations ($(date -u +%FT%TZ))"
echo "proxies running: $running of $n, on $nets network(s)"
echo "proxies' memory in all: $mem MiB"
awk -v a="$t0" -v b="$t1" -v c="$t2" -v n="$n" 'BEGIN {
	printf "made: %.2f s each; cleaned: %.2f s each\n", (b - a) / n, (c - b) / n }'
echo "left after ab-clean: $left"
[ "$running" -eq "$n" ] && [ "$nets" -eq 1 ] && [ "$left" -eq 0 ]
