#!/bin/sh
# bench/cli-task.sh IMAGE REPO COMMIT: the reference for bench/task.sh.
# What a user would otherwise write with the docker CLI to do what one
# agentbox task does with the agent `true`: three tmpfs volumes with size
# and inode options, a keeper holding them, a checkout and a bare clone
# copied in with docker cp, an agent container created with every lockdown
# flag, inspected, started attached, and everything removed.  It proves
# nothing: no inspect is compared, no probe runs, no absence is checked.
set -eu
image=$1 repo=$2 commit=$3
id=ab-cli-$$-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
tmp=$(mktemp -d /tmp/ab-cli.XXXXXX)
trap 'docker rm -f "$id-agent" "$id-keeper" >/dev/null 2>&1 || true
	docker volume rm -f "$id-task" "$id-git" "$id-inputs" >/dev/null 2>&1 || true
	rm -rf "$tmp"' EXIT

vol() {	# NAME BYTES INODES
	docker volume create --driver local --opt type=tmpfs --opt device=tmpfs \
		--opt "o=size=$2,nr_inodes=$3,uid=10001,gid=10001,mode=0755" \
		--label org.agentbox.bench=cli "$id-$1" >/dev/null
}
vol task 268435456 100000
vol git 268435456 100000
vol inputs 16777216 1000

lock="--user 10001:10001 --read-only --cap-drop ALL
	--security-opt no-new-privileges --network none --ipc private
	--cgroupns private --restart no --log-opt max-size=1m --log-opt max-file=1"
# The flags are words on purpose.
# shellcheck disable=SC2086
docker run -d --name "$id-keeper" $lock --memory 32m --memory-swap 32m \
	--pids-limit 8 --label org.agentbox.bench=cli \
	--mount "type=volume,src=$id-task,dst=/work,volume-nocopy" \
	--mount "type=volume,src=$id-git,dst=/work/.git,volume-nocopy" \
	--mount "type=volume,src=$id-inputs,dst=/run/agentbox/inputs,volume-nocopy" \
	--entrypoint /bin/sleep "$image" 2147483647 >/dev/null

git -C "$repo" archive "$commit" | docker cp - "$id-keeper:/work"
git clone -q --bare "$repo" "$tmp/bare"
docker cp "$tmp/bare/." "$id-keeper:/work/.git"

# shellcheck disable=SC2086
docker create --name "$id-agent" $lock --memory 1g --memory-swap 1g \
	--pids-limit 256 --cpus 1 --shm-size 64m --ulimit nofile=1024:1024 \
	--label org.agentbox.bench=cli \
	--tmpfs /tmp:rw,nosuid,nodev,size=268435456,nr_inodes=20000,uid=10001,gid=10001,mode=1777 \
	--tmpfs /home/agent:rw,nosuid,nodev,size=67108864,nr_inodes=10000,uid=10001,gid=10001,mode=0700 \
	--mount "type=volume,src=$id-task,dst=/work,volume-nocopy" \
	--mount "type=volume,src=$id-git,dst=/work/.git,volume-nocopy,readonly" \
	--mount "type=volume,src=$id-inputs,dst=/run/agentbox/inputs,volume-nocopy,readonly" \
	--entrypoint true "$image" >/dev/null
docker inspect "$id-agent" >/dev/null
docker start -a "$id-agent"
docker rm -f "$id-agent" "$id-keeper" >/dev/null
docker volume rm "$id-task" "$id-git" "$id-inputs" >/dev/null
