#!/usr/bin/env python3
"""inject.py RELAY_PORT PROXY_CA TEST_CA PLACEHOLDER N: what putting the
credential in costs, against a blind tunnel to the same server.

Both paths go through the relay and the proxy to the scripted vendor
(tests/lib/vendor.py): "intercept" to api.anthropic.com, whose TLS the
proxy ends (trusting the proxy's CA), "blind" to bulk.test, an entry of
the same server the proxy only tunnels (trusting the test CA; the name is
not the certificate's, so it is not checked).  Per path it prints:

  request   the median of N requests on one kept-alive connection, each
            a 1 KiB body and a 64 KiB answer streamed in chunks
  first     the median of N/4 new connections' first request (the
            handshakes, and for intercept the proxy's second one)
  MiB/s     one 256 MiB answer through one connection
"""
import socket
import ssl
import statistics
import sys
import time

relay, pca, tca, ph, n = (int(sys.argv[1]), sys.argv[2], sys.argv[3],
                          sys.argv[4], int(sys.argv[5]))
BODY = b"x" * 1024


def connect(host):
    s = socket.create_connection(("127.0.0.1", relay))
    s.sendall(b"CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n"
              % (host.encode(), host.encode()))
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += s.recv(1)
    assert b" 200 " in head.split(b"\r\n")[0], head
    if host == "api.anthropic.com":
        ctx = ssl.create_default_context(cafile=pca)
    else:
        ctx = ssl.create_default_context(cafile=tca)
        ctx.check_hostname = False
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx.wrap_socket(s, server_hostname=host)


def request(t, host, size):
    t.sendall(b"POST /v1/bulk?n=%d HTTP/1.1\r\nHost: %s\r\nx-api-key: %s\r\n"
              b"Content-Length: %d\r\n\r\n" % (size, host.encode(),
                                               ph.encode(), len(BODY)) + BODY)
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += t.recv(65536)
    head, _, rest = buf.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head[:200]
    # Chunked: read until the last chunk's end.
    got = 0
    buf = rest
    while True:
        while b"\r\n" not in buf:
            buf += t.recv(65536)
        line, _, buf = buf.partition(b"\r\n")
        k = int(line.split(b";")[0], 16)
        while len(buf) < k + 2:
            more = t.recv(max(65536, k + 2 - len(buf)))
            assert more, "cut"
            buf += more
        got += k
        buf = buf[k + 2:]
        if k == 0:
            return got


def measure(host):
    t = connect(host)
    request(t, host, 65536)
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        assert request(t, host, 65536) == 65536
        times.append(time.perf_counter() - t0)
    firsts = []
    for _ in range(max(1, n // 4)):
        t0 = time.perf_counter()
        u = connect(host)
        request(u, host, 65536)
        firsts.append(time.perf_counter() - t0)
        u.close()
    t0 = time.perf_counter()
    got = request(t, host, 256 << 20)
    mbs = got / (1 << 20) / (time.perf_counter() - t0)
    t.close()
    return statistics.median(times), statistics.median(firsts), mbs


res = {}
for path, host in (("blind", "bulk.test"), ("intercept", "api.anthropic.com")):
    res[path] = measure(host)
    print("%-10s request %.3f ms  first %.3f ms  %.0f MiB/s" % (
        path, res[path][0] * 1e3, res[path][1] * 1e3, res[path][2]))
print("added     request %.3f ms  first %.3f ms" % (
    (res["intercept"][0] - res["blind"][0]) * 1e3,
    (res["intercept"][1] - res["blind"][1]) * 1e3))
