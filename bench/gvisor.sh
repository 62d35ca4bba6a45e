#!/bin/bash
# bench/gvisor.sh [RUNS]: what gVisor costs a task.  On an engine of the
# bench's own (tests/lib/engine2.bash: its own network namespace, vfs
# storage, Debian's runsc registered as the README says), each round runs
# sh/run-task with the agent `true` on a 100-file repository under runc and
# under runsc, then `git status` on a 5,000-file checkout under each.
# Prints a line a round (run-task's wall seconds, and the agent's own
# duration_ms for git status), then the median of each and of the per-round
# ratios runsc/runc.  Needs root (the engine).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
PATH=$here/bin:$PATH
runs=${1:-5}
work=$(mktemp -d /tmp/ab-bench.XXXXXX)
AB_STATE_DIR=$work/state
export AB_STATE_DIR AB_ROOT=$here
mkdir -m 0700 "$AB_STATE_DIR"
# The tests' engine functions keep their files there.
export BATS_FILE_TMPDIR=$work
ab_state_sid() { echo benchgvisor; }
# shellcheck disable=SC1091 # the tests' own library
. "$here/tests/lib/engine2.bash"
cleanup() {
	ab-clean --sweep --all >/dev/null 2>&1 || true
	ab_engines_stop
	rm -rf "$work"
}
trap cleanup EXIT

AB_ENGINE_RUNTIMES='{"runsc": {"path": "/usr/bin/runsc", "runtimeArgs":
	["--network=none", "--oci-seccomp", "--host-uds=open", "--platform=ptrace"]}}' \
	ab_engine_start gv
DOCKER_HOST=$(ab_engine host gv)
export DOCKER_HOST

# repo DIR N: a one-commit repository of N small files in 100 directories.
repo() {
	git init -q "$1"
	python3 - "$1" "$2" <<'PY'
import os, sys
for i in range(int(sys.argv[2])):
    d = os.path.join(sys.argv[1], "d%d" % (i % 100))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%d.txt" % i), "w") as f:
        f.write(("line %d\n" % i) * 20)
PY
	git -C "$1" add -A
	git -C "$1" -c user.name=b -c user.email=b@b commit -qm base
}
repo "$work/small" 100
repo "$work/big" 5000
img=$(ab-image build 2>/dev/null)

now() { date +%s.%N; }

# task REPO RUNTIME ARGV...: run-task's wall seconds, then the agent's
# duration_ms from the result.
task() {
	local r=$1 rt=$2 t0 t1 out
	shift 2
	t0=$(now)
	out=$(sh "$here/sh/run-task" --repo "$r" --commit HEAD --image "$img" \
		--phase execution --timeout 600 --runtime "$rt" -- "$@" 2>/dev/null)
	t1=$(now)
	printf '%s %s\n' "$(echo "$t0 $t1" | awk '{printf "%.3f", $2 - $1}')" \
		"$(printf '%s' "$out" | python3 -c 'import json, sys
print(json.load(sys.stdin)["duration_ms"])')"
}

echo "round runc-task runsc-task runc-status-ms runsc-status-ms" >"$work/raw"
i=0
while [ "$i" -lt "$runs" ]; do
	i=$((i + 1))
	a=$(task "$work/small" runc true | cut -d" " -f1)
	b=$(task "$work/small" runsc true | cut -d" " -f1)
	c=$(task "$work/big" runc git status --short | cut -d" " -f2)
	d=$(task "$work/big" runsc git status --short | cut -d" " -f2)
	echo "$i $a $b $c $d" | tee -a "$work/raw"
done
python3 - "$work/raw" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
col = lambda k: [float(r[k]) for r in rows]
med = statistics.median
ratio = lambda a, b: med([y / x for x, y in zip(col(a), col(b))])
print("task (s): runc %.3f  runsc %.3f  ratio %.2f" % (
    med(col(1)), med(col(2)), ratio(1, 2)))
print("git status on 5,000 files (agent ms): runc %.0f  runsc %.0f  ratio %.2f"
      % (med(col(3)), med(col(4)), ratio(3, 4)))
PY
