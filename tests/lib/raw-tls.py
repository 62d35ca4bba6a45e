#!/usr/bin/env python3
"""raw-tls.py: an agent's raw bytes to an intercepted host, through the
relay and the proxy: CONNECT, TLS trusting only the proxy's CA (with the
ALPN protocols asked for), then the bytes of each --send as they are,
one write each; prints every byte answered (decoded as Latin-1) until
the proxy closes or --wait seconds pass, then "closed" or "timeout".

  raw-tls.py --relay HOST:PORT --ca PEM --host NAME [--alpn P,...]
             [--wait S] --send BYTES [--send BYTES ...]
  raw-tls.py --socket PATH --ca PEM --host NAME --many N --ready FILE
             [--hold S]

--many: N connections straight on the proxy's socket, each through its
TLS handshake and then idle, held S seconds (default 60); how many got
there is written to FILE once all have tried.

BYTES may hold \\r, \\n and {PH} (--ph's value) and {MB} (1 MiB of 'a').
A handshake the proxy refuses prints "handshake: REASON".
"""
import argparse
import socket
import ssl
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--relay")
    ap.add_argument("--ca", required=True)
    ap.add_argument("--host", required=True)
    ap.add_argument("--alpn", default="http/1.1")
    ap.add_argument("--wait", type=float, default=15)
    ap.add_argument("--ph", default="")
    ap.add_argument("--send", action="append", default=[])
    ap.add_argument("--socket")
    ap.add_argument("--many", type=int, default=0)
    ap.add_argument("--ready")
    ap.add_argument("--hold", type=float, default=60)
    a = ap.parse_args()
    if a.many:
        return many(a)
    h, p = a.relay.rsplit(":", 1)
    s = socket.create_connection((h, int(p)), timeout=a.wait)
    try:
        connect(s, a.host)
    except OSError as e:
        print(e)
        return 1
    ctx = ssl.create_default_context(cafile=a.ca)
    if a.alpn:
        ctx.set_alpn_protocols(a.alpn.split(","))
    try:
        t = ctx.wrap_socket(s, server_hostname=a.host)
    except (ssl.SSLError, OSError) as e:
        print("handshake: %s" % e)
        return 0
    for x in a.send:
        data = x.replace("\\r", "\r").replace("\\n", "\n") \
            .replace("{PH}", a.ph).replace("{MB}", "a" * (1 << 20))
        try:
            t.sendall(data.encode("latin-1"))
        except OSError:
            break
    out = b""
    try:
        while True:
            b = t.recv(65536)
            if not b:
                break
            out += b
        end = "closed"
    except socket.timeout:
        end = "timeout"
    except (ssl.SSLError, OSError):
        end = "closed"
    sys.stdout.write(out.decode("latin-1"))
    print("\n" + end)
    return 0


def connect(s, host):
    """CONNECT HOST:443 on S; OSError with the answer unless 200."""
    s.sendall(b"CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n"
              % (host.encode(), host.encode()))
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            raise OSError("closed before the tunnel")
        head += b
    if b" 200 " not in head.split(b"\r\n")[0]:
        raise OSError(head.decode("latin-1"))


def tunnel(a):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    s.connect(a.socket)
    connect(s, a.host)
    ctx = ssl.create_default_context(cafile=a.ca)
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx.wrap_socket(s, server_hostname=a.host)


def many(a):
    import time
    held = []
    for _ in range(a.many):
        try:
            held.append(tunnel(a))
        except (OSError, ssl.SSLError):
            pass
    with open(a.ready + ".tmp", "w") as f:
        f.write("%d\n" % len(held))
    import os
    os.rename(a.ready + ".tmp", a.ready)
    time.sleep(a.hold)
    return 0


if __name__ == "__main__":
    sys.exit(main())
