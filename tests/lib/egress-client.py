#!/usr/bin/env python3
"""egress-client.py: speaks to an allocation's proxy socket directly, as an
agent that bypasses its relay could.  Test helper only.

  egress-client.py SOCKET send TEXT      sends TEXT (Python escapes allowed,
                                         e.g. \\r\\n), prints the reply's
                                         status line
  egress-client.py SOCKET tunnel HOST:PORT LINE
                                         CONNECT, then after the 200 sends
                                         LINE and prints what comes back
  egress-client.py SOCKET idle N SECS    holds N connections open sending
                                         nothing for SECS, prints how many
                                         were answered 503 at once
  egress-client.py SOCKET slow           sends half a request line and
                                         waits; prints the reply's status
  egress-client.py SOCKET upload HOST:PORT BYTES
                                         CONNECT, then BYTES zeros up, a
                                         half-close, and waits for the end;
                                         prints the bytes sent
  egress-client.py SOCKET names N PREFIX asks for N distinct names that are
                                         not allowed (long ones: each makes
                                         a long log line); prints how many
                                         were refused 403 and how many
                                         503s were asked again, then
                                         any other status with its count
  egress-client.py SOCKET stuff N BYTES HOST:PORT SECS
                                         opens N tunnels at once and sends
                                         up to BYTES on each without
                                         waiting, holds them SECS; prints
                                         how many were established"""
import selectors
import socket
import sys
import time


def connect(path):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    return s


def status_line(s, timeout=15):
    s.settimeout(timeout)
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        return "(no reply)"
    return data.split(b"\r\n")[0].decode("latin-1") or "(closed)"


def connect_tunnel(path, hostport):
    s = connect(path)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" %
               (hostport, hostport)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)
        if not chunk:
            break
        head += chunk
    return s, head.split(b"\r\n")[0].decode("latin-1")


def upload(path, hostport, n):
    s, status = connect_tunnel(path, hostport)
    if not status.startswith("HTTP/1.1 200"):
        return status
    block, sent = b"\0" * 65536, 0
    while sent < n:
        sent += s.send(block[:min(len(block), n - sent)])
    s.shutdown(socket.SHUT_WR)
    s.settimeout(60)
    while s.recv(65536):
        pass
    return str(sent)


def names(path, n, prefix):
    # Names of 200 bytes and more: a long log line each.  A 503 is the
    # proxy's bound on connections: the threads that answered the ones
    # before may still be writing their log lines, which a loaded engine
    # drains slowly.  Such a name is asked again, as a client would, and
    # the 503s are counted apart (the proxy counts each as a refusal).
    pad = "x" * 60 + "." + "y" * 60 + "." + "z" * 60
    refused, busy, other = 0, 0, {}
    for i in range(n):
        while True:
            s = connect(path)
            s.sendall(("CONNECT %s%d.%s:443 HTTP/1.1\r\n\r\n" %
                       (prefix, i, pad)).encode())
            status = status_line(s, 120)
            s.close()
            if not status.startswith("HTTP/1.1 503"):
                break
            busy += 1
            time.sleep(0.05)
        if status.startswith("HTTP/1.1 403"):
            refused += 1
        else:
            other[status] = other.get(status, 0) + 1
    return "%d %d%s" % (refused, busy, "".join(
        " [%s: %d]" % kv for kv in sorted(other.items())))


def stuff(path, n, size, hostport, secs):
    conns, up = [], 0
    for _ in range(n):
        try:
            s, status = connect_tunnel(path, hostport)
        except OSError:
            break
        conns.append(s)
        if status.startswith("HTTP/1.1 200"):
            up += 1
            s.setblocking(False)
    block = b"\0" * 65536
    left = {s: size for s in conns}
    sel = selectors.DefaultSelector()
    for s in conns:
        sel.register(s, selectors.EVENT_WRITE)
    end = time.time() + secs
    while left and time.time() < end:
        for key, _ in sel.select(timeout=0.5):
            s = key.fileobj
            try:
                left[s] -= s.send(block[:min(len(block), left[s])])
            except OSError:
                left[s] = 0
            if left[s] <= 0:
                sel.unregister(s)
                del left[s]
    time.sleep(max(0.0, end - time.time()))
    for s in conns:
        s.close()
    return up


def main():
    path, verb = sys.argv[1], sys.argv[2]
    if verb == "send":
        s = connect(path)
        s.sendall(sys.argv[3].encode().decode("unicode_escape").encode(
            "latin-1"))
        print(status_line(s))
    elif verb == "tunnel":
        s, status = connect_tunnel(path, sys.argv[3])
        print(status)
        s.sendall(sys.argv[4].encode() + b"\n")
        s.settimeout(10)
        print(s.recv(4096).decode().strip())
    elif verb == "idle":
        n, secs = int(sys.argv[3]), float(sys.argv[4])
        conns, busy = [], 0
        for _ in range(n):
            conns.append(connect(path))
        time.sleep(0.5)
        for c in conns:
            c.setblocking(False)
            try:
                if c.recv(4096).startswith(b"HTTP/1.1 503"):
                    busy += 1
            except BlockingIOError:
                pass
        time.sleep(secs)
        for c in conns:
            c.close()
        print(busy)
    elif verb == "slow":
        s = connect(path)
        s.sendall(b"CONNECT api.anth")
        print(status_line(s, timeout=20))
    elif verb == "upload":
        print(upload(path, sys.argv[3], int(sys.argv[4])))
    elif verb == "names":
        print(names(path, int(sys.argv[3]), sys.argv[4]))
    elif verb == "stuff":
        print(stuff(path, int(sys.argv[3]), int(sys.argv[4]), sys.argv[5],
                    float(sys.argv[6])))
    else:
        sys.exit("egress-client.py: unknown verb " + verb)


main()
