#!/bin/sh
# bench/seed.sh [N...]: seeding time and peak memory of ab-seed against
# what a user would otherwise do (git archive | docker cp, and docker cp
# of a bare clone into /work/.git), into same-sized tmpfs volumes held by
# a container, for generated repositories of N files (default 1000 10000
# 100000 4x50M; "4x50M" is 100 small files and four 50 MiB random blobs).
# RUNS rounds a size (default 10), each an ab-seed and a docker cp pair;
# one line a size: medians with min-max, the median of the pairs' ratios.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
PATH=$here/bin:$PATH
work=$(mktemp -d /tmp/ab-bench.XXXXXX)
AB_STATE_DIR=$work/state
export AB_STATE_DIR
mkdir -m 0700 "$AB_STATE_DIR"
trap 'cleanup' EXIT INT TERM

cleanup() {
	sid=$(cat "$AB_STATE_DIR/sid" 2>/dev/null || true)
	if [ -n "$sid" ]; then
		docker ps -aq --filter "label=org.agentbox.state=$sid" | xargs -r docker rm -f >/dev/null
		docker volume ls -q --filter "label=org.agentbox.state=$sid" | xargs -r docker volume rm >/dev/null
		docker images -q --filter "label=org.agentbox.state=$sid" | sort -u | xargs -r docker rmi -f >/dev/null
	fi
	docker rm -f ab-bench-keeper >/dev/null 2>&1 || true
	for r in task git; do docker volume rm -f "ab-bench-$r" >/dev/null 2>&1 || true; done
	rm -rf "$work"
}

now() { date +%s.%N; }

make_repo() {	# DIR N [BLOBS]: N files of about 200 bytes, 100 a directory
	git init -q "$1"
	python3 - "$1" "$2" "${3:-0}" <<'PY'
import os, sys
root, n, blobs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for b in range(blobs):
    with open(os.path.join(root, "blob%d.bin" % b), "wb") as f:
        f.write(os.urandom(50 << 20))
for i in range(n):
    d = os.path.join(root, "d%05d" % (i // 100))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%d.txt" % i), "w") as f:
        f.write(("line %d\n" % i) * 20)
PY
	git -C "$1" add -A
	# A commit over 6,700 loose objects starts git gc --auto in the
	# background: it would pack the repository during the first rounds.
	# Packed in the foreground instead, as a clone is.
	git -C "$1" -c gc.auto=0 -c user.name=b -c user.email=b@b commit -qm bench
	git -C "$1" gc -q
}

docker_way() {	# REPO COMMIT IMAGE: seconds for the two docker cp steps
	o="type=tmpfs,device=tmpfs,o=size=4g,nr_inodes=400000,uid=10001,gid=10001"
	for r in task git; do
		docker volume create --driver local --opt type=tmpfs --opt device=tmpfs \
			--opt o=size=4g,nr_inodes=400000,uid=10001,gid=10001 "ab-bench-$r" >/dev/null
	done
	docker run -d --name ab-bench-keeper --user 10001:10001 --read-only \
		--network none --mount type=volume,src=ab-bench-task,dst=/work \
		--mount type=volume,src=ab-bench-git,dst=/work/.git \
		--entrypoint /bin/sleep "$3" 100000 >/dev/null
	rm -rf "$work/bare"
	t0=$(now)
	git -C "$1" archive "$2" | docker cp - ab-bench-keeper:/work
	git clone -q --bare "$1" "$work/bare"
	docker cp "$work/bare/." ab-bench-keeper:/work/.git
	t1=$(now)
	docker rm -f ab-bench-keeper >/dev/null
	for r in task git; do docker volume rm "ab-bench-$r" >/dev/null; done
	echo "$t0 $t1" | awk '{printf "%.3f", $2 - $1}'
	: "$o"
}

img=$(ab-image build 2>/dev/null)
digest=$(sed -n 's/.*"digest":"\(sha256:[0-9a-f]*\)".*/\1/p' "$AB_STATE_DIR/image/${img#image:}")
runs=${RUNS:-10}
printf '%-7s %-22s %-14s %-22s %9s %s\n' files "ab-seed s (min-max)" "peak RSS KiB" \
	"docker-cp s (min-max)" files/s "ratio (min-max)"
[ "$#" -gt 0 ] || set -- 1000 10000 100000 4x50M
for n in "$@"; do
	repo=$work/repo-$n
	case $n in
	*x50M) make_repo "$repo" 100 "${n%x50M}"; files=$((100 + ${n%x50M})) ;;
	*) make_repo "$repo" "$n"; files=$n ;;
	esac
	commit=$(git -C "$repo" rev-parse HEAD)
	: >"$work/raw"
	i=0
	while [ "$i" -lt "$runs" ]; do
		i=$((i + 1))
		alloc=$(ab-alloc --image "$img" --task-bytes 4G --task-inodes 400000 \
			--git-bytes 4G --git-inodes 400000)
		/usr/bin/time -f '%e %M' -o "$work/time" \
			ab-seed "$alloc" --repo "$repo" --commit "$commit" >/dev/null 2>&1
		read -r secs kib <"$work/time"
		ab-clean "$alloc" >/dev/null
		echo "$secs $kib $(docker_way "$repo" "$commit" "$digest")" >>"$work/raw"
	done
	python3 - "$n" "$files" "$work/raw" <<'PY'
import statistics as st, sys
n, files, raw = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = [[float(x) for x in l.split()] for l in open(raw)]
s, k, d = ([r[i] for r in rows] for i in range(3))
r = [a / b for a, b in zip(s, d)]
print("%-7s %6.3f (%.3f-%.3f)    %-14d %6.3f (%.3f-%.3f)    %9.0f %.2f (%.2f-%.2f)" % (
    n, st.median(s), min(s), max(s), max(k), st.median(d), min(d), max(d),
    files / st.median(s), st.median(r), min(r), max(r)))
PY
	rm -rf "$repo"
done
