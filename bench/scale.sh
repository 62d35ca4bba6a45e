#!/bin/sh
# bench/scale.sh [P...]: P tasks at a time (default 1 2 4 8), each
# sh/run-task with the agent `true` on a 100-file repository of its own;
# 8 tasks for every P.  One line a P: tasks per minute, the median task
# time, failures, and whether any object of the state is left.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/bench/lib.sh"
bench_begin
total=8

now() { date +%s.%N; }

for k in $(seq 1 "$total"); do
	git init -q "$work/repo$k"
	for f in $(seq 1 100); do echo "file $f of task $k" >"$work/repo$k/f$f"; done
	git -C "$work/repo$k" add -A
	git -C "$work/repo$k" -c user.name=b -c user.email=b@b commit -qm base
done
img=$(ab-image build 2>/dev/null)
sid=$(cat "$AB_STATE_DIR/sid")

one() {	# K: one task, its seconds into $work/t.K
	t0=$(now)
	if sh "$here/sh/run-task" --repo "$work/repo$1" --commit HEAD --image "$img" \
		--phase execution --timeout 300 -- true >/dev/null 2>&1; then
		echo "$t0 $(now)" | awk '{printf "%.3f\n", $2 - $1}' >"$work/t.$1"
	else
		echo fail >"$work/t.$1"
	fi
}

printf '%-3s %12s %14s %8s %s\n' P tasks/min "median task s" failed left
[ "$#" -gt 0 ] || set -- 1 2 4 8
for p in "$@"; do
	rm -f "$work"/t.*
	t0=$(now)
	k=0
	while [ "$k" -lt "$total" ]; do
		pids=''
		j=0
		while [ "$j" -lt "$p" ] && [ "$k" -lt "$total" ]; do
			k=$((k + 1))
			j=$((j + 1))
			one "$k" &
			pids="$pids $!"
		done
		for pid in $pids; do wait "$pid"; done
	done
	t1=$(now)
	left=$( (docker ps -aq --filter "label=org.agentbox.state=$sid"
		docker volume ls -q --filter "label=org.agentbox.state=$sid") | grep -c . || true)
	cat "$work"/t.* | python3 -c '
import statistics as st, sys
p, t0, t1, left = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
v = [l.strip() for l in sys.stdin]
ok = [float(x) for x in v if x != "fail"]
print("%-3s %12.1f %14.3f %8d %s" % (p, 60 * len(ok) / (t1 - t0),
    st.median(ok) if ok else 0, len(v) - len(ok), left))' "$p" "$t0" "$t1" "$left"
done
