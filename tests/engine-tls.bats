#!/usr/bin/env bats
# The engine over TCP and TLS, as the docker CLI's conventions give it
# (DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH): the real engine
# behind the tests' proxy, which speaks TLS and requires a client
# certificate as a TLS-verifying engine does.  Every failure must say
# what to fix, and nothing may ever prompt.

# shellcheck disable=SC2154 # bats sets status, output, stderr
# shellcheck disable=SC2030,SC2031 # each @test is a subshell: its exports are its own
load helpers

# cert NAME CA SAN [EXT]: a key and a certificate signed by CA.
cert() {
	local d=$BATS_FILE_TMPDIR
	openssl req -newkey rsa:2048 -nodes -keyout "$d/$1.key" \
		-out "$d/$1.csr" -subj "/CN=$1" 2>/dev/null
	printf 'subjectAltName=%s\n%s\n' "$3" "${4:-}" >"$d/$1.ext"
	openssl x509 -req -in "$d/$1.csr" -CA "$d/$2.pem" -CAkey "$d/$2.key" \
		-CAcreateserial -out "$d/$1.pem" -days 2 -extfile "$d/$1.ext" \
		2>/dev/null
}

# certdir NAME CA CERT KEY: a DOCKER_CERT_PATH of those three files.
certdir() {
	local d=$BATS_FILE_TMPDIR
	mkdir -p "$d/$1"
	cp "$d/$2.pem" "$d/$1/ca.pem"
	cp "$d/$3.pem" "$d/$1/cert.pem"
	cp "$d/$4" "$d/$1/key.pem"
}

setup_file() {
	local d=$BATS_FILE_TMPDIR ca
	unset AB_DEADLINE AB_TEST_PAUSE DOCKER_HOST DOCKER_TLS DOCKER_TLS_VERIFY \
		DOCKER_CERT_PATH
	for ca in ca other-ca; do
		openssl req -x509 -newkey rsa:2048 -nodes -keyout "$d/$ca.key" \
			-out "$d/$ca.pem" -subj "/CN=$ca" -days 2 2>/dev/null
	done
	cert engine ca IP:127.0.0.1,DNS:localhost
	cert elsewhere ca DNS:elsewhere.test
	cert client ca DNS:client extendedKeyUsage=clientAuth
	openssl pkey -in "$d/client.key" -aes256 -passout pass:secret \
		-out "$d/client-enc.key"
	certdir good ca client client.key
	certdir wrong-ca other-ca client client.key
	certdir encrypted ca client client-enc.key
	certdir no-ca ca client client.key
	rm "$d/no-ca/ca.pem"
	AB_STATE_DIR=$(ab_new_state)
	export AB_STATE_DIR
}

teardown() {
	ab_proxy_stop
}

# tls_engine CERT: the proxy in front of the engine, with CERT; sets PORT.
tls_engine() {
	local d=$BATS_FILE_TMPDIR
	ab_proxy_start --listen-tcp 127.0.0.1:0 --tls-cert "$d/$1.pem" \
		--tls-key "$d/$1.key" --tls-client-ca "$d/ca.pem"
	PORT=$(sed -n 's/^127\.0\.0\.1://p' "$BATS_TEST_TMPDIR/proxy.ready")
}

# engine_call CERTDIR HOST: one tool's engine calls, over TLS.
engine_call() {
	DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=$BATS_FILE_TMPDIR/$1 \
		DOCKER_HOST=$2 run_exact "$3" ab-clean --sweep
}

@test "TLS as the docker CLI gives it: DOCKER_CERT_PATH, with or without a trailing slash" {
	tls_engine engine
	engine_call good "tcp://127.0.0.1:$PORT" 0
	engine_call good "tcp://127.0.0.1:$PORT/" 0
	grep -q '^GET /_ping' "$AB_PROXY_LOG"
}

@test "a DOCKER_CERT_PATH longer than its bound is refused, never cut to another directory's files" {
	local long seg
	tls_engine engine
	# Good files in a directory whose path is the bound, 399 bytes: a
	# longer name under it was once cut to it, and its files used.
	seg=$(printf '%0200d' 0)
	long=$BATS_TEST_TMPDIR
	while [ $((399 - ${#long})) -gt 250 ]; do long=$long/$seg; done
	long=$long/${seg:0:$((399 - ${#long} - 1))}
	mkdir -p "$long"
	cp "$BATS_FILE_TMPDIR"/good/*.pem "$long/"
	DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=$long/elsewhere \
		DOCKER_HOST="tcp://127.0.0.1:$PORT" run_exact 2 ab-clean --sweep
	assert_equal "$stderr" "ab-clean: DOCKER_CERT_PATH: longer than 399 bytes"
	run ! grep -q '^GET /_ping' "$AB_PROXY_LOG"
	# At the bound itself, it is used.
	DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=$long \
		DOCKER_HOST="tcp://127.0.0.1:$PORT" run_exact 0 ab-clean --sweep
}

@test "HOME/.docker is the default certificate directory" {
	tls_engine engine
	mkdir -p "$BATS_TEST_TMPDIR/home"
	cp -r "$BATS_FILE_TMPDIR/good" "$BATS_TEST_TMPDIR/home/.docker"
	HOME=$BATS_TEST_TMPDIR/home DOCKER_TLS_VERIFY=1 \
		DOCKER_HOST="tcp://127.0.0.1:$PORT" run_exact 0 ab-clean --sweep
}

@test "a wrong CA and a name that does not match say which, as the docker CLI does" {
	tls_engine engine
	engine_call wrong-ca "tcp://127.0.0.1:$PORT" 125
	assert_one_error_line ab-clean
	assert_regex "$stderr" 'certificate problem: (unable to get local issuer certificate|self-signed certificate)'
	ab_proxy_stop
	tls_engine elsewhere
	engine_call good "tcp://127.0.0.1:$PORT" 125
	assert_one_error_line ab-clean
	assert_regex "$stderr" "no alternative certificate subject name matches target host name '127\.0\.0\.1'"
}

@test "a missing certificate file is named; an encrypted key is refused, never prompted for" {
	engine_call no-ca "tcp://127.0.0.1:9" 2
	assert_equal "$stderr" "ab-clean: DOCKER_TLS_VERIFY: $BATS_FILE_TMPDIR/no-ca/ca.pem: No such file or directory"
	# A terminal to prompt on, if anything tried: none is used.
	DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=$BATS_FILE_TMPDIR/encrypted \
		DOCKER_HOST=tcp://127.0.0.1:9 run_exact 2 \
		script -qec 'timeout 20 ab-clean --sweep' /dev/null
	assert_regex "$output" "ab-clean: DOCKER_TLS_VERIFY: $BATS_FILE_TMPDIR/encrypted/key\.pem is encrypted: agentbox never prompts for a pass phrase"
	refute_output --partial 'pass phrase:'
}

@test "tcp:// without a port is 2376 with TLS and 2375 without; DOCKER_TLS alone is refused" {
	local port
	# Whatever answers there, if anything, is not an engine of ours.
	for port in 2375 2376; do
		! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null ||
			fail "something listens on 127.0.0.1:$port"
	done
	engine_call good tcp://127.0.0.1 125
	assert_regex "$stderr" '^ab-clean: cannot reach the engine at https://127\.0\.0\.1:2376: Failed to connect to 127\.0\.0\.1 port 2376'
	assert_one_error_line ab-clean
	DOCKER_HOST=tcp://127.0.0.1/ run_exact 125 ab-clean --sweep
	assert_regex "$stderr" '^ab-clean: cannot reach the engine at http://127\.0\.0\.1:2375: '
	DOCKER_TLS=1 DOCKER_HOST=tcp://127.0.0.1:2376 run_exact 2 ab-clean --sweep
	assert_equal "$stderr" "ab-clean: DOCKER_TLS without DOCKER_TLS_VERIFY: agentbox does not talk to an engine it cannot verify; set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH"
}

# ctx NAME HOST [ARGS]: a context made by the docker CLI itself, in this
# test's own DOCKER_CONFIG.
ctx() {
	DOCKER_CONFIG=$BATS_TEST_TMPDIR/cfg docker context create "$1" \
		--docker "host=$2${3:+,$3}" >/dev/null
}

@test "a context's own TLS files reach the engine, named by DOCKER_CONTEXT or by currentContext; DOCKER_HOST wins over both" {
	local d=$BATS_FILE_TMPDIR/good
	tls_engine engine
	ctx tls "tcp://127.0.0.1:$PORT" "ca=$d/ca.pem,cert=$d/cert.pem,key=$d/key.pem"
	export DOCKER_CONFIG=$BATS_TEST_TMPDIR/cfg
	DOCKER_CONTEXT=tls run_exact 0 ab-clean --sweep
	grep -q '^GET /_ping' "$AB_PROXY_LOG"
	: >"$AB_PROXY_LOG"
	docker context use tls >/dev/null
	run_exact 0 ab-clean --sweep
	grep -q '^GET /_ping' "$AB_PROXY_LOG"
	# The environment's TLS settings are not the context's: none needed.
	: >"$AB_PROXY_LOG"
	DOCKER_HOST=unix:///var/run/docker.sock run_exact 0 ab-clean --sweep
	run grep -c '^GET' "$AB_PROXY_LOG"
	assert_output 0
	# Without its TLS files the context is plain HTTP, which a TLS
	# engine does not answer.
	ctx plain "tcp://127.0.0.1:$PORT"
	DOCKER_CONTEXT=plain run_exact 125 ab-clean --sweep
	assert_regex "$stderr" "^ab-clean: the connection to the engine at http://127\.0\.0\.1:$PORT \(context plain\) broke before it could answer a ping: "
	assert_one_error_line ab-clean
}

@test "a context that skips TLS verification, lacks a TLS file, or does not exist is refused, naming it" {
	local d=$BATS_FILE_TMPDIR/good
	export DOCKER_CONFIG=$BATS_TEST_TMPDIR/cfg
	ctx skip tcp://127.0.0.1:9 "skip-tls-verify=true"
	DOCKER_CONTEXT=skip run_exact 2 ab-clean --sweep
	assert_equal "$stderr" "ab-clean: context skip skips TLS verification (SkipTLSVerify): agentbox does not talk to an engine it cannot verify; give the context its CA (docker context update --docker ...,ca=...)"
	ctx ca-only tcp://127.0.0.1:9 "ca=$d/ca.pem"
	DOCKER_CONTEXT=ca-only run_exact 2 ab-clean --sweep
	assert_regex "$stderr" "^ab-clean: context ca-only's TLS files: $DOCKER_CONFIG/contexts/tls/[0-9a-f]{64}/docker/cert\.pem: No such file or directory$"
	DOCKER_CONTEXT=nowhere run_exact 2 ab-clean --sweep
	assert_regex "$stderr" "^ab-clean: context nowhere: no such context \($DOCKER_CONFIG/contexts/meta/[0-9a-f]{64}/meta\.json is missing\)$"
	printf '{"currentContext": 7}\n' >"$DOCKER_CONFIG/config.json"
	run_exact 2 ab-clean --sweep
	assert_equal "$stderr" "ab-clean: $DOCKER_CONFIG/config.json: currentContext is not a context's name"
	printf '{"currentContext": "default"}\n' >"$DOCKER_CONFIG/config.json"
	run_exact 0 ab-clean --sweep
	DOCKER_CONTEXT='../x' run_exact 2 ab-clean --sweep
	assert_equal "$stderr" "ab-clean: context ../x: not a context name"
}
