# vendor.bash: what the files of the real CLIs (tests/claude.bats,
# tests/codex.bats) share: the tests' scripted vendor (tests/lib/vendor.py,
# started by ab_vendor) reached under its real names, the allocations and
# tasks that reach it, and what every vendor must see, or never see.

# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154 # bats sets status, output; the tests read RECORD

# ab_vendor_setup_file PROVIDER HOSTS KEY-PREFIX: for the CLI of PROVIDER,
# whose API is the first of the comma-separated HOSTS: CA, a test CA for
# HOSTS; GW, where the vendor listens; KEY, an API key file of the form
# KEY-PREFIX and digits.  VENDOR_PROVIDER and VENDOR_HOST name them.
ab_vendor_setup_file() {
	VENDOR_PROVIDER=$1 VENDOR_HOST=${2%%,*}
	CA=$BATS_FILE_TMPDIR/ca
	ab_test_ca "$CA" "$2"
	GW=$(ab_bridge_gateway)
	KEY=$BATS_FILE_TMPDIR/api-key
	printf '%s%s\n' "$3" "$RANDOM$RANDOM$RANDOM" >"$KEY"
	export VENDOR_PROVIDER VENDOR_HOST CA GW KEY
}

# ab_vendor_egress HOST...: ab-alloc's --egress value that sends each
# HOST:443 to the vendor.
ab_vendor_egress() {
	local h e=
	for h in "$@"; do
		e=$e${e:+,}$h:443=$GW:$VPORT
	done
	printf '%s\n' "$e"
}

# ab_vendor_alloc REPO COMMIT [AB-ALLOC OPTION...]: a fresh allocation of
# the agents image seeded with COMMIT of REPO; sets ALLOC, and DL, its
# deadline file TIMEOUT (180 unless set) seconds away.  The prompt file
# says "Do the task.".
ab_vendor_alloc() {
	local repo=$1 commit=$2
	shift 2
	DL=$BATS_TEST_TMPDIR/deadline
	ab_deadline_in "$DL" "${TIMEOUT:-180}"
	ALLOC=$(ab-alloc --image "$AB_AGENTS_IMAGE" --deadline "$DL" "$@")
	ab-seed "$ALLOC" --repo "$repo" --commit "$commit" >/dev/null 2>&1
	printf 'Do the task.\n' >"$BATS_TEST_TMPDIR/prompt"
}

# ab_vendor_run CTR: ab-run of CTR; STATUS is its exit status, RECORD the
# result, output and stderr ab-run's.  What the CLI and the vendor said
# is shown when the test fails.
ab_vendor_run() {
	run --separate-stderr ab-run "$1"
	STATUS=$status
	RECORD=$(ab-run --show "$output")
	record_field 'r["stdout"]["text"][-3000:]' >&2
	record_field 'r["stderr"]["text"][-2000:]' >&2
	cat "$VLOG" >&2
}

# The files of ALLOC's /work, as the agent left them.
work_files() {
	AB_RO_WORK=1 ab_on_alloc "$ALLOC" 'cd /work && find . -path ./.git -prune -o -type f -print | sort'
}

# The agent lines (ab-run(1), "Agent lines"): what ab-run's stderr $1
# holds of them, without the prefix.
agent_lines() {
	sed -n 's/^ab-run: agent: //p' <<<"$1"
}

# ab_vendor_task REPO COMMIT IMAGE [RUN-TASK OPTION...]: run-task of the
# real CLI in execution on IMAGE, with the API key and the prompt file,
# to succeed; RECORD is its result.  TIMEOUT (180 unless set) bounds it.
ab_vendor_task() {
	local repo=$1 commit=$2 image=$3
	shift 3
	run_exact 0 "$AB_ROOT/sh/run-task" --repo "$repo" --commit "$commit" \
		--phase execution --timeout "${TIMEOUT:-180}" --image "$image" \
		--egress "$(ab_vendor_egress "$VENDOR_HOST")" --ca "$CA/ca.pem" \
		--provider "$VENDOR_PROVIDER" --prompt "$BATS_TEST_TMPDIR/prompt" \
		--api-key-file "$KEY" "$@"
	RECORD=$output
}

# ab_failing_c_repo DIR: a repository of one commit whose make test
# fails (1 + 1 != 3), for a model to fix.
ab_failing_c_repo() {
	git init -q "$1"
	printf 'test: t\n\t./t\nt: t.c\n\tcc -o t t.c\n' >"$1/Makefile"
	printf '#include <stdio.h>\nint main(void)\n{\n\tif (1 + 1 != 3) {\n\t\tputs("FAIL: sum");\n\t\treturn 1;\n\t}\n\tputs("PASS: sum");\n\treturn 0;\n}\n' >"$1/t.c"
	ab_commit "$1" failing
}

# assert_c_fixed PATCH: PATCH carries the fix of ab_failing_c_repo's test.
assert_c_fixed() {
	grep -qx -- '-	if (1 + 1 != 3) {' "$1"
	grep -qx -- '+	if (1 + 2 != 3) {' "$1"
}

# assert_401_fails CLI: CLI (the file's function that runs the real CLI)
# on a vendor that answers 401: the CLI exits 1, an error of that status.
assert_401_fails() {
	"$1" planning '{"turns":[{"status":401,"times":0}]}'
	assert_equal "$STATUS" 1
	assert_equal "$(record_field '[r["reason"], r["agent"]["status"], r["agent"]["error"]["api_status"]]')" \
		'["exited", "error", 401]'
}

# assert_cut_fails CLI MESSAGE: CLI (the file's function that runs the
# real CLI) on a vendor that cuts the stream: an error, whose message
# holds MESSAGE.
assert_cut_fails() {
	"$1" planning '{"turns":[{"cut":true,"times":0}]}'
	assert_equal "$(record_field 'r["agent"]["status"]')" error
	[[ $(record_field 'r["agent"]["error"]["message"]') == *"$2"* ]]
}

# assert_deadline_met CLI: CLI on a vendor that never answers meets its
# deadline (124), and its allocation, cleaned, leaves nothing on the
# engine.
assert_deadline_met() {
	TIMEOUT=25 "$1" planning '{"turns":[{"hang":true,"times":0}]}'
	assert_equal "$STATUS" 124
	assert_equal "$(record_field 'r["reason"]')" deadline
	run_exact 0 ab-clean "$ALLOC"
	run ab_leftovers "$(ab_state_sid)"
	assert_output ""
}

# assert_secret_nowhere SECRET: SECRET is in no file of the state
# directory, in no container's inspection or log, nor in the vendor's log,
# and ALLOC's snapshot of the inputs' secrets was emptied when the agent
# settled (root reads it in the keeper: no agent can).
assert_secret_nowhere() {
	local c
	run grep -rlF -- "$1" "$AB_STATE_DIR"
	assert_output ""
	for c in $(docker ps -aq); do
		run docker inspect "$c"
		refute_output --partial "$1"
		run docker logs "$c"
		refute_output --partial "$1"
	done
	! grep -qF -- "$1" "$VLOG" || fail "the vendor's log holds the key"
	run docker exec -u 0 "agentbox-${ALLOC#alloc:}-keeper" sh -c \
		'set -- /run/agentbox/inputs/*/secret; [ -f "$1" ] && cat "$@" | wc -c'
	assert_output 0
}

# assert_signed_in_refresh PATH: the one refresh the proxy made at the
# vendor's token endpoint PATH is in the result, and every bearer the
# vendor saw was a live token of its own, never a placeholder.
assert_signed_in_refresh() {
	assert_equal "$(vlog 'sorted(set(x["bearer"] for x in L if "bearer" in x))')" '["valid"]'
	assert_equal "$(record_field "[[x[\"method\"], x[\"path\"], x[\"status\"]] for x in r[\"egress\"][\"requests\"][\"listed\"] if x[\"path\"] == \"$1\"]")" \
		"[[\"POST\", \"$1\", 200]]"
}

# ab_json_field FILE EXPR [KEY]: EXPR, in Python over a, the JSON of FILE
# (its member KEY when given): a field of a sign-in file.
ab_json_field() {
	python3 -c 'import json, sys
a = json.load(open(sys.argv[1]))
a = a[sys.argv[3]] if len(sys.argv) > 3 else a
print(eval(sys.argv[2]))' "$@"
}

# ab_nul_repo DIR: a repository of one commit whose bin.dat holds NUL
# bytes, for a command to print.
ab_nul_repo() {
	git init -q "$1"
	printf 'a\0b\0c\n' >"$1/bin.dat"
	ab_commit "$1" nul
}
