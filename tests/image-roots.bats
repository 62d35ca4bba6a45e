#!/usr/bin/env bats
# Images on another root: agentbox's layer on the user's own base image
# (ab-image build --recipe agents --base IMAGE) and on a root made from
# Debian packages (--packages LIST).  The bases are the tests' own, made
# offline and imported once for the file (tests/lib/bases.bash).

# shellcheck disable=SC2154 # bats sets status, output, stderr
# shellcheck disable=SC2034 # RECORD is read by record_field
load helpers
load lib/bases

RUN_TASK=$AB_ROOT/sh/run-task

setup_file() {
	AB_STATE_DIR=$(ab_new_state)
	export AB_STATE_DIR
	unset AB_DEADLINE AB_TEST_PAUSE DOCKER_HOST
	TAG=abtest-$(ab_state_sid | cut -c1-12)
	PY_BASE=$(ab_python_base "$TAG-python") || return 1
	AB_PY_IMAGE=$(ab-image build --recipe agents --base "$PY_BASE" \
		2>"$BATS_FILE_TMPDIR/build.err") || {
		cat "$BATS_FILE_TMPDIR/build.err" >&2
		return 1
	}
	export TAG PY_BASE AB_PY_IMAGE
}

teardown_file() {
	ab_teardown_file
	docker rmi -f "$TAG-python" "$TAG-python2" "$TAG-musl" \
		>/dev/null 2>&1 || true
}

# new_repo DIR: a repository whose one commit holds the files given as
# NAME=TEXT pairs after DIR.
new_repo() {
	local d=$1 f
	shift
	mkdir -p "$d"
	git -C "$d" init -q
	for f in "$@"; do
		printf '%s' "${f#*=}" >"$d/${f%%=*}"
	done
	git -C "$d" add -A
	git -C "$d" -c user.email=t@t -c user.name=t commit -qm test
}

image_id() {
	sed -n 's/.*"digest":"\(sha256:[0-9a-f]*\)".*/\1/p' \
		"$AB_STATE_DIR/image/${1#image:}"
}

@test "--base: a Python base with no shell, its own USER, ENTRYPOINT and ENV: the agent runs python3 -m unittest under the lockdown" {
	local repo=$BATS_TEST_TMPDIR/repo
	new_repo "$repo" test_add.py=$'import unittest\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(1 + 1, 2)\n'
	run_exact 0 "$RUN_TASK" --repo "$repo" --commit HEAD --phase execution \
		--timeout 60 --image "$AB_PY_IMAGE" --quiet -- python3 -m unittest
	RECORD=$output
	assert_equal "$(record_field 'r["probe"]')" ok
	assert_equal "$(record_field 'r["exit_status"]')" 0
	assert_regex "$(record_field 'r["stderr"]["text"]')" $'Ran 1 test.*\nOK'
	# The image's configuration is agentbox's alone; the base's PATH is
	# kept after agentbox's directories.
	run docker image inspect "$(image_id "$AB_PY_IMAGE")" --format \
		'{{.Config.User}} {{json .Config.Entrypoint}} {{json .Config.Env}} {{.Config.WorkingDir}} {{json .Config.Cmd}} {{index .Config.Labels "org.agentbox.base"}}'
	assert_output "10001:10001 [\"/usr/lib/agentbox/probe.sh\"] [\"PATH=/usr/lib/agentbox/cli:/usr/lib/codex/codex-path:/usr/local/bin:/usr/bin\"] /work null $PY_BASE"
}

@test "--base: the same base twice gives the same handle without importing again; another base gives another" {
	run_exact 0 ab-image build --recipe agents --base "$PY_BASE"
	assert_equal "$output" "$AB_PY_IMAGE"
	assert_equal "${stderr##*$'\n'}" "ab-image: reused"
	refute_regex "$stderr" "exporting|importing"
	# The same files under another label: another image ID, another
	# image of agentbox's.
	printf 'FROM %s\nLABEL another=1\n' "$PY_BASE" |
		docker build -q -t "$TAG-python2" - >/dev/null
	run_exact 0 ab-image build --recipe agents --base \
		"$(docker image inspect -f '{{.Id}}' "$TAG-python2")"
	[[ $output =~ ^image:[0-9a-f]{32}$ ]]
	[ "$output" != "$AB_PY_IMAGE" ]
	assert_equal "${stderr##*$'\n'}" "ab-image: built"
	run_exact 0 ab-image remove "$output"
}

@test "--base: a bare tag and an image the engine lacks are refused in one line, and nothing is registered" {
	local n
	n=$(find "$AB_STATE_DIR/image" -maxdepth 1 -type f | wc -l)
	run_exact 2 ab-image build --recipe agents --base "$TAG-python"
	assert_one_error_line ab-image
	assert_regex "$stderr" "not pinned"
	run_exact 2 ab-image build --recipe agents --base "${PY_BASE#sha256:}"
	assert_one_error_line ab-image
	run_exact 1 ab-image build --recipe agents \
		--base "sha256:$(printf '%064d' 0)"
	assert_one_error_line ab-image
	assert_regex "$stderr" "is not on the engine"
	assert_equal "$(find "$AB_STATE_DIR/image" -maxdepth 1 -type f | wc -l)" "$n"
}

@test "--base: --allow-command resolves a program on the base's PATH, and refuses one the base lacks" {
	local repo=$BATS_TEST_TMPDIR/repo alloc dl=$BATS_TEST_TMPDIR/deadline
	new_repo "$repo" a=a
	ab_deadline_in "$dl" 300
	alloc=$(ab-alloc --image "$AB_PY_IMAGE" --deadline "$dl")
	ab-seed "$alloc" --repo "$repo" --commit "$(git -C "$repo" rev-parse HEAD)" \
		--deadline "$dl" >/dev/null 2>&1
	printf 'Run the tests.\n' >"$BATS_TEST_TMPDIR/prompt"
	printf 'sk-ant-agentbox-test\n' >"$BATS_TEST_TMPDIR/key"
	# No egress: the key is the agent's own, as asked.
	run_exact 0 ab-profile --alloc "$alloc" --phase execution --attempt t1 \
		--deadline "$dl" --provider claude --prompt "$BATS_TEST_TMPDIR/prompt" \
		--api-key-file "$BATS_TEST_TMPDIR/key" --credential-in-agent \
		--allow-command 'python3 -m unittest'
	run_exact 1 ab-profile --alloc "$alloc" --phase execution --attempt t2 \
		--deadline "$dl" --provider claude --prompt "$BATS_TEST_TMPDIR/prompt" \
		--api-key-file "$BATS_TEST_TMPDIR/key" --credential-in-agent \
		--allow-command 'make test'
	assert_one_error_line ab-profile
	assert_regex "$stderr" "make is no program on image:.*/usr/local/bin:/usr/bin\)"
	ab-clean "$alloc" >/dev/null
}

@test "--base: on a base with no /bin/sh a command that needs one is refused in one line" {
	local repo=$BATS_TEST_TMPDIR/repo
	new_repo "$repo" a=a
	run_exact 126 "$RUN_TASK" --repo "$repo" --commit HEAD --phase execution \
		--timeout 60 --image "$AB_PY_IMAGE" --quiet -- sh -c true
	RECORD=$output
	assert_equal "$(record_field 'r["probe"]')" \
		"agentbox-probe: refused: no program sh on the image's PATH"
}

@test "--base: on a root whose libc is musl, Claude Code runs with the glibc agentbox ships beside it" {
	local base img repo=$BATS_TEST_TMPDIR/repo
	base=$(ab_musl_base "$TAG-musl")
	img=$(ab-image build --recipe agents --base "$base")
	new_repo "$repo" a=a
	run_exact 0 "$RUN_TASK" --repo "$repo" --commit HEAD --phase execution \
		--timeout 60 --image "$img" --quiet -- claude --version
	RECORD=$output
	assert_equal "$(record_field 'r["stdout"]["text"]')" "2.1.332 (Claude Code)"
	run_exact 0 ab-image remove "$img"
}

@test "every in-container program of the Makefile is in the agents recipes, and each layer has its recipe's programs" {
	local progs m
	progs=$(sed -n 's/^IMAGE_PROGS = //p' "$AB_ROOT/Makefile" | tr ' ' '\n' | sort)
	[ -n "$progs" ]
	tools() {
		sed -n 's|^tool /usr/lib/agentbox/[^ ]* [0-7]* \(.*\)$|\1|p' \
			"$AB_ROOT/image/$1" | sort
	}
	for m in agents.manifest agents.layer; do
		assert_equal "$(tools "$m")" "$progs"
	done
	assert_equal "$(tools default.layer)" "$(tools default.manifest)"
}

@test "--packages: a package that does not exist is refused in one line naming it, before anything is made" {
	run_exact 2 ab-image build --packages make,agentbox-no-such-package
	assert_one_error_line ab-image
	assert_regex "$stderr" "Debian package agentbox-no-such-package does not exist"
	run_exact 2 ab-image build --packages 'make;rm'
	assert_one_error_line ab-image
	run docker images -q --filter "label=org.agentbox.state=$(ab_state_sid)" \
		--filter "label=org.agentbox.packages"
	assert_output ""
}

@test "--packages make,gcc,libc6-dev: make test compiles and runs a C test; the same list again is the same image, another list another" {
	local img repo=$BATS_TEST_TMPDIR/repo
	img=$(ab-image build --packages make,gcc,libc6-dev)
	new_repo "$repo" Makefile=$'test: t\n\t./t\nt: t.c\n\tcc -o t t.c\n' \
		t.c=$'#include <stdio.h>\nint main(void) { puts("c test passed"); return 0; }\n'
	run_exact 0 "$RUN_TASK" --repo "$repo" --commit HEAD --phase execution \
		--timeout 120 --image "$img" --quiet -- sh -c 'make test'
	RECORD=$output
	assert_regex "$(record_field 'r["stdout"]["text"]')" "c test passed"
	# Every package, with its version, in the record and the labels.
	run docker image inspect "$(image_id "$img")" --format \
		'{{index .Config.Labels "org.agentbox.packages"}}'
	assert_regex "$output" "(^| )make=[^ ]+ "
	assert_regex "$output" "(^| )gcc-12=[^ ]+ "
	assert_regex "$(cat "$AB_STATE_DIR/image/${img#image:}")" '"packages":"[^"]*make='
	run_exact 0 ab-image build --packages make,gcc,libc6-dev
	assert_equal "$output" "$img"
	assert_equal "${stderr##*$'\n'}" "ab-image: reused"
	refute_regex "$stderr" "mmdebstrap.*root|importing"
	# Another list resolves to another set: another image.
	run_exact 0 ab-image build --packages make
	[[ $output =~ ^image:[0-9a-f]{32}$ ]]
	[ "$output" != "$img" ]
	assert_equal "${stderr##*$'\n'}" "ab-image: built"
	run_exact 0 ab-image remove "$output"
}

@test "the README's make test example, taken from the README, runs as written" {
	local repo=$BATS_TEST_TMPDIR/repo block
	block=$(awk '/^## Your project.s tools in the image/ { s = 1 }
		s && /^    sh\/run-task/ { p = 1 }
		p && /^    / { print substr($0, 5); next }
		p { exit }' "$AB_ROOT/README.md")
	assert_regex "$block" "--packages make,gcc,libc6-dev"
	assert_regex "$block" "make test"
	new_repo "$repo" Makefile=$'test: t\n\t./t\nt: t.c\n\tcc -o t t.c\n' \
		t.c=$'#include <stdio.h>\nint main(void) { puts("c test passed"); return 0; }\n'
	# sh/run-task as the README names it, from the project's directory.
	ln -s "$AB_ROOT/sh" "$repo/sh"
	(cd "$repo" && bash -c "$block")
	RECORD=$(cat "$repo/result.json")
	assert_equal "$(record_field 'r["exit_status"]')" 0
	assert_regex "$(record_field 'r["stdout"]["text"]')" "c test passed"
	[ -f "$repo/change.patch" ]
}
