#!/bin/sh
# layers.sh LAYER...: every #include "x.h" in lib/LAYER/ names a header of
# its own folder or of a folder listed before it (lib/README: a folder
# calls only those below it).  Prints each include that reaches up, and
# exits 1 if there is one.
set -u
rank() {
	i=0
	for l in $layers; do
		i=$((i + 1))
		[ "$l" = "$1" ] && { echo "$i"; return; }
	done
	echo 0
}
layers=$*
bad=0
for f in lib/*/*.[ch]; do
	[ -f "$f" ] || continue
	own=$(basename "$(dirname "$f")")
	r=$(rank "$own")
	[ "$r" -gt 0 ] || { echo "layers: lib/$own is no layer" >&2; bad=1; }
	while read -r h; do
		[ -n "$h" ] || continue
		set -- lib/*/"$h"
		if [ ! -f "$1" ]; then
			echo "layers: $f: $h is in no folder" >&2
			bad=1
			continue
		fi
		to=$(basename "$(dirname "$1")")
		if [ "$(rank "$to")" -gt "$r" ]; then
			echo "layers: $f includes $to/$h, a folder above $own" >&2
			bad=1
		fi
	done <<-EOF2
	$(sed -n 's/^#include "\([a-z0-9_]*\.h\)".*/\1/p' "$f")
	EOF2
done
exit "$bad"
