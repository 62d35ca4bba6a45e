#!/bin/sh
# bench/inject.sh [N]: what putting the credential in costs (ab-proxy(1),
# "Credentials put in").  The scripted vendor on the host (TLS, a test
# CA) stands for the provider; an allocation of the agents image pins
# api.anthropic.com:443 to it, and bulk.test:443 too (a blind tunnel to
# the same server); a Claude invocation is validated with an API key, so
# the proxy intercepts.  bench/inject.py times both paths through the
# relay and the proxy.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
PATH=$here/bin:$PATH
n=${1:-200}
tmp=$(mktemp -d)
AB_STATE_DIR=$tmp/state
export AB_STATE_DIR
mkdir -m 0700 "$AB_STATE_DIR"
gw=$(docker network inspect bridge --format '{{json .IPAM.Config}}' |
	python3 -c 'import ipaddress, json, sys
c = json.load(sys.stdin)[0]
print(c.get("Gateway") or next(ipaddress.ip_network(c["Subnet"]).hosts()))')
ca=$tmp/ca
mkdir -p "$ca"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$ca/ca.key" \
	-out "$ca/ca.pem" -subj /CN=bench-ca -days 2 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$ca/leaf.key" \
	-out "$ca/leaf.csr" -subj /CN=api.anthropic.com 2>/dev/null
printf 'subjectAltName=DNS:api.anthropic.com\n' >"$ca/ext"
openssl x509 -req -in "$ca/leaf.csr" -CA "$ca/ca.pem" -CAkey "$ca/ca.key" \
	-CAcreateserial -out "$ca/leaf.pem" -days 2 -extfile "$ca/ext" 2>/dev/null
printf 'sk-ant-api03-bench%s\n' "$(date +%s%N)" >"$tmp/key"
printf '{"turns":[{"text":"done","times":0}]}\n' >"$tmp/scenario.json"
python3 "$here/tests/lib/vendor.py" --listen "$gw" --ready "$tmp/port" \
	--mode anthropic --script "$tmp/scenario.json" --cert "$ca/leaf.pem" \
	--key "$ca/leaf.key" &
vendor=$!
cleanup() {
	kill "$vendor" 2>/dev/null || true
	[ -z "${sock:-}" ] || pkill -f "ab-relay --socket $sock" || true
	[ -z "${alloc:-}" ] || ab-clean "$alloc" >/dev/null || true
	[ -z "${img:-}" ] || ab-image remove "$img" >/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
while [ ! -s "$tmp/port" ]; do sleep 0.05; done
port=$(cat "$tmp/port")
img=$(ab-image build --recipe agents 2>/dev/null)
echo $(($(date +%s) + 900)) >"$tmp/deadline"
alloc=$(ab-alloc --image "$img" --deadline "$tmp/deadline" \
	--egress "api.anthropic.com:443=$gw:$port,bulk.test:443=$gw:$port")
git init -q "$tmp/repo"
echo x >"$tmp/repo/x"
git -C "$tmp/repo" add x
git -C "$tmp/repo" -c user.name=b -c user.email=b@b commit -qm x
ab-seed "$alloc" --deadline "$tmp/deadline" --repo "$tmp/repo" \
	--commit "$(git -C "$tmp/repo" rev-parse HEAD)" >/dev/null 2>&1
echo hi >"$tmp/prompt"
prof=$(ab-profile --alloc "$alloc" --phase planning --deadline "$tmp/deadline" \
	--attempt bench --provider claude --ca "$ca/ca.pem" \
	--prompt "$tmp/prompt" --api-key-file "$tmp/key")
ab-validate "$prof" >/dev/null
ph=$(docker exec -u 0 "agentbox-${alloc#alloc:}-keeper" \
	/usr/lib/agentbox/busybox cat \
	"/run/agentbox/inputs/${prof#profile:}/secret")
dir=$(docker volume inspect "agentbox-${alloc#alloc:}-egress" \
	--format '{{.Mountpoint}}')
sock=$dir/proxy.sock
ab-relay --socket "$sock" --listen 127.0.0.1:13138
echo "inject: $n requests a path, 1 KiB up, 64 KiB down ($(date -u +%FT%TZ))"
python3 "$here/bench/inject.py" 13138 "$dir/ca.pem" "$ca/ca.pem" "$ph" "$n"
