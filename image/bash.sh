#!/usr/lib/agentbox/busybox sh
# shellcheck shell=sh
# bash in an image on another root (agents.layer): the shell both agent
# CLIs run commands with (SHELL), whatever the root has, under the loader
# and libraries agentbox ships beside it.  The loader is named
# explicitly, so the commands bash runs load the image's own libraries.
exec /usr/lib/agentbox/lib/ld-linux-x86-64.so.2 \
	--library-path /usr/lib/agentbox/lib --argv0 bash \
	/usr/lib/agentbox/bash "$@"
