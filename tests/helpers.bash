# helpers.bash: what every agentbox test file loads.
#
# The tools under test come from $AB_BIN (bin/ or bin-asan/).  Each test
# file shares one state directory and one registered default image
# (ab_setup_file), because a build per test would dominate the suite; the
# file's teardown removes every image and container of that state.

# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154 # bats sets and reads status, output, stderr

bats_require_minimum_version 1.5.0

load /usr/lib/bats/bats-support/load.bash
load /usr/lib/bats/bats-assert/load.bash

# The tree above this file: a test file may live in a directory below it.
AB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AB_BIN=${AB_BIN:-$AB_ROOT/bin}
PATH=$AB_BIN:$PATH
export PATH AB_ROOT AB_BIN

# A fresh 0700 state directory under the test file's temporary directory.
# Its SID is chosen here and registered with the suite (AB_SUITE_SIDS, made
# by tests/run-suite), so the suite's checks of what is left on the engine
# see its own objects alone: another suite may share the engine.
ab_new_state() {
	local d sid
	d=$(mktemp -d "$BATS_FILE_TMPDIR/state.XXXXXX")
	chmod 0700 "$d"
	sid=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
	(umask 077 && printf '%s\n' "$sid" >"$d/sid")
	ab_register_sid "$sid"
	printf '%s\n' "$d"
}

ab_register_sid() {
	[ -z "${AB_SUITE_SIDS:-}" ] || printf '%s\n' "$1" >>"$AB_SUITE_SIDS"
}

# Lines "ID STATE" on stdin, those whose STATE is a line of file $1 (an
# empty file keeps none).
ab_sids_only() {
	awk 'FILENAME == ARGV[1] { own[$1] = 1; next } own[$2]' "$1" -
}

# Lines "ID STATE" on stdin, those of the suite's states alone (all of
# them when no suite runs).
ab_suite_only() {
	if [ -n "${AB_SUITE_SIDS:-}" ]; then
		ab_sids_only "$AB_SUITE_SIDS"
	else
		cat
	fi
}

ab_setup_file() {
	AB_STATE_DIR=$(ab_new_state)
	export AB_STATE_DIR
	unset AB_DEADLINE AB_TEST_PAUSE DOCKER_HOST
	AB_IMAGE=$(ab-image build 2>"$BATS_FILE_TMPDIR/build.err") || {
		cat "$BATS_FILE_TMPDIR/build.err" >&2
		return 1
	}
	export AB_IMAGE
}

# The files that run the real CLIs share the suite's agents image and its
# state directory (tests/run-suite); without them they fail, saying why.
# Such a file carries "# bats file_tags=agents": run-suite runs those one
# after another, as their teardowns sweep the state.
ab_agents_setup_file() {
	if [ -z "${AB_AGENTS_IMAGE:-}" ] || [ -z "${AB_SUITE_STATE:-}" ]; then
		cat "${AB_SUITE_STATE:-/nonexistent}/build.err" >&2 2>/dev/null
		echo "the suite's agents image was not built (tests/run-suite)" >&2
		return 1
	fi
	AB_STATE_DIR=$AB_SUITE_STATE
	export AB_STATE_DIR
	unset AB_DEADLINE AB_TEST_PAUSE DOCKER_HOST
}

# The default bridge's gateway, as the engine describes the network: where
# a test's own vendor listens for the allocations' proxies.
ab_bridge_gateway() {
	docker network inspect bridge --format '{{json .IPAM.Config}}' |
		python3 -c 'import ipaddress, json, sys
c = json.load(sys.stdin)[0]
print(c.get("Gateway") or next(ipaddress.ip_network(c["Subnet"]).hosts()))'
}

# ab_test_ca DIR NAMES: a test CA (DIR/ca.pem) and a certificate of it for
# the comma-separated DNS NAMES (DIR/leaf.pem, DIR/leaf.key).
ab_test_ca() {
	local dir=$1 san="DNS:${2//,/,DNS:}"
	mkdir -p "$dir"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/ca.key" \
		-out "$dir/ca.pem" -subj /CN=agentbox-test-ca -days 2 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -keyout "$dir/leaf.key" \
		-out "$dir/leaf.csr" -subj "/CN=${2%%,*}" 2>/dev/null
	printf 'subjectAltName=%s\n' "$san" >"$dir/ext"
	openssl x509 -req -in "$dir/leaf.csr" -CA "$dir/ca.pem" \
		-CAkey "$dir/ca.key" -CAcreateserial -out "$dir/leaf.pem" -days 2 \
		-extfile "$dir/ext" 2>/dev/null
}

# record_field EXPR: EXPR, in Python over r, of the result record in
# $RECORD (a test sets it); strings bare, anything else as JSON.
# shellcheck disable=SC2034 # RECORD is the tests' own
record_field() {
	python3 -c 'import json, sys
r = json.loads(sys.argv[1])
v = eval(sys.argv[2])
print(json.dumps(v) if not isinstance(v, str) else v)' "$RECORD" "$1"
}

# ab_commit DIR MESSAGE: all that is in the work tree of DIR committed,
# by t <t@t>.
ab_commit() {
	git -C "$1" add -A
	git -C "$1" -c user.name=t -c user.email=t@t commit -qm "$2"
}

# ab_repo DIR [TEXT]: a repository of one commit, whose file a holds
# TEXT ("one" unless given).
ab_repo() {
	git init -q "$1"
	echo "${2:-one}" >"$1/a"
	ab_commit "$1" m
}

# The engine digest of this file's registered image.
ab_image_digest() {
	sed -n 's/.*"digest":"\([^"]*\)".*/\1/p' \
		"$AB_STATE_DIR/image/${AB_IMAGE#image:}"
}

# The engine objects of state directory $1 (default: this file's).
ab_state_sid() {
	cat "${1:-$AB_STATE_DIR}/sid"
}

# Removes every container, volume and image labelled with the state's SID.
ab_purge_state() {
	local sid
	sid=$(ab_state_sid "${1:-$AB_STATE_DIR}") || return 0
	docker ps -aq --filter "label=org.agentbox.state=$sid" |
		xargs -r docker rm -f >/dev/null
	docker volume ls -q --filter "label=org.agentbox.state=$sid" |
		xargs -r docker volume rm -f >/dev/null
	local img
	for img in $(docker images -q --no-trunc \
		--filter "label=org.agentbox.state=$sid" | sort -u); do
		# A test's own unlabelled container may still use the image.
		docker ps -aq --filter "ancestor=$img" | xargs -r docker rm -f >/dev/null
		docker rmi -f "$img" >/dev/null || echo "cannot remove image $img" >&2
	done
}

# ab_state_sweep [--alloc] [HOST...]: what a failed test left on each
# engine HOST ("" for the host's, the default) that still listens: this
# state's containers (with --alloc, the allocations' alone) and volumes.
ab_state_sweep() {
	local sid host only=()
	[ "${1:-}" != --alloc ] || { only=(--filter label=org.agentbox.alloc); shift; }
	[ $# -gt 0 ] || set -- ""
	sid=$(ab_state_sid)
	for host in "$@"; do
		# An engine the file stopped is not asked.
		[ -z "$host" ] || [ -S "${host#unix://}" ] || continue
		DOCKER_HOST=$host docker ps -aq "${only[@]}" \
			--filter "label=org.agentbox.state=$sid" |
			xargs -r env DOCKER_HOST="$host" docker rm -f >/dev/null
		DOCKER_HOST=$host docker volume ls -q \
			--filter "label=org.agentbox.state=$sid" |
			xargs -r env DOCKER_HOST="$host" docker volume rm -f >/dev/null
	done
}

ab_teardown_file() {
	ab_purge_state "$AB_STATE_DIR"
}

# A deadline file $2 seconds from now (negative: already passed).
ab_deadline_in() {
	local f=$1 secs=$2
	printf '%s\n' "$(($(date +%s) + secs))" >"$f"
}

# run_exact STATUS CMD...: runs CMD and asserts its exact exit status.  A
# death by signal is never the expected failure (git's test_must_fail).
run_exact() {
	local want=$1
	shift
	run --separate-stderr "$@"
	if [ "$status" -gt 128 ] && [ "$want" -le 128 ]; then
		echo "died by signal $((status - 128)): $*" >&2
		return 1
	fi
	if [ "$status" -ne "$want" ]; then
		echo "status $status, expected $want: $*" >&2
		echo "stdout: $output" >&2
		echo "stderr: $stderr" >&2
		return 1
	fi
}

# The error contract: the last stderr line is the error, prefixed with the
# tool, and every line before it is a progress line with the same prefix.
# An agent line (ab-run's "ab-run: agent: ...") is progress, never the
# error: it may not be the last line.
assert_one_error_line() {
	local tool=$1 line n=0
	if [ -z "$stderr" ]; then
		echo "expected an error line on stderr, got nothing" >&2
		return 1
	fi
	while IFS= read -r line; do
		n=$((n + 1))
		case $line in
		"$tool: "*) ;;
		*) echo "stderr line $n lacks the '$tool: ' prefix: $line" >&2
			return 1 ;;
		esac
	done <<<"$stderr"
	case $line in
	"$tool: agent: "*) echo "the last stderr line is an agent line, not the error: $line" >&2
		return 1 ;;
	esac
}

# at_once N CMD...: CMD run N times at once; each one's stdout, in
# order, into the array AT_ONCE; fails naming the first that failed and
# its stderr.
at_once() {
	local n=$1 i pids=()
	shift
	for i in $(seq 1 "$n"); do
		"$@" >"$BATS_TEST_TMPDIR/once.$i" 2>"$BATS_TEST_TMPDIR/once.$i.err" &
		pids+=($!)
	done
	AT_ONCE=()
	for i in $(seq 1 "$n"); do
		wait "${pids[i - 1]}" || {
			echo "run $i of $n failed: $*: $(cat "$BATS_TEST_TMPDIR/once.$i.err")" >&2
			return 1
		}
		AT_ONCE+=("$(cat "$BATS_TEST_TMPDIR/once.$i")")
	done
}

# Waits until process $1 is stopped (an AB_TEST_PAUSE point).
ab_wait_stopped() {
	local pid=$1 i state
	for i in $(seq 1 600); do
		state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
		[ "$state" = T ] && return 0
		sleep 0.05
	done
	echo "process $pid never reached its pause point" >&2
	return 1
}

# Starts the fault proxy; sets AB_PROXY_SOCK, AB_PROXY_PID, AB_PROXY_LOG.
ab_proxy_start() {
	AB_PROXY_SOCK=$BATS_TEST_TMPDIR/engine.sock
	AB_PROXY_LOG=$BATS_TEST_TMPDIR/proxy.log
	rm -f "$BATS_TEST_TMPDIR/proxy.ready"
	python3 "$AB_ROOT/tests/lib/engine-proxy.py" --listen "$AB_PROXY_SOCK" \
		--log "$AB_PROXY_LOG" --ready "$BATS_TEST_TMPDIR/proxy.ready" \
		"$@" 3>&- &
	AB_PROXY_PID=$!
	local i
	for i in $(seq 1 100); do
		[ -e "$BATS_TEST_TMPDIR/proxy.ready" ] && return 0
		sleep 0.05
	done
	echo "the engine proxy did not start" >&2
	return 1
}

ab_proxy_stop() {
	if [ -n "${AB_PROXY_PID:-}" ]; then
		kill "$AB_PROXY_PID" 2>/dev/null || true
		wait "$AB_PROXY_PID" 2>/dev/null || true
		AB_PROXY_PID=
	fi
}

# ab_leftovers [SID...]: the containers and volumes left on the engine of
# the states with those SIDs, or with none, of the suite's states.  Other
# files of the suite run at the same time (tests/run-suite), so a file
# asks about its own states; the last file asks about the suite's.
ab_leftovers() {
	local sid sids=
	if [ $# -gt 0 ]; then
		sids=$BATS_TEST_TMPDIR/leftover-sids
		: >"$sids"
		for sid in "$@"; do
			[ -n "$sid" ] || { echo "ab_leftovers: an empty SID" >&2; return 1; }
			printf '%s\n' "$sid" >>"$sids"
		done
	fi
	{
		docker ps -a --filter label=org.agentbox.state \
			--format '{{.Names}} {{.Label "org.agentbox.state"}}'
		docker volume ls --filter label=org.agentbox.state \
			--format '{{.Name}} {{.Label "org.agentbox.state"}}'
	} | if [ -n "$sids" ]; then ab_sids_only "$sids"; else ab_suite_only; fi
}

# ab_images SID...: the images of the states with those SIDs, a line
# each: ID, SID, tags.  One label query per state: an image of another
# suite, removed meanwhile, is never looked up.
ab_images() {
	local sid id
	for sid in "$@"; do
		for id in $(docker images -q --no-trunc \
			--filter "label=org.agentbox.state=$sid" | sort -u); do
			printf '%s %s %s\n' "$id" "$sid" \
				"$(docker image inspect --format '{{.RepoTags}}' "$id")"
		done
	done
}

# Removes an allocation's engine objects and record by its label (until
# ab-clean exists, the tests clean up this way).
ab_drop_alloc() {
	local id=${1#alloc:}
	docker ps -aq --filter "label=org.agentbox.alloc=$id" |
		xargs -r docker rm -f >/dev/null
	docker volume ls -q --filter "label=org.agentbox.alloc=$id" |
		xargs -r docker volume rm -f >/dev/null
	rm -f "$AB_STATE_DIR/alloc/$id"
}

# Runs CMD in a throwaway locked container on allocation $1's volumes,
# /work and /work/.git writable unless $AB_RO_WORK is set.
ab_on_alloc() {
	local id=${1#alloc:} digest ro=
	shift
	[ -n "${AB_RO_WORK:-}" ] && ro=,readonly
	local gro=
	[ -n "${AB_RO_GIT:-}" ] && gro=,readonly
	digest=$(docker inspect "agentbox-$id-keeper" --format '{{.Image}}')
	docker run --rm --user 10001:10001 --read-only --cap-drop ALL \
		--security-opt no-new-privileges --network none \
		--label "org.agentbox.state=$(ab_state_sid)" \
		--label "org.agentbox.alloc=$id" \
		--mount "type=volume,src=agentbox-$id-task,dst=/work,volume-nocopy$ro" \
		--mount "type=volume,src=agentbox-$id-git,dst=/work/.git,volume-nocopy$gro" \
		--mount "type=volume,src=agentbox-$id-inputs,dst=/run/agentbox/inputs,volume-nocopy,readonly" \
		--entrypoint /bin/sh "$digest" -c "$@"
}

# The man page of TOOL names every --option its --help shows (at least MIN).
assert_man_covers_help() {
	local tool=$1 min=$2 word words
	run_exact 0 "$tool" --help
	mapfile -t words < <(grep -o -- '--[a-z][a-z-]*' <<<"$output" | sort -u)
	if [ "${#words[@]}" -lt "$min" ]; then
		echo "$tool --help shows ${#words[@]} options, expected $min" >&2
		return 1
	fi
	for word in "${words[@]}"; do
		grep -q -- "${word#--}" "$AB_ROOT/man/$tool.1" || {
			echo "man/$tool.1 does not name $word" >&2
			return 1
		}
	done
}

# ab_vendor MODE SCENARIO [VENDOR.PY OPTIONS...]: starts the tests' scripted
# vendor (tests/lib/vendor.py) over TLS with the file's test CA ($CA) on
# the bridge gateway ($GW); sets VPORT, VPID and VLOG.  A vendor already
# started by the test is stopped first.
ab_vendor() {
	local dir=$BATS_TEST_TMPDIR mode=$1 _
	printf '%s\n' "$2" >"$dir/scenario.json"
	shift 2
	[ -z "${VPID:-}" ] || { kill "$VPID"; wait "$VPID" || true; }
	rm -f "$dir/vendor.port" "$dir/vendor.log"
	VLOG=$dir/vendor.log
	python3 "$AB_ROOT/tests/lib/vendor.py" --mode "$mode" \
		--script "$dir/scenario.json" --log "$VLOG" --listen "$GW" \
		--ready "$dir/vendor.port" --cert "$CA/leaf.pem" \
		--key "$CA/leaf.key" "$@" 3>&- &
	VPID=$!
	for _ in $(seq 1 100); do
		[ -s "$dir/vendor.port" ] && break
		sleep 0.05
	done
	VPORT=$(cat "$dir/vendor.port")
}

# vlog EXPR: EXPR, in Python over L (the vendor's log lines, parsed), as
# JSON, or bare when a string.
vlog() {
	python3 -c 'import json, sys
L = [json.loads(x) for x in open(sys.argv[1])]
v = eval(sys.argv[2])
print(json.dumps(v) if not isinstance(v, str) else v)' "$VLOG" "$1"
}
