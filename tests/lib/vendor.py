#!/usr/bin/env python3
"""vendor.py: the tests' own stand-in for a vendor's endpoint, reached by
agents through the allocation's egress proxy under the vendor's real name.

  vendor.py --listen ADDR --ready FILE [--cert PEM --key PEM] [--mode M]

Listens on ADDR (port 0: any), writes the port to FILE once it listens.
With --cert it speaks TLS (the certificate of a test CA that the test hands
to agentbox with --ca).  Modes:
  hello  read one line, answer "vendor saw: LINE" and close
  echo   send back every byte until the client ends
Test helper only: it never stands in for the engine."""
import argparse
import socket
import ssl
import threading


def serve(conn, mode):
    try:
        if mode == "hello":
            line = b""
            while not line.endswith(b"\n") and len(line) < 4096:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                line += chunk
            conn.sendall(b"vendor saw: " + line.strip() + b"\n")
        else:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                conn.sendall(chunk)
        if isinstance(conn, ssl.SSLSocket):
            conn = conn.unwrap()
    except (OSError, ssl.SSLError):
        pass
    finally:
        conn.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True)
    ap.add_argument("--ready", required=True)
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--mode", default="hello", choices=["hello", "echo"])
    a = ap.parse_args()
    ctx = None
    if a.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.cert, a.key)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((a.listen, 0))
    s.listen(128)
    with open(a.ready + ".tmp", "w") as f:
        f.write("%d\n" % s.getsockname()[1])
    import os
    os.rename(a.ready + ".tmp", a.ready)
    while True:
        conn, _ = s.accept()

        def handshake(c=conn):
            if ctx is not None:
                try:
                    c.settimeout(10)
                    c = ctx.wrap_socket(c, server_side=True)
                    c.settimeout(None)
                except (OSError, ssl.SSLError):
                    c.close()
                    return
            serve(c, a.mode)
        threading.Thread(target=handshake, daemon=True).start()


main()
