#!/usr/bin/env python3
"""make-seeds.py: writes the seed corpora of the tar, JSON, agent-stream,
path, listing, secret and HTTP framing harnesses under tests/fuzz/corpus/ (committed; run again only to
change them).  Each seed is a well-formed input, or one broken in one
place, so that fuzzing starts next to every branch the reader has."""
import io
import json
import os
import sys
import tarfile

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(kind, name, data):
    d = os.path.join(root, kind)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def tar(fmt, entries):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=fmt) as t:
        for name, kind, arg in entries:
            i = tarfile.TarInfo(name)
            i.mtime = 0
            if kind == "file":
                i.size = len(arg)
                t.addfile(i, io.BytesIO(arg))
                continue
            if kind == "dir":
                i.type = tarfile.DIRTYPE
            elif kind == "sym":
                i.type, i.linkname = tarfile.SYMTYPE, arg
            elif kind == "hard":
                i.type, i.linkname = tarfile.LNKTYPE, arg
            elif kind == "fifo":
                i.type = tarfile.FIFOTYPE
            t.addfile(i)
    return b.getvalue()


def tars():
    plain = [("work", "dir", None), ("work/a.txt", "file", b"hello\n"),
             ("work/l", "sym", "a.txt"), ("work/h", "hard", "work/a.txt")]
    put("tarread", "ustar.tar", tar(tarfile.USTAR_FORMAT, plain))
    long = "d/" + "x" * 150 + "/f"
    put("tarread", "gnu-long.tar", tar(tarfile.GNU_FORMAT, [
        (long, "file", b"1" * 700), ("s", "sym", "y" * 200)]))
    put("tarread", "pax.tar", tar(tarfile.PAX_FORMAT, [
        (long, "file", b"2" * 513), ("\u00e9t\u00e9", "file", b""),
        ("p", "sym", "z" * 300)]))
    put("tarread", "fifo.tar", tar(tarfile.USTAR_FORMAT,
                                   [("f", "fifo", None)]))
    put("tarread", "empty.tar", b"\0" * 1024)
    good = tar(tarfile.USTAR_FORMAT, plain)
    put("tarread", "truncated.tar", good[:700])
    bad = bytearray(good)
    bad[150] ^= 1                    # the first header's checksum
    put("tarread", "checksum.tar", bytes(bad))
    size = bytearray(tar(tarfile.USTAR_FORMAT,
                         [("f", "file", b"abc")]))
    size[124:136] = b"\x80" + b"\0" * 10 + b"\x03"   # base-256 size
    put("tarread", "base256.tar", bytes(size))


def jsons():
    seeds = {
        "engine-inspect": b'{"Id":"ab","State":{"Running":true,"Pid":42},'
                          b'"Config":{"Labels":{"org.agentbox.state":"s"},'
                          b'"Env":["A=1"]},"HostConfig":{"Memory":1e3}}',
        "escapes": b'["\\u00e9\\ud83d\\ude00\\n\\t\\"\\\\\\/", "a\\u0041"]',
        "numbers": b'[0,-1,1.5e10,-0.0,9223372036854775807,1E-5]',
        "nested": b'{"a":[{"b":[[[{}]]]},null,true,false]}',
        "dupkey": b'{"a":1,"a":2}',
        "nul": b'{"s":"\\u0000"}',
        "nul-text": b'["a\\u0000b\\u0000c\\n", "\\u0000\\u00e9\\u0000",'
                    b' "a"]',
        "nul-keys": b'{"k\\u0000":1,"k":2,"k\\u0000x":{"\\u0000":"\\u0000"}}',
        "nul-dupkey": b'{"a\\u0000":1,"a\\u0000":2}',
        "lone-surrogate": b'"\\ud800"',
        "trailing": b'{} {}',
        "deep": b'[' * 70 + b']' * 70,
        "bad-utf8": b'"\xff\xfe"',
    }
    for k, v in seeds.items():
        put("json", k, v)


def agents():
    claude = (b'{"type":"system","subtype":"init"}\n'
              b'{"type":"assistant","message":{"content":[{"type":"text",'
              b'"text":"hi"}]}}\n'
              b'{"type":"result","subtype":"success","is_error":false,'
              b'"num_turns":2,"result":"{\\"answer\\":\\"x\\"}",'
              b'"usage":{"input_tokens":3,"output_tokens":4},'
              b'"total_cost_usd":0.01,"permission_denials":[{"tool_name":'
              b'"Bash","tool_input":{"command":"rm -rf /"}}]}\n')
    codex = (b'{"type":"thread.started","thread_id":"t"}\n'
             b'{"type":"item.completed","item":{"id":"item_1","type":'
             b'"agent_message","text":"{\\"answer\\":\\"y\\",\\"n\\":1}"}}\n'
             b'{"type":"turn.completed","usage":{"input_tokens":10,'
             b'"output_tokens":5}}\n')
    failed = (b'{"type":"error","message":"Reconnecting... 1/2"}\n'
              b'{"type":"turn.failed","error":{"message":'
              b'"unexpected status 401 Unauthorized: no"}}\n')
    # First byte: bit 0 codex, bit 1 a schema; second: the piece size.
    put("agent", "claude", b"\x00\x07" + claude)
    put("agent", "claude-schema", b"\x02\x01" + claude)
    put("agent", "codex-schema", b"\x03\x05" + codex)
    put("agent", "codex-failed", b"\x01\x02" + failed)
    put("agent", "cut", b"\x00\x03" + claude[:150])
    put("agent", "not-json", b"\x01\x09" + b"garbage\n{\n\xff\n")
    steps = (b'{"type":"assistant","message":{"content":[{"type":"tool_use",'
             b'"id":"t1","name":"Bash","input":{"command":"echo \\u001b[31m'
             b'sk-fuzz-0123456789"}},{"type":"tool_use","id":"t2","name":'
             b'"Write","input":{"file_path":"/work/a","content":"x"}}]}}\n'
             b'{"type":"system","subtype":"permission_denied","tool_name":'
             b'"Bash","tool_use_id":"t1"}\n'
             b'{"type":"result","subtype":"error_during_execution",'
             b'"is_error":true,"result":"API Error: 500"}\n')
    csteps = (b'{"type":"item.started","item":{"type":"command_execution",'
              b'"id":"c1","status":"in_progress","command":"git status"}}\n'
              b'{"type":"item.completed","item":{"type":"command_execution",'
              b'"id":"c1","status":"declined","command":"git status"}}\n'
              b'{"type":"item.completed","item":{"type":"file_change",'
              b'"id":"f1","status":"completed","changes":[{"path":"/work/a",'
              b'"kind":"update","move_path":"/work/b"},{"path":"/work/c",'
              b'"kind":"add"}]}}\n'
              b'{"type":"item.completed","item":{"type":"request",'
              b'"status":"declined","method":"item/permissions/'
              b'requestApproval"}}\n')
    put("agent", "claude-steps", b"\x00\x04" + steps)
    # A binary file's cat: its NULs as the CLIs escape them.
    nul = (b'{"type":"assistant","message":{"content":[{"type":"tool_use",'
           b'"id":"t1","name":"Bash","input":{"command":"printf a\\u0000b"}'
           b'}]}}\n'
           b'{"type":"user","message":{"content":[{"type":"tool_result",'
           b'"tool_use_id":"t1","content":"a\\u0000b\\u0000c\\n"}]}}\n'
           b'{"type":"result","subtype":"success","is_error":false,'
           b'"num_turns":2,"result":"a\\u0000b"}\n')
    cnul = (b'{"type":"item.started","item":{"type":"command_execution",'
            b'"id":"c1","status":"in_progress","command":"cat bin.dat"}}\n'
            b'{"type":"item.completed","item":{"type":"command_execution",'
            b'"id":"c1","status":"completed","command":"cat bin.dat",'
            b'"aggregated_output":"a\\u0000b\\u0000c\\n","exit_code":0}}\n'
            b'{"type":"item.completed","item":{"id":"item_1","type":'
            b'"agent_message","text":"a\\u0000b"}}\n'
            b'{"type":"turn.failed","error":{"message":"bad\\u0000byte"}}\n')
    put("agent", "claude-nul", b"\x00\x05" + nul)
    put("agent", "codex-nul", b"\x01\x03" + cnul)
    put("agent", "codex-steps", b"\x01\x06" + csteps + failed)


def progress():
    # First byte: the credential's length, its bytes next, each taken as
    # one of the characters keys are made of (as the harness maps them);
    # then the text.
    chars = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
    key = bytes(chars[i * 7 % len(chars)] for i in range(33))
    put("progress", "key", bytes([len(key)]) + key + b"echo " + key)
    put("progress", "escapes", b"\x00" + b"a\x1b[31mb\x1b]0;t\x07c\x1bPq"
        b"\x1b\\d\x1b[12\xc2\x9b\xe2\x80\xae\t\n\x7f\xff\xed\xa0\x80")
    put("progress", "long", b"\x08" + b"ABCDEFGH" + b"x" * 195 + b"ABCDEFGH" +
        "\u00e9".encode() * 50)
    put("progress", "split", bytes([len(key)]) + key + b"cat " + key[:10] +
        b"\x1b[0m" + key[10:])


def paths():
    seeds = {
        "plain": b"a/b/c\0../x",
        "dotgit": b"a/.GIT/c\0x",
        "ntfs": b"git~1/x\0.git::$INDEX_ALLOCATION",
        "hfs": b".g\xe2\x80\x8cit\0a",
        "climb": b"a/l\0../../etc/passwd",
        "absolute": b"/etc\0/etc",
        "dots": b"a/./b\0./././x/..",
        "control": b"a\x01b\0c\\d",
        "trailing": b"a/\0b/",
        "long": b"a/" + b"n" * 300 + b"\0" + b"../" * 20,
    }
    for k, v in seeds.items():
        put("pathcheck", k, v)


def appserver():
    """ab-codex's reader: raw transcripts (first byte even, then the
    piece size) in the shapes Codex 0.163.0's app-server writes, and path
    lists (first byte odd) for the harness's own file changes."""
    def msg(method, params, rid=None):
        m = {"method": method, "params": params}
        if rid is not None:
            m["id"] = rid
        return json.dumps(m).encode() + b"\n"
    fc = {"type": "fileChange", "id": "f", "status": "inProgress",
          "changes": [{"path": "/work/a", "kind": {"type": "add"},
                       "diff": "a"},
                      {"path": "/work/f", "kind": {"type": "update",
                                                   "move_path": "/work/d/g"},
                       "diff": "b"}]}
    turn = (msg("remoteControl/status/changed", {"status": "disabled"}) +
            msg("item/started", {"threadId": "t", "item": fc}) +
            msg("item/fileChange/patchUpdated",
                {"threadId": "t", "itemId": "f", "changes": fc["changes"]}) +
            msg("item/fileChange/requestApproval",
                {"threadId": "t", "itemId": "f", "grantRoot": None}, 0) +
            msg("item/completed", {"threadId": "t", "item": dict(
                fc, status="completed")}) +
            msg("item/commandExecution/requestApproval",
                {"threadId": "t", "itemId": "c", "kind": "command",
                 "command": "/bin/sh -c 'rm -rf /'", "cwd": "/work"}, 1) +
            msg("item/completed", {"threadId": "t", "item": {
                "type": "commandExecution", "id": "c", "status": "declined",
                "command": "rm"}}) +
            msg("item/permissions/requestApproval", {"threadId": "t"}, 2) +
            msg("mcpServer/elicitation/request", {"threadId": "t"}, "r3") +
            msg("thread/tokenUsage/updated", {"threadId": "t", "tokenUsage": {
                "total": {"inputTokens": 1, "outputTokens": 2}}}) +
            msg("item/completed", {"threadId": "t", "item": {
                "type": "agentMessage", "id": "m", "text": "done"}}) +
            msg("turn/completed", {"threadId": "t", "turn": {
                "id": "u", "status": "completed", "items": []}}))
    put("appserver", "turn", b"\x00\x07" + turn)
    put("appserver", "failed", b"\x00\x01" + msg("error", {
        "threadId": "t", "error": {"message": "unexpected status 401"}}) +
        msg("turn/completed", {"threadId": "t", "turn": {
            "id": "u", "status": "failed", "error": {"message": "x"}}}))
    put("appserver", "other-thread", b"\x00\x03" + msg(
        "item/fileChange/requestApproval", {"threadId": "u"}, 4))
    put("appserver", "garbage", b"\x00\x02{\n[]\n\xff\n")
    put("appserver", "nul", b"\x00\x05" + msg("item/completed", {
        "threadId": "t", "item": {
            "type": "commandExecution", "id": "c", "status": "completed",
            "command": "cat bin.dat", "aggregatedOutput": "a\0b\0c\n",
            "exitCode": 0}}) + msg("item/started", {"threadId": "t", "item": dict(
                fc, id="g", changes=[{"path": "/work/a\0b",
                                      "kind": {"type": "add"}, "diff": ""}])}) +
        msg("item/fileChange/requestApproval",
            {"threadId": "t", "itemId": "g"}, 5) +
        msg("item/started", {"threadId": "t\0", "item": {
            "type": "agentMessage", "id": "m\0"}}))
    put("appserver", "paths", b"\x01" + b"\0".join([
        b"/work/a/b", b"/work/.git/x", b"/work/l/x", b"/tmp/x",
        b"/work/../x", b"/work/.CODEX/y", b"/work/f/x", b"/work/d"]))


def listings():
    def names(*runs):
        return b"".join((b"/work" + n + b"\0") * k for n, k in runs) + b"\0"
    root = (b"", 3)
    put("listing", "kinds", names(root, (b"/a", 1), (b"/d", 3), (b"/d/s", 2),
                                  (b"/l", 4)) + b"5 1 7\n")
    put("listing", "links", names(root, (b"/\xffx", 1), (b"/h1", 1),
                                  (b"/h2", 1)) +
        b"0 1 3\n4096 2 9\n4096 2 9\n")
    put("listing", "empty", names(root))
    put("listing", "newline", names(root, (b"/a\nb", 1)) + b"1 1 2\n")
    put("listing", "short", names(root, (b"/a", 1)))
    put("listing", "outside", names((b"/etc", 1)))


def secrets():
    """The substitution: a byte giving N - 1, FROM, TO, a byte giving how
    many piece sizes follow, the sizes, the stream (also taken as a
    credential for a placeholder)."""
    def sub(name, frm, to, sizes, stream):
        assert len(frm) == len(to) and 1 <= len(frm) <= 32
        put("secret", name, bytes([len(frm) - 1]) + frm + to +
            bytes([len(sizes)]) + bytes(sizes) + stream)
    key = b"sk-ant-api03-AbCdEf0123_x-Yz9"
    ph = b"sk-ant-api03-QrStUv4567_m-Kp2"
    echo = b'data: {"error":"invalid x-api-key ' + key + b'"}\n\n'
    sub("echo", key, ph, [1, 5, 17, 0, 3], echo * 2 + key[:11])
    sub("header", key, ph, [40], b"HTTP/1.1 401\r\nx-echo: " + key +
        b"\r\nx-part: " + key[:-1] + b"\r\n\r\n" + key + key)
    sub("overlap", b"aa", b"XY", [1], b"aaaaabaaa")
    sub("self", b"abaab", b"VWXYZ", [2, 3], b"abaabaabaababaab")
    sub("one", b"k", b"K", [0, 1, 2], b"kkxkk")
    sub("empty-feeds", b"SECRET", b"PLACEH", [0, 0, 0], b"xSECRETy")
    sub("long", bytes(range(65, 97)), bytes(range(97, 129)), [7, 100, 255],
        (b"filler " * 40 + bytes(range(65, 97))) * 6 + bytes(range(65, 90)))
    sub("cred-proj", b"z", b"y", [], b"sk-proj-Ab3_cD-9.xyz")
    sub("cred-oat", b"z", b"y", [], b"sk-ant-oat01-Q")
    sub("cred-space", b"z", b"y", [], b"sk-ant-api03-abc def\n")
    sub("cred-bare", b"z", b"y", [], b"sk-ant-api03-")


def httpmsgs():
    # The first byte: 0 requests, 1 responses (bits 2-3 the method: GET,
    # HEAD, POST, CONNECT), 2 a chunked body alone; the second seeds the
    # pieces the framer is fed in and the round trip's OWS.
    host = b"Host: api.example\r\n"

    def req(first, fields=b"", body=b"", version=b"HTTP/1.1"):
        return first.replace(b"V", version) + b"\r\n" + host + fields + \
            b"\r\n" + body
    seeds = {
        "get": req(b"GET /v1/models V"),
        "pipelined": req(b"POST /a V", b"Content-Length: 5\r\n", b"hello") +
        req(b"POST /b V", b"Transfer-Encoding: chunked\r\n",
            b"3;x=y;q=\"a\\\"b\"\r\nabc\r\n0\r\nT-Sum: 1\r\n\r\n") +
        req(b"GET /c V", b"Connection: close\r\n"),
        "continue": req(b"POST /v1/messages V",
                        b"Expect: 100-continue\r\nContent-Length: 2\r\n",
                        b"{}"),
        "upgrade": req(b"GET /ws V", b"Connection: Upgrade\r\n"
                       b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"),
        "http10": b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
                  b"GET / HTTP/1.0\r\n\r\n",
        "both": req(b"POST / V", b"Content-Length: 4\r\n"
                    b"Transfer-Encoding: chunked\r\n", b"0\r\n\r\n"),
        "fold": req(b"GET / V", b"X: a\r\n b\r\n"),
        "bare-lf": b"GET / HTTP/1.1\nHost: a\n\n",
        "gzip": req(b"POST / V", b"Transfer-Encoding: gzip, chunked\r\n"),
        "lengths": req(b"POST / V", b"Content-Length: 1\r\n"
                       b"Content-Length: 1\r\n", b"x"),
        "lookalike": req(b"POST / V", b"Transfer_Encoding: chunked\r\n"),
        "preface": b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        "absolute": req(b"GET http://api.example/ V"),
        "connect": req(b"CONNECT api.example:443 V"),
        "many": req(b"GET / V", b"".join(b"X-%d: %d\r\n" % (i, i)
                                         for i in range(99))),
        "options": req(b"GET / V", b"Connection: keep-alive, , Close\r\n"
                       b"Connection: content-length\r\n"),
        "big-length": req(b"POST / V", b"Content-Length: 9223372036854775807"
                          b"\r\n", b"abc"),
    }
    for i, (k, v) in enumerate(sorted(seeds.items())):
        put("httpmsg", "req-" + k, bytes([0, i]) + v)
    get, head, post, connect = 1, 1 | 4, 1 | 8, 1 | 12
    resps = {
        "continue": (post, b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 "
                     b"Created\r\nContent-Length: 2\r\n\r\nok"),
        "chunked": (get, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked"
                    b"\r\n\r\n5;ext\r\nhello\r\n0\r\nX: 1\r\n\r\n"
                    b"HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n"),
        "head": (head, b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n"
                 b"HTTP/1.1 204 No Content\r\n\r\n"),
        "not-modified": (get, b"HTTP/1.1 304 Not Modified\r\n"
                         b"Content-Length: 9\r\n\r\n"),
        "switching": (get, b"HTTP/1.1 101 Switching Protocols\r\n"
                      b"Upgrade: websocket\r\nConnection: upgrade\r\n\r\n"
                      b"\x81\x05hello"),
        "to-close": (get, b"HTTP/1.0 200 OK\r\nServer: x\r\n\r\nall of it"),
        "connect": (connect, b"HTTP/1.1 200 Connection established\r\n\r\n"
                    b"\x16\x03\x01"),
        "both": (get, b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
    }
    for i, (k, (first, v)) in enumerate(sorted(resps.items())):
        put("httpmsg", "resp-" + k, bytes([first, i]) + v)
    bodies = {
        "simple": b"5\r\nhello\r\n0\r\n\r\n",
        "extensions": b"5 ; a = b ;c=\"d\\\"e\" ;f\r\nhello\r\n"
                      b"A\r\n0123456789\r\n000;z\r\n\r\n",
        "trailers": b"1\r\nx\r\n0\r\nA: 1\r\nB:\t2 \r\n\r\nnext",
        "largest": b"7fffffffffffffff\r\nabc",
        "overflow": b"8000000000000000\r\n",
        "zeros": b"0000000000000000000001\r\nx\r\n0\r\n\r\n",
        "bare-lf": b"5\nhello\n0\n\n",
        "long-line": b"1;" + b"e" * 1020 + b"\r\nx\r\n0\r\n\r\n",
        "long-trailer": b"0\r\nX: " + b"v" * (16 * 1024 - 7) + b"\r\n\r\n",
        "cut": b"a\r\n01234",
    }
    for i, (k, v) in enumerate(sorted(bodies.items())):
        put("httpmsg", "chunked-" + k, bytes([2, i]) + v)


if __name__ == "__main__":
    tars()
    jsons()
    agents()
    progress()
    paths()
    appserver()
    listings()
    secrets()
    httpmsgs()
    sys.exit(0)
