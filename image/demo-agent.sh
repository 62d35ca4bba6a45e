#!/bin/sh
# demo-agent.sh: the agent `make demo` runs.  It looks around the task
# filesystem, does a little work, and shows what it may and may not do.
echo "demo-agent: running as $(id -u):$(id -g) in $(pwd)"
echo "demo-agent: the tree:"
# shellcheck disable=SC2012 # a listing for a person to read
ls -la /work 2>&1 | head -n 20
echo "demo-agent: git log -1:"
git -C /work log -1 --oneline 2>&1
if echo "written by the agent" >/work/agent-was-here 2>/dev/null; then
	echo "demo-agent: wrote /work/agent-was-here"
else
	echo "demo-agent: /work is read-only in this phase"
fi
echo "demo-agent: git status:"
git -C /work status --short 2>&1 | head -n 20
touch /work/.git/hijack 2>/dev/null && echo "demo-agent: WROTE /work/.git" ||
	echo "demo-agent: /work/.git is read-only"
touch /etc/hijack 2>/dev/null && echo "demo-agent: WROTE /" ||
	echo "demo-agent: / is read-only"
wget -q -T 3 -O /dev/null http://example.com/ 2>/dev/null &&
	echo "demo-agent: REACHED the network" ||
	echo "demo-agent: no network"
exit 0
