#!/bin/sh
# bench/export-change.sh [TREES] [CHANGES]: ab-export's wall time against
# git's for trees of 1,000 to 100,000 files (100 a folder, 20 bytes each)
# and changes of 1 to 10,000 of those files (each appended a line, spread
# evenly over the tree).  git's side: a clone of the same commit carrying
# the same change, `git add -A && git diff --cached --binary`.  Each
# figure the best of RUNS (3); one line a case, with what ab-export read
# (its result's export_read: files listed, kept unread, archive requests,
# archives made inside).  READ=auto|changed|all passes ab-export --read.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/bench/lib.sh"
bench_begin
trees=${1:-1000 10000 40000 100000}
changes=${2:-1 100 10000}
runs=${RUNS:-3}
echo $(($(date +%s) + 7200)) >"$work/deadline"
AB_DEADLINE=$work/deadline
export AB_DEADLINE
img=$(ab-image build 2>/dev/null)

# make_repo DIR N: N files, 100 a folder, one commit.
make_repo() {
	git init -q "$1"
	python3 - "$1" "$2" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, 'd%04d' % (i // 100))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, 'f%03d' % (i % 100)), 'w') as f:
        f.write('line of file %6d\n' % i)
PY
	git -C "$1" add -A
	git -C "$1" -c user.name=b -c user.email=b@b commit -qm base
}

# The change: C files of N, one every N/C, each appended a line; run in
# /work by the agent, in the clone by git's side.
change_script() {
	echo "i=0; while [ \$i -lt $2 ]; do k=\$((i * ($1 / $2)));" \
		"echo changed >>d\$(printf %04d \$((k / 100)))/f\$(printf %03d \$((k % 100)));" \
		"i=\$((i + 1)); done"
}

best() {
	sort -n | head -n 1
}

ms_of() {
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1
	echo $((($(date +%s%N) - t0) / 1000000))
}

git_side() {
	git -C "$1" add -A && git -C "$1" diff --cached --binary >"$work/git.patch"
}

echo "ab-export --read ${READ:-auto} against git, $(nproc) cores, engine $(docker version --format '{{.Server.Version}}'), best of $runs"
for n in $trees; do
	rm -rf "$work/repo"
	make_repo "$work/repo" "$n"
	commit=$(git -C "$work/repo" rev-parse HEAD)
	for c in $changes; do
		[ "$c" -le "$n" ] || continue
		alloc=$(ab-alloc --image "$img" --task-bytes 1G \
			--task-inodes $((n + 20000)) --git-inodes 20000)
		ab-seed "$alloc" --repo "$work/repo" --commit "$commit" >/dev/null 2>&1
		prof=$(ab-profile --alloc "$alloc" --phase execution \
			--attempt "bench-$n-$c-$$" -- sh -c "cd /work && $(change_script "$n" "$c")")
		result=$(ab-run "$(ab-validate "$prof")")
		ab=$(for _ in $(seq "$runs"); do
			ms_of ab-export "$alloc" --read "${READ:-auto}" \
				-o "$work/ab.patch"; done | best)
		read_=$(ab-run --show "$result" | python3 -c 'import json,sys
r = json.load(sys.stdin)["export_read"]
print("listed %d, kept %d, %d archives, %d inside" % (r["files"],
    r["unchanged"], r["archives"], r["archives_inside"]))')
		ab-clean "$alloc" >/dev/null
		rm -rf "$work/clone"
		git clone -q "$work/repo" "$work/clone"
		(cd "$work/clone" && sh -c "$(change_script "$n" "$c")")
		g=$(for _ in $(seq "$runs"); do
			git -C "$work/clone" reset -q
			ms_of git_side "$work/clone"; done | best)
		printf '%6d files, %5d changed: ab-export %6d ms, git %5d ms (%.1fx; %s)\n' \
			"$n" "$c" "$ab" "$g" "$(echo "$ab $g" | awk '{print $1 / ($2 ? $2 : 1)}')" "$read_"
	done
done
