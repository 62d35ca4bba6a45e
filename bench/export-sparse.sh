#!/bin/sh
# shellcheck disable=SC2016 # the agent's shell text, run in the container
# bench/export-sparse.sh: ab-export's peak memory and wall time when the
# agent leaves files of holes, and for an ordinary large file
# (`/usr/bin/time -f '%M %e'`).  One line a case: what ab-export(1) bounds.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
# AB_BIN: another build's programs, to set this one beside them.
PATH=${AB_BIN:-$here/bin}:$PATH
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

# case_run NAME SCRIPT [EXPORT-OPTION...]: an allocation big enough for
# 200,000 files, an agent that runs SCRIPT in /work, one export.
case_run() {
	name=$1 script=$2
	shift 2
	alloc=$(ab-alloc --image "$img" --task-bytes 1G --task-inodes 210000)
	ab-seed "$alloc" --repo "$work/repo" --commit "$commit" >/dev/null 2>&1
	prof=$(ab-profile --alloc "$alloc" --phase execution \
		--attempt "bench-$$-$(od -An -N4 -tx1 /dev/urandom | tr -d ' ')" -- \
		sh -c "cd /work && echo note >notes.txt && $script")
	ab-run "$(ab-validate "$prof")" >/dev/null
	/usr/bin/time -o "$work/time" -f '%M %e' ab-export "$alloc" \
		-o "$work/p.patch" "$@" 2>"$work/err" || echo "$name: ab-export failed: $(tail -n 1 "$work/err")"
	# After "Command exited with non-zero status N", when it failed.
	read -r rss wall <<-EOF
	$(tail -n 1 "$work/time")
	EOF
	printf '%-44s peak RSS %7d KiB  wall %6.2f s  left out %6d  patch %d bytes\n' \
		"$name" "$rss" "$wall" "$(grep -c 'left out' "$work/err")" \
		"$(stat -c %s "$work/p.patch")"
	ab-clean "$alloc" >/dev/null
}

echo "ab-export, $(nproc) cores, engine $(docker version --format '{{.Server.Version}}')"
case_run "one 1,000 MiB file of holes" 'truncate -s 1048576000 holes'
case_run "one 1,000 MiB file of holes, --max-file 2G" \
	'truncate -s 1048576000 holes' --max-file 2G
case_run "one 4 GiB file of holes" 'truncate -s 4294967296 holes'
case_run "200,000 files of 1 TiB of holes" \
	'mkdir many && seq 1 200000 | sed "s|^|many/f|" | xargs truncate -s 1099511627776'
case_run "40 files of holes, 50 to 89 MiB (2,780 MiB)" \
	'i=50; while [ $i -lt 90 ]; do truncate -s ${i}M h$i; i=$((i + 1)); done'
case_run "2,000 files beside a 1,000 MiB file of holes" \
	'mkdir d && seq 1 2000 | sed "s|^|d/f|" | xargs touch && truncate -s 1000M d/holes'
case_run "a name not UTF-8 beside a 200 MiB file of holes" \
	'truncate -s 200M holes && echo x >"$(printf "\\377x")"'
case_run "one ordinary 200 MiB file, --max-file 256M" \
	'head -c 209715200 /dev/urandom >big' --max-file 256M
