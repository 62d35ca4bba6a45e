#!/usr/bin/env python3
"""edit-profile.py RECORD memory N: rewrites a profile record as its owner
could, the memory limit changed in its parameters and in its frozen body,
and the body's SHA-256 recomputed, so that only agentbox's bounds can
refuse it.  Test helper only."""
import hashlib
import re
import sys


def main():
    path, key, value = sys.argv[1], sys.argv[2], sys.argv[3]
    if key != "memory":
        sys.exit("edit-profile.py: only memory is supported")
    with open(path) as f:
        t = f.read()
    t, n = re.subn(r'"memory":\d+', '"memory":' + value, t, count=1)
    t, m = re.subn(r'"Memory":\d+,"MemorySwap":\d+',
                   '"Memory":%s,"MemorySwap":%s' % (value, value), t, count=1)
    if n != 1 or m != 1:
        sys.exit("edit-profile.py: record has no memory limit")
    body = t[t.index('"body":') + 7:-1]
    sha = hashlib.sha256(body.encode()).hexdigest()
    t = re.sub(r'"body_sha256":"[0-9a-f]{64}"', '"body_sha256":"%s"' % sha, t)
    with open(path, "w") as f:
        f.write(t)


main()
