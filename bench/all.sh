#!/bin/sh
# bench/all.sh: every benchmark, one after another on an otherwise idle
# engine (`make bench`).  Each one's output goes to bench/out/NAME.txt and
# to the terminal; then bench/plot.gp draws bench/task-cost.png and
# bench/seed-scaling.png from them.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
out=$here/bench/out
mkdir -p "$out"
run() {	# NAME SCRIPT ARGS...
	name=$1
	shift
	echo "== $name: $*"
	sh "$@" | tee "$out/$name.txt"
}
run task "$here/bench/task.sh" "${RUNS:-10}"
run task-calls "$here/bench/task-calls.sh" "${RUNS:-7}"
run agent-task "$here/bench/agent-task.sh" "${RUNS:-7}"
run seed "$here/bench/seed.sh"
run export "$here/bench/export.sh"
run export-sparse "$here/bench/export-sparse.sh"
run memory "$here/bench/memory.sh"
run scale "$here/bench/scale.sh"
run egress "$here/bench/egress.sh"
run egress-scale "$here/bench/egress-scale.sh"
run image-roots "$here/bench/image-roots.sh" "${RUNS:-5}"
# bash: it starts an engine of its own with the tests' functions.
echo "== gvisor: $here/bench/gvisor.sh"
bash "$here/bench/gvisor.sh" "${RUNS:-5}" | tee "$out/gvisor.txt"
gnuplot -e "out='$out'" "$here/bench/plot.gp"
echo "charts: bench/task-cost.png bench/seed-scaling.png"
