#!/bin/sh
# bench/seed-depth.sh REPO [DEPTH]: ab-seed --depth DEPTH (default 1; "all":
# no --depth, the whole history) of REPO's HEAD against what git itself
# takes for the same history: `git clone --bare --depth DEPTH file://REPO`
# (for "all", `git clone --bare --no-local --single-branch REPO`) and
# `docker cp` of it into a tmpfs volume held by a container.  RUNS pairs
# (default 5), alternating; one line a pair (wall seconds, peak RSS of the
# process and the gits it waited for, the git directory's bytes), then the
# medians and the median of the pairs' ratios.  ab-seed also uploads the
# work tree, which the bare clone does not have.  While ab-seed runs, the
# keeper is inspected every 0.2 s: the slowest answer is how long the
# engine held the keeper's lock for an upload.  REPO is any real
# repository (git's own, for one); nothing of it is written to.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
PATH=$here/bin:$PATH
repo=$(cd "$1" && pwd)
depth=${2:-1}
runs=${RUNS:-5}
work=$(mktemp -d /tmp/ab-bench.XXXXXX)
AB_STATE_DIR=$work/state
export AB_STATE_DIR
mkdir -m 0700 "$AB_STATE_DIR"
trap 'cleanup' EXIT INT TERM

cleanup() {
	docker rm -f ab-bench-holder >/dev/null 2>&1 || true
	docker volume rm -f ab-bench-vol >/dev/null 2>&1 || true
	ab-clean --sweep --all >/dev/null 2>&1 || true
	for i in $(ab-image list 2>/dev/null); do ab-image remove "$i" >/dev/null 2>&1 || true; done
	rm -rf "$work"
}

# watch_keeper NAME FILE: the slowest of the keeper's inspects so far, in
# seconds, kept in FILE, until killed.
watch_keeper() {
	slow=0
	echo 0 >"$2"
	while :; do
		s=$(date +%s.%N)
		docker inspect --format '{{.State.Running}}' "$1" >/dev/null 2>&1 || true
		t=$(echo "$(date +%s.%N) - $s" | bc)
		slow=$(echo "if ($t > $slow) $t else $slow" | bc)
		echo "$slow" >"$2.new"
		mv "$2.new" "$2"
		sleep 0.2
	done
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

image=$(ab-image build 2>/dev/null)
digest=$(docker images -q --no-trunc --filter "label=org.agentbox.image=${image#image:}" | head -1)
commit=$(git -C "$repo" rev-parse HEAD)
docker volume create --driver local --opt type=tmpfs --opt device=tmpfs \
	--opt o=size=4g,uid=10001,gid=10001 ab-bench-vol >/dev/null
docker run -d --name ab-bench-holder --user 10001:10001 --network none \
	--entrypoint /bin/sleep --mount type=volume,src=ab-bench-vol,dst=/vol \
	"$digest" 86400 >/dev/null
: >"$work/pairs"
i=0
while [ "$i" -lt "$runs" ]; do
	i=$((i + 1))
	alloc=$(ab-alloc --image "$image" --git-bytes 4G --task-bytes 4G)
	if [ "$depth" = all ]; then set --; else set -- --depth "$depth"; fi
	watch_keeper "agentbox-${alloc#alloc:}-keeper" "$work/lock" &
	watch=$!
	/usr/bin/time -f '%e %M' -o "$work/t" ab-seed "$alloc" --repo "$repo" \
		--commit "$commit" "$@" >/dev/null 2>&1
	kill "$watch"
	wait "$watch" 2>/dev/null || true
	lock=$(cat "$work/lock")
	read -r ab ab_rss <"$work/t"
	ab_size=$(du -sb "$AB_STATE_DIR/stage/${alloc#alloc:}/objects" | cut -f1)
	ab-clean "$alloc" >/dev/null
	rm -rf "$work/clone"
	if [ "$depth" = all ]; then
		set -- --no-local --single-branch "$repo"
	else
		set -- --depth "$depth" "file://$repo"
	fi
	/usr/bin/time -f '%e %M' -o "$work/t" git clone -q --bare "$@" \
		"$work/clone"
	read -r cl cl_rss <"$work/t"
	cl_size=$(du -sb "$work/clone/objects" | cut -f1)
	s=$(date +%s.%N)
	docker cp "$work/clone" "ab-bench-holder:/vol/c$i" >/dev/null
	cp=$(echo "$(date +%s.%N) - $s" | bc)
	git_way=$(echo "$cl + $cp" | bc)
	ratio=$(echo "scale=3; $ab / $git_way" | bc)
	echo "pair $i: ab-seed $ab s ${ab_rss} KB ${ab_size} B, keeper slowest answer ${lock} s; git clone+docker cp $git_way s (clone ${cl_rss} KB ${cl_size} B); ratio $ratio"
	echo "$ab $git_way $ratio" >>"$work/pairs"
done
echo "depth $depth, $runs pairs: ab-seed median $(cut -d' ' -f1 "$work/pairs" | median) s;" \
	"git median $(cut -d' ' -f2 "$work/pairs" | median) s;" \
	"ratio median $(cut -d' ' -f3 "$work/pairs" | median)"
