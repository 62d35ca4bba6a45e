#!/usr/bin/env bats
# The agent never holds its vendor credential (agentbox(7), "CREDENTIALS"):
# the allocation's proxy ends TLS for the provider's API host under a CA of
# its own and puts the credential in; the agent holds a placeholder of
# the same shape.  The real CLIs against the tests' scripted vendor
# (tests/lib/vendor.py, told the real key with --credential, so its log
# says "real", "other" or "none", never a value), and a hostile agent
# played from the host through a relay to the proxy's socket.

# shellcheck disable=SC2154 # bats sets status, output, stderr
# shellcheck disable=SC2034 # RECORD is read by record_field (helpers.bash)
# shellcheck disable=SC2030,SC2031 # each test sets the globals it uses
# bats file_tags=agents
load helpers

setup_file() {
	ab_agents_setup_file || return 1
	CA=$BATS_FILE_TMPDIR/ca
	ab_test_ca "$CA" api.anthropic.com,api.openai.com
	GW=$(ab_bridge_gateway)
	KEY=$BATS_FILE_TMPDIR/api-key
	printf 'sk-ant-api03-%s%s-AbCd_x\n' "$(head -c 30 /dev/urandom |
		base64 | tr -dc 'A-Za-z0-9' | head -c 40)" "$RANDOM" >"$KEY"
	REPO=$BATS_FILE_TMPDIR/repo
	git init -q "$REPO"
	# What a repository's own code, run by an approved command, can see
	# of the credential: every process's environment it can read.
	cat >"$REPO/leak.sh" <<'EOF'
for f in /proc/[0-9]*/environ; do
	tr '\0' '\n' <"$f" 2>/dev/null
done | grep -a -E '^(ANTHROPIC_API_KEY|CLAUDE_CODE_OAUTH_TOKEN|CODEX_API_KEY)=' |
	sort -u
EOF
	git -C "$REPO" add -A
	git -C "$REPO" -c user.name=t -c user.email=t@t commit -qm one
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	export CA GW KEY REPO COMMIT
}

teardown() {
	[ -z "${VPID:-}" ] || kill "$VPID" 2>/dev/null || true
	[ -z "${RPID:-}" ] || kill "$RPID" 2>/dev/null || true
	ab-clean --sweep --all >/dev/null 2>&1 || true
}

# alloc_with_vendor SCENARIO [AB-ALLOC OPTIONS...]: the scripted vendor
# (told the real key) and an allocation reaching it under its real name.
alloc_with_vendor() {
	local scenario=$1
	shift
	ab_vendor anthropic "$scenario" --credential "$KEY"
	ab_deadline_in "$BATS_TEST_TMPDIR/deadline" 180
	ALLOC=$(ab-alloc --image "$AB_AGENTS_IMAGE" \
		--deadline "$BATS_TEST_TMPDIR/deadline" \
		--egress "api.anthropic.com:443=$GW:$VPORT" "$@")
	ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" >/dev/null
	printf 'Do the task.\n' >"$BATS_TEST_TMPDIR/prompt"
}

# validated PHASE [AB-PROFILE OPTIONS...]: Claude Code's validated
# container on ALLOC, in CTR; its profile in PROF.
validated() {
	local phase=$1
	shift
	PROF=$(ab-profile --alloc "$ALLOC" --phase "$phase" \
		--deadline "$BATS_TEST_TMPDIR/deadline" \
		--attempt "in-$RANDOM$RANDOM" --provider claude \
		--prompt "$BATS_TEST_TMPDIR/prompt" --api-key-file "$KEY" "$@")
	CTR=$(ab-validate "$PROF")
}

# The placeholder the agent of PROF holds (root reads it in the keeper).
placeholder() {
	docker exec -u 0 "agentbox-${ALLOC#alloc:}-keeper" \
		/usr/lib/agentbox/busybox cat \
		"/run/agentbox/inputs/${PROF#profile:}/secret"
}

# The vault's files and their sizes (the proxy's uid reads them: the
# proxy's container holds no capability, not even for root).
vault_sizes() {
	docker exec -u 10002 "agentbox-${ALLOC#alloc:}-proxy" \
		/usr/lib/agentbox/busybox sh -c \
		'cd /run/agentbox/egress/vault && /usr/lib/agentbox/busybox wc -c -- *'
}

# The real key appears in nothing agentbox keeps or the engine holds.
key_nowhere() {
	local secret c
	secret=$(cat "$KEY")
	run grep -rlF -- "$secret" "$AB_STATE_DIR"
	assert_output ""
	for c in $(docker ps -aq --filter "label=org.agentbox.alloc=${ALLOC#alloc:}"); do
		run docker inspect "$c"
		refute_output --partial "$secret"
		run docker logs "$c"
		refute_output --partial "$secret"
	done
}

# leak_run MODE HOST CRED SCENARIO AB-PROFILE OPTIONS...: the scripted
# vendor (told the credential in the file CRED), an allocation reaching
# HOST through it, and one execution of the real CLI the options name,
# with `sh leak.sh` approved; RECORD, ab-run's stderr in stderr.  The run
# ends ok, injected, and every call the CLI made carried the real
# credential, put in by the proxy.
leak_run() {
	local mode=$1 host=$2 cred=$3 scenario=$4
	shift 4
	ab_vendor "$mode" "$scenario" --credential "$cred"
	ab_deadline_in "$BATS_TEST_TMPDIR/deadline" 180
	ALLOC=$(ab-alloc --image "$AB_AGENTS_IMAGE" \
		--deadline "$BATS_TEST_TMPDIR/deadline" \
		--egress "$host:443=$GW:$VPORT")
	ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" >/dev/null
	printf 'Do the task.\n' >"$BATS_TEST_TMPDIR/prompt"
	PROF=$(ab-profile --alloc "$ALLOC" --phase execution \
		--deadline "$BATS_TEST_TMPDIR/deadline" \
		--attempt "lk-$RANDOM$RANDOM" --ca "$CA/ca.pem" \
		--prompt "$BATS_TEST_TMPDIR/prompt" --allow-command 'sh leak.sh' "$@")
	CTR=$(ab-validate "$PROF")
	run --separate-stderr ab-run "$CTR"
	RECORD=$(ab-run --show "$output")
	cat "$VLOG" >&2
	assert_equal "$(record_field '[r["agent"]["status"], r["credential"]]')" \
		'["ok", "injected"]'
	refute_output --partial "$(cat "$cred")"
	[[ "$stderr" != *"$(cat "$cred")"* ]] || fail "ab-run's stderr holds it"
	assert_equal "$(vlog 'sorted(set(x["credential"] for x in L if "credential" in x))')" '["real"]'
}

# a_placeholder CRED PREFIX SEEN PH: PH, what the repository's script
# found in the environments it could read (all of which is SEEN), has
# the credential's length and PREFIX and is not it; neither SEEN, nor the
# vendor's log, nor anything agentbox or the engine keeps holds it.
a_placeholder() {
	local secret
	secret=$(cat "$1")
	[ -n "$4" ] || fail "the script saw no credential variable: $3"
	[[ "$3" != *"$secret"* ]] || fail "the agent's processes hold it"
	assert_equal "${#4}" "${#secret}"
	assert_equal "${4:0:${#2}}" "$2"
	[ "$4" != "$secret" ] || fail "the placeholder is the credential"
	grep -qF -- "$secret" "$VLOG" && fail "the vendor's log holds it"
	KEY=$1 key_nowhere
}

@test "Claude Code with an API key: the vendor gets the key on every call, the agent's processes hold a placeholder of its shape" {
	local seen
	leak_run anthropic api.anthropic.com "$KEY" \
		'{"turns":[{"tool":"Bash","input":{"command":"sh leak.sh"}},{"text":"done"}]}' \
		--provider claude --api-key-file "$KEY"
	assert_equal "$(vlog 'len([x for x in L if x.get("main")])')" 2
	assert_equal "$(vlog 'sorted(set(x["x_api_key"] for x in L if "credential" in x))')" '[true]'
	# The result lists each request the proxy put the key in, from its
	# own tally: every call the vendor saw, its path without the query.
	assert_equal "$(record_field 'sorted([x["method"], x["path"]] for x in r["egress"]["requests"]["listed"])')" \
		"$(vlog 'sorted([x["method"], x["path"].split("?")[0]] for x in L)')"
	assert_equal "$(record_field '[r["egress"]["requests"][k] for k in ("count", "more")]')" \
		"[$(vlog 'len(L)'), 0]"
	assert_equal "$(record_field 'sorted(set((x["bytes_up"] > 0, x["bytes_down"] > 0, x["ms"] >= 0, "?" in x["path"]) for x in r["egress"]["requests"]["listed"]))')" \
		'[[true, true, true, false]]'
	# What the repository's script saw, and the model with it.
	seen=$(vlog '[r["text"] for x in L for r in x.get("tool_results", [])][0]')
	a_placeholder "$KEY" sk-ant-api03- "$seen" \
		"$(sed -n 's/^ANTHROPIC_API_KEY=//p' <<<"$seen" | head -n 1)"
	# The agent settled: the vault's file and the snapshot were emptied.
	run vault_sizes
	assert_success
	assert_output --regexp '^ *0 api\.anthropic\.com:443\.[0-9a-f]{64}'
	refute_output --regexp '^ *[1-9][0-9]* api'
}

# relay: a relay on the host to the allocation's proxy socket, as the
# agent's own; RELAY is its URL, PCA the proxy's CA certificate.
relay() {
	local dir port
	dir=$(docker volume inspect "agentbox-${ALLOC#alloc:}-egress" \
		--format '{{.Mountpoint}}')
	PCA=$dir/ca.pem
	port=$((20000 + RANDOM % 20000))
	ab-relay --socket "$dir/proxy.sock" --listen "127.0.0.1:$port"
	RPID=$(pgrep -f "ab-relay --socket $dir/proxy.sock" | head -n 1)
	RELAY=http://127.0.0.1:$port
}

# api PATH CURL-OPTIONS...: a request to the vendor through the proxy,
# trusting only the proxy's CA; prints the status, headers and body.
api() {
	local path=$1
	shift
	curl -sS -i --max-time 20 --proxy "$RELAY" --cacert "$PCA" "$@" \
		"https://api.anthropic.com$path"
}

@test "a hostile agent with the placeholder: another key, no key, a second header, the wrong header, all refused; the placeholder elsewhere unchanged" {
	local ph n other
	alloc_with_vendor '{"turns":[{"text":"done"}]}'
	validated planning --ca "$CA/ca.pem"
	ph=$(placeholder)
	[ -n "$ph" ] || fail "no placeholder"
	relay
	# The placeholder in its header goes in as the key; in a query,
	# another header and the body it stays as it is.
	run api "/v1/probe?k=$ph" -H "x-api-key: $ph" -H "x-probe: $ph" -d "$ph"
	assert_output --partial "HTTP/1.1 200"
	assert_equal "$(vlog '[L[-1][k] for k in ("credential", "x_probe", "body", "path")]' |
		tr -d ' ')" "[\"real\",\"$ph\",\"$ph\",\"/v1/probe?k=$ph\"]"
	n=$(wc -l <"$VLOG")
	other="sk-ant-api03-$(printf '%0*d' $((${#ph} - 13)) 7)"
	run api /v1/probe -H "x-api-key: $other"
	assert_output --partial "HTTP/1.1 403"
	assert_output --partial "X-Agentbox-Refused: credential"
	run api /v1/probe
	assert_output --partial "HTTP/1.1 403"
	run api /v1/probe -H "Authorization: Bearer $ph"
	assert_output --partial "HTTP/1.1 403"
	run api /v1/probe -H "x-api-key: $ph" -H "Authorization: Bearer $ph"
	assert_output --partial "HTTP/1.1 403"
	# None of them reached the vendor.
	assert_equal "$(wc -l <"$VLOG")" "$n"
	# Every request of a kept-alive connection is judged, not only the
	# first: the second, with another key, is refused.
	run curl -sS -i --max-time 20 --proxy "$RELAY" --cacert "$PCA" \
		-H "x-api-key: $ph" https://api.anthropic.com/v1/probe --next \
		-sS -i --max-time 20 --proxy "$RELAY" --cacert "$PCA" \
		-H "x-api-key: $other" https://api.anthropic.com/v1/probe
	assert_output --partial "HTTP/1.1 200"
	assert_output --partial "HTTP/1.1 403"
	assert_equal "$(wc -l <"$VLOG")" "$((n + 1))"
	# An answer that echoes the key reaches the agent with the
	# placeholder, in a header and across two chunks of the body.
	run api /v1/echo -H "x-api-key: $ph" -d x
	assert_output --partial "X-Echo: $ph"
	assert_output --partial "key=$ph;"
	refute_output --partial "$(cat "$KEY")"
	# The proxy's CA key is nowhere an agent can read.
	run grep -rl "PRIVATE KEY" "$(dirname "$PCA")"
	assert_output ""
	# Once the invocation settles, its placeholder is refused.
	run ab-run "$CTR"
	assert_success
	run api /v1/probe -H "x-api-key: $ph"
	assert_output --partial "HTTP/1.1 403"
	key_nowhere
}

@test "the vendor's certificate from another CA: 502, and nothing is sent upstream" {
	local ph n
	alloc_with_vendor '{"turns":[{"text":"done"}]}'
	# No --ca: the proxy verifies the vendor against the image's anchors
	# alone, which do not hold the test CA.
	validated planning
	ph=$(placeholder)
	relay
	n=$(wc -l <"$VLOG")
	run api /v1/probe -H "x-api-key: $ph"
	assert_output --partial "HTTP/1.1 502"
	assert_output --partial "X-Agentbox-Refused: upstream-tls"
	assert_equal "$(wc -l <"$VLOG")" "$n"
	run docker logs "agentbox-${ALLOC#alloc:}-proxy"
	assert_output --partial '"reason":"upstream-tls"'
	assert_output --partial 'certificate verify failed'
}

@test "Codex with an API key: the vendor gets the key as Bearer on every call, the repository's script sees a placeholder" {
	local seen ph key=$BATS_TEST_TMPDIR/codex-key
	printf 'sk-proj-%s\n' "$(head -c 40 /dev/urandom | base64 |
		tr -dc 'A-Za-z0-9' | head -c 48)" >"$key"
	leak_run openai api.openai.com "$key" \
		'{"turns":[{"shell":"sh leak.sh"},{"text":"done"}]}' \
		--provider codex --api-key-file "$key"
	seen=$(vlog '"\n".join(o["text"] for x in L for o in x.get("outputs", []))')
	# In Codex's JSON of the output: the key's own characters end it.
	ph=$(grep -o 'CODEX_API_KEY=[A-Za-z0-9_-]*' <<<"$seen" | head -n 1)
	a_placeholder "$key" sk-proj- "$seen" "${ph#CODEX_API_KEY=}"
}

@test "Claude Code with an OAuth token: the vendor gets it as Bearer on every call, the agent's processes hold a placeholder" {
	local seen tok=$BATS_TEST_TMPDIR/token
	printf 'sk-ant-oat01-%s\n' "$(head -c 60 /dev/urandom | base64 |
		tr -dc 'A-Za-z0-9' | head -c 68)" >"$tok"
	leak_run anthropic api.anthropic.com "$tok" \
		'{"turns":[{"tool":"Bash","input":{"command":"sh leak.sh"}},{"text":"done"}]}' \
		--provider claude --claude-token-file "$tok"
	assert_equal "$(vlog 'sorted(set(x["authorization"] for x in L if "credential" in x))')" '[true]'
	seen=$(vlog '[r["text"] for x in L for r in x.get("tool_results", [])][0]')
	a_placeholder "$tok" sk-ant-oat01- "$seen" \
		"$(sed -n 's/^CLAUDE_CODE_OAUTH_TOKEN=//p' <<<"$seen" | head -n 1)"
}

@test "two agents of one allocation with two keys: each request carries its own; once one settles its placeholder is refused, the other's still works" {
	local key2=$BATS_TEST_TMPDIR/key2 ph1 ph2 ctr1 ctr2
	printf 'sk-ant-api03-second%s\n' "$RANDOM$RANDOM$RANDOM" >"$key2"
	ab_vendor anthropic '{"turns":[{"text":"done","times":0}]}' \
		--credential "$KEY" --credential "$key2"
	ab_deadline_in "$BATS_TEST_TMPDIR/deadline" 180
	ALLOC=$(ab-alloc --image "$AB_AGENTS_IMAGE" \
		--deadline "$BATS_TEST_TMPDIR/deadline" \
		--egress "api.anthropic.com:443=$GW:$VPORT")
	ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" >/dev/null
	printf 'Do the task.\n' >"$BATS_TEST_TMPDIR/prompt"
	validated planning --ca "$CA/ca.pem"
	ph1=$(placeholder)
	ctr1=$CTR
	PROF=$(ab-profile --alloc "$ALLOC" --phase planning \
		--deadline "$BATS_TEST_TMPDIR/deadline" --attempt "two-$RANDOM" \
		--provider claude --ca "$CA/ca.pem" --api-key-file "$key2" \
		--prompt "$BATS_TEST_TMPDIR/prompt")
	ctr2=$(ab-validate "$PROF")
	ph2=$(placeholder)
	[ "$ph1" != "$ph2" ] || fail "one placeholder for two invocations"
	relay
	run api /v1/probe -d x -H "x-api-key: $ph1"
	assert_output --partial "HTTP/1.1 200"
	run api /v1/probe -d x -H "x-api-key: $ph2"
	assert_output --partial "HTTP/1.1 200"
	assert_equal "$(vlog '[x["credential"] for x in L if x.get("probe")]' |
		tr -d ' ')" '["real","real-2"]'
	run --separate-stderr ab-run "$ctr1"
	assert_success
	# Its own requests alone: not the probe its placeholder carried
	# before it started, nor the other invocation's.
	RECORD=$(ab-run --show "$output")
	assert_equal "$(record_field 'sorted(set(x["path"] for x in r["egress"]["requests"]["listed"]) - {"/api/claude_code/policy_limits"})')" \
		'["/v1/messages"]'
	run api /v1/probe -d x -H "x-api-key: $ph1"
	assert_output --partial "HTTP/1.1 403"
	run api /v1/probe -d x -H "x-api-key: $ph2"
	assert_output --partial "HTTP/1.1 200"
	assert_equal "$(vlog '[x["credential"] for x in L if x.get("probe")]' |
		tr -d ' ')" '["real","real-2","real-2"]'
	run ab-run "$ctr2"
	assert_success
	KEY=$key2 key_nowhere
}

@test "the vendor's certificate for another name: 502 naming the mismatch, and nothing is sent upstream" {
	local ca=$BATS_TEST_TMPDIR/ca-other key=$BATS_TEST_TMPDIR/codex-key ph n
	# A certificate of the test CA for the other vendor's name alone.
	ab_test_ca "$ca" api.anthropic.com
	printf 'sk-proj-%s\n' "$RANDOM$RANDOM$RANDOM" >"$key"
	CA=$ca ab_vendor openai '{"turns":[{"text":"done","times":0}]}' \
		--credential "$key"
	ab_deadline_in "$BATS_TEST_TMPDIR/deadline" 180
	ALLOC=$(ab-alloc --image "$AB_AGENTS_IMAGE" \
		--deadline "$BATS_TEST_TMPDIR/deadline" \
		--egress "api.openai.com:443=$GW:$VPORT")
	ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" >/dev/null
	printf 'Do the task.\n' >"$BATS_TEST_TMPDIR/prompt"
	PROF=$(ab-profile --alloc "$ALLOC" --phase planning \
		--deadline "$BATS_TEST_TMPDIR/deadline" --attempt "nm-$RANDOM" \
		--provider codex --ca "$ca/ca.pem" --api-key-file "$key" \
		--prompt "$BATS_TEST_TMPDIR/prompt")
	CTR=$(ab-validate "$PROF")
	ph=$(placeholder)
	relay
	n=$(wc -l <"$VLOG")
	run curl -sS -i --max-time 20 --proxy "$RELAY" --cacert "$PCA" \
		-H "Authorization: Bearer $ph" -d x https://api.openai.com/v1/responses
	assert_output --partial "HTTP/1.1 502"
	assert_output --partial "X-Agentbox-Refused: upstream-tls"
	assert_equal "$(wc -l <"$VLOG")" "$n"
	run docker logs "agentbox-${ALLOC#alloc:}-proxy"
	assert_output --partial 'hostname mismatch'
}

# raw BYTES...: each BYTES written raw, one write each, to the vendor's
# name through the relay and the proxy (tests/lib/raw-tls.py).
raw() {
	local a=() x
	for x in "$@"; do
		a+=(--send "$x")
	done
	python3 "$AB_ROOT/tests/lib/raw-tls.py" --relay "${RELAY#http://}" \
		--ca "$PCA" --host api.anthropic.com --ph "$PH" \
		--alpn "${ALPN:-http/1.1}" --wait "${WAIT:-15}" "${a[@]}"
}

@test "a hostile agent's protocol games on the intercepted host: each refused by name, the proxy alive" {
	local r="POST /v1/probe HTTP/1.1\r\nHost: api.anthropic.com\r\nContent-Length: 1\r\n"
	alloc_with_vendor '{"turns":[{"text":"done","times":0}]}'
	validated planning --ca "$CA/ca.pem"
	PH=$(placeholder)
	relay
	# HTTP/2's preface, as a client with prior knowledge sends it.
	run raw 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'
	assert_output --partial "HTTP/1.1 505"
	assert_output --partial "X-Agentbox-Refused: http2-preface"
	# Only h2 offered: no protocol in common, the handshake fails.
	ALPN=h2 run raw 'GET / HTTP/1.1\r\n\r\n'
	assert_output --partial "handshake:"
	# An absolute-form target names a host of the agent's choosing.
	run raw "GET https://api.anthropic.com/v1/probe HTTP/1.1\r\nHost: api.anthropic.com\r\nx-api-key: {PH}\r\n\r\n"
	assert_output --partial "HTTP/1.1 400"
	assert_output --partial "X-Agentbox-Refused: absolute-form"
	# Two requests in one write: the second, with another key, is
	# refused, though the first goes through.
	run raw "${r}x-api-key: {PH}\r\n\r\nx${r}x-api-key: sk-ant-api03-zzzz\r\n\r\nx"
	assert_output --partial "HTTP/1.1 200"
	assert_output --partial "X-Agentbox-Refused: credential"
	# A 1 MiB header, and a head that never ends.
	run raw "GET /v1/probe HTTP/1.1\r\nHost: api.anthropic.com\r\nX-Big: {MB}\r\n\r\n"
	assert_output --partial "HTTP/1.1 431"
	WAIT=30 run raw "GET /v1/probe HTTP/1.1\r\nHost: api.anthropic.com\r\n"
	assert_output --partial "HTTP/1.1 408"
	# HTTP/1.0 is HTTP/1.x: judged as any request (no key: refused).
	run raw 'GET /v1/probe HTTP/1.0\r\n\r\n'
	assert_output --partial "HTTP/1.1 403"
	# The proxy is alive and still puts the key in.
	run api /v1/probe -d x -H "x-api-key: $PH"
	assert_output --partial "HTTP/1.1 200"
	assert_equal "$(vlog '[x["credential"] for x in L if x.get("probe")]' |
		tr -d ' ')" '["real","real"]'
	run docker logs "agentbox-${ALLOC#alloc:}-proxy"
	assert_output --partial '"reason":"http2-preface"'
	assert_output --partial '"reason":"head-too-large"'
}

@test "an upgrade makes the intercepted connection a tunnel: bytes each way, the credential the vendor sends in two writes reaching the agent as the placeholder" {
	local secret
	secret=$(cat "$KEY")
	alloc_with_vendor '{"turns":[{"text":"done","times":0}]}'
	validated planning --ca "$CA/ca.pem"
	PH=$(placeholder)
	relay
	run raw "GET /v1/upgrade HTTP/1.1\r\nHost: api.anthropic.com\r\nx-api-key: {PH}\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n" "ping"
	assert_output --partial "HTTP/1.1 101"
	assert_output --partial "key=$PH;"
	assert_output --partial "echo:ping"
	refute_output --partial "${secret:20}"
	assert_line closed
	assert_equal "$(vlog '[[x["upgrade"], x["credential"]] for x in L if "upgrade" in x]')" \
		'[["echo", "real"]]'
}

@test "1,000 intercepted connections open at once: each through its handshake, the proxy within its memory limit, and serving after" {
	local dir got mem limit pid
	ab_vendor anthropic '{"turns":[{"text":"done","times":0}]}' --credential "$KEY"
	ab_deadline_in "$BATS_TEST_TMPDIR/deadline" 300
	ALLOC=$(ab-alloc --image "$AB_AGENTS_IMAGE" \
		--deadline "$BATS_TEST_TMPDIR/deadline" --egress-conns 1024 \
		--egress "api.anthropic.com:443=$GW:$VPORT")
	ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" >/dev/null
	printf 'Do the task.\n' >"$BATS_TEST_TMPDIR/prompt"
	validated planning --ca "$CA/ca.pem"
	PH=$(placeholder)
	dir=$(docker volume inspect "agentbox-${ALLOC#alloc:}-egress" \
		--format '{{.Mountpoint}}')
	ulimit -n 4096
	python3 "$AB_ROOT/tests/lib/raw-tls.py" --socket "$dir/proxy.sock" \
		--ca "$dir/ca.pem" --host api.anthropic.com --many 1000 \
		--ready "$BATS_TEST_TMPDIR/many" --hold 120 3>&- &
	pid=$!
	for _ in $(seq 1 1200); do
		[ -s "$BATS_TEST_TMPDIR/many" ] && break
		sleep 0.1
	done
	got=$(cat "$BATS_TEST_TMPDIR/many")
	mem=$(docker stats --no-stream --format '{{.MemUsage}}' \
		"agentbox-${ALLOC#alloc:}-proxy")
	limit=$(docker inspect "agentbox-${ALLOC#alloc:}-proxy" \
		--format '{{.HostConfig.Memory}}')
	echo "# 1,000 intercepted connections: $got through their handshake, proxy memory $mem (limit $limit bytes)" >&3
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	assert_equal "$got" 1000
	[ "$(docker inspect "agentbox-${ALLOC#alloc:}-proxy" --format '{{.State.Running}} {{.State.OOMKilled}}')" = "true false" ]
	relay
	run api /v1/probe -d x -H "x-api-key: $PH"
	assert_output --partial "HTTP/1.1 200"
}

@test "--credential-in-agent: the agent holds the key, as asked; the result masks it wherever it is, ab-export names each file holding it, --strict refuses" {
	local secret scenario patch=$BATS_TEST_TMPDIR/p.patch
	secret=$(cat "$KEY")
	scenario=$(python3 -c 'import json, sys; k = sys.argv[1]; print(json.dumps({"turns": [
		{"tool": "Bash", "input": {"command": "sh leak.sh"}},
		{"tool": "Write", "input": {"file_path": "/work/k.txt", "content": k + "\n"}},
		{"tool": "Write", "input": {"file_path": "/work/n-" + k + ".txt", "content": "x\n"}},
		{"text": "the key is " + k}]}))' "$secret")
	alloc_with_vendor "$scenario"
	PROF=$(ab-profile --alloc "$ALLOC" --phase execution \
		--deadline "$BATS_TEST_TMPDIR/deadline" --attempt "ia-$RANDOM" \
		--provider claude --ca "$CA/ca.pem" --api-key-file "$KEY" \
		--credential-in-agent --prompt "$BATS_TEST_TMPDIR/prompt" \
		--allow-command 'sh leak.sh')
	CTR=$(ab-validate "$PROF")
	run --separate-stderr ab-run "$CTR"
	RECORD=$(ab-run --show "$output")
	assert_equal "$(record_field '[r["agent"]["status"], r["credential"]]')" \
		'["ok", "in-agent"]'
	# As before the proxy could put it in: the CLI sent the key itself,
	# and the repository's script read it.
	assert_equal "$(vlog 'sorted(set(x["credential"] for x in L if "credential" in x))')" '["real"]'
	assert_equal "$(vlog '[r["text"] for x in L for r in x.get("tool_results", [])][0]')" \
		"ANTHROPIC_API_KEY=$secret"
	# Recorded, masked: the final message, and nothing agentbox keeps.
	assert_equal "$(record_field 'r["agent"]["final_message"]')" 'the key is [redacted]'
	[[ "$RECORD" != *"$secret"* ]] || fail "the result holds the key"
	[[ "$stderr" != *"$secret"* ]] || fail "ab-run's stderr holds the key"
	run grep -rlF -- "$secret" "$AB_STATE_DIR"
	assert_output ""
	# The patch carries the work as it is, and each file holding the key
	# is named, the key masked in the line.
	run --separate-stderr ab-export "$ALLOC" --format patch -o "$patch"
	assert_success
	assert_equal "$(grep -c 'holds the credential' <<<"$stderr")" 2
	[[ "$stderr" == *'holds the credential an agent was given (--credential-in-agent) "k.txt": its bytes'* ]] ||
		fail "the file is not told: $stderr"
	[[ "$stderr" == *'"n-[redacted].txt": its name'* ]] || fail "the name is not told: $stderr"
	[[ "$stderr" != *"$secret"* ]] || fail "ab-export's stderr holds the key"
	grep -qF -- "$secret" "$patch" || fail "the patch lost the work"
	run_exact 1 ab-export "$ALLOC" --format patch -o "$patch.strict" --strict
	assert_equal "$(tail -n 1 <<<"$stderr")" \
		'ab-export: --strict: 2 entries hold the credential an agent held'
	[ ! -e "$patch.strict" ] || fail "--strict wrote a patch"
	# The credential file gone, it cannot be looked for: a refusal.
	mv "$KEY" "$KEY.away"
	run --separate-stderr ab-export "$ALLOC" --format patch -o "$patch.gone"
	mv "$KEY.away" "$KEY"
	assert_equal "$status" 1
	assert_one_error_line ab-export
	assert_regex "$stderr" "^ab-export: the credential profile:[0-9a-f]+ gave its agent, to look for it: "
	[ ! -e "$patch.gone" ] || fail "a patch was written"
}

@test "a credential whose provider's API host the egress does not allow is refused in one line, unless --credential-in-agent" {
	ab_deadline_in "$BATS_TEST_TMPDIR/deadline" 120
	ALLOC=$(ab-alloc --image "$AB_AGENTS_IMAGE" \
		--deadline "$BATS_TEST_TMPDIR/deadline" \
		--egress "api.openai.com:443=$GW:9")
	ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" >/dev/null
	printf 'Do the task.\n' >"$BATS_TEST_TMPDIR/prompt"
	run_exact 1 ab-profile --alloc "$ALLOC" --phase planning --attempt "r-$RANDOM" \
		--deadline "$BATS_TEST_TMPDIR/deadline" \
		--provider claude --prompt "$BATS_TEST_TMPDIR/prompt" --api-key-file "$KEY"
	assert_one_error_line ab-profile
	assert_regex "$stderr" "^ab-profile: --api-key-file: alloc:[0-9a-f]+ does not allow api\.anthropic\.com:443, where the egress proxy puts the credential in \(ab-alloc --egress\), and --credential-in-agent was not given$"
	run_exact 1 ab-profile --alloc "$ALLOC" --phase planning --attempt "r-$RANDOM" \
		--deadline "$BATS_TEST_TMPDIR/deadline" \
		--provider claude --prompt "$BATS_TEST_TMPDIR/prompt" --claude-token-file "$KEY"
	assert_regex "$stderr" "^ab-profile: --claude-token-file: .* does not allow api\.anthropic\.com:443"
	run_exact 2 ab-profile --alloc "$ALLOC" --phase planning --attempt "r-$RANDOM" \
		--deadline "$BATS_TEST_TMPDIR/deadline" \
		--provider claude --prompt "$BATS_TEST_TMPDIR/prompt" --credential-in-agent
	assert_regex "$stderr" "credential-in-agent goes with --api-key-file or --claude-token-file"
	run_exact 0 ab-profile --alloc "$ALLOC" --phase planning --attempt "r-$RANDOM" \
		--deadline "$BATS_TEST_TMPDIR/deadline" \
		--provider claude --prompt "$BATS_TEST_TMPDIR/prompt" --api-key-file "$KEY" \
		--credential-in-agent
	ab-clean "$ALLOC" >/dev/null
	# No egress at all: the same.
	ALLOC=$(ab-alloc --image "$AB_AGENTS_IMAGE" --deadline "$BATS_TEST_TMPDIR/deadline")
	ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" >/dev/null
	run_exact 1 ab-profile --alloc "$ALLOC" --phase planning --attempt "r-$RANDOM" \
		--deadline "$BATS_TEST_TMPDIR/deadline" \
		--provider codex --prompt "$BATS_TEST_TMPDIR/prompt" --api-key-file "$KEY"
	assert_regex "$stderr" "does not allow api\.openai\.com:443"
	ab-clean "$ALLOC" >/dev/null
}

@test "an allocation made before the proxy put credentials in (its proxy's command without the vault) is refused as drift, saying to make a new one" {
	local rec
	alloc_with_vendor '{"turns":[{"text":"done"}]}'
	rec=$AB_STATE_DIR/alloc/${ALLOC#alloc:}
	[ -f "$rec" ] || rec=$rec.json
	python3 "$AB_ROOT/tests/lib/old-proxy.py" "$rec"
	PROF=$(ab-profile --alloc "$ALLOC" --phase planning \
		--deadline "$BATS_TEST_TMPDIR/deadline" --attempt "old-$RANDOM" \
		--provider claude --ca "$CA/ca.pem" --api-key-file "$KEY" \
		--prompt "$BATS_TEST_TMPDIR/prompt")
	run_exact 1 ab-validate "$PROF"
	assert_one_error_line ab-validate
	assert_regex "$stderr" "proxy of alloc:${ALLOC#alloc:}: lockdown drift: Config\.Cmd.*make a new allocation\)$"
	# Nothing of the credential went anywhere.
	key_nowhere
	run_exact 0 ab-clean "$ALLOC"
}
