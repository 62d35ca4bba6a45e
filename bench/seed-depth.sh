#!/bin/sh
# bench/seed-depth.sh REPO [DEPTH]: ab-seed --depth DEPTH (default 1) of
# REPO's HEAD against what git itself takes for the same history: `git
# clone --bare --depth DEPTH file://REPO` and `docker cp` of it into a
# tmpfs volume held by a container.  RUNS pairs (default 5), alternating;
# one line a pair (wall seconds, peak RSS), then the medians and the
# median of the pairs' ratios.  ab-seed also uploads the work tree, which
# the bare clone does not have.  REPO is any real repository (git's own,
# for one); nothing of it is written to.
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
	/usr/bin/time -f '%e %M' -o "$work/t" ab-seed "$alloc" --repo "$repo" \
		--commit "$commit" --depth "$depth" >/dev/null 2>&1
	read -r ab ab_rss <"$work/t"
	ab-clean "$alloc" >/dev/null
	rm -rf "$work/clone"
	/usr/bin/time -f '%e %M' -o "$work/t" git clone -q --bare \
		--depth "$depth" "file://$repo" "$work/clone"
	read -r cl cl_rss <"$work/t"
	s=$(date +%s.%N)
	docker cp "$work/clone" "ab-bench-holder:/vol/c$i" >/dev/null
	cp=$(echo "$(date +%s.%N) - $s" | bc)
	git_way=$(echo "$cl + $cp" | bc)
	ratio=$(echo "scale=3; $ab / $git_way" | bc)
	echo "pair $i: ab-seed $ab s ${ab_rss} KB; git clone+docker cp $git_way s (clone ${cl_rss} KB); ratio $ratio"
	echo "$ab $git_way $ratio" >>"$work/pairs"
done
echo "depth $depth, $runs pairs: ab-seed median $(cut -d' ' -f1 "$work/pairs" | median) s;" \
	"git median $(cut -d' ' -f2 "$work/pairs" | median) s;" \
	"ratio median $(cut -d' ' -f3 "$work/pairs" | median)"
