#!/usr/bin/env python3
"""index-diff.py A B: compares two git index files (version 2) as git reads
them: every entry byte for byte, and the TREE extension's records (path,
entry count, subtree count, tree ID) as a set, since git accepts them in
any order.  Prints what differs and exits 1, or exits 0.  Test helper."""
import struct
import sys


def parse(path):
    d = open(path, "rb").read()
    if d[:4] != b"DIRC":
        sys.exit("%s: not a git index" % path)
    ver, n = struct.unpack(">II", d[4:12])
    off, ents = 12, []
    for _ in range(n):
        end = d.index(b"\0", off + 62)
        size = (end - off + 8) & ~7
        ents.append(d[off:off + size])
        off += size
    exts = {}
    while off < len(d) - 20:
        sig, size = d[off:off + 4], struct.unpack(">I", d[off + 4:off + 8])[0]
        exts[sig] = d[off + 8:off + 8 + size]
        off += 8 + size
    return ver, ents, exts


def trees(b):
    out = []

    def node(prefix, off):
        z = b.index(b"\0", off)
        nl = b.index(b"\n", z)
        cnt, sub = map(int, b[z + 1:nl].split())
        path = prefix + b[off:z]
        out.append((path, cnt, sub, b[nl + 1:nl + 21].hex()))
        off = nl + 21
        for _ in range(sub):
            off = node(path + b"/" if path else b"", off)
        return off

    node(b"", 0)
    return set(out)


a, b = parse(sys.argv[1]), parse(sys.argv[2])
bad = 0
if a[0] != b[0]:
    print("version %d, not %d" % (a[0], b[0]))
    bad = 1
if a[1] != b[1]:
    print("entries differ: %d against %d" % (len(a[1]), len(b[1])))
    bad = 1
if sorted(a[2]) != sorted(b[2]):
    print("extensions %s, not %s" % (sorted(a[2]), sorted(b[2])))
    bad = 1
elif b"TREE" in a[2] and trees(a[2][b"TREE"]) != trees(b[2][b"TREE"]):
    print("tree caches differ, first: %s" %
          sorted(trees(a[2][b"TREE"]) ^ trees(b[2][b"TREE"]))[:4])
    bad = 1
sys.exit(bad)
