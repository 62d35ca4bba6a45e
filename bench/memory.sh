#!/bin/sh
# bench/memory.sh [N...]: the peak RSS of every tool (`/usr/bin/time -v`)
# through one task's steps, on generated repositories of N files (default
# 100 and 100000), in KiB.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/bench/lib.sh"
bench_begin
echo $(($(date +%s) + 3600)) >"$work/deadline"
AB_DEADLINE=$work/deadline
export AB_DEADLINE

rss() {	# NAME CMD...: runs CMD, prints its stdout; its peak RSS into $work/rss
	name=$1
	shift
	/usr/bin/time -f "$name %M" -a -o "$work/rss" "$@"
}

[ "$#" -gt 0 ] || set -- 100 100000
for n in "$@"; do
	: >"$work/rss"
	repo=$work/repo-$n
	git init -q "$repo"
	python3 - "$repo" "$n" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, "d%05d" % (i // 100))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%d.txt" % i), "w") as f:
        f.write(("line %d\n" % i) * 20)
PY
	git -C "$repo" add -A
	# A commit over 6,700 loose objects starts git gc --auto in the
	# background: it would pack the repository during the first rounds.
	# Packed in the foreground instead, as a clone is.
	git -C "$repo" -c gc.auto=0 -c user.name=b -c user.email=b@b commit -qm base
	git -C "$repo" gc -q
	commit=$(git -C "$repo" rev-parse HEAD)
	img=$(rss ab-image ab-image build 2>/dev/null)
	alloc=$(rss ab-alloc ab-alloc --image "$img" --task-bytes 4G --task-inodes 400000 \
		--git-bytes 4G --git-inodes 400000)
	rss ab-seed ab-seed "$alloc" --repo "$repo" --commit "$commit" >/dev/null 2>&1
	prof=$(rss ab-profile ab-profile --alloc "$alloc" --phase execution \
		--attempt "mem-$n-$$" -- sh -c 'echo change >>/work/d00000/f0.txt')
	ctr=$(rss ab-validate ab-validate "$prof")
	rss ab-run ab-run "$ctr" >/dev/null
	rss ab-export ab-export "$alloc" -o "$work/p.patch"
	rss ab-clean ab-clean "$alloc"
	printf '%-8s' "$n files:"
	awk '{printf " %s %d", $1, $2}' "$work/rss"
	echo
	rm -rf "$repo"
done
