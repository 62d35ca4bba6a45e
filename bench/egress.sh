#!/bin/sh
# bench/egress.sh [ROUNDS] [MIB]: what egress costs.  An echo server on the
# host at the default bridge's gateway stands for the vendor; an egress
# allocation pins api.anthropic.com:443 to it.  bench/egress.py measures
# connection setup (20 per round) and throughput (MIB MiB echoed), direct,
# through the proxy's socket, and through ab-relay and the proxy: the
# agent's path, with the relay run on the host against the allocation's
# socket (the same program; the host's loopback for the agent's).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
PATH=$here/bin:$PATH
rounds=${1:-20}
mib=${2:-256}
tmp=$(mktemp -d)
AB_STATE_DIR=$tmp/state
export AB_STATE_DIR
mkdir -m 0700 "$AB_STATE_DIR"
gw=$(docker network inspect bridge --format '{{json .IPAM.Config}}' |
	python3 -c 'import ipaddress, json, sys
c = json.load(sys.stdin)[0]
print(c.get("Gateway") or next(ipaddress.ip_network(c["Subnet"]).hosts()))')
python3 "$here/tests/lib/vendor.py" --listen "$gw" --ready "$tmp/port" \
	--mode echo &
vendor=$!
relay=
cleanup() {
	kill "$vendor" 2>/dev/null || true
	[ -z "$relay" ] || pkill -f "ab-relay --socket $sock" || true
	[ -z "${alloc:-}" ] || ab-clean "$alloc" >/dev/null || true
	[ -z "${img:-}" ] || ab-image remove "$img" >/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
while [ ! -s "$tmp/port" ]; do sleep 0.05; done
port=$(cat "$tmp/port")
img=$(ab-image build 2>/dev/null)
alloc=$(ab-alloc --image "$img" --egress "api.anthropic.com:443=$gw:$port")
sock=$(docker volume inspect "agentbox-${alloc#alloc:}-egress" \
	--format '{{.Mountpoint}}')/proxy.sock
ab-relay --socket "$sock" --listen 127.0.0.1:13128
relay=1
echo "egress: $rounds rounds of 20 setups, $mib MiB echoed ($(date -u +%FT%TZ))"
python3 "$here/bench/egress.py" "$gw" "$port" "$sock" 13128 \
	api.anthropic.com:443 "$rounds" "$mib"
