#!/bin/sh
# bench/agent-task.sh [RUNS]: what a task costs around a real agent.
# The real Claude Code of the agents image answers one text turn from the
# scripted vendor (tests/lib/vendor.py, the Anthropic Messages API over TLS
# with a test CA on the bridge's gateway), reached through the
# allocation's egress proxy by its real name: `run-task --recipe agents
# --egress api.anthropic.com:443=GW:PORT --ca CA --provider claude
# --api-key-file KEY`, so every step a user's task takes runs, ab-image's
# reuse of the registered image included, and the key is injected by the
# proxy (the result's credential says so, or the round fails);
# AB_BENCH_IN_AGENT=1 gives --credential-in-agent instead, to compare.
# AB_BENCH_REPO=DIR runs the task on that repository's HEAD instead of a
# one-file one (a clone of curl, say), AB_BENCH_DEPTH=N seeds it at
# that depth (run-task --depth); AB_BENCH_EDIT=1 makes
# it an execution task of four model steps (Read, Glob, Write of one new
# file, the last answer) whose patch run-task exports.  The cost around the agent is
# run-task's wall time minus the result's duration_ms (the agent
# container's own run).  Each round runs one task plain and one with
# AB_TIMING=1 (each step's wall time; its date calls are kept out of the
# first figure).  Prints a line a round, then the medians.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-7}
# shellcheck source=bench/lib.sh
. "$here/bench/lib.sh"
bench_begin
vpid=''
bench_stop() {
	[ -z "$vpid" ] || kill "$vpid" 2>/dev/null || true
}

ca=$work/ca
mkdir "$ca"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$ca/ca.key" \
	-out "$ca/ca.pem" -subj /CN=agentbox-bench-ca -days 2 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$ca/leaf.key" \
	-out "$ca/leaf.csr" -subj /CN=api.anthropic.com 2>/dev/null
printf 'subjectAltName=DNS:api.anthropic.com\n' >"$ca/ext"
openssl x509 -req -in "$ca/leaf.csr" -CA "$ca/ca.pem" -CAkey "$ca/ca.key" \
	-CAcreateserial -out "$ca/leaf.pem" -days 2 -extfile "$ca/ext" \
	2>/dev/null
gw=$(docker network inspect bridge --format '{{json .IPAM.Config}}' |
	python3 -c 'import ipaddress, json, sys
c = json.load(sys.stdin)[0]
print(c.get("Gateway") or next(ipaddress.ip_network(c["Subnet"]).hosts()))')
printf 'sk-ant-agentbox-bench-%s\n' "$$" >"$work/key"
printf 'Say hello.\n' >"$work/prompt"
if [ -n "${AB_BENCH_EDIT:-}" ]; then
	# The vendor answers turns in order: the four steps once for each
	# task of every round (two a round).
	python3 -c 'import json, sys
step = [{"tool": "Read", "input": {"file_path": "/work/README"}},
        {"tool": "Glob", "input": {"pattern": "*.md", "path": "/work"}},
        {"tool": "Write", "input": {"file_path": "/work/agentbox-note.txt",
                                    "content": "written by the agent\n"}},
        {"text": "done"}]
print(json.dumps({"turns": step * 2 * int(sys.argv[1])}))' "$runs" \
		>"$work/scenario.json"
	phase=execution
else
	printf '{"turns":[{"text":"Hello from the scripted vendor","times":0}]}\n' \
		>"$work/scenario.json"
	phase=planning
fi
python3 "$here/tests/lib/vendor.py" --mode anthropic \
	--script "$work/scenario.json" --log "$work/vendor.log" --listen "$gw" \
	--ready "$work/vendor.port" --cert "$ca/leaf.pem" --key "$ca/leaf.key" &
vpid=$!
i=0
while [ ! -s "$work/vendor.port" ] && [ "$i" -lt 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
port=$(cat "$work/vendor.port")

if [ -n "${AB_BENCH_REPO:-}" ]; then
	repo=$AB_BENCH_REPO
else
	repo=$work/repo
	git init -q "$repo"
	printf 'The answer is forty-two.\n' >"$repo/notes.txt"
	git -C "$repo" add -A
	git -C "$repo" -c user.name=b -c user.email=b@b commit -qm base
fi
commit=$(git -C "$repo" rev-parse HEAD)
# The first build imports the image; every task after reuses it.
ab-image build --recipe agents >/dev/null

task() {
	rm -f "$work/p.patch"
	sh "$here/sh/run-task" --repo "$repo" --commit "$commit" \
		--recipe agents --phase "$phase" --timeout 300 \
		${AB_BENCH_EDIT:+--patch "$work/p.patch"} \
		${AB_BENCH_DEPTH:+--depth "$AB_BENCH_DEPTH"} \
		--egress "api.anthropic.com:443=$gw:$port" --ca "$ca/ca.pem" \
		--provider claude --prompt "$work/prompt" \
		--api-key-file "$work/key" ${AB_BENCH_IN_AGENT:+--credential-in-agent}
}
now() { date +%s%N; }

: >"$work/raw"
: >"$work/timing"
i=0
while [ "$i" -lt "$runs" ]; do
	i=$((i + 1))
	t0=$(now)
	task >"$work/result" 2>"$work/err" || {
		cat "$work/err" >&2
		exit 1
	}
	t1=$(now)
	if [ -n "${AB_BENCH_EDIT:-}" ] &&
		! grep -q '^+++ b/agentbox-note.txt' "$work/p.patch"; then
		echo "round $i: the patch does not add the agent's file" >&2
		exit 1
	fi
	ms=$(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
assert r["agent"]["status"] == "ok", r["agent"]
# The key goes through the proxy, which puts it into each request.
want = "in-agent" if sys.argv[2] else "injected"
assert r["credential"] == want, r.get("credential")
print(r["duration_ms"])' "$work/result" "${AB_BENCH_IN_AGENT:-}")
	echo "$i $(((t1 - t0) / 1000000)) $ms" |
		awk '{printf "%d task %d ms agent %d ms around %d ms\n", $1, $2, $3, $2 - $3}' |
		tee -a "$work/raw"
	AB_TIMING=1 task >/dev/null 2>>"$work/timing"
done

python3 - "$work/raw" "$work/timing" <<'PY'
import collections, statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
task, agent, around = ([int(r[k]) for r in rows] for k in (2, 5, 8))
for name, v in (("task", task), ("agent", agent), ("around", around)):
    print("%-7s median %5d ms  min %5d  max %5d" % (name, st.median(v), min(v), max(v)))
steps = collections.defaultdict(list)
for l in open(sys.argv[2]):
    w = l.split()
    if len(w) == 5 and w[1] == "time":
        steps[w[2]].append(int(w[3]))
for k in ("ab-image", "ab-alloc", "ab-seed", "ab-profile", "ab-validate",
          "ab-run", "ab-export", "ab-clean"):
    if k in steps:
        print("step %-12s median %5d ms" % (k, st.median(steps[k])))
PY
