#!/usr/bin/env python3
"""treegen.py: trees an agent can leave in /work, drawn from a seed.

One seed draws a base commit and then what the agent does over it: names
of every awkward kind (not UTF-8, control bytes, a leading dash, a
backslash, names and paths near the limits, one name in Unicode's two
normal forms side by side), deep and wide folders, empty folders, modes,
symlinks inside and outside /work (absolute, relative, dangling, through
another symlink), hard links, files of holes over and under --max-file,
binary and text files, and files deleted, changed and renamed over the
base or newly made.  Python's standard library alone; the same seed gives
the same bytes on every machine (random.Random is seeded with an int).

What it emits:
  - the base commit as a git fast-import stream (commit_stream), so real
    git makes the commit and no host file system holds the names;
  - the agent's side: AGENT_SCRIPT, a busybox sh script, and an ops file
    (one operation a line, every field printf-escaped: each byte outside
    [A-Za-z0-9_./-] as a three-digit octal escape), both put into the base
    commit under .tg/, which the script removes when it is done.

Several seeds may share one base commit, each under a folder of its own
(prefix "s<seed>/"); a seed with an empty prefix owns the whole tree.

  treegen.py --seed N [--prefix P] [--max-file BYTES] [--show]
  treegen.py --case NAME --show
"""
import argparse
import random
import sys

# Lines of the ops file: OP FIELD..., each field escaped (see esc()).
#   D path mode          mkdir -p, then chmod
#   F path mode =data    a file of these bytes (replacing what is there)
#   A path =data         bytes appended
#   H path size          a file of holes of that size (truncate -s)
#   S target path        a symbolic link
#   L old new            a hard link
#   R path               rm -rf
#   M old new            mv
#   C mode path          chmod
#   W path =data         bytes written over, in place (the same inode)
#   T ref path           touch -r: PATH's times set to REF's
#   P path               a FIFO
#   K path               a Unix socket (git credential-cache--daemon)
AGENT_SCRIPT = r'''#!/bin/sh
# The agent's side of tests/lib/treegen.py: applies /work/.tg/ops, then
# removes .tg.  Each field is a printf format holding only octal escapes
# and plain bytes; a name is decoded with a sentinel so that a trailing
# newline survives the command substitution.
set -u
cd /work || exit 3
dec() { _v=$(printf "$1"x) || exit 3; _v=${_v%x}; }
fail() { echo "treegen: op failed: $*" >&2; exit 3; }
while read -r op a b c; do
	case $op in
	D) dec "$a"; mkdir -p -- "/work/$_v" && chmod "$b" "/work/$_v" || fail D "$a" ;;
	F) dec "$a"; rm -rf -- "/work/$_v" && printf "${c#=}" >"/work/$_v" &&
		chmod "$b" "/work/$_v" || fail F "$a" ;;
	A) dec "$a"; printf "${b#=}" >>"/work/$_v" || fail A "$a" ;;
	H) dec "$a"; rm -rf -- "/work/$_v" && busybox truncate -s "$b" "/work/$_v" || fail H "$a" ;;
	S) dec "$a"; t=$_v; dec "$b"; ln -s -- "$t" "/work/$_v" || fail S "$b" ;;
	L) dec "$a"; o=$_v; dec "$b"; ln -- "/work/$o" "/work/$_v" || fail L "$b" ;;
	R) dec "$a"; rm -rf -- "/work/$_v" || fail R "$a" ;;
	M) dec "$a"; o=$_v; dec "$b"; mv -- "/work/$o" "/work/$_v" || fail M "$b" ;;
	C) dec "$b"; chmod "$a" "/work/$_v" || fail C "$b" ;;
	W) dec "$a"; printf "${b#=}" 1<>"/work/$_v" || fail W "$a" ;;
	T) dec "$a"; r=$_v; dec "$b"; touch -h -r "/work/$r" "/work/$_v" || fail T "$b" ;;
	P) dec "$a"; busybox mkfifo "/work/$_v" || fail P "$a" ;;
	K) dec "$a"; (git credential-cache--daemon "/work/$_v" >/dev/null 2>&1 &)
		i=0; while [ ! -S "/work/$_v" ]; do
			i=$((i + 1)); [ $i -lt 100 ] || fail K "$a"; sleep 0.05; done ;;
	*) fail "unknown op $op" ;;
	esac
done </work/.tg/ops
rm -rf /work/.tg || exit 3
'''

SAFE = set(b'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-')


def esc(b):
    """Bytes as a printf format: plain bytes kept, the rest as \\ooo."""
    return ''.join(chr(c) if c in SAFE else '\\%03o' % c for c in b)


WORDS = [b'a', b'b', b'src', b'lib', b'main.c', b'README', b'notes.txt',
         b'x', b'data.bin', b'Makefile', b'test', b'doc', b'k', b'q.py',
         b'index.html', b'zz', b'util.h', b'v1', b'0', b'out']

# Names git and ab-seed accept: any byte but NUL, '/', a control byte and
# a backslash, and no .git in any spelling.
ODD = [
    b'\xffkeep.txt', b'\xfe\xff', b'bad\x80byte', b'\xc0\xaf', b'\xed\xa0\x80sur',
    b'caf\xc3\xa9', b'\xe6\x97\xa5\xe6\x9c\xac', b'\xf0\x9f\x98\x80.md',
    b'\xe2\x80\xaertl', b'-rf', b'--help', b'-', b'-n.txt', b' lead', b'trail ',
    b'a b', b'"q"', b"it's", b'`t`', b'$HOME', b'*', b'?', b'[x]', b'#h',
    b'~t', b'%d%s', b'{a,b}', b';&|', b'<>', b'...', b'.hidden', b'trail.',
    b'.. x', b'@{u}', b'HEAD', b':colon', b'a\xc2\xa0nbsp', b'.gitignore',
    b'.gitattributes', b'git', b'.gitx',
]
# Names only the agent can make (ab-seed refuses them in a commit).
HOSTILE = [
    b'new\nline', b'trail\n', b'\n', b'tab\t', b'\x1b[31mred', b'del\x7f',
    b'cr\r', b'back\\slash', b'\\', b'.GIT', b'.git.', b'.Git ', b'git~1',
    b'.g\xe2\x80\x8cit', b'.git::$INDEX_ALLOCATION',
]
NFC = b'\xc3\xa9t\xc3\xa9'          # "été" composed
NFD = b'e\xcc\x81te\xcc\x81'        # "été" decomposed

PATH_MAX = 4095     # bytes of "/work/" + path, without the NUL
NAME_MAX = 255


class Gen:
    def __init__(self, seed, prefix=b'', max_file=1 << 20, big=True):
        self.seed = seed
        self.big = big          # False: no file over max_file is drawn
        self.rng = random.Random(seed)
        self.prefix = prefix
        self.max_file = max_file
        # The model: path -> 'f' (file), 'l' (symlink), 'd' (directory),
        # 'x' (anything else: holes, FIFO, socket, hard link).
        self.base = {}          # path -> ('f', mode, bytes) | ('l', target)
        self.tree = {}
        self.ops = []
        if prefix:
            self.tree[prefix.rstrip(b'/')] = 'd'

    # -- Names.

    def word(self):
        w = self.rng.choice(WORDS)
        return w + b'%d' % self.rng.randrange(100) if self.rng.random() < .5 else w

    def long_name(self, room):
        """A name of up to min(255, room) bytes, UTF-8 or not."""
        n = min(NAME_MAX, room)
        unit = self.rng.choice([b'L', b'\xc3\xa9', b'\xe6\x97\xa5', b'\xff'])
        s = unit * (n // len(unit))
        return s + b'L' * (n - len(s))

    def name(self, hostile=False, room=NAME_MAX):
        r = self.rng.random()
        if hostile and r < .25:
            n = self.rng.choice(HOSTILE)
        elif r < .55:
            n = self.rng.choice(ODD)
            if self.rng.random() < .3:
                n += self.word()
        elif r < .62 and room > 20:
            n = self.long_name(room)
        else:
            n = self.word()
        return n[:room] if len(n) > room else n

    def room(self, parent):
        """Bytes a new name under PARENT may take before PATH_MAX."""
        used = len(b'/work/') + (len(parent) + 1 if parent else 0)
        return max(0, min(NAME_MAX, PATH_MAX - used))

    def fresh(self, parent, hostile=False, name=None):
        """A path under PARENT that does not exist yet, or None."""
        room = self.room(parent)
        if room < 1:
            return None
        for _ in range(20):
            n = name if name is not None else self.name(hostile, room)
            name = None
            if not n or b'/' in n or n in (b'.', b'..') or (
                    not parent and n == b'.git'):
                continue
            if not parent and n == b'.tg':
                continue
            p = parent + b'/' + n if parent else n
            if p not in self.tree and len(p) + 6 <= PATH_MAX:
                return p
        return None

    # -- The model.

    def dirs(self, under=None, safe_only=False):
        root = self.prefix.rstrip(b'/')
        out = [p for p, k in self.tree.items() if k == 'd' and
               (p == root or p.startswith(root + b'/') if root else True)]
        if not root:
            out.append(b'')
        if safe_only:
            out = [p for p in out if all(
                c not in p for c in (b'\\', b'\n', b'\t', b'\r', b'\x1b', b'\x7f'))]
        return sorted(out)

    def of_kind(self, kind):
        root = self.prefix.rstrip(b'/')
        return sorted(p for p, k in self.tree.items() if k == kind and
                      (not root or p.startswith(root + b'/')))

    def drop(self, path):
        for p in [p for p in self.tree if p == path or p.startswith(path + b'/')]:
            del self.tree[p]

    def move(self, old, new):
        for p in [p for p in self.tree if p == old or p.startswith(old + b'/')]:
            self.tree[new + p[len(old):]] = self.tree.pop(p)

    def mkdirs(self, path):
        parts = path.split(b'/')
        for i in range(1, len(parts) + 1):
            self.tree.setdefault(b'/'.join(parts[:i]), 'd')

    # -- Contents.

    def content(self):
        r = self.rng.random()
        if r < .1:
            return b''
        if r < .5:
            lines = [self.rng.choice([b'hello', b'int main(void)', b'\tx = 1;',
                                      b'caf\xc3\xa9', b'# note', b'', b'}'])
                     for _ in range(self.rng.randrange(1, 12))]
            end = b'' if self.rng.random() < .2 else b'\n'
            return b'\n'.join(lines) + end
        if r < .6:
            return b'\r\n'.join([b'dos', b'line']) + b'\r\n'
        n = self.rng.choice([1, 3, 64, 300, 2000, 5000])
        return bytes(self.rng.randrange(256) for _ in range(n))

    # -- The base commit.

    def base_file(self, path, data=None, mode=None):
        if data is None:
            data = self.content()
        if mode is None:
            mode = 0o100755 if self.rng.random() < .2 else 0o100644
        self.mkdirs(path.rpartition(b'/')[0]) if b'/' in path else None
        self.base[path] = ('f', mode, data)
        self.tree[path] = 'f'

    def draw_base(self):
        rng = self.rng
        root = self.prefix.rstrip(b'/')
        for _ in range(rng.randrange(1, 6)):
            parent = rng.choice(self.dirs())
            p = self.fresh(parent)
            if p and len(p) < 3000:
                self.mkdirs(p)
        if rng.random() < .3:        # a deep chain of short names
            p = rng.choice(self.dirs())
            for _ in range(rng.randrange(10, 40)):
                p = (p + b'/' if p else b'') + b'd%d' % rng.randrange(10)
            self.mkdirs(p)
        if rng.random() < .2:        # a path of long names, below 3000 bytes
            p = root
            while len(p) < 2700:
                p = (p + b'/' if p else b'') + self.long_name(250)
            self.mkdirs(p)
        for _ in range(rng.randrange(3, 30)):
            p = self.fresh(rng.choice(self.dirs()))
            if p and len(p) < 3500:
                self.base_file(p)
        # Always one name that is not UTF-8 beside a plain one.
        parent = rng.choice(self.dirs())
        for n in (b'\xffkeep.txt', b'normal.txt'):
            p = self.fresh(parent, name=n)
            if p:
                self.base_file(p)
        if rng.random() < .3:
            parent = rng.choice(self.dirs())
            for n in (NFC, NFD):
                p = self.fresh(parent, name=n)
                if p:
                    self.base_file(p)
        # Symlinks that stay inside the tree (ab-seed refuses the rest).
        files = self.of_kind('f')
        for _ in range(rng.randrange(0, 4)):
            parent = rng.choice(self.dirs())
            p = self.fresh(parent)
            if not p or not files:
                continue
            tgt = rng.choice(files + self.dirs()[1:] + [b'nothing-here'])
            target = relpath(tgt, parent, root) if tgt != b'nothing-here' else tgt
            if target is None:
                continue
            self.base[p] = ('l', target)
            self.tree[p] = 'l'

    def prune(self):
        """Git keeps no empty folder: the model forgets those of the base."""
        keep = set()
        for p in self.base:
            keep.update(ancestors(p)[:-1])
        root = self.prefix.rstrip(b'/')
        for p in [p for p, k in self.tree.items() if k == 'd']:
            if p not in keep and p != root:
                del self.tree[p]

    # -- What the agent does.

    def op(self, *fields):
        self.ops.append(fields)

    def a_file(self, hostile=True):
        parent = self.rng.choice(self.dirs())
        p = self.fresh(parent, hostile)
        if p:
            mode = self.rng.choice(['644', '755', '600', '700', '744', '711', '655',
                                    '444', '000', '6755', '1777'])
            self.op('F', p, mode, self.content())
            # One the agent cannot write again is not drawn to change.
            self.tree[p] = 'r' if mode in ('444', '000') else 'f'

    def a_change(self):
        files = self.of_kind('f')
        if not files:
            return
        p = self.rng.choice(files)
        r = self.rng.random()
        if r < .4:
            self.op('F', p, self.rng.choice(['644', '755']), self.content())
        elif r < .7:
            self.op('A', p, self.content() or b'more\n')
        else:
            mode = self.rng.choice(['755', '644', '700', '600', '000'])
            self.op('C', mode, p)
            if mode == '000':
                self.tree[p] = 'r'

    def a_delete(self):
        cands = (self.of_kind('f') + self.of_kind('r') + self.of_kind('l') +
                 self.of_kind('e') + self.dirs()[1:])
        if cands:
            p = self.rng.choice(cands)
            self.op('R', p)
            self.drop(p)

    def a_rename(self):
        cands = (self.of_kind('f') + self.of_kind('r') + self.of_kind('l') +
                 self.of_kind('e') + self.dirs()[1:])
        if not cands:
            return
        old = self.rng.choice(cands)
        parents = [d for d in self.dirs() if d != old and
                   not d.startswith(old + b'/')]
        new = self.fresh(self.rng.choice(parents), hostile=True)
        if new and all(len(new + p[len(old):]) + 6 <= PATH_MAX
                       for p in self.tree if p.startswith(old + b'/')):
            self.op('M', old, new)
            self.move(old, new)

    def a_dir(self, empty=False):
        parent = self.rng.choice(self.dirs())
        p = self.fresh(parent, hostile=True)
        if not p:
            return
        mode = '755' if not empty else self.rng.choice(['755', '700', '711', '750'])
        self.op('D', p, mode)
        # An empty folder stays empty: nothing is drawn into it.
        self.tree[p] = 'e' if empty else 'd'
        if not empty and self.rng.random() < .5:
            for _ in range(self.rng.randrange(1, 4)):
                q = self.fresh(p, hostile=True)
                if q:
                    self.op('F', q, '644', self.content())
                    self.tree[q] = 'f'

    def a_wide(self):
        parent = self.rng.choice(self.dirs())
        p = self.fresh(parent, name=b'wide%d' % self.rng.randrange(1000))
        if not p:
            return
        self.op('D', p, '755')
        self.tree[p] = 'd'
        for i in range(self.rng.randrange(30, 200)):
            q = p + b'/f%04d' % i
            if self.rng.random() < .1:
                q = self.fresh(p, hostile=True) or q
            if q not in self.tree:
                self.op('F', q, '644', b'%d\n' % i)
                self.tree[q] = 'f'

    def a_deep(self):
        """A path to within a few bytes of PATH_MAX, or a deep chain."""
        p = self.rng.choice(self.dirs())
        if self.rng.random() < .6:
            target = PATH_MAX - self.rng.choice([0, 1, 2, 10, 40, 300])
            while True:
                room = min(NAME_MAX, target - len(b'/work/') - len(p) -
                           (1 if p else 0))
                if room < 1:
                    break
                n = self.long_name(room)
                p = p + b'/' + n if p else n
        else:
            for _ in range(self.rng.randrange(20, 80)):
                p = (p + b'/' if p else b'') + b'd%d' % self.rng.randrange(10)
        if not p or p in self.tree or len(p) + 6 > PATH_MAX:
            return
        parent = p.rpartition(b'/')[0]
        if parent and parent not in self.tree:
            if any(self.tree.get(q) not in (None, 'd') for q in ancestors(parent)):
                return
            self.op('D', parent, '755')
            self.mkdirs(parent)
        if self.rng.random() < .7:
            self.op('F', p, '644', self.content())
            self.tree[p] = 'f'
        else:
            self.op('D', p, '755')
            self.tree[p] = 'd'

    def a_holes(self):
        m = self.max_file
        size = self.rng.choice([0, 1, 4096, m - 1, m, m + 1, 3 * m, 1 << 30,
                                1 << 40])
        if not self.big and size > m:
            size = m
        parent = self.rng.choice(self.dirs())
        p = self.fresh(parent, hostile=self.rng.random() < .3)
        if p:
            self.op('H', p, str(size))
            # Bytes appended could take it over the size: only when drawn big.
            self.tree[p] = 'x' if size > m else 'f' if self.big else 'r'

    def a_symlink(self):
        parent = self.rng.choice(self.dirs())
        p = self.fresh(parent, hostile=self.rng.random() < .3)
        if not p:
            return
        root = self.prefix.rstrip(b'/')
        kind = self.rng.choice(['in', 'in', 'dir', 'dangling', 'abs-in', 'abs-out',
                                'climb', 'self', 'chain', 'odd', 'dotgit', 'long'])
        files = self.of_kind('f') + self.dirs()[1:]
        if kind in ('in', 'dir') and files:
            tgt = self.rng.choice(files)
            target = relpath(tgt, parent, root) or b'x'
        elif kind == 'abs-in':
            target = b'/work/' + (self.rng.choice(files) if files else b'x')
        elif kind == 'abs-out':
            target = self.rng.choice([b'/etc/passwd', b'/', b'/work', b'/work/.git/config'])
        elif kind == 'climb':
            target = b'../' * (parent.count(b'/') + (2 if parent else 1)) + b'etc/passwd'
        elif kind == 'self':
            target = self.rng.choice([b'.', b'..' if parent else b'.'])
        elif kind == 'chain':
            # s -> "." then l -> "s/../../x": lexically inside, really out.
            s = self.fresh(parent, name=b'self%d' % self.rng.randrange(100))
            if not s:
                return
            self.op('S', b'.', s)
            self.tree[s] = 'l'
            target = s.rpartition(b'/')[2] + b'/..' * (parent.count(b'/') + 2) + b'/x'
        elif kind == 'odd':
            target = self.name(hostile=True)
        elif kind == 'dotgit':
            target = self.rng.choice([b'.git/config', b'sub/.GIT/x', b'../.git'])
        elif kind == 'long':
            # Up to the kernel's bound on a link's target, 4095 bytes.
            target = b'/'.join([b't' * 200] * self.rng.randrange(1, 21))
            if self.rng.random() < .3:
                target = (target + b'/' + b'u' * 4095)[:4095]
        else:
            target = b'no-such-' + self.word()
        self.op('S', target, p)
        self.tree[p] = 'l'

    def a_hardlink(self):
        cands = self.of_kind('f') + self.of_kind('l')
        if not cands:
            return
        old = self.rng.choice(cands)
        parent = self.rng.choice(self.dirs())
        new = self.fresh(parent, hostile=self.rng.random() < .2)
        if new:
            self.op('L', old, new)
            self.tree[new] = 'x'

    def a_nfc_nfd(self):
        parent = self.rng.choice(self.dirs())
        for n in (NFC, NFD):
            p = self.fresh(parent, name=n + self.rng.choice([b'', b'.txt']))
            if p:
                if self.rng.random() < .7:
                    self.op('F', p, '644', n + b'\n')
                    self.tree[p] = 'f'
                else:
                    self.op('D', p, '755')
                    self.op('F', p + b'/in', '644', n)
                    self.tree[p] = 'd'
                    self.tree[p + b'/in'] = 'f'

    def a_special(self):
        parent = self.rng.choice(self.dirs(safe_only=True))
        if self.rng.random() < .7:
            p = self.fresh(parent)
            if p:
                self.op('P', p)
                self.tree[p] = 'x'
        else:
            d = self.fresh(parent, name=b'sock%d' % self.rng.randrange(100))
            # A Unix socket's path holds at most 107 bytes.
            if d and len(b'/work/' + d + b'/s') < 100:
                self.op('D', d, '700')
                self.op('K', d + b'/s')
                self.tree[d] = 'd'
                self.tree[d + b'/s'] = 'x'

    def a_replace(self):
        """A file becomes a folder or a link, a folder becomes a file."""
        cands = self.of_kind('f') + self.dirs()[1:]
        if not cands:
            return
        p = self.rng.choice(cands)
        self.op('R', p)
        self.drop(p)
        r = self.rng.random()
        # A folder only where its file still fits within PATH_MAX (seeds
        # 6450 and 6493: the agent's script failed, rm: can't stat).
        if r < .4 and len(p + b'/inner') + 6 <= PATH_MAX:
            self.op('D', p, '755')
            self.op('F', p + b'/inner', '644', self.content())
            self.tree[p] = 'd'
            self.tree[p + b'/inner'] = 'f'
        elif r < .7:
            self.op('S', b'elsewhere', p)
            self.tree[p] = 'l'
        else:
            self.op('F', p, '644', self.content())
            self.tree[p] = 'f'

    def a_forge(self):
        """An agent that hides a change from times: a base file's bytes
        written over in place at their size, or two folders swapped, then
        the times of a file it left alone put back on them.  Change times
        give it away; modification times would not."""
        files = [p for p in self.of_kind('f')
                 if self.base.get(p, ('',))[0] == 'f']
        if not files:
            return
        if self.rng.random() < .6:
            p = self.rng.choice(files)
            data = self.base[p][2]
            if data:
                self.op('W', p, bytes((c + 1) % 256 for c in data))
                self.op('T', self.rng.choice(files), p)
            return
        dirs = self.dirs()[1:]
        if len(dirs) < 2:
            return
        a, b = self.rng.sample(dirs, 2)
        if a.startswith(b + b'/') or b.startswith(a + b'/'):
            return
        tmp = self.fresh(a.rpartition(b'/')[0])
        longest = max(len(p) for p in self.tree)
        if not tmp or longest + max(len(a), len(b), len(tmp)) + 6 > PATH_MAX:
            return
        for old, new in ((a, tmp), (b, a), (tmp, b)):
            self.op('M', old, new)
            self.move(old, new)
        for d in (a, b):
            self.op('T', self.rng.choice(self.of_kind('f') or [d]), d)

    def draw_agent(self):
        acts = [(self.a_file, 14), (self.a_change, 10), (self.a_delete, 6),
                (self.a_rename, 6), (self.a_dir, 5),
                (lambda: self.a_dir(empty=True), 4), (self.a_wide, 1),
                (self.a_deep, 2), (self.a_holes, 5), (self.a_symlink, 8),
                (self.a_hardlink, 3), (self.a_nfc_nfd, 2), (self.a_special, 1),
                (self.a_replace, 3), (self.a_forge, 4)]
        funcs = [f for f, _ in acts]
        weights = [w for _, w in acts]
        for _ in range(self.rng.randrange(3, 30)):
            self.rng.choices(funcs, weights)[0]()
        # Half the trees hold a file of holes over the size beside names
        # that are not UTF-8: the reading around it must carry them.
        if self.rng.random() < .5 and self.big:
            dirs = [d for d in self.dirs() if any(
                p.rpartition(b'/')[0] == d and b'\xff' in p for p in self.tree)]
            if dirs:
                d = self.rng.choice(dirs)
                p = self.fresh(d, name=b'big%d' % self.rng.randrange(100))
                if p:
                    self.op('H', p, str(self.max_file + 1 + self.rng.randrange(1 << 30)))
                    self.tree[p] = 'x'

    def draw(self):
        self.draw_base()
        self.prune()
        self.draw_agent()
        return self


def ancestors(path):
    parts = path.split(b'/')
    return [b'/'.join(parts[:i]) for i in range(1, len(parts) + 1)]


def relpath(target, parent, root):
    """TARGET (a tree path) as a link target from folder PARENT."""
    up = parent.count(b'/') + 1 if parent else 0
    common = 0
    pp = parent.split(b'/') if parent else []
    tp = target.split(b'/')
    while common < len(pp) and common < len(tp) - 1 and pp[common] == tp[common]:
        common += 1
    up = len(pp) - common
    rel = b'/'.join([b'..'] * up + tp[common:])
    return rel or None


# -- Hand-written trees: each a function of a Gen with an empty draw.

def case_issue36(g):
    """A folder with a file of holes over --max-file beside a name that is
    not UTF-8, untouched: that name must not become a deletion."""
    g.base_file(g.prefix + b'\xffkeep.txt', b'keep\n', 0o100644)
    g.base_file(g.prefix + b'normal.txt', b'n\n', 0o100644)
    g.op('H', g.prefix + b'big', str(200 << 20))
    g.op('F', g.prefix + b'new.txt', '644', b'hi\n')


def case_issue36_untracked(g):
    """An untracked name that is not UTF-8 beside a file of holes."""
    g.base_file(g.prefix + b'normal.txt', b'n\n', 0o100644)
    g.op('H', g.prefix + b'big', str(g.max_file + 1))
    g.op('F', g.prefix + b'\xfenew', '644', b'made\n')
    g.op('F', g.prefix + b'nl\nname', '644', b'x\n')


def case_long_beside_big(g):
    """A folder whose path is long holds a file of holes and another
    entry: reading around the big file asks for that entry by its path."""
    d = g.prefix + b'/'.join([b'\xc3\xa9' * 60] * 4)
    g.base_file(d + b'/kept.txt', b'kept\n', 0o100644)
    g.op('H', d + b'/big', str(g.max_file + 1))
    g.op('F', g.prefix + b'new.txt', '644', b'hi\n')


def case_binary_mode(g):
    """A binary file of the base made executable, its bytes unchanged."""
    g.base_file(g.prefix + b'tool.bin', b'\x00\x01\xffELF\x00', 0o100644)
    g.base_file(g.prefix + b'text.txt', b'text\n', 0o100644)
    g.op('C', '755', g.prefix + b'tool.bin')
    g.op('C', '755', g.prefix + b'text.txt')


def case_hardlink_refused(g):
    """A base file hard-linked from a name that is refused and comes first
    in the archive: the base file is not the agent's to lose."""
    g.base_file(g.prefix + b'z.txt', b'keep me\n', 0o100644)
    g.op('D', g.prefix + b'a\\b', '755')
    g.op('L', g.prefix + b'z.txt', g.prefix + b'a\\b/x')


def case_empty_not_utf8(g):
    """Beside a file of holes, empty folders whose names are not UTF-8,
    one of them under another such folder: read entry by entry, they come
    in no archive, and must be named all the same."""
    g.op('H', g.prefix + b'big', str(g.max_file + 1))
    g.op('D', g.prefix + b'\xc0\xaf', '755')
    g.op('D', g.prefix + b'k\xff', '755')
    g.op('D', g.prefix + b'k\xff/\xfe', '755')
    g.op('F', g.prefix + b'k\xff/f', '644', b'f\n')


def case_hardlink_not_utf8(g):
    """Names hard-linked together, one not UTF-8 and the other refused (an
    unsafe symlink; a backslash): the one not UTF-8 comes only in its
    folder's archive, as a link to the refused name that archive is not
    read for, and must be read as itself (seed 3062).  Four pairs of each,
    as the archive's order is the folder's."""
    for i in range(4):
        g.op('S', b'../etc/passwd', g.prefix + b'l%d' % i)
        g.op('L', g.prefix + b'l%d' % i, g.prefix + b'\xed\xa0\x80s%d' % i)
        g.op('F', g.prefix + b'b\\%d' % i, '644', b'bytes %d\n' % i)
        g.op('L', g.prefix + b'b\\%d' % i, g.prefix + b'\xffh%d' % i)


def case_deep_folder(g):
    """Beside a file of holes, in a folder whose path the engine cannot
    archive (its own path to the volume takes it past PATH_MAX on the
    host, though find lists it inside), a file: asked for alone, and then
    with its folder, the engine says 500 both times, and the file must be
    named, not fail the export (seed 1655)."""
    d = g.prefix + b'/'.join([b'a' * 255] * 15 + [b'b' * 200])
    g.op('D', d, '755')
    g.mkdirs(d)
    g.op('H', d + b'/big', str(g.max_file + 1))
    g.op('F', d + b'/L', '644', b'deep\n')
    g.op('F', g.prefix + b'new.txt', '644', b'hi\n')


def case_hardlink_chained_symlink(g):
    """A symlink refused only once the whole tree is read (it goes
    through another symlink), hard-linked under two more names, one not
    UTF-8: each name is that symlink, judged where it is, never "a hard
    link" of a name that is not exported (seed 2582, in a batch)."""
    d = g.prefix + b'd'
    g.op('D', d, '755')
    g.mkdirs(d)
    g.op('S', b'.', d + b'/self')
    g.op('S', b'self/../../x', d + b'/out')
    g.op('L', d + b'/out', d + b'/\xc0\xafname')
    g.op('L', d + b'/out', d + b'/twin')
    g.op('F', g.prefix + b'new.txt', '644', b'hi\n')


def case_hardlink_under_refused(g):
    """Names that are not UTF-8 at the top, each hard-linked to a name in a
    refused folder (a newline; a backslash) that holds a file of holes:
    the folder's archive carries the name not UTF-8 as a link to the
    refused one, which must be read again as that name all the same
    (seed 5145).  Two pairs in each folder, as the archive's order is
    the folder's."""
    for d in (b'new\nline', b'back\\slash'):
        g.op('D', g.prefix + d + b'/sub', '755')
        g.op('H', g.prefix + d + b'/big', str(g.max_file + 1))
    for i in range(2):
        for k, d in enumerate((b'new\nline', b'back\\slash')):
            top = g.prefix + b'\xc0\xaf%d%dMakefile' % (k, i)
            g.op('F', top, '644', b'rule %d %d\n' % (k, i))
            g.op('L', top, g.prefix + d + b'/sub/x%d' % i)


def case_long_names_cut(g):
    """Two empty folders whose names share their first 220 bytes: each
    named as left out must be told from the other."""
    for end in (b'1', b'2'):
        g.op('D', g.prefix + b'n' * 220 + end, '755')
    g.op('D', g.prefix + b'd' * 230, '755')
    g.op('F', g.prefix + b'd' * 230 + b'/' + b'\x01ctl', '644', b'x\n')


def case_plain(g):
    """Ordinary work, nothing awkward: changed, deleted, renamed, made,
    a mode and symlinks.  Every export must pass it."""
    for n in (b'a.txt', b'gone.txt', b'old.txt', b'sub/b.txt', b'tool'):
        g.base_file(g.prefix + n, n + b'\n', 0o100644)
    g.op('A', g.prefix + b'a.txt', b'more\n')
    g.op('R', g.prefix + b'gone.txt')
    g.op('M', g.prefix + b'old.txt', g.prefix + b'new.txt')
    g.op('C', '755', g.prefix + b'tool')
    g.op('F', g.prefix + b'sub/bin.dat', '644', bytes(range(256)))
    g.op('S', b'../a.txt', g.prefix + b'sub/link')
    g.op('D', g.prefix + b'made/deeper', '755')
    g.op('F', g.prefix + b'made/deeper/c.txt', '755', b'c\n')


CASES = {'plain': case_plain, 'issue36': case_issue36, 'issue36-untracked': case_issue36_untracked,
         'long-beside-big': case_long_beside_big,
         'binary-mode': case_binary_mode, 'hardlink-refused': case_hardlink_refused,
         'long-names-cut': case_long_names_cut,
         'empty-not-utf8': case_empty_not_utf8,
         'hardlink-not-utf8': case_hardlink_not_utf8,
         'deep-folder': case_deep_folder,
         'hardlink-chained-symlink': case_hardlink_chained_symlink,
         'hardlink-under-refused': case_hardlink_under_refused}


def generate(seed=None, prefix=b'', max_file=1 << 20, case=None, big=True):
    g = Gen(seed if seed is not None else 0, prefix, max_file, big)
    if case is not None:
        CASES[case](g)
    else:
        g.draw()
    return g


# -- Output.

def fi_path(p):
    """A path for fast-import: C-quoted, every byte over 0x7e as \\ooo."""
    out = []
    for c in p:
        if c in (0x22, 0x5c):
            out.append('\\' + chr(c))
        elif c < 0x20 or c > 0x7e:
            out.append('\\%03o' % c)
        else:
            out.append(chr(c))
    return '"' + ''.join(out) + '"'


def ops_text(gens):
    lines = []
    for g in gens:
        for f in g.ops:
            op, rest = f[0], f[1:]
            fields = [op]
            for i, x in enumerate(rest):
                if isinstance(x, str):
                    fields.append(x)
                elif (op == 'F' and i == 2) or (op in ('A', 'W') and i == 1):
                    fields.append('=' + esc(x))
                else:
                    fields.append(esc(x))
            lines.append(' '.join(fields))
    return ('\n'.join(lines) + '\n').encode()


def commit_stream(gens, message=b'base', extra=None):
    """A fast-import stream: one commit on refs/heads/main of every
    generator's base, plus .tg/ (the ops and the agent's script) and the
    EXTRA files, path -> ('f', mode, bytes)."""
    files = dict(extra or {})
    for g in gens:
        files.update(g.base)
    files[b'.tg/ops'] = ('f', 0o100644, ops_text(gens))
    files[b'.tg/make.sh'] = ('f', 0o100755, AGENT_SCRIPT.encode())
    out = [b'commit refs/heads/main\n',
           b'committer t <t@t> 1700000000 +0000\n',
           b'data %d\n' % len(message), message, b'\n']
    for p in sorted(files):
        e = files[p]
        if e[0] == 'f':
            out.append(b'M %o inline %s\n' % (e[1], fi_path(p).encode()))
            data = e[2]
        else:
            out.append(b'M 120000 inline %s\n' % fi_path(p).encode())
            data = e[1]
        out.append(b'data %d\n' % len(data))
        out.append(data + b'\n')
    return b''.join(out)


def show(g):
    print('seed %s prefix %r' % (g.seed, g.prefix))
    for p, e in sorted(g.base.items()):
        print('base %r %s' % (p, e[0] if e[0] == 'l' and e[1] else
                              '%o %d bytes' % (e[1], len(e[2])) if e[0] == 'f' else e))
    for f in g.ops:
        print('op', ' '.join(x if isinstance(x, str) else repr(x)[:120] for x in f))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seed', type=int)
    ap.add_argument('--case', choices=sorted(CASES))
    ap.add_argument('--prefix', default='')
    ap.add_argument('--max-file', type=int, default=1 << 20)
    ap.add_argument('--show', action='store_true',
                    help='print the base and the operations readably')
    ap.add_argument('--fast-import', action='store_true',
                    help='print the base commit as a fast-import stream')
    a = ap.parse_args()
    if (a.seed is None) == (a.case is None):
        ap.error('give --seed or --case')
    g = generate(a.seed, a.prefix.encode(), a.max_file, a.case)
    if a.fast_import:
        sys.stdout.buffer.write(commit_stream([g]))
    else:
        show(g)


if __name__ == '__main__':
    main()
