#!/bin/bash
# bench/ssh.sh [RUNS]: what reaching the engine through ssh:// costs a
# task.  An sshd of the bench's own on 127.0.0.1 (tests/lib/sshd.bash)
# serves this machine's engine, so the figure is ssh's own cost (key
# exchange, a `docker system dial-stdio` per connection), not a network's.
# Each round runs the same plain task (agent `true`, 100-file repository,
# one registered image) through unix:// and through ssh://, in turn;
# then through ssh:// again with ssh's own connection sharing
# (ControlMaster, in the client's ~/.ssh/config, which agentbox leaves to
# ssh); prints a line a round (seconds), the medians, the median
# per-round ratio, and the ssh connections one task made.  Needs root (sshd, and a
# mount namespace for a client home of its own).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-7}
# shellcheck source=bench/lib.sh
. "$here/bench/lib.sh"
bench_begin
# shellcheck source=tests/lib/sshd.bash
. "$here/tests/lib/sshd.bash"
# ssh's shared connection and the sshd; the sweep after reaches the engine
# through its own socket.
bench_stop() {
	[ ! -d "$work/sshd" ] || ab_ssh_home "$work/sshd" ssh -o "ControlPath=~/.ssh/cm-%C" -O exit \
		-p "$(cat "$work/sshd/port")" root@127.0.0.1 >/dev/null 2>&1 || true
	ab_sshd_stop "$work/sshd"
}

now() { date +%s.%N; }

bench_repo "$work/repo"
img=$(ab-image build 2>/dev/null)
ab_sshd_start "$work/sshd"
ssh_host=ssh://root@127.0.0.1:$(cat "$work/sshd/port")

task() {
	"$@" sh "$here/sh/run-task" --repo "$work/repo" --commit "$commit" \
		--image "$img" --phase execution --timeout 300 -- true \
		>/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
}
over_ssh() {
	DOCKER_HOST=$ssh_host ab_ssh_home "$work/sshd" "$@"
}
cfg=$work/sshd/home/.ssh/config
mux() {
	printf 'Host 127.0.0.1\n  ControlMaster auto\n  ControlPath ~/.ssh/cm-%%C\n  ControlPersist 60\n' >"$cfg"
	task over_ssh
	rm -f "$cfg"
}

echo "round unix ssh ssh-mux" >"$work/raw"
i=0
while [ "$i" -lt "$runs" ]; do
	i=$((i + 1))
	t0=$(now)
	task
	t1=$(now)
	a=$(grep -c 'Accepted publickey' "$work/sshd/sshd.log" || true)
	task over_ssh
	t2=$(now)
	b=$(grep -c 'Accepted publickey' "$work/sshd/sshd.log")
	conns=$((b - a))
	mux
	t3=$(now)
	echo "$i $t0 $t1 $t2 $t3" | awk '{printf "%d %.3f %.3f %.3f\n", $1, $3-$2, $4-$3, $5-$4}' |
		tee -a "$work/raw"
done
awk -v conns="$conns" 'NR > 1 { u[NR-1] = $2; s[NR-1] = $3; x[NR-1] = $4; r[NR-1] = $3 / $2; n = NR - 1 }
function med(a, n,    i, j, t) {
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
		if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
	mu = med(u, n); ms = med(s, n); mx = med(x, n)
	printf "median unix %.3f s, ssh %.3f s: ssh costs %.3f s a task, %.2fx (median per-round ratio %.2fx); %d ssh connections a task, %.0f ms each\n",
		mu, ms, ms - mu, ms / mu, med(r, n), conns, (ms - mu) * 1000 / conns
	printf "with ssh connection sharing (ControlMaster): median %.3f s, %.3f s over unix, %.2fx\n", mx, mx - mu, mx / mu
}' "$work/raw"
