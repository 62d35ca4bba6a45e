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
                                         waits; prints the reply's status"""
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


def main():
    path, verb = sys.argv[1], sys.argv[2]
    if verb == "send":
        s = connect(path)
        s.sendall(sys.argv[3].encode().decode("unicode_escape").encode(
            "latin-1"))
        print(status_line(s))
    elif verb == "tunnel":
        s = connect(path)
        s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" %
                   (sys.argv[3], sys.argv[3])).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(1)
            if not chunk:
                break
            head += chunk
        print(head.split(b"\r\n")[0].decode())
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
    else:
        sys.exit("egress-client.py: unknown verb " + verb)


main()
