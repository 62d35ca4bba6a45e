# shellcheck shell=sh
# bench/lib.sh: what the benchmarks set up alike.  Sourced by a benchmark
# that has set $here to the tree's root.
# shellcheck disable=SC2154 # here is the benchmark's
# shellcheck disable=SC2034 # work and commit are the benchmark's to use

# bench_begin: the tree's tools first on PATH; $work, a directory of the
# benchmark's own, with a state directory in it (AB_STATE_DIR).  At exit,
# and on SIGINT or SIGTERM, bench_end runs.
bench_begin() {
	PATH=$here/bin:$PATH
	work=$(mktemp -d /tmp/ab-bench.XXXXXX)
	AB_STATE_DIR=$work/state
	export PATH AB_STATE_DIR
	mkdir -m 0700 "$AB_STATE_DIR"
	trap bench_end EXIT
	trap 'exit 130' INT TERM
}

# bench_end: a benchmark's own bench_stop first, when it has one (servers
# it started); then every allocation of the state directory swept, every
# image it registered removed, and $work gone.
bench_end() {
	if command -v bench_stop >/dev/null 2>&1; then
		bench_stop
	fi
	ab-clean --sweep --all >/dev/null 2>&1 || true
	for h in $(ab-image list 2>/dev/null | cut -d" " -f1); do
		ab-image remove "$h" >/dev/null 2>&1 || true
	done
	rm -rf "$work"
}

# bench_repo DIR: the plain task's repository, 100 files of 20 lines in
# 10 directories, one commit, whose ID goes into $commit.
bench_repo() {
	git init -q "$1"
	python3 - "$1" <<'PY'
import os, sys
for i in range(100):
    d = os.path.join(sys.argv[1], "d%d" % (i // 10))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%d.txt" % i), "w") as f:
        f.write(("line %d\n" % i) * 20)
PY
	git -C "$1" add -A
	git -C "$1" -c user.name=b -c user.email=b@b commit -qm base
	commit=$(git -C "$1" rev-parse HEAD)
}
