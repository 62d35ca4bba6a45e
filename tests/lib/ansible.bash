# ansible.bash: what the files that run the examples/ansible playbooks
# share (tests/ansible.bats, tests/fleet.bats).
# shellcheck shell=bash

# ab_ansible_setup_file: REPO, a repository whose one commit (the trusted
# commit) holds a.txt; git's author and committer for the commits the
# tests make; Ansible's own files under the file's temporary directory,
# not in $HOME; no colour, and no warning about the implicit localhost or
# an inventory that does not parse.
ab_ansible_setup_file() {
	export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t \
		GIT_COMMITTER_EMAIL=t@t
	REPO=$BATS_FILE_TMPDIR/repo
	git init -q "$REPO"
	echo 'this is a.txt' >"$REPO/a.txt"
	git -C "$REPO" add a.txt
	git -C "$REPO" commit -qm 'the trusted commit'
	export REPO
	export ANSIBLE_HOME=$BATS_FILE_TMPDIR/ansible
	export ANSIBLE_LOCAL_TEMP=$ANSIBLE_HOME/tmp \
		ANSIBLE_REMOTE_TEMP=$ANSIBLE_HOME/tmp ANSIBLE_NOCOLOR=1 \
		ANSIBLE_LOCALHOST_WARNING=false \
		ANSIBLE_INVENTORY_UNPARSED_WARNING=false
}
