#!/usr/bin/env bats
# examples/ansible/task.yml: the whole task from Ansible against the real
# engine (ansible-core comes with the Makefile's packages), what each step
# reports as changed, and the always: block's cleanup when a step fails.

# shellcheck disable=SC2154 # bats sets status, output, stderr
load helpers
load lib/ansible

PLAYBOOK=$AB_ROOT/examples/ansible/task.yml

setup_file() {
	ab_setup_file
	ab_ansible_setup_file
}

teardown_file() {
	ab_teardown_file
}

teardown() {
	# A state directory a test made for itself goes whole.
	[ -z "${STATE:-}" ] || [ "$STATE" = "$AB_STATE_DIR" ] ||
		ab_purge_state "$STATE"
	ab_state_sweep --alloc
	rm -rf "$AB_STATE_DIR/alloc" "$AB_STATE_DIR/stage"
}

# playbook STATE EXTRA-VARS...: the example on REPO, with this build's
# tools and state directory STATE.
playbook() {
	local state=$1
	shift
	ansible-playbook "$PLAYBOOK" -e "ab_bin=$AB_BIN" \
		-e "ab_state_dir=$state" -e "ab_repo=$REPO" "$@"
}

# The recap of the play, "ok=N changed=N failed=N skipped=N".
recap() {
	sed -n 's/^localhost *: *\(ok=[0-9]*\) *\(changed=[0-9]*\) *unreachable=0 *\(failed=[0-9]*\) *\(skipped=[0-9]*\).*/\1 \2 \3 \4/p' <<<"$output"
}

# What the default callback said of task NAME: ok, changed, fatal, ...
task_said() {
	awk -v t="TASK [$1] " 'index($0, t) == 1 { getline; sub(/:.*/, ""); print; exit }' \
		<<<"$output"
}

# What is left of state directory $1's tasks: every container and volume
# (the image is registered and stays), allocation and staging records,
# deadline files.
leftovers() {
	local sid
	sid=$(ab_state_sid "$1")
	docker ps -aq --filter "label=org.agentbox.state=$sid"
	docker volume ls -q --filter "label=org.agentbox.state=$sid"
	find "$1/alloc" "$1/stage" -mindepth 1 -maxdepth 1 2>/dev/null || true
	find "$1" -maxdepth 1 -name 'deadline.*'
}

@test "the playbook is well formed" {
	run_exact 0 ansible-playbook --syntax-check "$PLAYBOOK"
}

@test "the playbook runs a task: the agent's change comes back, ab-image changes only when it builds, nothing is left" {
	STATE=$(ab_new_state)
	local patch=$BATS_TEST_TMPDIR/change.patch step
	run_exact 0 playbook "$STATE" -e "ab_patch=$patch" \
		-e '{"ab_command": ["sh", "-c", "git -C /work log -1 --format=%s >/work/AGENT.txt"]}'
	assert_equal "$(recap)" "ok=14 changed=11 failed=0 skipped=0"
	assert_equal "$(task_said 'ab-image build')" changed
	for step in ab-alloc ab-seed ab-profile ab-validate ab-run ab-export ab-clean; do
		assert_equal "$(task_said "$step")" changed
	done
	assert_equal "$(task_said 'Show the result')" ok
	grep -qxF '+++ b/AGENT.txt' "$patch"
	grep -qxF '+the trusted commit' "$patch"
	git -C "$REPO" apply --check "$patch"
	run leftovers "$STATE"
	assert_output ""

	# The image is registered now: the same play reuses it, unchanged.
	rm "$patch"
	run_exact 0 playbook "$STATE" -e "ab_patch=$patch"
	assert_equal "$(recap)" "ok=14 changed=10 failed=0 skipped=0"
	assert_equal "$(task_said 'ab-image build')" ok
	assert_equal "$(task_said ab-clean)" changed
	grep -qxF '+written by the agent' "$patch"
	run leftovers "$STATE"
	assert_output ""
}

@test "a step that fails still runs always:, and ab-clean proves the allocation gone" {
	local patch=$BATS_TEST_TMPDIR/change.patch alloc
	# A commit the repository does not have: ab-seed refuses it after
	# the allocation exists.
	run_exact 2 playbook "$AB_STATE_DIR" -e "ab_patch=$patch" \
		-e ab_expect=0123456789abcdef0123456789abcdef01234567
	assert_equal "$(recap)" "ok=7 changed=5 failed=1 skipped=1"
	assert_equal "$(task_said 'ab-image build')" ok
	assert_equal "$(task_said ab-alloc)" changed
	assert_equal "$(task_said ab-seed)" fatal
	assert_equal "$(task_said ab-clean)" changed
	assert_equal "$(task_said 'Remove the deadline file')" changed
	[[ $output == *'ab-seed: commit 0123456789abcdef0123456789abcdef01234567 is not in the repository'* ]]
	# The allocation the play made (the failed ab-seed's argv names it).
	alloc=$(grep -o 'alloc:[0-9a-f]\{32\}' <<<"$output" | head -n 1)
	[ -n "$alloc" ]
	[ ! -e "$patch" ]
	run leftovers "$AB_STATE_DIR"
	assert_output ""
	# ab-clean, asked again, finds nothing of it.
	run_exact 0 ab-clean "$alloc"
	assert_equal "$stderr" "ab-clean: absent"
}

# The first block of examples/ansible/README.md that runs task.yml, as
# written there.
readme_command() {
	awk '/^    ansible-playbook examples\/ansible\/task.yml/ { on = 1 }
		on && /^$/ { exit }
		on { sub(/^    /, ""); print }' "$AB_ROOT/examples/ansible/README.md"
}

@test "the example's README command runs as written, from the top of a clone" {
	local top=$BATS_TEST_TMPDIR/clone cmd
	STATE=$(ab_new_state)
	cmd=$(readme_command)
	[[ $cmd == "ansible-playbook examples/ansible/task.yml"* ]]
	# A clone's top: the example's files and a commit of them.
	mkdir "$top"
	cp -R "$AB_ROOT/examples" "$top/"
	git -C "$top" init -q
	git -C "$top" add examples
	git -C "$top" commit -qm 'the clone'
	cd "$top"
	AB_STATE_DIR=$STATE run_exact 0 bash -c "$cmd"
	grep -qxF '+++ b/FILES.txt' "$top/change.patch"
	grep -qxF '+/work/examples/ansible:' "$top/change.patch"
	run leftovers "$STATE"
	assert_output ""
}

@test "a tool that is not there fails its step on its own message" {
	local patch=$BATS_TEST_TMPDIR/change.patch
	run_exact 2 playbook "$AB_STATE_DIR" -e "ab_patch=$patch" \
		-e ab_bin=/nonexistent
	assert_equal "$(task_said 'ab-image build')" fatal
	assert_output --partial "No such file or directory"
	refute_output --partial "has no element"
}
