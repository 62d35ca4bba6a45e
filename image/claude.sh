#!/usr/lib/agentbox/busybox sh
# shellcheck shell=sh
# Claude Code in an image built on another base (ab-image build --base or
# --packages): its glibc-linked binary runs under the loader and the
# libraries agentbox ships beside it, whatever libc the base has.  The
# loader is named explicitly, so no variable tells the agent's commands to
# load agentbox's libraries in place of the image's own.
exec /usr/lib/agentbox/lib/ld-linux-x86-64.so.2 \
	--library-path /usr/lib/agentbox/lib --argv0 claude \
	/usr/lib/claude/claude "$@"
