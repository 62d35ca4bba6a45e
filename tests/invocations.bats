#!/usr/bin/env bats
# Two invocations on one allocation: what one of them is given (its
# credential's snapshot, its prompt, its schema) no other agent of the
# allocation can read, while its owner runs and when its owner never runs.
# The owner is the real Claude Code (the agents image, tests/run-suite)
# against the tests' scripted vendor; the other agent is a plain command
# that reads whatever it can reach under /run/agentbox.

# shellcheck disable=SC2154 # bats sets status, output, stderr
# shellcheck disable=SC2034 # RECORD is read by record_field (helpers.bash)
# shellcheck disable=SC2016 # the reader's script runs in the container
# The suite's agents state is this file's too: tests/run-suite runs the
# files tagged agents one after another.
# bats file_tags=agents
load helpers

setup_file() {
	ab_agents_setup_file || return 1
	CA=$BATS_FILE_TMPDIR/ca
	ab_test_ca "$CA" api.anthropic.com
	GW=$(ab_bridge_gateway)
	M=$RANDOM$RANDOM$RANDOM
	KEY=$BATS_FILE_TMPDIR/api-key
	printf 'sk-ant-agentbox-test-%s\n' "$M" >"$KEY"
	printf 'A-prompt-%s: do the task.\n' "$M" >"$BATS_FILE_TMPDIR/prompt-a"
	printf '{"type":"object","description":"A-schema-%s"}\n' "$M" \
		>"$BATS_FILE_TMPDIR/schema-a.json"
	printf '{"type":"object","description":"B-schema-%s"}\n' "$M" \
		>"$BATS_FILE_TMPDIR/schema-b.json"
	REPO=$BATS_FILE_TMPDIR/repo
	git init -q "$REPO"
	printf 'notes\n' >"$REPO/notes.txt"
	git -C "$REPO" add -A
	git -C "$REPO" -c user.name=t -c user.email=t@t commit -qm one
	COMMIT=$(git -C "$REPO" rev-parse HEAD)
	export CA GW M KEY REPO COMMIT
}

teardown() {
	[ -z "${APID:-}" ] || kill "$APID" 2>/dev/null || true
	[ -z "${VPID:-}" ] || kill "$VPID" 2>/dev/null || true
	ab-clean --sweep --all >/dev/null 2>&1 || true
}

# What another agent tries: every file it can find under /run/agentbox,
# every name it can list, and the names an invocation's inputs have, in
# every directory there.
READ='ls -laR /run/agentbox 2>&1
find /run/agentbox -type f 2>/dev/null | while read -r f; do
	echo "== $f"; cat "$f" 2>&1
done
for d in /run/agentbox/inputs/*; do
	for n in secret prompt.txt schema.json ca.pem codex.rules; do
		cat "$d/$n" 2>&1
	done
done
echo reader-done'

# new_alloc [AB-ALLOC OPTIONS...]: a seeded allocation of the agents
# image; sets ALLOC and DL.
new_alloc() {
	DL=$BATS_TEST_TMPDIR/deadline
	ab_deadline_in "$DL" 300
	ALLOC=$(ab-alloc --image "$AB_AGENTS_IMAGE" --deadline "$DL" "$@")
	ab-seed "$ALLOC" --repo "$REPO" --commit "$COMMIT" >/dev/null 2>&1
}

# owner [AB-PROFILE OPTIONS...]: A, Claude Code with the key, a prompt and
# a schema, validated (its snapshot written); sets CTR_A.
owner() {
	PROF_A=$(ab-profile --alloc "$ALLOC" --phase planning --deadline "$DL" \
		--attempt "inv-a-$RANDOM$RANDOM" --provider claude --ca "$CA/ca.pem" \
		--prompt "$BATS_FILE_TMPDIR/prompt-a" --api-key-file "$KEY" \
		--schema "$BATS_FILE_TMPDIR/schema-a.json" "$@")
	CTR_A=$(ab-validate "$PROF_A")
}

# reader: B, a plain command with a schema of its own that reads all it
# can; its output in OUT.
reader() {
	local prof ctr
	prof=$(ab-profile --alloc "$ALLOC" --phase planning --deadline "$DL" \
		--attempt "inv-b-$RANDOM$RANDOM" \
		--schema "$BATS_FILE_TMPDIR/schema-b.json" -- sh -c "$READ")
	ctr=$(ab-validate "$prof")
	run_exact 0 ab-run "$ctr"
	RECORD=$(ab-run --show "$output")
	OUT=$(record_field 'r["stdout"]["text"]')
}

# How many files on ALLOC's inputs volume hold $1: through the engine's
# archive API, whoever owns them.
inputs_holding() {
	docker cp "agentbox-${ALLOC#alloc:}-keeper:/run/agentbox/inputs" - |
		python3 -c 'import sys, tarfile
t = tarfile.open(fileobj=sys.stdin.buffer, mode="r|")
n = 0
for m in t:
    if m.isfile() and sys.argv[1].encode() in t.extractfile(m).read():
        n += 1
print(n)' "$1"
}

# The reader read its own schema (so it could have read the others) and
# none of the owner's inputs; every leak is named.
assert_read_nothing_of_a() {
	local leaks=()
	[[ $OUT == *reader-done* ]] || fail "the reader did not finish"
	[[ $OUT == *"B-schema-$M"* ]] || fail "the reader could not read its own schema"
	[[ $OUT != *"sk-ant-agentbox-test-$M"* ]] || leaks+=(credential)
	[[ $OUT != *"A-prompt-$M"* ]] || leaks+=(prompt)
	[[ $OUT != *"A-schema-$M"* ]] || leaks+=(schema)
	[ "${#leaks[@]}" -eq 0 ] || fail "the reader read the owner's ${leaks[*]}"
}

@test "an agent of the allocation reads nothing of an invocation that was validated and never run" {
	# No egress: the key itself is the snapshot, as asked.
	new_alloc
	owner --credential-in-agent
	# The snapshot is there, and stays there until ab-clean.
	assert_equal "$(inputs_holding "sk-ant-agentbox-test-$M")" 1
	reader
	assert_read_nothing_of_a
	assert_equal "$(inputs_holding "sk-ant-agentbox-test-$M")" 1
	run_exact 0 ab-clean "$ALLOC"
}

@test "an agent of the allocation reads nothing of an invocation that is running" {
	local i n ph st=0
	ab_vendor anthropic '{"turns":[{"hang":true,"times":0}]}'
	new_alloc --egress "api.anthropic.com:443=$GW:$VPORT"
	owner
	ab-run "$CTR_A" >"$BATS_TEST_TMPDIR/a.out" 2>"$BATS_TEST_TMPDIR/a.err" &
	APID=$!
	# Claude Code sent its first request with the key: it is running.
	for i in $(seq 1 600); do
		n=$(vlog 'len([x for x in L if x.get("main")])' 2>/dev/null) || n=0
		[ "${n:-0}" -gt 0 ] && break
		sleep 0.1
	done
	assert_equal "$(vlog 'all(x["x_api_key"] for x in L if x.get("main"))')" true
	# With egress to the vendor the key goes to the proxy alone: it is
	# not on the inputs volume at all, and A's snapshot holds a
	# placeholder, which the reader must not read either.
	assert_equal "$(inputs_holding "sk-ant-agentbox-test-$M")" 0
	ph=$(docker exec -u 0 "agentbox-${ALLOC#alloc:}-keeper" \
		/usr/lib/agentbox/busybox cat \
		"/run/agentbox/inputs/${PROF_A#profile:}/secret")
	[ -n "$ph" ] || fail "A's snapshot is empty"
	assert_equal "$(inputs_holding "$ph")" 1
	reader
	assert_read_nothing_of_a
	[[ $OUT != *"$ph"* ]] || fail "the reader read the owner's placeholder"
	# Cancelled, the owner settles and its snapshot is emptied.
	kill -TERM "$APID"
	wait "$APID" || st=$?
	APID=
	assert_equal "$st" 130
	assert_equal "$(inputs_holding "$ph")" 0
	run_exact 0 ab-clean "$ALLOC"
}
