#!/bin/sh
# bench/task-calls.sh [RUNS]: where a plain task's time goes, step by
# step: the engine's calls against the rest.  Each round runs the task of
# bench/task.sh (agent `true`, a 100-file repository, the default image)
# twice through sh/run-task: once with AB_TIMING (each step's wall time),
# once with every tool under `strace -f --seccomp-bpf` tracing only the
# socket calls, from which each engine request's round trip is read (its
# request written to its status line read, on one thread).  What a step
# spends outside the engine is its wall time less its requests' time; a
# tool's own start (the dynamic loader, before main) is timed apart, as
# `TOOL --help` against /bin/true.  Prints, per step, the medians.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-5}
command -v strace >/dev/null || {
	echo "task-calls.sh: needs strace (apt-get install strace)" >&2
	exit 1
}
# shellcheck source=bench/lib.sh
. "$here/bench/lib.sh"
bench_begin

bench_repo "$work/repo"
img=$(ab-image build 2>/dev/null)

# The tools again, each under strace; run-task finds them first.
mkdir "$work/traced" "$work/traces"
for t in ab-alloc ab-seed ab-profile ab-validate ab-run ab-clean; do
	printf '#!/bin/sh\nexec strace -f --seccomp-bpf -tt -T -s 256 -e trace=sendto,recvfrom,execve,exit_group -o %s/%s.$$ %s/bin/%s "$@"\n' \
		"$work/traces" "$t" "$here" "$t" >"$work/traced/$t"
	chmod +x "$work/traced/$t"
done

task() {
	sh "$here/sh/run-task" --repo "$work/repo" --commit "$commit" \
		--image "$img" --phase execution --timeout 300 -- true
}

: >"$work/timing"
i=0
while [ "$i" -lt "$runs" ]; do
	i=$((i + 1))
	AB_TIMING=1 task >"$work/result.$i" 2>>"$work/timing"
	mkdir "$work/traces/$i"
	AB_BIN=$work/traced task >/dev/null 2>&1
	mv "$work/traces"/ab-* "$work/traces/$i/"
done
for t in /bin/true "$here/bin/ab-run"; do
	s=$(date +%s%N)
	j=0
	while [ "$j" -lt 200 ]; do
		"$t" --help >/dev/null 2>&1 || :
		j=$((j + 1))
	done
	echo "start $t $((($(date +%s%N) - s) / 200000)) us"
done >"$work/start"

python3 - "$work" <<'PY'
import collections, glob, os, re, statistics as st, sys
work = sys.argv[1]
wall = collections.defaultdict(list)
for l in open(os.path.join(work, "timing")):
    w = l.split()
    if len(w) == 5 and w[1] == "time":
        wall[w[2]].append(int(w[3]))
req = re.compile(r'^(\d+) (\S+) sendto\(\d+, "(GET|POST|PUT|DELETE|HEAD) (\S+)')
rsp = re.compile(r'^(\d+) (\S+) (?:<\.\.\. )?recvfrom(?:\(\d+, | resumed>)"HTTP/1\.1 \d+')
def sec(s):
    h, m, r = s.split(":")
    return int(h) * 3600 + int(m) * 60 + float(r)
def kind(verb, path):
    p = re.sub(r'^/v[0-9.]+', '', path.split('?')[0])
    for k, pat in (("container create", r'^/containers/create$'),
                   ("container start", r'^/containers/[^/]+/start$'),
                   ("container remove", r'^/containers/[^/]+$'),
                   ("archive", r'/archive$'),
                   ("volume create/remove", r'^/volumes/(create|[^/]+)$')):
        if re.search(pat, p) and not (k.endswith("remove") and verb == "GET") \
                and not (k.startswith("volume") and verb == "GET"):
            return k
    return "other (%s)" % ("inspect, list, ping, info" if verb == "GET" else verb)
engine = collections.defaultdict(lambda: collections.defaultdict(list))
for d in sorted(glob.glob(os.path.join(work, "traces", "*"))):
    per = collections.defaultdict(lambda: collections.defaultdict(float))
    for f in glob.glob(os.path.join(d, "ab-*")):
        tool = os.path.basename(f).split(".")[0]
        pending = {}
        for l in open(f):
            m = req.match(l)
            if m:
                pending[m.group(1)] = (sec(m.group(2)), kind(m.group(3), m.group(4)))
                continue
            m = rsp.match(l)
            if m and m.group(1) in pending:
                t, k = pending.pop(m.group(1))
                per[tool][k] += (sec(m.group(2)) - t) * 1000
        per[tool]  # a tool that made no call still counts
    for tool, ks in per.items():
        for k in set(ks) | {"container create"}:
            engine[tool][k].append(ks.get(k, 0.0))
import json
ran = st.median(json.load(open(p))["duration_ms"] for p in glob.glob(os.path.join(work, "result.*")))
start = {l.split()[1]: int(l.split()[2]) for l in open(os.path.join(work, "start"))}
own = (max(start.values()) - min(start.values())) / 1000
print("a tool's own start (dynamic loading): %.1f ms (ab-run --help %.1f ms, /bin/true %.1f ms)" %
      (own, max(start.values()) / 1000, min(start.values()) / 1000))
print("the agent container's own run (its duration_ms: the probe, then true): %.0f ms, in ab-run's rest" % ran)
print("%-12s %7s %7s %7s  %s" % ("step", "wall", "engine", "rest", "engine calls, median ms each kind"))
tw = te = 0
for tool in ("ab-alloc", "ab-seed", "ab-profile", "ab-validate", "ab-run", "ab-clean"):
    w = st.median(wall[tool]) if wall[tool] else 0
    ks = engine.get(tool, {})
    tot = [sum(v[i] for v in ks.values()) for i in range(len(next(iter(ks.values()))))] if ks else [0]
    e = st.median(tot)
    tw += w
    te += e
    parts = ", ".join("%s %.0f" % (k, st.median(v)) for k, v in sorted(ks.items()) if st.median(v) >= 0.5)
    print("%-12s %7.0f %7.0f %7.0f  %s" % (tool, w, e, w - e, parts))
print("%-12s %7.0f %7.0f %7.0f" % ("steps", tw, te, tw - te))
PY
