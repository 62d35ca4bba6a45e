#!/usr/bin/env python3
"""engine-proxy.py - fault-injecting HTTP/1.1 proxy for the Docker Engine API.

Test helper for agentbox.  Sits between a client and the engine socket and
forwards every client connection to its own upstream connection, parsing
HTTP/1.1 request/response boundaries on persistent connections so that one
chosen request can be delayed, cut or failed.  Bodies are streamed in both
directions (never buffered whole, except a delayed response, which is
spooled to a temporary file once it gets large).

Usage:
  engine-proxy.py (--listen PATH | --listen-tcp HOST:PORT) [options]

  --listen PATH          listen on a unix socket (bound under a temporary
                         name, then renamed to PATH once listening)
  --listen-tcp H:P       listen on TCP (port 0 = pick one; see --ready)
  --upstream ADDR        engine socket path, unix://PATH or tcp://HOST:PORT
                         (default /var/run/docker.sock)
  --match REGEX          re.search()ed against "METHOD PATH" (PATH includes
                         the query string); default: every request
  --nth N                act on the Nth matching request, counted across all
                         connections (default 1)
  --times K              act on K consecutive matches starting at the Nth
                         (default 1; 0 = every match from the Nth on)
  --action A             none | delay | cut | fail | stall (default none)
  --seconds S            delay: hold the response S seconds (float, default 1)
  --until FILE           delay: hold it until FILE exists instead (a test
                         releases it when it has seen what it waits for);
                         stall: required, see below
  --after-bytes B        cut: forward the whole request, then close both
                         sides after B bytes of the final response (status
                         line included) went to the client; B=0 closes as
                         soon as the request is sent upstream (default 0)
  --cut-request          cut: close both sides without forwarding anything
  --cut-upload-bytes B   cut: close both sides after B bytes of the request
                         body (bytes as on the wire) went upstream
  --status CODE          fail: status code (default 500)
  --message TEXT         fail: JSON {"message": TEXT} (default
                         "injected failure")
  --tls-cert PEM --tls-key PEM --tls-client-ca PEM
                         the TCP listener speaks TLS as a TLS-verifying
                         engine does: this certificate, and a client
                         certificate signed by that CA required
  --log FILE             append "METHOD PATH" per request seen,
                         "ACTION METHOD PATH" when the action fires and
                         "reply STATUS METHOD PATH" when the engine's
                         answer is complete (an upgraded or raw stream's
                         when its head arrives), whether or not the
                         client is still there to read it: a response
                         is read to its end even after the client
                         went, unless an action cuts it (a fail action's
                         answer counts as one), "dropped METHOD PATH" when
                         the connection ends before it: every request
                         line ends up with exactly one of the two
  --ready FILE           written (atomically) once listening; contains the
                         listening address(es), one per line
  --verbose              connection errors to stderr

Semantics details:
  delay  The response is held, never the request.  Responses framed by
         Content-Length (or without body) are read completely, then held S
         seconds, then sent.  Chunked responses are held until complete and
         then S more seconds, but at most S seconds after their header
         arrived: a stream (wait, events, build, pull) is then forwarded as
         it comes.  101 upgrades / read-until-close responses are held S
         seconds before their first byte is forwarded.  1xx interim
         responses (100 Continue) are never held.
  cut    Sockets are shut down (TCP client sockets are reset).  If the
         response (or request body) is shorter than B, the cut happens when
         it is complete.
  fail   The request is not forwarded; a request body is read and discarded
         (after a 100 Continue if the client expects one) and the connection
         stays usable.
  stall  The request's head is forwarded at once; its body is not read from
         the client until the --until FILE exists, then forwarded: a client
         uploading more than the sockets' buffers hold waits mid-body.
Nothing is printed on stdout.  SIGTERM/SIGINT: exits 0, removing the unix
socket and the ready file.
"""

import argparse
import http
import json
import os
import re
import signal
import socket
import ssl
import stat
import struct
import sys
import tempfile
import threading
import time
import traceback

BUFSZ = 65536
MAX_HEAD = 1 << 20
SPOOL_MEM = 16 << 20


class Abort(Exception):
    """The connection is broken or deliberately torn down."""


# --------------------------------------------------------------------------
# HTTP parsing helpers


def read_head(reader, skip_blank=False):
    """Read a start line + headers.  Returns (raw, start_line, headers) or
    None on clean EOF before the first byte."""
    lines = []
    total = 0
    while True:
        line = reader.readline(MAX_HEAD)
        if not line:
            if not lines:
                return None
            raise Abort("EOF inside message head")
        if not line.endswith(b"\n"):
            raise Abort("truncated or oversized head line")
        if not lines and line in (b"\r\n", b"\n"):
            if skip_blank:
                continue
            raise Abort("empty start line")
        lines.append(line)
        total += len(line)
        if total > MAX_HEAD:
            raise Abort("oversized head")
        if line in (b"\r\n", b"\n"):
            break
    start = lines[0].rstrip(b"\r\n").decode("latin-1")
    headers = {}
    for raw_line in lines[1:-1]:
        name, sep, value = raw_line.decode("latin-1").partition(":")
        if sep:
            headers.setdefault(name.strip().lower(), []).append(value.strip())
    return b"".join(lines), start, headers


def tokens(headers, name):
    return {t.strip().lower()
            for v in headers.get(name, ()) for t in v.split(",") if t.strip()}


def content_length(headers):
    vals = {v.strip() for v in headers.get("content-length", ())}
    if len(vals) != 1:
        raise Abort("bad Content-Length")
    n = int(vals.pop())
    if n < 0:
        raise Abort("negative Content-Length")
    return n


def relay_exact(reader, n, out):
    while n > 0:
        data = reader.read1(min(n, BUFSZ))
        if not data:
            raise Abort("EOF inside body")
        out(data)
        n -= len(data)


def relay_chunked(reader, out):
    """Forward a chunked body verbatim (framing included), piece by piece as
    it arrives, and stop exactly at its end."""
    while True:
        line = reader.readline(4096)
        if not line.endswith(b"\n"):
            raise Abort("bad chunk size line")
        out(line)
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise Abort("bad chunk size") from None
        if size == 0:
            while True:  # trailers, then the final empty line
                line = reader.readline(MAX_HEAD)
                if not line.endswith(b"\n"):
                    raise Abort("bad trailer")
                out(line)
                if line in (b"\r\n", b"\n"):
                    return
        relay_exact(reader, size, out)
        line = reader.readline(4096)
        if line not in (b"\r\n", b"\n"):
            raise Abort("bad chunk terminator")
        out(line)


def relay_until_eof(reader, out):
    while True:
        data = reader.read1(BUFSZ)
        if not data:
            return
        out(data)


# --------------------------------------------------------------------------
# Response sinks (what happens to the bytes of the final response)


class PassSink:
    """Forwards the response.  Once the client is gone the rest is read
    from the engine and dropped: a request the client gave up on runs to
    its end, and its "reply" line says when it did."""
    def __init__(self, conn):
        self.conn = conn
        self.gone = False

    def write(self, data):
        if self.gone:
            return
        try:
            self.conn.send_client(data)
        except OSError:
            self.gone = True

    def finish(self):
        pass

    def close(self):
        pass


class CutSink:
    def __init__(self, conn, limit, method, target):
        self.conn, self.limit = conn, limit
        self.method, self.target = method, target
        self.sent = 0

    def write(self, data):
        if self.sent + len(data) >= self.limit:
            n = self.limit - self.sent
            if n > 0:
                self.conn.send_client(data[:n])
            self.sent = self.limit
            self.conn.cut(self.method, self.target)
        self.conn.send_client(data)
        self.sent += len(data)

    def finish(self):
        # Response shorter than the limit: cut once it is complete.
        self.conn.cut(self.method, self.target)

    def close(self):
        pass


class DelaySink:
    """Holds the response; see module doc for the exact rule."""

    def __init__(self, conn, hold, streaming):
        self.conn, self.hold = conn, hold
        self.spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEM)
        self.released = False
        self.completed = False
        self.lock = threading.Lock()
        if streaming:
            threading.Thread(target=self._hold_then_release,
                             daemon=True).start()

    def _hold_then_release(self):
        self.hold()
        self._timer_release()

    def write(self, data):
        with self.lock:
            if self.released:
                self.conn.send_client(data)
            else:
                self.spool.write(data)

    def _flush(self):  # lock held
        self.released = True
        try:
            self.spool.seek(0)
            while True:
                chunk = self.spool.read(BUFSZ)
                if not chunk:
                    break
                self.conn.send_client(chunk)
        finally:
            self.spool.close()

    def _timer_release(self):
        with self.lock:
            if self.released or self.completed:
                return
            try:
                self._flush()
            except OSError:
                self.conn.kill()

    def finish(self):
        with self.lock:
            if self.released:
                return
            self.completed = True
        self.hold()
        with self.lock:
            self._flush()

    def close(self):
        with self.lock:
            if not self.released:
                self.released = True
                self.spool.close()


# --------------------------------------------------------------------------


class Rule:
    def __init__(self, args):
        self.regex = re.compile(args.match if args.match is not None else "")
        self.action = args.action
        self.nth = args.nth
        self.times = args.times
        self.count = 0
        self.lock = threading.Lock()

    def check(self, method, target):
        """Returns the action to apply to this request."""
        if self.action == "none":
            return "none"
        if not self.regex.search("%s %s" % (method, target)):
            return "none"
        with self.lock:
            self.count += 1
            n = self.count
        if n >= self.nth and (self.times == 0 or n < self.nth + self.times):
            return self.action
        return "none"


class Log:
    def __init__(self, path):
        self.f = open(path, "a", encoding="utf-8", errors="replace") if path else None
        self.lock = threading.Lock()

    def line(self, text):
        if self.f is None:
            return
        with self.lock:
            try:
                self.f.write(text + "\n")
                self.f.flush()
            except (OSError, ValueError):
                pass


def connect_upstream(addr):
    if addr.startswith("tcp://"):
        host, _, port = addr[6:].rstrip("/").rpartition(":")
        return socket.create_connection((host or "127.0.0.1", int(port)))
    if addr.startswith("unix://"):
        addr = addr[7:]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(addr)
    except BaseException:
        s.close()
        raise
    return s


class Conn:
    def __init__(self, proxy, csock, is_tcp):
        self.p = proxy
        self.c = csock
        self.is_tcp = is_tcp
        self.cr = None
        self.u = None
        self.ur = None
        self.wlock = threading.Lock()
        self.dlock = threading.Lock()
        self.dead = False
        self.pending = None  # the request sent on and not yet answered

    # -- socket helpers
    def send_client(self, data):
        with self.wlock:
            self.c.sendall(data)

    def kill(self, abrupt=False):
        with self.dlock:
            if self.dead:
                return False
            self.dead = True
        if abrupt and self.is_tcp:
            try:
                self.c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                  struct.pack("ii", 1, 0))
            except OSError:
                pass
        for s in (self.c, self.u):
            if s is not None:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        return True

    def cut(self, method, target):
        with self.dlock:
            first = not self.dead
        if first:
            self.p.log.line("cut %s %s" % (method, target))
        self.kill(abrupt=True)
        raise Abort("cut")

    # -- main loop
    def run(self):
        try:
            if self.is_tcp and self.p.tls is not None:
                try:
                    self.c = self.p.tls.wrap_socket(self.c, server_side=True)
                except (ssl.SSLError, OSError) as e:
                    self.p.log.line("tls-refused %s" % e.__class__.__name__)
                    raise Abort("TLS handshake") from None
            self.cr = self.c.makefile("rb", buffering=BUFSZ)
            self.u = connect_upstream(self.p.args.upstream)
            self.ur = self.u.makefile("rb", buffering=BUFSZ)
            while not self.dead and self.handle_one():
                pass
        except Abort as e:
            self.p.debug("connection closed: %s" % e)
        except (OSError, ValueError) as e:
            self.p.debug("connection error: %r" % e)
        except Exception:  # never take the proxy down
            self.p.debug(traceback.format_exc())
        finally:
            self.kill()
            for f in (self.cr, self.ur, self.c, self.u):
                if f is not None:
                    try:
                        f.close()
                    except OSError:
                        pass
            # A request whose answer never came was dropped with the
            # connection: the engine has nothing of it left in flight.
            if self.pending is not None:
                self.p.log.line("dropped %s" % self.pending)

    def handle_one(self):
        """Relay one request/response exchange.  Returns False when the
        connection must be closed afterwards."""
        head = read_head(self.cr, skip_blank=True)
        if head is None:
            return False
        raw, start, h = head
        parts = start.split(" ")
        if len(parts) != 3:
            raise Abort("bad request line %r" % start)
        method, target, version = parts
        self.p.log.line("%s %s" % (method, target))
        self.pending = "%s %s" % (method, target)
        action = self.p.rule.check(method, target)

        conn_tok = tokens(h, "connection")
        req_close = "close" in conn_tok or (
            version == "HTTP/1.0" and "keep-alive" not in conn_tok)
        if "transfer-encoding" in h:
            if "chunked" not in tokens(h, "transfer-encoding"):
                raise Abort("unsupported request Transfer-Encoding")
            kind, length = "chunked", None
        elif "content-length" in h:
            length = content_length(h)
            kind = "length" if length > 0 else "none"
        else:
            kind, length = "none", 0

        if action == "fail":
            return self.do_fail(method, target, h, kind, length, req_close)

        args = self.p.args
        cut_upload = cut_after = None
        if action == "cut":
            if args.cut_request:
                self.cut(method, target)
            if args.cut_upload_bytes is not None:
                cut_upload = args.cut_upload_bytes
            else:
                cut_after = args.after_bytes

        self.u.sendall(raw)
        if action == "stall":
            self.p.log.line("stall %s %s" % (method, target))
        body_thread = None
        if cut_upload == 0:
            self.cut(method, target)
        if kind != "none":
            body_thread = threading.Thread(
                target=self.forward_body,
                args=(kind, length, cut_upload, cut_after == 0, method, target,
                      action == "stall"),
                daemon=True)
            body_thread.start()
        elif cut_upload is not None or cut_after == 0:
            self.cut(method, target)

        try:
            keep = self.relay_response(method, target, action, cut_after,
                                       body_thread)
        except BaseException:
            self.kill()
            if body_thread is not None:
                body_thread.join(10)
            raise
        if body_thread is not None:
            body_thread.join()
        if self.dead:
            return False
        return keep and not req_close

    def forward_body(self, kind, length, cut_upload, cut_when_done, method,
                     target, stall=False):
        try:
            if stall:
                self.p.hold()
            sent = 0

            def out(data):
                nonlocal sent
                if cut_upload is not None and sent + len(data) >= cut_upload:
                    self.u.sendall(data[:cut_upload - sent])
                    sent = cut_upload
                    self.cut(method, target)
                self.u.sendall(data)
                sent += len(data)

            if kind == "length":
                relay_exact(self.cr, length, out)
            else:
                relay_chunked(self.cr, out)
            if cut_upload is not None or cut_when_done:
                self.cut(method, target)
        except Abort as e:
            self.p.debug("request body: %s" % e)
            self.kill()
        except Exception as e:
            self.p.debug("request body error: %r" % e)
            self.kill()

    def relay_response(self, method, target, action, cut_after, body_thread):
        while True:
            head = read_head(self.ur)
            if head is None:
                raise Abort("upstream closed before response")
            raw, start, h = head
            parts = start.split(" ", 2)
            try:
                status = int(parts[1])
            except (IndexError, ValueError):
                raise Abort("bad status line %r" % start) from None
            if 100 <= status < 200 and status != 101:
                self.send_client(raw)  # interim: never held nor counted
                continue
            break
        if status == 101:
            framing = "raw"
        elif method == "HEAD" or status in (204, 304):
            framing = "none"
        elif "transfer-encoding" in h:
            framing = ("chunked" if "chunked" in tokens(h, "transfer-encoding")
                       else "raw")
        elif "content-length" in h:
            framing = "length"
        else:
            framing = "raw"  # until close (hijacked raw-stream)

        if action == "delay":
            self.p.log.line("delay %s %s" % (method, target))
            if framing == "raw":
                self.p.hold()
                sink = PassSink(self)
            else:
                sink = DelaySink(self, self.p.hold, framing == "chunked")
        elif action == "cut" and cut_after is not None:
            sink = CutSink(self, cut_after, method, target)
        else:
            sink = PassSink(self)

        if framing == "raw":  # a stream with no end: answered now
            self.replied(status, method, target)
        try:
            sink.write(raw)
            if framing == "length":
                relay_exact(self.ur, content_length(h), sink.write)
            elif framing == "chunked":
                relay_chunked(self.ur, sink.write)
            elif framing == "raw":
                self.pipe_raw(sink, body_thread)
                return False
            sink.finish()
        finally:
            sink.close()
        self.replied(status, method, target)
        ver = parts[0]
        conn_tok = tokens(h, "connection")
        if "close" in conn_tok or (ver == "HTTP/1.0" and "keep-alive" not in conn_tok):
            return False
        return True

    def replied(self, status, method, target):
        """The engine's answer is complete, whether or not the client was
        still there to read it."""
        self.p.log.line("reply %d %s %s" % (status, method, target))
        self.pending = None

    def pipe_raw(self, sink, body_thread):
        """Upgraded / hijacked connection: pipe both ways until close."""
        if body_thread is not None:
            body_thread.join()
        if self.dead:
            return

        def up():
            try:
                relay_until_eof(self.cr, self.u.sendall)
                self.u.shutdown(socket.SHUT_WR)
            except (OSError, ValueError):
                self.kill()

        t = threading.Thread(target=up, daemon=True)
        t.start()
        try:
            relay_until_eof(self.ur, sink.write)
            self.c.shutdown(socket.SHUT_WR)
        except (OSError, ValueError):
            pass
        t.join(60)

    def do_fail(self, method, target, h, kind, length, req_close):
        if kind != "none":
            if "100-continue" in tokens(h, "expect"):
                self.send_client(b"HTTP/1.1 100 Continue\r\n\r\n")
            discard = lambda data: None  # noqa: E731
            if kind == "length":
                relay_exact(self.cr, length, discard)
            else:
                relay_chunked(self.cr, discard)
        args = self.p.args
        body = (json.dumps({"message": args.message},
                           separators=(",", ":")) + "\n").encode()
        try:
            phrase = http.HTTPStatus(args.status).phrase
        except ValueError:
            phrase = "Injected"
        extra = "".join("%s\r\n" % x for x in args.header)
        head = ("HTTP/1.1 %d %s\r\n"
                "Content-Type: application/json\r\n"
                "Content-Length: %d\r\n"
                "%s%s\r\n" % (args.status, phrase, len(body), extra,
                              "Connection: close\r\n" if req_close else ""))
        self.p.log.line("fail %s %s" % (method, target))
        self.pending = None
        self.send_client(head.encode() + (b"" if method == "HEAD" else body))
        return not req_close


# --------------------------------------------------------------------------


class Stop(Exception):
    pass


class Proxy:
    def __init__(self, args):
        self.tls = None
        if args.tls_cert:
            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.load_cert_chain(args.tls_cert, args.tls_key)
            self.tls.load_verify_locations(args.tls_client_ca)
            self.tls.verify_mode = ssl.CERT_REQUIRED
        self.args = args
        self.rule = Rule(args)
        self.log = Log(args.log)
        self.stopping = False

    def hold(self):
        """A delay's or a stall's wait: until the --until file exists, or
        else the --seconds."""
        if self.args.until is None:
            time.sleep(self.args.seconds)
            return
        while not os.path.exists(self.args.until):
            time.sleep(0.01)

    def debug(self, msg):
        if self.args.verbose:
            try:
                sys.stderr.write("engine-proxy: %s\n" % msg.rstrip())
                sys.stderr.flush()
            except (OSError, ValueError):
                pass

    def accept_loop(self, lsock, is_tcp):
        while not self.stopping:
            try:
                c, _ = lsock.accept()
            except OSError:
                if self.stopping:
                    return
                time.sleep(0.05)
                continue
            self.log.line("connection")
            try:
                threading.Thread(target=Conn(self, c, is_tcp).run,
                                 daemon=True).start()
            except Exception as e:  # e.g. cannot start thread
                self.debug("cannot start connection thread: %r" % e)
                c.close()


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Fault-injecting HTTP/1.1 proxy for the Docker Engine API")
    ap.add_argument("--listen", metavar="PATH")
    ap.add_argument("--listen-tcp", metavar="HOST:PORT")
    ap.add_argument("--upstream", default="/var/run/docker.sock")
    ap.add_argument("--match", metavar="REGEX")
    ap.add_argument("--nth", type=int, default=1)
    ap.add_argument("--times", type=int, default=1)
    ap.add_argument("--action", choices=("none", "delay", "cut", "fail",
                                         "stall"),
                    default="none")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--until", metavar="FILE")
    ap.add_argument("--after-bytes", type=int, default=0)
    ap.add_argument("--cut-request", action="store_true")
    ap.add_argument("--cut-upload-bytes", type=int)
    ap.add_argument("--status", type=int, default=500)
    ap.add_argument("--message", default="injected failure")
    ap.add_argument("--header", action="append", default=[],
                    metavar="NAME: VALUE",
                    help="with fail: an extra reply header (repeatable)")
    ap.add_argument("--tls-cert", metavar="PEM")
    ap.add_argument("--tls-key", metavar="PEM")
    ap.add_argument("--tls-client-ca", metavar="PEM")
    ap.add_argument("--log", metavar="FILE")
    ap.add_argument("--ready", metavar="FILE")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args(argv)
    if not a.listen and not a.listen_tcp:
        ap.error("one of --listen PATH or --listen-tcp HOST:PORT is required")
    if a.cut_request or a.cut_upload_bytes is not None:
        if a.action == "none":
            a.action = "cut"
        elif a.action != "cut":
            ap.error("--cut-request/--cut-upload-bytes need --action cut")
    if a.cut_request and a.cut_upload_bytes is not None:
        ap.error("--cut-request and --cut-upload-bytes are exclusive")
    if a.action == "stall" and a.until is None:
        ap.error("--action stall needs --until FILE")
    if a.nth < 1 or a.times < 0 or a.after_bytes < 0 or a.seconds < 0 or (
            a.cut_upload_bytes is not None and a.cut_upload_bytes < 0):
        ap.error("negative or zero count")
    if not 100 <= a.status <= 999:
        ap.error("--status must be a 3-digit code")
    try:
        re.compile(a.match or "")
    except re.error as e:
        ap.error("bad --match: %s" % e)
    return a


def main(argv):
    args = parse_args(argv)
    proxy = Proxy(args)

    def on_signal(signum, frame):
        raise Stop()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)

    listeners = []
    unix_path = None
    unix_ino = None
    addrs = []
    rc = 0
    try:
        if args.ready:
            try:
                os.unlink(args.ready)
            except FileNotFoundError:
                pass
        if args.listen:
            path = args.listen
            try:
                if stat.S_ISSOCK(os.lstat(path).st_mode):
                    os.unlink(path)  # stale socket
            except FileNotFoundError:
                pass
            tmp = "%s.%d.tmp" % (path, os.getpid())
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            ls.bind(tmp)
            ls.listen(512)
            os.rename(tmp, path)  # appears only once it accepts connections
            unix_path, unix_ino = path, os.lstat(path).st_ino
            listeners.append((ls, False))
            addrs.append(path)
        if args.listen_tcp:
            host, _, port = args.listen_tcp.rpartition(":")
            ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind((host or "127.0.0.1", int(port)))
            ls.listen(512)
            listeners.append((ls, True))
            h, p = ls.getsockname()[:2]
            addrs.append("%s:%d" % (h, p))
        for ls, is_tcp in listeners:
            threading.Thread(target=proxy.accept_loop, args=(ls, is_tcp),
                             daemon=True).start()
        if args.ready:
            tmp = "%s.%d.tmp" % (args.ready, os.getpid())
            with open(tmp, "w") as f:
                f.write("".join(a + "\n" for a in addrs))
            os.replace(tmp, args.ready)
        while True:
            time.sleep(3600)
    except Stop:
        pass
    except Exception as e:
        rc = 1
        sys.stderr.write("engine-proxy: %s\n" % e)
    finally:
        proxy.stopping = True
        for ls, _ in listeners:
            try:
                ls.close()
            except OSError:
                pass
        if unix_path:
            try:
                if os.lstat(unix_path).st_ino == unix_ino:
                    os.unlink(unix_path)
            except OSError:
                pass
        if args.ready:
            try:
                os.unlink(args.ready)
            except OSError:
                pass
        if proxy.log.f:
            try:
                proxy.log.f.flush()
            except (OSError, ValueError):
                pass
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
    os._exit(rc)


if __name__ == "__main__":
    main(sys.argv[1:])
