#!/bin/busybox sh
# shellcheck shell=dash
# agentbox's busybox as a hostile image could have it, for ab-export's
# listing (busybox sh -c, a script of find -print0, then find -exec
# stat): the first line of /work/.lie says how its find lies.  Anything
# else runs as it is.
case ${1-}${2-}${3-} in
sh-c*-print0*) ;;
*) exec /bin/busybox "$@" ;;
esac
case $(/bin/busybox head -n 1 /work/.lie 2>/dev/null) in
malformed)
	# A name outside /work, and no sizes.
	lie='find() { case "$*" in *-exec*) ;; *) printf "/etc/passwd\000" ;; esac; }' ;;
long)
	# Past the listing's 32 MiB bound.
	lie='find() { case "$*" in *-exec*) ;; *) busybox yes ./././a-name |
		busybox tr "\n" "\000" | busybox head -c 40000000 ;; esac; }' ;;
hide)
	# A file over --max-file the listing does not name.
	lie='find() { shift; busybox find ././. -name hidden -prune -o "$@"; }' ;;
ghost)
	# A file of the commit the agent deleted, listed all the same.
	lie='find() { case "$*" in *-exec*)
		echo 5 1 7 644 4102444800 2100-01-01 00:00:00.000000000 +0000 ;;
		*) printf "./././gone\000" ;; esac; busybox find "$@"; }' ;;
*)
	lie=: ;;
esac
exec /bin/busybox sh -c "$lie
$3"
