# forge.bash: a commit and an agent that forges times, for ab-export's
# reading of only what changed (tests/ab-export.bats, tests/gvisor.bats),
# and listing(), what a tree holds, independently of git.
# shellcheck shell=bash

# listing DIR: every path but .git, with its type, owner-x bit, content
# hash or link target: what a tree holds, independently of git.
listing() {
	(cd "$1" && find . -path ./.git -prune -o ! -name . -print | LC_ALL=C sort |
		while read -r p; do
			if [ -L "$p" ]; then
				echo "$p link $(readlink "$p")"
			elif [ -d "$p" ]; then
				echo "$p dir"
			else
				echo "$p file $([ -x "$p" ] && echo x || echo -) $(sha256sum <"$p" | cut -c1-16)"
			fi
		done)
}

# forge_repo DIR: a commit for the agents that forge times: files of equal
# sizes to swap, two folders of equal files, a symlink, and 200 files
# nobody touches.
forge_repo() {
	local i
	git init -q "$1"
	printf 'one\ntwo\n' >"$1/a.txt"
	echo keep >"$1/keep"
	echo gone >"$1/gone"
	echo tt >"$1/linked"
	echo ss >"$1/same"
	echo m >"$1/mode"
	echo r >"$1/retimed"
	mkdir "$1/d1" "$1/d2" "$1/sub" "$1/u"
	echo 11 >"$1/d1/f"
	echo 22 >"$1/d2/f"
	echo s >"$1/sub/f"
	ln -s a.txt "$1/link"
	for i in $(seq 1 200); do echo "$i" >"$1/u/$i"; done
	git -C "$1" add -A
	git -C "$1" -c user.name=t -c user.email=t@t commit -qm base
}

# What an agent that hides its changes from times would do: bytes changed
# at the same size, then the old times put back (touch -r, touch -d); a
# rename of another file onto a name, same size; two folders swapped; a
# name made a hard link of another; a mode changed alone; a symlink
# retargeted.
# shellcheck disable=SC2034 # used by the files that load this one
FORGE='cd /work && printf "ONE\ntwo\n" >a.txt && touch -r u/1 a.txt &&
	echo R >retimed && touch -d "2001-01-01 00:00:00" retimed &&
	mv gone keep && touch -r u/1 keep &&
	mv d1 t && mv d2 d1 && mv t d2 &&
	rm linked && ln same linked && touch -r u/1 same &&
	chmod +x mode && touch -r u/1 mode &&
	ln -sfn keep link'

# What git says the forging agent changed.
# shellcheck disable=SC2034
FORGED=$(printf 'D\tgone\nM\ta.txt\nM\td1/f\nM\td2/f\nM\tkeep\nM\tlink\nM\tlinked\nM\tmode\nM\tretimed')
