#!/bin/sh
# bench/image-roots.sh [RUNS]: images that carry the project's toolchain
# (ab-image build --packages, --base).  Times, once each: the --packages
# build cold (mmdebstrap resolving and making the root, the import, the
# probe) and reused (the resolution alone); the --base build of the
# agents layer on a 400 MB base (the packages image itself, by its ID)
# cold and reused; each image's size.  Then RUNS rounds of one task
# (run-task, agent `true`, the 100-file repository) on the packages
# image and on the agents image in turn: the medians and the median of
# the per-round ratios.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-5}
# shellcheck source=bench/lib.sh
. "$here/bench/lib.sh"
bench_begin

now() { date +%s.%N; }
took() { echo "$1 $2" | awk '{printf "%.2f", $2 - $1}'; }
size_of() {
	docker image inspect --format '{{.Size}}' "agentbox:${1#image:}" |
		awk '{printf "%d MB", $1 / 1000000}'
}

list=make,gcc,libc6-dev
t0=$(now)
pkg=$(ab-image build --packages "$list" 2>/dev/null)
t1=$(now)
ab-image build --packages "$list" >/dev/null 2>&1
t2=$(now)
echo "packages $list: cold $(took "$t0" "$t1") s, reused $(took "$t1" "$t2") s, $(size_of "$pkg")"

base=$(docker image inspect --format '{{.Id}}' "agentbox:${pkg#image:}")
t0=$(now)
onbase=$(ab-image build --recipe agents --base "$base" 2>/dev/null)
t1=$(now)
ab-image build --recipe agents --base "$base" >/dev/null 2>&1
t2=$(now)
echo "base of $(size_of "$pkg"): cold $(took "$t0" "$t1") s, reused $(took "$t1" "$t2") s, $(size_of "$onbase")"

agents=$(ab-image build --recipe agents 2>/dev/null)
echo "agents image: $(size_of "$agents")"

bench_repo "$work/repo"
task() {
	sh "$here/sh/run-task" --repo "$work/repo" --commit "$commit" \
		--image "$1" --phase execution --timeout 300 -- true \
		>/dev/null 2>&1
}
: >"$work/raw"
i=0
while [ "$i" -lt "$runs" ]; do
	i=$((i + 1))
	t0=$(now)
	task "$pkg"
	t1=$(now)
	task "$agents"
	t2=$(now)
	echo "$i $t0 $t1 $t2" | awk '{printf "%d %.3f %.3f\n", $1, $3-$2, $4-$3}' |
		tee -a "$work/raw"
done
python3 - "$work/raw" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
p, a = ([float(r[k]) for r in rows] for k in (1, 2))
print("task on packages image median %.3f s  min %.3f  max %.3f" % (st.median(p), min(p), max(p)))
print("task on agents image   median %.3f s  min %.3f  max %.3f" % (st.median(a), min(a), max(a)))
print("ratio packages/agents  median %.2f" % st.median([x / y for x, y in zip(p, a)]))
PY
