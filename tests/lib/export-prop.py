#!/usr/bin/env python3
"""export-prop.py: ab-export's property test, with an oracle of its own.

For each batch of trees (tests/lib/treegen.py, one seed each, each in a
folder s<SEED>/ of one base commit, or one seed alone owning the whole
tree): real git makes the base commit, the tools seed it and run the
agent's script, which makes the trees in /work; then

  - a container of this test's own (not agentbox's code) reads /work:
    busybox find and stat list every entry (names as bytes, type, mode,
    links, inode, size, blocks), then cat and readlink read what is small
    enough; files of holes are never read (stat says they are holes);
  - ab-export writes a patch and a bundle (--max-file MAX_FILE);
  - real git applies the patch to a clone of the base commit and fetches
    the bundle into another, and both checkouts are read back.

The oracle's rules (what git cannot carry is written into them):
  R1 every entry of /work is in both checkouts as it is in /work (a
     regular file with its bytes and its owner's execute bit, as git
     keeps only 644 and 755; a symlink with its target; a directory),
     unless it, or a folder above it, is named as left out;
  R2 nothing is in a checkout that is not in /work, but at a path named
     as left out, where the base commit's version may stay;
  R3 a directory absent from a checkout (git keeps no empty folder) is
     named, or holds something named: nothing vanishes unnamed;
  R4 each name left out exists in /work, whole (not cut), and its reason
     is true by this test's own reading: a file named larger than
     --max-file is, a hard link shares its inode with a name that is
     exported, an unsafe path has a control byte, a backslash or a .git
     component, an unsafe symlink leaves /work (or is absolute, or goes
     through another symlink), and so on (reason_true());
  R5 patch and bundle give the same tree and name the same entries;
  R6 or ab-export failed: a non-zero status, no file written, and its
     last line an error of its own (not a left-out line).
A hard link cannot be carried: each of its names is either exported as a
file with the shared bytes, or named "a hard link" while another of its
names is exported.  Modes other than the owner's execute bit, directory
modes, FIFOs, sockets and devices cannot be carried: the latter must be
named.

  export-prop.py --seed N                 one tree alone (replay)
  export-prop.py --batch N,M,... [--quiet Q]
                                          trees side by side in one commit
                                          (and Q files nobody touches,
                                          exported with --read changed)
  export-prop.py --case NAME              a hand-written tree
  export-prop.py --long COUNT [--start S] [--per-run K] [--alone-every J]

Uses AB_BIN (the tools), AB_STATE_DIR and AB_IMAGE when set (a bats
file's); otherwise makes a state directory and an image of its own and
removes them at the end.  Exit 0 when every property held, 1 otherwise,
each failure printed with the command that replays it.
"""
import argparse
import json
import os
import random
import shutil
import stat
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import treegen  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MAX_FILE = 1 << 20
TAMPER = False      # --tamper: the patch loses its last file before git applies it
READ_MODE = None       # --read: how ab-export reads /work, if not its own default
# Files up to this are read back from /work by the test; larger ones
# only when stat says they hold bytes (none the generator makes).
READ_MAX = 4 << 20
GIT = ['git', '-c', 'core.autocrlf=false', '-c', 'core.fsmonitor=',
       '-c', 'core.hooksPath=/dev/null', '-c', 'protocol.file.allow=always',
       '-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'advice.detachedHead=false']


def run(argv, **kw):
    kw.setdefault('capture_output', True)
    return subprocess.run(argv, **kw)


def must(argv, **kw):
    r = run(argv, **kw)
    if r.returncode != 0:
        raise RuntimeError('%s: status %d: %s' % (
            ' '.join(str(a) for a in argv[:3]), r.returncode,
            r.stderr.decode(errors='replace').strip()[-2000:]))
    return r.stdout


class Env:
    """The tools, the state directory and the registered image."""

    def __init__(self):
        self.bin = os.environ.get('AB_BIN') or os.path.join(ROOT, 'bin')
        os.environ['PATH'] = self.bin + ':' + os.environ['PATH']
        self.own = False
        self.state = os.environ.get('AB_STATE_DIR')
        self.image = os.environ.get('AB_IMAGE')
        if not self.state or not self.image:
            self.own = True
            self.state = tempfile.mkdtemp(prefix='ab-prop-state.')
            os.chmod(self.state, 0o700)
            sid = os.urandom(16).hex()
            with open(os.path.join(self.state, 'sid'), 'w') as f:
                f.write(sid + '\n')
            suite = os.environ.get('AB_SUITE_SIDS')
            if suite:
                with open(suite, 'a') as f:
                    f.write(sid + '\n')
            os.environ['AB_STATE_DIR'] = self.state
            os.environ.pop('AB_DEADLINE', None)
            self.image = must(['ab-image', 'build']).decode().strip()
        with open(os.path.join(self.state, 'sid')) as f:
            self.sid = f.read().strip()

    def close(self):
        if not self.own:
            return
        # Everything of this state, as tests/helpers.bash purges it.
        lab = 'label=org.agentbox.state=' + self.sid
        for kind, q, rm in (('ps', ['docker', 'ps', '-aq', '--filter', lab],
                             ['docker', 'rm', '-f']),
                            ('vol', ['docker', 'volume', 'ls', '-q', '--filter', lab],
                             ['docker', 'volume', 'rm', '-f']),
                            ('img', ['docker', 'images', '-q', '--no-trunc', '--filter', lab],
                             ['docker', 'rmi', '-f'])):
            ids = sorted(set(run(q).stdout.decode().split()))
            if ids:
                run(rm + ids)
        shutil.rmtree(self.state, ignore_errors=True)


# -- Reading /work, by a container of this test's own.

LIST = r'''cd /work && find . -path ./.git -prune -o ! -path . -exec sh -c '
for p; do printf "%s\0" "$p"; done; printf "\0"
stat -c "%f %h %i %s %b" -- "$@"' sh {} +'''
# Stdin: the symlinks, then the files to read, NUL-separated; out: each
# link's target and a newline and a NUL, then the files' bytes in order.
READ = r'''cd /work && xargs -0 sh -c '
for p; do if [ -L "$p" ]; then readlink -- "$p"; printf "\0"; shift; else break; fi; done
[ $# -eq 0 ] || cat -- "$@"' sh'''


def reader(env, vol, digest, script, stdin=b''):
    argv = ['docker', 'run', '--rm', '-i', '--network', 'none', '--read-only',
            '--cap-drop', 'ALL', '--cap-add', 'DAC_READ_SEARCH',
            '--security-opt', 'no-new-privileges', '--user', '0:0',
            '--label', 'org.agentbox.state=' + env.sid,
            '--label', 'org.agentbox.role=prop-reader',
            '--mount', 'type=volume,source=%s,target=/work,readonly' % vol,
            '--entrypoint', '/bin/sh', digest, '-c', script]
    return must(argv, input=stdin)


def read_work(env, alloc):
    with open(os.path.join(env.state, 'alloc', alloc.split(':')[1])) as f:
        rec = json.load(f)
    vol = [v['name'] for v in rec['volumes'] if v['role'] == 'task'][0]
    task_bytes = [v['bytes'] for v in rec['volumes'] if v['role'] == 'task'][0]
    out = reader(env, vol, rec['digest'], LIST)
    w, i = {}, 0
    while i < len(out):
        names = []
        while True:
            j = out.index(b'\0', i)
            if j == i:
                i += 1
                break
            names.append(out[i:j])
            i = j + 1
        for n in names:
            j = out.index(b'\n', i)
            f = out[i:j].split()
            i = j + 1
            mode = int(f[0], 16)
            assert n.startswith(b'./'), n
            w[n[2:]] = {'mode': mode, 'nlink': int(f[1]), 'ino': int(f[2]),
                        'size': int(f[3]), 'blocks': int(f[4]),
                        'k': kind_of(mode)}
    links = sorted(p for p, e in w.items() if e['k'] == 'l')
    files = sorted(p for p, e in w.items() if e['k'] == 'f' and
                   (e['size'] <= READ_MAX or e['blocks'] > 0))
    if links or files:
        feed = b''.join(b'./' + p + b'\0' for p in links + files)
        out = reader(env, vol, rec['digest'], READ, feed)
        i = 0
        for p in links:
            j = out.index(b'\0', i)
            assert out[j - 1:j] == b'\n'
            w[p]['target'] = out[i:j - 1]
            i = j + 1
        for p in files:
            n = w[p]['size']
            w[p]['data'] = out[i:i + n]
            i += n
        assert i == len(out), 'read back %d bytes, expected %d' % (len(out), i)
    for p, e in w.items():
        if e['k'] == 'f' and 'data' not in e and e['blocks'] == 0:
            e['zeros'] = True       # holes alone: known without reading
    return w, task_bytes


def kind_of(mode):
    for test, k in ((stat.S_ISREG, 'f'), (stat.S_ISLNK, 'l'), (stat.S_ISDIR, 'd'),
                    (stat.S_ISFIFO, 'p'), (stat.S_ISSOCK, 's')):
        if test(mode):
            return k
    return 'o'


# -- Reading a checkout.

def read_tree(top):
    out = {}

    def rec(dfd, rel):
        for name in os.listdir(dfd):
            b = os.fsencode(name)
            if not rel and b == b'.git':
                continue
            p = rel + b'/' + b if rel else b
            st = os.lstat(name, dir_fd=dfd)
            k = kind_of(st.st_mode)
            e = {'k': k, 'mode': st.st_mode}
            if k == 'd':
                fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW,
                             dir_fd=dfd)
                try:
                    rec(fd, p)
                finally:
                    os.close(fd)
            elif k == 'l':
                e['target'] = os.fsencode(os.readlink(name, dir_fd=dfd))
            elif k == 'f':
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dfd)
                with os.fdopen(fd, 'rb') as f:
                    e['data'] = f.read()
            out[p] = e

    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        rec(fd, b'')
    finally:
        os.close(fd)
    return out


# -- ab-export's account of what it left out.

def unquote(q):
    """ab-export's quoting: \\ooo for control bytes, '"', '\\' and bytes
    over 0x7e; the rest as it is."""
    out, i = bytearray(), 0
    while i < len(q):
        if q[i:i + 1] == b'\\' and q[i + 1:i + 4].isdigit():
            out.append(int(q[i + 1:i + 4], 8))
            i += 4
        else:
            out += q[i:i + 1]
            i += 1
    return bytes(out)


def left_out(err):
    """{path: reason} of the lines 'ab-export: left out "Q": WHY'."""
    named = {}
    for line in err.split(b'\n'):
        pre = b'ab-export: left out "'
        if not line.startswith(pre):
            continue
        # The quoted name holds no '"': the first one ends it.
        q, sep, why = line[len(pre):].partition(b'": ')
        if sep:
            named[unquote(q)] = why.decode(errors='replace')
    return named


# -- The oracle.

def utf8(b):
    try:
        b.decode('utf-8')
        return True
    except UnicodeDecodeError:
        return False


def ancestors(p):
    parts = p.split(b'/')
    return [b'/'.join(parts[:i]) for i in range(1, len(parts))]


def is_dotgit(c):
    """A component some file system or git takes for .git (this test's own
    reading of the rule: any case, HFS+'s ignored code points, NTFS's
    trailing dots and spaces, stream suffixes and short name)."""
    for ign in (b'\xe2\x80\x8c', b'\xe2\x80\x8d', b'\xe2\x80\x8e', b'\xe2\x80\x8f',
                b'\xe2\x80\xaa', b'\xe2\x80\xab', b'\xe2\x80\xac', b'\xe2\x80\xad',
                b'\xe2\x80\xae', b'\xef\xbb\xbf') + tuple(
                    b'\xe2\x81' + bytes([x]) for x in range(0xaa, 0xb0)):
        c = c.replace(ign, b'')
    c = c.lower().split(b':')[0].rstrip(b'. ')
    return c in (b'.git', b'git~1')


def bad_bytes(b):
    return any(c < 0x20 or c == 0x7f or c == 0x5c for c in b)


def unsafe_path(p):
    return (bad_bytes(p) or len(p) > 4096 or
            any(is_dotgit(c) or len(c) > 255 for c in p.split(b'/')))


def unsafe_link(p, target, w):
    if (not target or target.startswith(b'/') or bad_bytes(target) or
            len(target) > 4096 or any(is_dotgit(c) for c in target.split(b'/'))):
        return True
    cur = p.split(b'/')[:-1]
    for c in target.split(b'/'):
        if c in (b'', b'.'):
            continue
        if c == b'..':
            if not cur:
                return True
            # Through another symlink, ".." is not where it seems.
            if w.get(b'/'.join(cur), {}).get('k') == 'l':
                return True
            cur.pop()
        else:
            cur.append(c)
    return False


class Oracle:
    def __init__(self, w, base, named, tree, max_file, task_bytes):
        self.w, self.base, self.named, self.t = w, base, named, tree
        self.max_file, self.task_bytes = max_file, task_bytes
        self.findings = []

    def bad(self, path, what):
        self.findings.append((path, what))

    def covered(self, p):
        return p in self.named or any(a in self.named for a in ancestors(p))

    def same(self, e, x):
        """Whether checkout entry x holds /work's entry e as git can."""
        if e['k'] != x['k']:
            return False
        if e['k'] == 'l':
            return e.get('target') == x['target']
        if e['k'] == 'f':
            if bool(e['mode'] & 0o100) != bool(x['mode'] & 0o100):
                return False
            if 'data' in e:
                return e['data'] == x['data']
            return e.get('zeros') and len(x['data']) == e['size'] and \
                not x['data'].strip(b'\0')
        return True

    def reason_true(self, p, why):
        e = self.w[p]
        if why.startswith('larger than --max-file'):
            return e['k'] == 'f' and e['size'] > self.max_file
        if why.startswith('larger than /work can hold'):
            return e['k'] == 'f' and e['size'] > self.task_bytes
        if why == 'a hard link':
            twins = [q for q, f in self.w.items()
                     if q != p and f['ino'] == e['ino']]
            return e['nlink'] > 1 and any(
                q in self.t and not self.covered(q) for q in twins)
        if why == 'an empty directory':
            under = [q for q in self.w if q.startswith(p + b'/')]
            return e['k'] == 'd' and not any(
                q.startswith(p + b'/') for q in self.t) and all(
                self.covered(q) or self.w[q]['k'] == 'd' for q in under)
        if why.startswith('a socket'):
            return e['k'] == 's'
        if why == 'not a file, directory or symlink':
            return e['k'] in ('p', 's', 'o')
        if why.startswith('unsafe path'):
            return unsafe_path(p)
        if why.startswith('unsafe symlink'):
            return e['k'] == 'l' and unsafe_link(p, e['target'], self.w)
        if why.startswith('its path is longer than'):
            # The engine's own prefix of the volume is unknown here.
            return len(b'/work/' + p) >= 3900
        if why.startswith('among the largest files, which together pass'):
            return e['k'] == 'f' and self.crowded(e)
        if why.startswith('its name is not UTF-8, which the engine'):
            folder = p.rpartition(b'/')[0]
            return not utf8(p.rpartition(b'/')[2]) and any(
                f['k'] == 'f' and f['size'] > self.max_file
                for q, f in self.w.items()
                if not folder or q.startswith(folder + b'/'))
        if why.startswith('the engine could not archive it alone, and that'):
            folder = p.rpartition(b'/')[0]
            return any(f['k'] == 'f' and f['size'] > self.max_file
                       for q, f in self.w.items()
                       if not folder or q.startswith(folder + b'/'))
        if why.startswith('the engine could not archive it, alone or with'):
            # The engine's own path to the entry passes PATH_MAX on the
            # host (its prefix of the volume is unknown here), or so
            # does a symlink's target.
            return len(b'/work/' + p) >= 3900 or (
                e['k'] == 'l' and len(e['target']) >= 4000)
        if why.startswith('the agent made it unreadable'):
            return e['k'] == 'd' and (e['mode'] & 0o500) != 0o500
        # Among them "listed in /work, but the engine's archive did not
        # carry it": never true of an engine that archives what is there.
        return False

    def crowded(self, e):
        """Whether files under the size, a hard link's bytes once, pass
        what /work holds, and none exported is larger than e."""
        small = {}
        for q, f in self.w.items():
            if f['k'] == 'f' and f['size'] <= min(self.max_file,
                                                  self.task_bytes):
                small[f['ino'] if f['nlink'] > 1 else ('p', q)] = f['size']
        return (sum(small.values()) > self.task_bytes and
                e['size'] <= min(self.max_file, self.task_bytes) and
                all(f['size'] <= e['size'] for q, f in self.w.items()
                    if f['k'] == 'f' and q in self.t))

    def check(self):
        w, t = self.w, self.t
        # R4: each name left out is in /work, whole, for a true reason.
        for p, why in sorted(self.named.items()):
            if p == b'.':
                self.bad(p, 'named "." (%s): /work as a whole' % why)
                continue
            if p not in w:
                cands = [q for q in w if q.startswith(p)]
                if len(p) == 200 and cands:
                    self.bad(p, 'left-out name cut at 200 bytes: %d entries '
                             'of /work start so' % len(cands))
                    for q in cands:
                        self.named.setdefault(q, why)
                else:
                    self.bad(p, 'named as left out (%s) but not in /work' % why)
                continue
            if not self.reason_true(p, why):
                self.bad(p, 'left out as "a hard link" while none of its names '
                         'is exported' if why == 'a hard link' and
                         self.w[p]['nlink'] > 1 else
                         'left out for an untrue reason: %s' % why)
        # R1, R3: /work's entries in the checkout.
        for p, e in sorted(w.items()):
            if self.covered(p):
                x = t.get(p)
                if x is not None and not self.same(e, x) and not self.as_base(p, x):
                    self.bad(p, 'named as left out, yet the export holds '
                             'something else there')
                continue
            x = t.get(p)
            if e['k'] == 'd':
                if x is not None and x['k'] != 'd':
                    self.bad(p, 'a directory in /work, a %s in the export' % x['k'])
                elif x is None and not any(q.startswith(p + b'/') for q in self.named):
                    self.bad(p, 'a directory lost without a word')
                continue
            if e['k'] in ('p', 's', 'o'):
                self.bad(p, 'a %s that git cannot carry, not named' %
                         {'p': 'FIFO', 's': 'socket'}.get(e['k'], 'device'))
                continue
            if x is None:
                self.bad(p, 'in /work (%s), missing from the export, not named%s'
                         % (e['k'], ' (a deletion of the base)' if p in self.base
                            else ''))
            elif not self.same(e, x):
                self.bad(p, 'differs from /work: %s' % self.diff(e, x))
        # R2: nothing else.
        for p, x in sorted(t.items()):
            if p in w or x['k'] == 'd' and any(q.startswith(p + b'/') for q in w):
                continue
            if self.covered(p) and self.as_base(p, x):
                continue
            self.bad(p, 'in the export (%s) but not in /work' % x['k'])
        return self.findings

    def as_base(self, p, x):
        b = self.base.get(p)
        if b is None:
            return x['k'] == 'd'
        if b[0] == 'l':
            return x['k'] == 'l' and x['target'] == b[1]
        return x['k'] == 'f' and x['data'] == b[2] and \
            bool(x['mode'] & 0o100) == bool(b[1] & 0o100)

    @staticmethod
    def diff(e, x):
        if e['k'] != x['k']:
            return '%s there, %s here' % (e['k'], x['k'])
        if e['k'] == 'l':
            return 'target %r, exported %r' % (e.get('target'), x['target'])
        if bool(e['mode'] & 0o100) != bool(x['mode'] & 0o100):
            return 'mode %o, exported %o' % (e['mode'] & 0o7777, x['mode'] & 0o7777)
        return '%d bytes, exported %d' % (e['size'], len(x['data']))


def sh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


# -- One run: one base commit, one agent, one export of each format.

class Batch:
    def __init__(self, seeds=(), case=None, max_file=MAX_FILE, big=True,
                 quiet=0):
        self.seeds, self.case, self.max_file = list(seeds), case, max_file
        self.big, self.quiet = big, quiet
        if case:
            self.gens = [treegen.generate(None, b'', max_file, case)]
        elif len(self.seeds) == 1:
            self.gens = [treegen.generate(self.seeds[0], b'', max_file, big=big)]
        else:
            self.gens = [treegen.generate(s, b's%d/' % s, max_file, big=big)
                         for s in self.seeds]

    def quiet_files(self):
        """Files of the base the agent never touches, 100 a folder under
        q/: with enough of them, ab-export keeps them unread and reads
        the rest of /work an entry at a time."""
        return {b'q/d%03d/f%02d' % (i // 100, i % 100):
                ('f', 0o100644, b'quiet %d\n' % i) for i in range(self.quiet)}

    def replay(self, seed=None):
        me = 'python3 tests/lib/export-prop.py' + ('' if self.big else ' --no-big')
        if self.quiet:
            me += ' --quiet %d' % self.quiet
        if self.case:
            return '%s --case %s' % (me, self.case)
        if seed is not None:
            return '%s --seed %d' % (me, seed)
        if len(self.gens) == 1:
            return '%s --seed %d' % (me, self.seeds[0])
        return '%s --batch %s' % (me, ','.join(str(s) for s in self.seeds))

    def owner(self, path):
        for g in self.gens:
            if g.prefix and (path + b'/').startswith(g.prefix):
                return g.seed
        return None


def export(alloc, fmt, out, dl, max_file, quiet):
    # Beside files nobody touches, only what changed is read, however
    # many requests that takes: the reading this run is for.
    r = run(['ab-export', alloc, '--format', fmt, '-o', out, '--deadline', dl,
             '--max-file', str(max_file)] + (
                 ['--read', READ_MODE] if READ_MODE else
                 ['--read', 'changed'] if quiet else []))
    return r.returncode, r.stderr


def export_ok(rc, err, out):
    """R6: a failure is one error line of ab-export's own, and no file."""
    if rc == 0:
        return None
    lines = err.rstrip(b'\n').split(b'\n')
    if rc not in (1, 124, 125):
        return 'ab-export exited %d' % rc
    if os.path.exists(out):
        return 'ab-export failed (%d) yet wrote %s' % (rc, out)
    if not lines[-1].startswith(b'ab-export: ') or \
            lines[-1].startswith(b'ab-export: left out'):
        return 'ab-export failed (%d) without its error line' % rc
    if any(not l.startswith(b'ab-export: ') for l in lines):
        return 'ab-export failed (%d) with lines not its own' % rc
    return None


def run_batch(env, b, keep=False):
    """Findings of one batch: [(seed or None, path, what)], notes."""
    tmp = tempfile.mkdtemp(prefix='ab-prop.')
    notes = []
    try:
        return check_batch(env, b, tmp, notes), notes
    finally:
        if keep:
            print('kept %s' % tmp, file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def check_batch(env, b, tmp, notes):
    repo = os.path.join(tmp, 'repo')
    must(GIT + ['init', '-q', repo])
    must(GIT + ['-C', repo, 'fast-import', '--quiet'],
         input=treegen.commit_stream(b.gens, extra=b.quiet_files()))
    commit = must(GIT + ['-C', repo, 'rev-parse', 'refs/heads/main']).decode().strip()
    must(GIT + ['-C', repo, 'checkout', '-q', 'main'])
    base = b.quiet_files()
    for g in b.gens:
        base.update(g.base)
    dl = os.path.join(tmp, 'deadline')
    with open(dl, 'w') as f:
        f.write('%d\n' % (time.time() + 600))
    alloc = must(['ab-alloc', '--image', env.image, '--deadline', dl]).decode().strip()
    try:
        must(['ab-seed', alloc, '--repo', repo, '--commit', commit, '--deadline', dl])
        prof = must(['ab-profile', '--alloc', alloc, '--phase', 'execution',
                     '--attempt', 'prop-' + os.urandom(8).hex(), '--deadline', dl,
                     '--', 'sh', '/work/.tg/make.sh']).decode().strip()
        ctr = must(['ab-validate', prof]).decode().strip()
        agent_err = os.path.join(tmp, 'agent.err')
        r = run(['ab-run', ctr, '--deadline', dl, '--stderr', agent_err, '--quiet'])
        if r.returncode != 0:
            with open(agent_err, 'rb') as f:
                msg = f.read().decode(errors="replace").strip()[:700]
            return [(None, b'', 'the agent\'s script failed (%d): %s %s' % (
                r.returncode, msg, r.stderr.decode(errors='replace').strip()))]
        w, task_bytes = read_work(env, alloc)
        pfile, bfile = os.path.join(tmp, 'p.patch'), os.path.join(tmp, 'b.bundle')
        prc, perr = export(alloc, 'patch', pfile, dl, b.max_file, b.quiet)
        brc, berr = export(alloc, 'bundle', bfile, dl, b.max_file, b.quiet)
        # How the last export read /work: the files kept, never read.
        shown = run(['ab-run', '--show', r.stdout.decode().strip()])
        if shown.returncode == 0:
            got = json.loads(shown.stdout).get('export_read')
            if got:
                b.read = (got['files'], got['unchanged'],
                          got.get('archives_inside', 0), got['archives'])
    finally:
        run(['ab-clean', alloc])
    for name, err in (('patch.err', perr), ('bundle.err', berr)):
        with open(os.path.join(tmp, name), 'wb') as f:
            f.write(err)
    findings = []
    for rc, err, out in ((prc, perr, pfile), (brc, berr, bfile)):
        why = export_ok(rc, err, out)
        if why:
            findings.append((None, b'', why + ': ' + err.decode(errors='replace')[-300:]))
    if prc != brc:
        findings.append((None, b'', 'patch and bundle disagree: status %d and %d'
                         % (prc, brc)))
    if prc != 0 or brc != 0:
        notes.append('ab-export refused: %s' % (perr or berr).decode(
            errors='replace').strip().split('\n')[-1])
        return attribute(b, findings)
    trees = {}
    # The patch, applied by git to a clone of the commit.
    co = os.path.join(tmp, 'co')
    must(GIT + ['clone', '-q', '--no-checkout', repo, co])
    must(GIT + ['-C', co, 'checkout', '-q', commit])
    if TAMPER:
        # The oracle's own check: a patch that lost its last file.
        with open(pfile, 'rb') as f:
            text = f.read()
        with open(pfile, 'wb') as f:
            f.write(text[:text.rindex(b'\ndiff --git ') + 1])
    if os.path.getsize(pfile) > 0:
        r = run(GIT + ['-C', co, 'apply', '--index', pfile])
        if r.returncode != 0:
            findings.append((None, b'', 'git apply failed: %s' %
                             r.stderr.decode(errors='replace').strip()[:600]))
            return attribute(b, findings)
    trees['patch'] = read_tree(co)
    # The bundle, fetched by git into another.
    cb = os.path.join(tmp, 'cb')
    must(GIT + ['clone', '-q', '--no-checkout', repo, cb])
    r = run(GIT + ['-C', cb, 'fetch', '-q', bfile, 'refs/heads/agentbox:refs/heads/agentbox'])
    if r.returncode != 0:
        findings.append((None, b'', 'git fetch of the bundle failed: %s' %
                         r.stderr.decode(errors='replace').strip()[:600]))
        return attribute(b, findings)
    must(GIT + ['-C', cb, 'checkout', '-q', 'agentbox'])
    trees['bundle'] = read_tree(cb)
    pn, bn = left_out(perr), left_out(berr)
    # R5
    if pn != bn:
        for p in sorted(set(pn) ^ set(bn)):
            findings.append((None, p, 'named by one format only'))
    for p in sorted(set(trees['patch']) ^ set(trees['bundle'])):
        findings.append((None, p, 'in one of patch and bundle only'))
    seen = set()
    for name, t in trees.items():
        o = Oracle(w, base, dict(pn if name == 'patch' else bn), t, b.max_file,
                   task_bytes)
        for p, what in o.check():
            if (p, what) not in seen:
                seen.add((p, what))
                findings.append((None, p, what + ('' if name == 'patch' else
                                                  ' [bundle]')))
    return attribute(b, findings)


def attribute(b, findings):
    return [(b.owner(p) if s is None else s, p, what) for s, p, what in findings]


def report(b, findings, out=sys.stdout):
    by = {}
    for seed, p, what in findings:
        by.setdefault(seed, []).append((p, what))
    for seed, items in sorted(by.items(), key=lambda x: (x[0] is None, x[0] or 0)):
        if seed is None:
            print('FAIL %s' % b.replay(), file=out)
        else:
            print('FAIL seed %d (in %s); alone: %s' % (seed, b.replay(),
                                                       b.replay(seed)), file=out)
        for p, what in items[:12]:
            q = treegen.fi_path(p)
            if len(q) > 160:
                q = q[:100] + '...(%d bytes)...' % len(p) + q[-40:]
            print('  %s: %s' % (q, what), file=out)
        if len(items) > 12:
            print('  ... and %d more' % (len(items) - 12), file=out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument('--seed', type=int)
    g.add_argument('--batch')
    g.add_argument('--case', choices=sorted(treegen.CASES))
    g.add_argument('--long', type=int, metavar='COUNT')
    ap.add_argument('--start', type=int, default=1)
    ap.add_argument('--per-run', type=int, default=10)
    ap.add_argument('--alone-every', type=int, default=5,
                    help='in --long, every J-th run is one seed alone')
    ap.add_argument('--max-file', type=int, default=MAX_FILE)
    ap.add_argument('--quiet', type=int, default=None, metavar='N',
                    help='N files the agent never touches in the base, '
                    'under q/ (not with --seed, whose tree is all its own; '
                    'in --long, every other run of several seeds has 12,000 '
                    'unless given)')
    ap.add_argument('--read', choices=('auto', 'changed', 'all'),
                    help='how ab-export reads /work (its own default unless '
                    'given; --quiet runs read changed)')
    ap.add_argument('--keep', action='store_true',
                    help='keep the run\'s files (repository, patch, bundle)')
    ap.add_argument('--no-big', action='store_true',
                    help='draw no file over --max-file (to look past the '
                    'reading around such files)')
    ap.add_argument('--tamper', action='store_true',
                    help='drop the last file of the patch before applying it: '
                    'the oracle must fail')
    a = ap.parse_args()
    global TAMPER, READ_MODE
    TAMPER = a.tamper
    READ_MODE = a.read
    if a.long is not None:
        batches, s, n = [], a.start, 0
        while n < a.long:
            k = 1 if (len(batches) + 1) % a.alone_every == 0 else min(a.per_run, a.long - n)
            # A seed alone owns the whole tree, q/ too: none there.
            quiet = 0 if k == 1 else a.quiet if a.quiet is not None else (
                12000 if len(batches) % 2 else 0)
            batches.append(Batch(range(s, s + k), max_file=a.max_file,
                                 big=not a.no_big, quiet=quiet))
            s += k
            n += k
    elif a.seed is not None:
        batches = [Batch([a.seed], max_file=a.max_file, big=not a.no_big)]
    elif a.case:
        batches = [Batch(case=a.case, max_file=a.max_file)]
    else:
        batches = [Batch([int(x) for x in a.batch.split(',')], max_file=a.max_file,
                         big=not a.no_big, quiet=a.quiet or 0)]
    # A TERM, as an interrupt, sweeps the run's state on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    env = Env()
    failed, refused, trees, t0 = 0, 0, 0, time.time()
    kept = [0] * 5              # runs with files kept; files kept; listed;
    #                             archives made inside; archive requests
    try:
        for b in batches:
            try:
                findings, notes = run_batch(env, b, a.keep)
            except Exception as e:  # noqa: BLE001 - the run itself broke
                findings, notes = [(None, b'', 'the run failed: %s' % e)], []
            trees += len(b.gens)
            files, unchanged, inside, asked = getattr(b, 'read', (0,) * 4)
            kept[3] += inside
            kept[4] += asked
            kept[0] += unchanged > 0
            kept[1] += unchanged
            kept[2] += files
            for n in notes:
                print('note (%s): %s' % (b.replay(), n))
                refused += 1
            if findings:
                failed += 1
                report(b, findings)
            sys.stdout.flush()
    finally:
        env.close()
    print('%d trees in %d runs, %d runs failed, %d exports refused, %.0f s; '
          'runs that kept files unread: %d (%d of %d files); '
          'archives made inside: %d, archive requests: %d' % (
              trees, len(batches), failed, refused, time.time() - t0,
              kept[0], kept[1], kept[2], kept[3], kept[4]))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
