#!/bin/bash
# bench/engines.sh [N [K]]: tasks per minute over one engine and over two.
# N tasks (default 16), K in flight (default 4), each sh/run-task with the
# agent `true` and the default image, on one 100-file repository.  A task
# goes to the engines of the row in turn:
#   host       the host's engine alone
#   host+own   the host's engine and one engine of the bench's own
#   own        that engine alone
#   own+own    it and a second engine of the bench's own
# The engines of its own are those of the tests (tests/lib/engine2.bash):
# a dockerd each, in a network namespace of its own, on the vfs storage
# driver, which copies the image for every container (two a task: the
# keeper and the agent); the image's size is printed.  One line a row:
# tasks per minute, the median task time, failures, and the objects of
# the bench's state left on the row's engines.  Needs root (the engines);
# removes its engines, state and images on every exit.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
PATH=$here/bin:$PATH
n=${1:-16}
k=${2:-4}
work=$(mktemp -d /tmp/ab-bench.XXXXXX)
AB_STATE_DIR=$work/state
BATS_FILE_TMPDIR=$work
export AB_STATE_DIR BATS_FILE_TMPDIR
mkdir -m 0700 "$AB_STATE_DIR"
unset DOCKER_HOST DOCKER_CONTEXT
# What engine2.bash asks of a test: the state's SID, for its namespaces.
ab_state_sid() { cat "$AB_STATE_DIR/sid"; }
# shellcheck disable=SC1091 # the tests' engines, linted on their own
. "$here/tests/lib/engine2.bash"

cleanup() {
	local h e
	for h in "" "${hosts[@]}"; do
		[ -z "$h" ] && e=() || e=(env "DOCKER_HOST=$h")
		"${e[@]}" ab-clean --sweep --all >/dev/null 2>&1 || true
	done
	# The host's engine keeps nothing of the bench; the others go whole.
	for h in $(ab-image list 2>/dev/null | cut -d" " -f1); do
		ab-image remove "$h" >/dev/null 2>&1 || true
	done
	ab_engines_stop
	rm -rf "$work"
}
hosts=()
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

git init -q "$work/repo"
for f in $(seq 1 100); do echo "file $f" >"$work/repo/f$f"; done
git -C "$work/repo" add -A
git -C "$work/repo" -c user.name=b -c user.email=b@b commit -qm base

# Each engine's image handle in $work/img.NAME; the first build makes
# the state's SID, which names the engines' namespaces.
ab-image build >"$work/img.host" 2>/dev/null
sid=$(ab_state_sid)
for name in own1 own2; do
	ab_engine_start "$name"
	hosts+=("$(ab_engine host "$name")")
	DOCKER_HOST=$(ab_engine host "$name") ab-image build \
		>"$work/img.$name" 2>/dev/null
done
printf 'image: %s on the host engine (%s), %s on an engine of its own (%s)\n' \
	"$(docker image ls --filter "label=org.agentbox.state=$sid" \
		--format '{{.Size}}' | head -1)" \
	"$(docker info --format '{{.Driver}}')" \
	"$(DOCKER_HOST=${hosts[0]} docker image ls \
		--filter "label=org.agentbox.state=$sid" --format '{{.Size}}' | head -1)" \
	"$(DOCKER_HOST=${hosts[0]} docker info --format '{{.Driver}}')"

now() { date +%s.%N; }

# one I ENGINE...: task I on ENGINE[I mod count], its seconds into
# $work/t.I ("fail" when it failed).
one() {
	local i=$1 name t0
	shift
	shift $((i % $#))
	name=$1
	t0=$(now)
	if { [ "$name" = host ] || export DOCKER_HOST="${hosts[${name#own}-1]}"; } &&
		sh "$here/sh/run-task" --repo "$work/repo" --commit HEAD \
			--image "$(cat "$work/img.$name")" --phase execution \
			--timeout 300 -- true >/dev/null 2>&1; then
		echo "$t0 $(now)" | awk '{printf "%.3f\n", $2 - $1}' >"$work/t.$i"
	else
		echo fail >"$work/t.$i"
	fi
}

# left ENGINE...: the objects of the state on those engines, a count.
left() {
	local name
	for name in "$@"; do
		(
			[ "$name" = host ] || export DOCKER_HOST="${hosts[${name#own}-1]}"
			docker ps -aq --filter "label=org.agentbox.state=$sid"
			docker volume ls -q --filter "label=org.agentbox.state=$sid"
		)
	done | grep -c . || true
}

printf 'N=%s K=%s\n' "$n" "$k"
printf '%-9s %10s %14s %7s %s\n' engines tasks/min "median task s" failed left
for row in host host+own1 own1 own1+own2; do
	# shellcheck disable=SC2086 # the row's engines, one a word
	set -- ${row//+/ }
	rm -f "$work"/t.*
	t0=$(now)
	# K at a time: a task starts when one ends.
	i=0 running=0
	while [ "$i" -lt "$n" ]; do
		if [ "$running" -ge "$k" ]; then
			wait -n || :
			running=$((running - 1))
		fi
		one "$i" "$@" &
		i=$((i + 1)) running=$((running + 1))
	done
	wait
	t1=$(now)
	cat "$work"/t.* | python3 -c '
import statistics as st, sys
row, t0, t1, left = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
v = [l.strip() for l in sys.stdin]
ok = [float(x) for x in v if x != "fail"]
print("%-9s %10.1f %14.3f %7d %s" % (row.replace("own1", "own").replace("own2", "own"),
    60 * len(ok) / (t1 - t0), st.median(ok) if ok else 0, len(v) - len(ok), left))' \
		"$row" "$t0" "$t1" "$(left "$@")"
done
