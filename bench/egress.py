#!/usr/bin/env python3
"""bench/egress.py DIRECT_HOST DIRECT_PORT PROXY_SOCKET RELAY_PORT ENTRY
ROUNDS MIB: connection setup latency and throughput to one echo server,
three ways, interleaved round by round so the machine's noise falls on all
of them alike:

  direct  TCP to the server itself
  proxy   the allocation's proxy socket, CONNECT ENTRY, then the tunnel
  relay   TCP to ab-relay on 127.0.0.1:RELAY_PORT, CONNECT, the tunnel:
          the agent's whole path

Setup: connect, (CONNECT and its 200,) one byte echoed, close.  Throughput:
MIB MiB sent and read back concurrently on one connection."""
import socket
import statistics
import sys
import threading
import time


def open_path(how, a):
    if how == "direct":
        s = socket.create_connection((a.host, a.port))
    elif how == "proxy":
        s = socket.socket(socket.AF_UNIX)
        s.connect(a.sock)
    else:
        s = socket.create_connection(("127.0.0.1", a.relay))
    if how != "direct":
        s.sendall(("CONNECT %s HTTP/1.1\r\n\r\n" % a.entry).encode())
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            c = s.recv(1)
            if not c:
                raise SystemExit("proxy closed: %r" % head)
            head += c
        if not head.startswith(b"HTTP/1.1 200"):
            raise SystemExit("refused: %r" % head)
    return s


def setup(how, a):
    t = time.perf_counter()
    s = open_path(how, a)
    s.sendall(b"x")
    s.recv(1)
    s.close()
    return time.perf_counter() - t


def throughput(how, a, mib):
    s = open_path(how, a)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    total = mib << 20
    chunk = b"\0" * (1 << 16)

    def send():
        left = total
        while left > 0:
            n = min(left, len(chunk))
            s.sendall(chunk[:n])
            left -= n
    t = time.perf_counter()
    th = threading.Thread(target=send)
    th.start()
    got = 0
    while got < total:
        d = s.recv(1 << 20)
        if not d:
            break
        got += len(d)
    th.join()
    dt = time.perf_counter() - t
    s.close()
    return got / dt / (1 << 20)


class A:
    pass


def main():
    a = A()
    a.host, a.port, a.sock, a.relay, a.entry = (sys.argv[1],
        int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5])
    rounds, mib = int(sys.argv[6]), int(sys.argv[7])
    ways = ["direct", "proxy", "relay"]
    lat = {w: [] for w in ways}
    thr = {w: [] for w in ways}
    for _ in range(rounds):
        for w in ways:
            lat[w].extend(setup(w, a) for _ in range(20))
    for _ in range(max(3, rounds // 10)):
        for w in ways:
            thr[w].append(throughput(w, a, mib))
    print("%-8s %14s %14s %16s %10s" % ("path", "setup median", "setup p90",
                                        "throughput MiB/s", "x direct"))
    d = statistics.median(lat["direct"])
    for w in ways:
        lm = statistics.median(lat[w])
        p90 = statistics.quantiles(lat[w], n=10)[-1]
        print("%-8s %11.3f ms %11.3f ms %16.0f %10.2f" % (
            w, lm * 1e3, p90 * 1e3, statistics.median(thr[w]), lm / d))


main()
