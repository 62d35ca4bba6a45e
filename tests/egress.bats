#!/usr/bin/env bats
# Egress: agents on network none reach their vendor, and nothing else,
# through the allocation's proxy.  The vendor is the tests' own TLS server
# (tests/lib/vendor.py) with a certificate of a test CA, on the host at the
# default bridge's gateway, named by a pinned entry, so clients keep the
# vendor's real name.  The image is the default one plus openssl, the TLS
# client the agents here use.

# shellcheck disable=SC2154 # bats sets status, output, stderr
# shellcheck disable=SC2034 # RECORD is read by record_field (helpers.bash)
# shellcheck disable=SC2016 # shell text run inside the agent
load helpers

setup_file() {
	AB_STATE_DIR=$(ab_new_state)
	export AB_STATE_DIR
	unset AB_DEADLINE AB_TEST_PAUSE DOCKER_HOST
	local dir=$BATS_FILE_TMPDIR/image ca=$BATS_FILE_TMPDIR/ca
	cp -r "$AB_ROOT/image" "$dir"
	echo 'elf /usr/bin/openssl 0755' >>"$dir/default.manifest"
	AB_IMAGE=$(ab-image build --dir "$dir" 2>"$BATS_FILE_TMPDIR/build.err") || {
		cat "$BATS_FILE_TMPDIR/build.err" >&2
		return 1
	}
	ab_test_ca "$ca" api.anthropic.com,api.openai.com
	GW=$(ab_bridge_gateway)
	python3 "$AB_ROOT/tests/lib/vendor.py" --listen "$GW" \
		--ready "$BATS_FILE_TMPDIR/vendor.port" --cert "$ca/leaf.pem" \
		--key "$ca/leaf.key" 3>&- &
	echo $! >"$BATS_FILE_TMPDIR/vendor.pid"
	local _
	for _ in $(seq 1 100); do
		[ -s "$BATS_FILE_TMPDIR/vendor.port" ] && break
		sleep 0.05
	done
	VPORT=$(cat "$BATS_FILE_TMPDIR/vendor.port")
	# A plain sink, and a tarpit that never reads, for the tallies and
	# the proxy's memory.
	local mode
	for mode in sink tarpit; do
		python3 "$AB_ROOT/tests/lib/vendor.py" --listen "$GW" --mode "$mode" \
			--ready "$BATS_FILE_TMPDIR/$mode.port" 3>&- &
		echo $! >"$BATS_FILE_TMPDIR/$mode.pid"
		for _ in $(seq 1 100); do
			[ -s "$BATS_FILE_TMPDIR/$mode.port" ] && break
			sleep 0.05
		done
	done
	SINK="sink.test:443=$GW:$(cat "$BATS_FILE_TMPDIR/sink.port")"
	TARPIT="tarpit.test:443=$GW:$(cat "$BATS_FILE_TMPDIR/tarpit.port")"
	CA=$ca/ca.pem
	REPO=$BATS_FILE_TMPDIR/repo
	git init -q "$REPO"
	echo hello >"$REPO/a.txt"
	git -C "$REPO" add a.txt
	git -C "$REPO" -c user.name=t -c user.email=t@t commit -qm one
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	DL=$BATS_FILE_TMPDIR/deadline
	ab_deadline_in "$DL" 3600
	export AB_IMAGE GW VPORT CA REPO COMMIT DL SINK TARPIT
}

# Whatever a test left, even when it failed half-way.
teardown() {
	ab_proxy_stop
	ab-clean --sweep --all >/dev/null 2>&1 || true
}

teardown_file() {
	local f
	for f in vendor sink tarpit; do
		kill "$(cat "$BATS_FILE_TMPDIR/$f.pid")" 2>/dev/null || true
	done
	ab-clean --sweep --all >/dev/null 2>&1 || true
	ab_teardown_file
}

vendor_entry() {
	printf 'api.anthropic.com:443=%s:%s' "$GW" "$VPORT"
}

# egress_alloc LIST [OPTION...]: a seeded allocation with that egress (and
# those ab-alloc options); sets ALLOC, AID.
egress_alloc() {
	local list=$1
	shift
	run_exact 0 ab-alloc --image "$AB_IMAGE" --egress "$list" --deadline "$DL" "$@"
	ALLOC=$output
	AID=${ALLOC#alloc:}
	ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" >/dev/null 2>&1
}

# agent PHASE CMD: validates and runs CMD as the agent (with --ca); sets
# RESULT and STATUS; the record's JSON in RECORD.
agent() {
	local prof ctr
	prof=$(ab-profile --alloc "$ALLOC" --phase "$1" --deadline "$DL" \
		--attempt "eg-$RANDOM$RANDOM" --ca "$CA" -- sh -c "$2")
	ctr=$(ab-validate "$prof")
	run ab-run "$ctr"
	STATUS=$status
	RESULT=$(printf '%s\n' "$output" | tail -n 1)
	RECORD=$(ab-run --show "$RESULT")
}


# agent_start: an agent that waits for the test's go, run by ab-run in
# the background, once it is running; agent_finish gives the go (a file
# on the egress volume, which the agent mounts read-only) and sets
# STATUS, RESULT and RECORD as agent does.
agent_start() {
	local prof ctr _
	prof=$(ab-profile --alloc "$ALLOC" --phase planning --deadline "$DL" \
		--attempt "eg-$RANDOM$RANDOM" -- sh -c \
		'while [ ! -e /run/agentbox/egress/go ]; do sleep 0.1; done')
	ctr=$(ab-validate "$prof")
	ab-run "$ctr" >"$BATS_TEST_TMPDIR/run.out" 2>"$BATS_TEST_TMPDIR/run.err" &
	RUN_PID=$!
	# Running is not enough: the probe checks the relay first.  The
	# agent's own loop (its sleep) runs once the probe has passed: a
	# process that is `sleep 0.1` itself, not the probe, whose arguments
	# hold the agent's command (seen under make asan: the proxy killed
	# while the probe still checked the relay).
	for _ in $(seq 1 200); do
		ctr=$(docker ps -q --filter "label=org.agentbox.alloc=$AID" \
			--filter label=org.agentbox.role=agent)
		[ -n "$ctr" ] && docker top "$ctr" 2>/dev/null |
			grep -qE ' sleep 0\.1$' && return 0
		sleep 0.1
	done
	return 1
}

agent_finish() {
	touch "$(dirname "$(socket_of "$AID")")/go"
	STATUS=0
	wait "$RUN_PID" || STATUS=$?
	RESULT=$(tail -n 1 "$BATS_TEST_TMPDIR/run.out")
	RECORD=$(ab-run --show "$RESULT")
}

socket_of() {
	printf '%s/proxy.sock\n' "$(docker volume inspect "agentbox-$1-egress" \
		--format '{{.Mountpoint}}')"
}

# The proxy's last logged decision.
last_decision() {
	docker logs "agentbox-$AID-proxy" 2>/dev/null | grep -v '"event":"close"' |
		tail -n 1
}

# direct TEXT STATUS REASON: spoken to the socket itself, no relay.
direct() {
	run python3 "$AB_ROOT/tests/lib/egress-client.py" "$(socket_of "$AID")" \
		send "$1"
	assert_output --partial "HTTP/1.1 $2 "
	run last_decision
	assert_output --partial "\"reason\":\"$3\""
}

@test "an allowed CONNECT through the relay reaches the vendor under its name, both ways" {
	egress_alloc "$(vendor_entry)"
	agent planning 'echo hello-vendor | openssl s_client -quiet -proxy 127.0.0.1:3128 -connect api.anthropic.com:443 -servername api.anthropic.com -verify_return_error 2>&1'
	assert_equal "$STATUS" 0
	assert_equal "$(record_field 'r["stdout"]["text"].splitlines()[-1]')" \
		"vendor saw: hello-vendor"
	assert_equal "$(record_field '[(d["host"], d["port"], d["allowed"], d["refused"]) for d in r["egress"]["destinations"]]')" \
		'[["api.anthropic.com", 443, 1, 0]]'
	[ "$(record_field 'r["egress"]["destinations"][0]["bytes_up"] > 0 and r["egress"]["destinations"][0]["bytes_down"] > 0')" = true ]
	assert_equal "$(record_field 'r["egress"]["allow"]')" "[\"$(vendor_entry)\"]"
	assert_equal "$(record_field 'r["egress"]["scope"]')" invocation
	run_exact 0 ab-clean "$ALLOC"
}

@test "the agent's environment points every proxy variable at the relay, and trusts the given CA" {
	egress_alloc "$(vendor_entry)"
	agent planning 'for v in HTTPS_PROXY https_proxy HTTP_PROXY http_proxy NO_PROXY no_proxy SSL_CERT_FILE; do eval "echo $v=\${$v-unset}"; done; env | grep -c AB_PROBE_; grep -c "BEGIN CERTIFICATE" "$NODE_EXTRA_CA_CERTS"; [ "$NODE_EXTRA_CA_CERTS" = "$CODEX_CA_CERTIFICATE" ] && echo same; sha256sum </tmp/agentbox-ca.pem | cut -c 1-64'
	assert_equal "$(record_field '"|".join(r["stdout"]["text"].splitlines())')" \
		"HTTPS_PROXY=http://127.0.0.1:3128|https_proxy=http://127.0.0.1:3128|HTTP_PROXY=http://127.0.0.1:3128|http_proxy=http://127.0.0.1:3128|NO_PROXY=|no_proxy=|SSL_CERT_FILE=/tmp/agentbox-ca.pem|0|1|same|$(cat /etc/ssl/certs/ca-certificates.crt "$CA" | sha256sum | cut -c 1-64)"
	run_exact 0 ab-clean "$ALLOC"
}

@test "spoken to directly: other hosts and ports, lookalikes, IP literals, other methods and a second request are refused" {
	egress_alloc "$(vendor_entry),api.openai.com:443"
	direct 'CONNECT example.com:443 HTTP/1.1\r\n\r\n' 403 not-allowed
	direct 'CONNECT api.anthropic.com:8443 HTTP/1.1\r\n\r\n' 403 not-allowed
	direct 'CONNECT api.openai.com.evil.test:443 HTTP/1.1\r\n\r\n' 403 not-allowed
	direct 'CONNECT evilapi.openai.com:443 HTTP/1.1\r\n\r\n' 403 not-allowed
	direct 'CONNECT api.openai.com.:443 HTTP/1.1\r\n\r\n' 400 malformed-authority
	direct 'CONNECT user@api.openai.com:443 HTTP/1.1\r\n\r\n' 400 malformed-authority
	direct 'CONNECT api.openai.com:0443 HTTP/1.1\r\n\r\n' 400 malformed-authority
	direct 'CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n' 400 ip-literal
	direct 'CONNECT [::1]:443 HTTP/1.1\r\n\r\n' 400 ip-literal
	direct 'CONNECT 169.254.169.254:80 HTTP/1.1\r\n\r\n' 400 ip-literal
	direct 'CONNECT 0x7f000001:443 HTTP/1.1\r\n\r\n' 400 ip-literal
	direct 'GET http://api.anthropic.com/ HTTP/1.1\r\nHost: api.anthropic.com\r\n\r\n' 405 method
	direct 'GET / HTTP/1.1\r\nHost: api.anthropic.com\r\n\r\n' 405 method
	direct 'CONNECT api.anthropic.com:443 HTTP/1.1\r\n\r\nCONNECT api.openai.com:443 HTTP/1.1\r\n\r\n' 400 pipelined
	direct '\x16\x03\x01\x02\x00\x01' 400 tls-handshake
	direct '\x05\x01\x00' 400 socks
	# An HTTP/2 client's whole preface: its method, not the bytes after.
	direct 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n' 405 method
	# The positive control on the same socket.
	run python3 "$AB_ROOT/tests/lib/egress-client.py" "$(socket_of "$AID")" \
		tunnel api.anthropic.com:443 x
	assert_line --index 0 "HTTP/1.1 200 Connection established"
	run_exact 0 ab-clean "$ALLOC"
}

@test "names that resolve to forbidden addresses are refused by the address guard" {
	local first
	egress_alloc "$(vendor_entry)"
	first=$AID
	# Unpinned: localhost is loopback; another proxy's name, through the
	# engine's DNS on the network, is a private address.
	egress_alloc "localhost:443,agentbox-$first-proxy:443"
	direct 'CONNECT localhost:443 HTTP/1.1\r\n\r\n' 403 address-loopback
	direct "CONNECT agentbox-$first-proxy:443 HTTP/1.1\\r\\n\\r\\n" 403 address-private
	run_exact 0 ab-clean "$ALLOC" "alloc:$first"
}

@test "inside the agent, without the proxy: no route, no DNS, only lo" {
	egress_alloc "$(vendor_entry)"
	agent planning "unset HTTPS_PROXY https_proxy HTTP_PROXY http_proxy
		ls /sys/class/net
		nc -w 2 $GW $VPORT </dev/null && echo reached-gateway
		nc -w 2 172.17.0.1 $VPORT </dev/null && echo reached-bridge
		printf x | nc -u -w 1 127.0.0.11 53 | wc -c
		openssl s_client -connect api.anthropic.com:443 </dev/null >/dev/null 2>&1 || echo no-direct-tls"
	assert_equal "$(record_field 'r["stdout"]["text"].splitlines()')" \
		'["lo", "0", "no-direct-tls"]'
	assert_equal "$(record_field 'r["egress"]["destinations"]')" '[]'
	run_exact 0 ab-clean "$ALLOC"
}

@test "the proxy runs as its own uid with no capability on a read-only root" {
	local pid
	egress_alloc "$(vendor_entry)"
	pid=$(docker inspect "agentbox-$AID-proxy" --format '{{.State.Pid}}')
	run grep -E '^(Uid|Gid|CapEff|CapPrm|NoNewPrivs|Seccomp):' "/proc/$pid/status"
	assert_line --regexp '^Uid:[[:space:]]+10002[[:space:]]+10002'
	assert_line --regexp '^CapEff:[[:space:]]+0000000000000000$'
	assert_line --regexp '^CapPrm:[[:space:]]+0000000000000000$'
	assert_line --regexp '^NoNewPrivs:[[:space:]]+1$'
	assert_line --regexp '^Seccomp:[[:space:]]+2$'
	run awk '$5 == "/" { print $6 }' "/proc/$pid/mountinfo"
	assert_output --regexp '^ro,'
	run_exact 0 ab-clean "$ALLOC"
}

# drift CHANGE UNDO FIELD: a proxy changed after validation makes ab-run
# refuse (126) naming FIELD; the agent never runs.
drift() {
	local prof ctr
	prof=$(ab-profile --alloc "$ALLOC" --phase planning --deadline "$DL" \
		--attempt "eg-$RANDOM$RANDOM" -- sh -c 'echo agent-ran')
	ctr=$(ab-validate "$prof")
	eval "$1"
	run_exact 126 ab-run "$ctr"
	eval "$2"
	assert_regex "$stderr" "proxy of alloc:$AID: lockdown drift: $3"
	refute_output --partial agent-ran
}

@test "a proxy changed after validation is drift: 126, naming what changed" {
	local p
	egress_alloc "$(vendor_entry)"
	p=agentbox-$AID-proxy
	# Joined to the default bridge, its addresses show first.
	drift "docker network connect bridge $p" "docker network disconnect bridge $p" \
		'NetworkSettings\.'
	drift "docker update --pids-limit 1000 $p >/dev/null" \
		"docker update --pids-limit 80 $p >/dev/null" 'HostConfig.PidsLimit'
	drift "docker update --restart always $p >/dev/null" \
		"docker update --restart no $p >/dev/null" 'HostConfig.RestartPolicy.Name'
	drift "docker stop -t 1 $p >/dev/null" ":" 'State.Running'
	run_exact 0 ab-clean "$ALLOC"
}

@test "1,000 idle connections and a slow request line: the proxy holds its bounds and serves after" {
	local sock mem
	egress_alloc "$(vendor_entry)"
	sock=$(socket_of "$AID")
	ulimit -n 4096
	# 64 are taken, the rest answered 503 at once.
	run python3 "$AB_ROOT/tests/lib/egress-client.py" "$sock" idle 1000 1
	[ "$output" -ge 900 ]
	run python3 "$AB_ROOT/tests/lib/egress-client.py" "$sock" slow
	assert_output "HTTP/1.1 408 Request Timeout"
	# Not the log's last line: a slow proxy (make asan) may still be
	# answering the flood's backlog with busy refusals after it.
	run sh -c "docker logs agentbox-$AID-proxy 2>/dev/null | grep -c '\"reason\":\"request-timeout\"'"
	[ "$output" -ge 1 ]
	[ "$(docker inspect "agentbox-$AID-proxy" --format '{{.State.Running}}')" = true ]
	mem=$(docker stats --no-stream --format '{{.MemUsage}}' "agentbox-$AID-proxy")
	echo "# proxy memory after the flood: $mem" >&3
	run python3 "$AB_ROOT/tests/lib/egress-client.py" "$sock" \
		tunnel api.anthropic.com:443 x
	assert_line --index 0 "HTTP/1.1 200 Connection established"
	run_exact 0 ab-clean "$ALLOC"
}

@test "an agent that floods the proxy's log erases nothing: the bytes it sent stay in its result" {
	local sock busy
	egress_alloc "$SINK"
	sock=$(socket_of "$AID")
	agent_start
	# As the agent could, on the socket itself: 30 MB to an allowed
	# destination, then refusals enough to rotate the proxy's log.
	run python3 "$AB_ROOT/tests/lib/egress-client.py" "$sock" upload \
		sink.test:443 30000000
	assert_output 30000000
	run python3 "$AB_ROOT/tests/lib/egress-client.py" "$sock" names 45000 f
	assert_output --regexp '^45000 [0-9]+$'
	busy=${output#* }
	run sh -c "docker logs agentbox-$AID-proxy 2>/dev/null | head -n 1"
	refute_output --partial '"event":"start"'
	agent_finish
	assert_equal "$STATUS" 0
	assert_equal "$(record_field '[(d["host"], d["allowed"], d["bytes_up"]) for d in r["egress"]["destinations"] if d["host"] == "sink.test"]')" \
		'[["sink.test", 1, 30000000]]'
	assert_equal "$(record_field '[r["egress"][k] for k in ("totals", "names_dropped", "truncated", "complete", "proxy", "scope")]')" \
		"[{\"allowed\": 1, \"refused\": $((45000 + busy)), \"bytes_up\": 30000000, \"bytes_down\": 0}, 44968, true, true, \"running\", \"invocation\"]"
	run_exact 0 ab-clean "$ALLOC"
}

@test "refused names cannot crowd an allowed destination out: the cap is on refused names alone" {
	local sock busy
	egress_alloc "$SINK"
	sock=$(socket_of "$AID")
	agent_start
	run python3 "$AB_ROOT/tests/lib/egress-client.py" "$sock" names 40 c
	assert_output --regexp '^40 [0-9]+$'
	busy=${output#* }
	run python3 "$AB_ROOT/tests/lib/egress-client.py" "$sock" upload \
		sink.test:443 5000000
	assert_output 5000000
	agent_finish
	assert_equal "$(record_field '[(d["host"], d["allowed"], d["refused"], d["bytes_up"]) for d in r["egress"]["destinations"] if d["host"] == "sink.test"]')" \
		'[["sink.test", 1, 0, 5000000]]'
	assert_equal "$(record_field 'len([d for d in r["egress"]["destinations"] if d["refused"] and d["host"] is not None])')" 32
	assert_equal "$(record_field '[r["egress"][k] for k in ("totals", "names_dropped", "truncated")]')" \
		"[{\"allowed\": 1, \"refused\": $((40 + busy)), \"bytes_up\": 5000000, \"bytes_down\": 0}, 8, true]"
	run_exact 0 ab-clean "$ALLOC"
}

@test "1,000 tunnels stuffed at once cannot kill the proxy: its memory limit holds what its bound lets in" {
	local sock mem limit
	ulimit -n 4096
	egress_alloc "$TARPIT" --egress-conns 1024
	sock=$(socket_of "$AID")
	# Up to 1 MiB each into a destination that never reads: every
	# buffer on the way fills.
	python3 "$AB_ROOT/tests/lib/egress-client.py" "$sock" stuff 1000 \
		1048576 tarpit.test:443 25 >"$BATS_TEST_TMPDIR/stuff.out" &
	sleep 20
	mem=$(docker stats --no-stream --format '{{.MemUsage}}' "agentbox-$AID-proxy")
	limit=$(docker inspect "agentbox-$AID-proxy" --format '{{.HostConfig.Memory}}')
	echo "# proxy memory with 1,000 stuffed tunnels: $mem (limit $limit)" >&3
	wait
	assert_equal "$(cat "$BATS_TEST_TMPDIR/stuff.out")" 1000
	assert_equal "$(docker inspect "agentbox-$AID-proxy" --format '{{.State.Running}} {{.State.OOMKilled}}')" \
		"true false"
	run_exact 0 ab-clean "$ALLOC"
}

@test "SIGUSR1 asks the proxy for its tally: it writes one at once, more often than its beat could, and runs on" {
	local dir pid
	egress_alloc "$SINK"
	dir=$(dirname "$(socket_of "$AID")")
	pid=$(docker inspect --format '{{.State.Pid}}' "agentbox-$AID-proxy")
	# Its handler is installed (SigCgt bit 10): as PID 1 of its
	# container, a proxy without one would never see the signal.
	run python3 -c 'import sys
m = int([l.split()[1] for l in open(sys.argv[1]) if l.startswith("SigCgt:")][0], 16)
print(m >> 9 & 1)' "/proc/$pid/status"
	assert_output 1
	# One ask at a time, through the engine as ab-run asks, each once
	# the write before it is seen: signals sent together coalesce.  A
	# quiet proxy's beat writes 1 s after its last write at the
	# earliest, so a write that is the only one since the last and came
	# under 0.9 s after it (the files' own times) was asked for.  An ask
	# slower than that proves nothing and the next one is made; five
	# that prove it are wanted.
	run python3 -c '
import http.client, json, os, socket, sys, time
tally, ctr = sys.argv[1], sys.argv[2]
class Engine(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect("/var/run/docker.sock")
def ask():
    c = Engine("localhost")
    c.request("POST", "/containers/%s/kill?signal=SIGUSR1" % ctr)
    r = c.getresponse()
    r.read()
    c.close()
    if r.status != 204:
        sys.exit("the engine said %d" % r.status)
def written():
    with open(tally) as f:
        return json.load(f)["seq"], os.fstat(f.fileno()).st_mtime_ns
end = time.monotonic() + 60
asked, (seq, at) = 0, written()
while asked < 5 and time.monotonic() < end:
    ask()
    while (now := written())[0] == seq and time.monotonic() < end:
        time.sleep(0.005)
    if now[0] == seq + 1 and now[1] - at < 900000000:
        asked += 1
    seq, at = now
print(asked)' "$dir/tally.json" "agentbox-$AID-proxy"
	assert_output 5
	assert_equal "$(docker inspect --format '{{.State.Running}}' "agentbox-$AID-proxy")" true
	run_exact 0 ab-clean "$ALLOC"
}

@test "a proxy whose tally cannot be read is no run: 125 before the start, said in one line" {
	local dir prof ctr
	egress_alloc "$SINK"
	dir=$(dirname "$(socket_of "$AID")")
	# The proxy can write no new tally there, and the last one goes.
	chmod 0555 "$dir"
	rm -f "$dir/tally.json"
	prof=$(ab-profile --alloc "$ALLOC" --phase planning --deadline "$DL" \
		--attempt "eg-$RANDOM$RANDOM" -- sh -c 'echo agent-ran')
	ctr=$(ab-validate "$prof")
	run_exact 125 ab-run "$ctr"
	assert_one_error_line ab-run
	assert_regex "$stderr" "^ab-run: engine-error: read the proxy's tally: engine said 404; the agent did not start$"
	refute_output --partial agent-ran
	# Said once in its log, at its next write (within a second).
	for _ in $(seq 1 30); do
		docker logs "agentbox-$AID-proxy" 2>/dev/null | grep -q tally-failed && break
		sleep 0.1
	done
	run sh -c "docker logs agentbox-$AID-proxy 2>/dev/null | grep -c tally-failed"
	assert_output 1
	chmod 0755 "$dir"
	run_exact 0 ab-clean "$ALLOC"
}

@test "a proxy that dies while the agent runs is said in the result; the agent's status stays its own" {
	egress_alloc "$SINK"
	agent_start
	docker kill "agentbox-$AID-proxy" >/dev/null
	agent_finish
	cat "$BATS_TEST_TMPDIR/run.err" >&2
	assert_equal "$STATUS" 0
	assert_equal "$(record_field '[r["reason"], r["egress"]["proxy"], r["egress"]["complete"]]')" \
		'["exited", "exited", false]'
	# The tally went with the proxy's tmpfs: nothing is counted as zero.
	assert_equal "$(record_field '[r["egress"]["destinations"], r["egress"]["totals"]]')" \
		'[null, null]'
	run cat "$BATS_TEST_TMPDIR/run.err"
	assert_output "ab-run: the allocation's egress proxy died while the agent ran (exited): its egress record is incomplete"
	run_exact 0 ab-clean "$ALLOC"
}

egress_objects() {
	docker ps -aq --filter "label=org.agentbox.state=$(ab_state_sid "${1:-$AB_STATE_DIR}")"
	docker volume ls -q --filter "label=org.agentbox.state=$(ab_state_sid "${1:-$AB_STATE_DIR}")"
	docker network ls -q --filter "label=org.agentbox.state=$(ab_state_sid "${1:-$AB_STATE_DIR}")"
}

# engine_network: the engine's egress network, by ID (proxy.h): labelled
# with the engine's mark, made once, kept between allocations.
engine_network() {
	local mark
	mark=$(docker volume inspect agentbox-engine \
		--format '{{index .Labels "org.agentbox.engine"}}')
	docker network ls -q --no-trunc --filter label=org.agentbox.role=egress \
		--filter "label=org.agentbox.engine=$mark"
}

@test "ab-clean leaves no container, volume or network of the allocation; the engine's egress network stays, and the next joins it" {
	local net first
	egress_alloc "$(vendor_entry)"
	first=$ALLOC
	net=$(engine_network)
	[ -n "$net" ]
	assert_equal "$(printf '%s\n' "$net" | wc -l)" 1
	assert_regex "$(docker network inspect "$net" --format '{{.Name}} {{.Driver}} {{.Internal}} {{json .Options}}')" \
		"^agentbox-egress-$(docker volume inspect agentbox-engine --format '{{index .Labels "org.agentbox.engine"}}')-[0-9a-f]{32} bridge false \\{\"com.docker.network.bridge.enable_icc\":\"false\"\\}\$"
	assert_equal "$(docker inspect "agentbox-$AID-proxy" --format '{{.HostConfig.NetworkMode}}')" \
		"$(docker network inspect "$net" --format '{{.Name}}')"
	run_exact 0 ab-clean "$first"
	run egress_objects
	assert_output ""
	assert_equal "$(engine_network)" "$net"
	egress_alloc "$(vendor_entry)"
	assert_equal "$(docker inspect "agentbox-$AID-proxy" --format '{{range .NetworkSettings.Networks}}{{.NetworkID}}{{end}}')" "$net"
	assert_equal "$(engine_network)" "$net"
	run_exact 0 ab-clean "$ALLOC"
	run egress_objects
	assert_output ""
}

@test "a record names an egress network of its own engine or none: edited to another network, the steps refuse it" {
	local name other
	egress_alloc "$(vendor_entry)"
	name=$(docker inspect "agentbox-$AID-proxy" --format '{{.HostConfig.NetworkMode}}')
	grep -q "\"network\":\"$name\"" "$AB_STATE_DIR/alloc/$AID"
	cp "$AB_STATE_DIR/alloc/$AID" "$BATS_TEST_TMPDIR/record"
	other="agentbox-egress-$(printf '%032d' 0)-${name##*-}"
	for to in bridge host "$other" "${name%-*}"; do
		sed "s/\"network\":\"$name\"/\"network\":\"$to\"/" "$BATS_TEST_TMPDIR/record" \
			>"$AB_STATE_DIR/alloc/$AID"
		grep -q "\"network\":\"$to\"" "$AB_STATE_DIR/alloc/$AID"
		run_exact 1 ab-profile --alloc "$ALLOC" --phase planning \
			--attempt "net-$RANDOM$RANDOM" --deadline "$DL" -- true
		assert_one_error_line ab-profile
		assert_equal "$stderr" "ab-profile: record of alloc:$AID is corrupt or out of bounds"
	done
	cp "$BATS_TEST_TMPDIR/record" "$AB_STATE_DIR/alloc/$AID"
	run_exact 0 ab-clean "$ALLOC"
	run egress_objects
	assert_output ""
}

@test "ab-alloc --egress killed at each pause point leaves what a sweep removes" {
	local point pid
	for point in alloc-recorded alloc-volumes-created alloc-network-ready \
		alloc-proxy-created; do
		AB_TEST_PAUSE=$point ab-alloc --image "$AB_IMAGE" \
			--egress "$(vendor_entry)" >/dev/null 2>&1 &
		pid=$!
		ab_wait_stopped "$pid"
		kill -KILL "$pid"
		wait "$pid" || true
		run_exact 0 ab-clean --sweep --all
		run egress_objects
		assert_output ""
	done
}

@test "a proxy the engine will not make beside a keeper it made: 125 in one line, nothing left" {
	local n
	n=$(find "$AB_STATE_DIR/alloc" -maxdepth 1 -type f -name '[0-9a-f]*' 2>/dev/null | wc -l)
	# ab-alloc makes the keeper and the proxy at once: the keeper's are
	# made, the proxy's create is refused.
	ab_proxy_start --match '^POST /v[0-9.]+/containers/create\?name=agentbox-[0-9a-f]+-proxy' \
		--action fail --status 500 --message "no proxy today"
	DOCKER_HOST=unix://$AB_PROXY_SOCK run_exact 125 ab-alloc \
		--image "$AB_IMAGE" --egress "$(vendor_entry)" --deadline "$DL"
	assert_one_error_line ab-alloc
	assert_regex "$stderr" "no proxy today"
	grep -q '^fail POST /v[0-9.]*/containers/create?name=agentbox-[0-9a-f]*-proxy' "$AB_PROXY_LOG"
	grep -q '^reply 204 POST /v[0-9.]*/containers/[0-9a-f]*/start' "$AB_PROXY_LOG"
	run egress_objects
	assert_output ""
	assert_equal "$(find "$AB_STATE_DIR/alloc" -maxdepth 1 -type f -name '[0-9a-f]*' 2>/dev/null | wc -l)" "$n"
}

@test "another allocation's clean never takes the network from under a proxy not yet started" {
	local pid cpid st=0 first
	egress_alloc "$(vendor_entry)"
	first=$ALLOC
	AB_TEST_PAUSE=alloc-proxy-created ab-alloc --image "$AB_IMAGE" \
		--egress "$(vendor_entry)" --deadline "$DL" \
		>"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	ab_wait_stopped "$pid"
	# The first allocation's proxy is the only one on the network as
	# the engine sees it: a created proxy is on none until it starts.
	ab-clean "$first" >/dev/null 2>&1 &
	cpid=$!
	sleep 1
	kill -CONT "$pid"
	wait "$pid" || st=$?
	wait "$cpid"
	cat "$BATS_TEST_TMPDIR/err" >&2
	assert_equal "$st" 0
	[ -n "$(engine_network)" ]
	run_exact 0 ab-clean "$(cat "$BATS_TEST_TMPDIR/out")"
	run egress_objects
	assert_output ""
}

@test "two state directories with egress at once share the engine's network and never touch each other's proxies" {
	local other oimg oalloc
	egress_alloc "$(vendor_entry)"
	other=$(ab_new_state)
	oimg=$(AB_STATE_DIR=$other ab-image build --dir "$BATS_FILE_TMPDIR/image" 2>/dev/null)
	oalloc=$(AB_STATE_DIR=$other ab-alloc --image "$oimg" --egress "$(vendor_entry)")
	assert_equal "$(docker inspect "agentbox-${oalloc#alloc:}-proxy" --format '{{range .NetworkSettings.Networks}}{{.NetworkID}}{{end}}')" \
		"$(engine_network)"
	assert_equal "$(docker inspect "agentbox-$AID-proxy" --format '{{range .NetworkSettings.Networks}}{{.NetworkID}}{{end}}')" \
		"$(engine_network)"
	run_exact 0 ab-clean "$ALLOC"
	run_exact 0 ab-clean --sweep --all
	[ "$(docker inspect "agentbox-${oalloc#alloc:}-proxy" --format '{{.State.Running}}')" = true ]
	AB_STATE_DIR=$other run_exact 0 ab-clean "$oalloc"
	run egress_objects "$other"
	assert_output ""
	ab_purge_state "$other"
}

# The engine's CheckDuplicate does not hold against creates at once: before
# the state's lock, some of these made a second network of the shared name
# and the look-ups after it failed as ambiguous (engines.bats makes the
# engine's first on an engine of its own: another suite may share this).
@test "six allocations with egress made at once in one state directory share one network, and all work" {
	local i
	at_once 6 ab-alloc --image "$AB_IMAGE" --egress "$(vendor_entry)"
	assert_equal "$(engine_network | wc -l)" 1
	for i in "${AT_ONCE[@]}"; do
		assert_equal "$(docker inspect "agentbox-${i#alloc:}-proxy" --format '{{range .NetworkSettings.Networks}}{{.NetworkID}}{{end}}')" "$(engine_network)"
	done
	for i in "${AT_ONCE[@]}"; do
		run_exact 0 ab-clean "$i"
	done
	run egress_objects
	assert_output ""
	# Two of one name, as an older agentbox left them (one per state
	# directory): a sweep removes both.
	for i in 1 2; do
		curl -sf --unix-socket /var/run/docker.sock -H 'Content-Type: application/json' \
			-d "{\"Name\":\"agentbox-$(ab_state_sid)-egress\",\"CheckDuplicate\":false,\"Driver\":\"bridge\",\"Options\":{\"com.docker.network.bridge.enable_icc\":\"false\"},\"Labels\":{\"org.agentbox.state\":\"$(ab_state_sid)\",\"org.agentbox.role\":\"egress\"}}" \
			http://engine/networks/create >/dev/null
	done
	assert_equal "$(docker network ls -q --filter "label=org.agentbox.state=$(ab_state_sid)" | wc -l)" 2
	run_exact 0 ab-clean --sweep --all
	run egress_objects
	assert_output ""
}

@test "run-task --egress --ca runs end to end and the result says what was allowed and refused" {
	run_exact 0 "$AB_ROOT/sh/run-task" --repo "$REPO" --commit "$COMMIT" \
		--phase planning --timeout 120 --image "$AB_IMAGE" \
		--egress "$(vendor_entry),api.openai.com:443" --ca "$CA" -- sh -c \
		'echo hi | openssl s_client -quiet -proxy 127.0.0.1:3128 -connect api.anthropic.com:443 -verify_return_error; printf "CONNECT evil.test:443 HTTP/1.1\r\n\r\n" | nc 127.0.0.1 3128 | head -n 1'
	RECORD=$output
	# Shown only if the test fails: the clients' own account.
	record_field 'r["stderr"]["text"]' >&2
	assert_equal "$(record_field 'r["stdout"]["text"].splitlines()')" \
		'["vendor saw: hi", "HTTP/1.1 403 Forbidden"]'
	assert_equal "$(record_field 'sorted((d["host"], d["allowed"], d["refused"], d["reasons"]) for d in r["egress"]["destinations"])')" \
		'[["api.anthropic.com", 1, 0, {}], ["evil.test", 0, 1, {"not-allowed": 1}]]'
	run egress_objects
	assert_output ""
}

@test "bad egress lists are usage errors; an image without the proxy is refused" {
	run_exact 2 ab-alloc --image "$AB_IMAGE" --egress 'api.openai.com'
	assert_one_error_line ab-alloc
	run_exact 2 ab-alloc --image "$AB_IMAGE" --egress '1.2.3.4:443'
	assert_regex "$stderr" "an IP address is not a host"
	run_exact 2 ab-alloc --image "$AB_IMAGE" --egress 'a.test:443=example.com:443'
	run_exact 2 ab-alloc --image "$AB_IMAGE" --egress 'a.test:443,,b.test:443'
	run_exact 2 ab-alloc --image "$AB_IMAGE" --egress-conns 5
	run_exact 2 ab-alloc --image "$AB_IMAGE" --egress claude --egress-conns 5000
	egress_alloc "$(vendor_entry)"
	echo 'not a certificate' >"$BATS_TEST_TMPDIR/bad.pem"
	run_exact 2 ab-profile --alloc "$ALLOC" --phase planning --attempt \
		"eg-$RANDOM$RANDOM" --deadline "$DL" --ca "$BATS_TEST_TMPDIR/bad.pem" -- true
	assert_regex "$stderr" "no PEM certificate"
	run_exact 0 ab-clean "$ALLOC"
	# An image without the proxy and the relay cannot give egress.
	local dir=$BATS_TEST_TMPDIR/image img
	cp -r "$AB_ROOT/image" "$dir"
	sed -i '/ab-proxy\|ab-relay/d' "$dir/default.manifest"
	img=$(ab-image build --dir "$dir" 2>/dev/null)
	run_exact 1 ab-alloc --image "$img" --egress claude
	assert_regex "$stderr" "has no ab-proxy and ab-relay"
	run_exact 0 ab-image remove "$img"
}
