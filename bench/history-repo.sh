#!/bin/sh
# bench/history-repo.sh DIR [COMMITS] [FILES]: a history-heavy repository
# for bench/seed-depth.sh, made by git fast-import: FILES text files
# (default 3,000, about 4 KB each, in 50 directories), then COMMITS commits
# (default 30,000) each editing three of them, then `git repack -adf` as a
# maintained repository would be.  The same arguments give the same
# repository (fixed seed, fixed dates).
set -eu
dir=$1
commits=${2:-30000}
files=${3:-3000}
[ ! -e "$dir" ] || { echo "history-repo: $dir exists" >&2; exit 2; }
git init -q -b main "$dir"
python3 - "$commits" "$files" <<'EOF' | git -C "$dir" fast-import --quiet
import random, sys
commits, files = int(sys.argv[1]), int(sys.argv[2])
rnd = random.Random(19)
words = ["alloc", "seed", "keeper", "volume", "deadline", "handle",
         "engine", "export", "profile", "validate", "tree", "commit"]
def text():
    return [" ".join(rnd.choice(words) for _ in range(8)) for _ in range(60)]
body = [text() for _ in range(files)]
out = sys.stdout.buffer
def blob(lines):
    data = ("\n".join(lines) + "\n").encode()
    out.write(b"data %d\n" % len(data) + data + b"\n")
def commit(n, paths):
    msg = b"change %d" % n
    out.write(b"commit refs/heads/main\n")
    out.write(b"committer bench <bench@example.com> %d +0000\n" % (1600000000 + n * 60))
    out.write(b"data %d\n%s\n" % (len(msg), msg))
    for p in paths:
        out.write(b"M 100644 inline d%02d/f%04d.txt\n" % (p % 50, p))
        blob(body[p])
commit(0, range(files))
for n in range(1, commits + 1):
    paths = rnd.sample(range(files), 3)
    for p in paths:
        line = rnd.randrange(len(body[p]))
        body[p][line] = " ".join(rnd.choice(words) for _ in range(8))
    commit(n, paths)
EOF
git -C "$dir" repack -adfq
git -C "$dir" count-objects -vH | grep -E 'in-pack|size-pack'
