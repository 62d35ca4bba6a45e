#!/bin/sh
# bench/export.sh: peak memory and time of ab-export for a change of
# 20,000 new files, and for one of 20,000 files plus one 200 MiB file
# (`/usr/bin/time -v`).  One line a case.  Its peak RSS follows the
# number of files (the index, the lists of paths), never a blob's size:
# blobs over 4 MiB are streamed (lib/git/changeout.c).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
PATH=$here/bin:$PATH
work=$(mktemp -d /tmp/ab-bench.XXXXXX)
AB_STATE_DIR=$work/state
export AB_STATE_DIR
mkdir -m 0700 "$AB_STATE_DIR"
trap 'cleanup' EXIT INT TERM

cleanup() {
	for a in "$AB_STATE_DIR"/alloc/*; do
		[ ! -e "$a" ] || ab-clean "alloc:${a##*/}" >/dev/null 2>&1 || true
	done
	for i in $(ab-image list 2>/dev/null | cut -d' ' -f1); do
		ab-image remove "$i" >/dev/null || true
	done
	rm -rf "$work"
}

echo $(($(date +%s) + 3600)) >"$work/deadline"
AB_DEADLINE=$work/deadline
export AB_DEADLINE
git init -q "$work/repo"
echo base >"$work/repo/README"
git -C "$work/repo" add README
git -C "$work/repo" -c user.name=b -c user.email=b@b commit -qm base
commit=$(git -C "$work/repo" rev-parse HEAD)
img=$(ab-image build 2>/dev/null)

# case NAME BIGMIB: an allocation, an agent that makes the change, an export.
case_run() {
	alloc=$(ab-alloc --image "$img" --task-bytes 512M --task-inodes 40000)
	ab-seed "$alloc" --repo "$work/repo" --commit "$commit" >/dev/null 2>&1
	# shellcheck disable=SC2016 # run by the agent's shell
	prof=$(ab-profile --alloc "$alloc" --phase execution --attempt "bench-$2-$$" -- \
		sh -c 'cd /work && mkdir many && cd many &&
		i=0; while [ $i -lt 200 ]; do mkdir d$i; j=0
			while [ $j -lt 100 ]; do echo "$i.$j" >d$i/f$j; j=$((j + 1)); done
			i=$((i + 1)); done
		[ "$0" -eq 0 ] || head -c $(($0 << 20)) /dev/urandom >/work/big' "$2")
	ab-run "$(ab-validate "$prof")" >/dev/null
	/usr/bin/time -v ab-export "$alloc" -o "$work/p.patch" 2>"$work/time"
	rss=$(awk -F': ' '/Maximum resident/ {print $2}' "$work/time")
	wall=$(awk -F': ' '/Elapsed \(wall/ {print $2}' "$work/time")
	printf '%-28s ab-export: peak RSS %6d KiB  wall %s  patch %d bytes\n' "$1" \
		"$rss" "$wall" "$(stat -c %s "$work/p.patch")"
	# What a user would otherwise do: copy /work out, diff it on the host
	# (trusting every byte of it: hooks, attributes and filters included).
	rm -rf "$work/cli"
	git clone -q "$work/repo" "$work/cli"
	t0=$(date +%s.%N)
	docker cp "agentbox-${alloc#alloc:}-keeper:/work/." - |
		tar -x --no-same-owner -C "$work/cli" --exclude=./.git
	git -C "$work/cli" add -A
	git -C "$work/cli" diff --cached --binary >"$work/cli.patch"
	t1=$(date +%s.%N)
	printf '%-28s docker cp + git diff: wall %.2f s  patch %d bytes\n' "$1" \
		"$(echo "$t0 $t1" | awk '{print $2 - $1}')" "$(stat -c %s "$work/cli.patch")"
	rm -rf "$work/cli"
	ab-clean "$alloc" >/dev/null
}

echo "ab-export, $(nproc) cores, engine $(docker version --format '{{.Server.Version}}')"
case_run "20000 files" 0
case_run "20000 files + 200 MiB blob" 200
