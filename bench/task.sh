#!/bin/sh
# bench/task.sh [RUNS]: what one task costs.  Each round runs, in turn,
# the floor (one locked `docker run --rm ... true`, no proof), the docker
# CLI reference (bench/cli-task.sh: the same work as a user's script, no
# proof), agentbox (sh/run-task with the agent `true`), on a 100-file
# repository, and the engine's own cost of two bare lifecycles
# (bench/api-floor.py: volumes, keeper, agent, all removed, by the API
# from one process, nothing seeded or checked).  Prints a line a round
# (seconds), then the median, min and max of each, the median of the
# per-round ratios, and each step's share of the agentbox total from a
# second run-task a round with AB_TIMING set.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-10}
# shellcheck source=bench/lib.sh
. "$here/bench/lib.sh"
bench_begin

now() { date +%s.%N; }

bench_repo "$work/repo"
img=$(ab-image build 2>/dev/null)
digest=$(docker image inspect --format '{{.Id}}' "agentbox:${img#image:}")

echo "round floor cli agentbox" >"$work/raw"
i=0
while [ "$i" -lt "$runs" ]; do
	i=$((i + 1))
	t0=$(now)
	docker run --rm --network none --read-only --entrypoint true "$digest"
	t1=$(now)
	sh "$here/bench/cli-task.sh" "$digest" "$work/repo" "$commit"
	t2=$(now)
	sh "$here/sh/run-task" --repo "$work/repo" --commit "$commit" \
		--image "$img" --phase execution --timeout 300 -- true \
		>/dev/null 2>&1
	t3=$(now)
	echo "$i $t0 $t1 $t2 $t3" | awk '{printf "%d %.3f %.3f %.3f\n", $1, $3-$2, $4-$3, $5-$4}' |
		tee -a "$work/raw"
	# The steps' shares from a run of its own: AB_TIMING's date calls
	# cost some 30 ms, which the total above does not carry.
	AB_TIMING=1 sh "$here/sh/run-task" --repo "$work/repo" --commit "$commit" \
		--image "$img" --phase execution --timeout 300 -- true \
		>/dev/null 2>>"$work/timing"
	python3 "$here/bench/api-floor.py" "$digest" >>"$work/api"
done

python3 - "$work/raw" "$work/timing" "$work/api" <<'PY'
import statistics as st, sys, collections
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
floor, cli, ab = ([float(r[k]) for r in rows] for k in (1, 2, 3))
api = [float(l) for l in open(sys.argv[3])]
def line(name, v):
    print("%-9s median %.3f s  min %.3f  max %.3f" % (name, st.median(v), min(v), max(v)))
line("floor", floor); line("cli", cli); line("agentbox", ab); line("api2", api)
print("ratio api2/cli       median %.2f (min %.2f, max %.2f)" % (
    st.median([a / c for a, c in zip(api, cli)]), min(a / c for a, c in zip(api, cli)),
    max(a / c for a, c in zip(api, cli))))
print("ratio agentbox/cli   median %.2f (min %.2f, max %.2f)" % (
    st.median([a / c for a, c in zip(ab, cli)]), min(a / c for a, c in zip(ab, cli)),
    max(a / c for a, c in zip(ab, cli))))
print("ratio agentbox/floor median %.2f (min %.2f, max %.2f)" % (
    st.median([a / f for a, f in zip(ab, floor)]), min(a / f for a, f in zip(ab, floor)),
    max(a / f for a, f in zip(ab, floor))))
steps = collections.defaultdict(list)
for l in open(sys.argv[2]):
    w = l.split()
    if len(w) == 5 and w[1] == "time":
        steps[w[2]].append(int(w[3]) / 1000)
total = sum(st.median(v) for v in steps.values())
for k in ("ab-alloc", "ab-seed", "ab-profile", "ab-validate", "ab-run", "ab-clean"):
    if k in steps:
        m = st.median(steps[k])
        print("step %-12s median %.3f s  %4.1f%% of the steps" % (k, m, 100 * m / total))
PY
