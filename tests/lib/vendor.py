#!/usr/bin/env python3
"""vendor.py: the tests' own stand-in for a vendor's endpoint, reached by
agents through the allocation's egress proxy under the vendor's real name.

  vendor.py --listen ADDR --ready FILE [--cert PEM --key PEM] [--mode M]
            [--script FILE] [--log FILE] [--auth-json FILE]
            [--claude-auth-json FILE]

Listens on ADDR (port 0: any), writes the port to FILE once it listens.
With --cert it speaks TLS (the certificate of a test CA that the test hands
to agentbox with --ca).  Modes:
  hello      read one line, answer "vendor saw: LINE" and close
  echo       send back every byte until the client ends
  sink       read and drop every byte until the client ends, then close
  tarpit     never read: with a 4 KiB receive buffer, what a client sends
             piles up on the client's side (its proxy's memory)
  anthropic  the Anthropic Messages API as Claude Code (2.1.332) uses it:
             HTTP/1.1 with keep-alive, one thread a connection, answers to
             POST /v1/messages streamed as server-sent events (chunked, one
             flush an event), each main turn's answer the next step of the
             scenario --script; every request logged to --log; with an
             API key or a claude.ai sign-in (platform.claude.com pinned to
             this server too): see "The claude.ai sign-in" below
  openai     the OpenAI Responses API as Codex CLI (0.163.0) uses it, with
             an API key (api.openai.com) or a ChatGPT sign-in (chatgpt.com
             and auth.openai.com pinned to this server): the same plumbing
             and the same kind of scenario; see "The openai mode" below
Test helper only: it never stands in for the engine, and the CLI that talks
to it is the real one.

The scenario (--script FILE) is a JSON object:
  {"turns": [STEP, ...],   the main turns' answers, in order
   "classifier": V,        auto mode's server-side check (below); no verdict
                           when absent
   "side": TEXT,           every side request's answer ("ok")
   "can_fetch": BOOL,      WebFetch's domain preflight (true)
   "remote_settings": OBJ, served as the organisation's managed settings at
                           /api/claude_code/settings ({"settings": OBJ}),
                           which Claude Code fetches from its vendor: a
                           hostile vendor's way to widen permissions
   "token": {"expires_in": N, "refresh": R}}
                           the claude.ai sign-in (below); without it any
                           credential is taken
Each main-turn request consumes the next STEP; once they run out every main
turn is answered with the text "done" (logged as {"text": "done",
"default": true}).  A STEP is one of:
  {"text": "..."}                  a text answer, stop_reason end_turn
  {"tool": NAME, "input": {...}}   one tool_use block (any name: Bash, Read,
                                   StructuredOutput, WebFetch...), its input
                                   streamed as two input_json_delta pieces,
                                   stop_reason tool_use; "id" optional
  {"tools": [{"tool": NAME, "input": {...}}, ...]}
                                   as many tool_use blocks in one answer,
                                   each streamed so: parallel tool calls
  {"status": N}                    HTTP N with the API's error body
                                   {"type":"error","error":{"type":T,
                                   "message":M}}, T from N (401
                                   authentication_error, 500 api_error, 429
                                   rate_limit_error, 529 overloaded_error,
                                   ...); "message" optional; "retry": false
                                   adds x-should-retry: false
  {"cut": true}                    message_start, a text block's start and
                                   half an event, then the connection is
                                   shut mid-event
  {"hang": true}                   headers and message_start, then nothing
                                   until the client goes
  {"big": N}                       a text answer of exactly N bytes (ASCII)
and may also carry "times": K (answer K main turns, 0: every one left;
1 by default: a retried request takes the next step), "delay": SECONDS
(slept before a text or tool answer) and "classifier": V (this turn's
verdict, over the scenario's).

Main turn or side request.  Claude Code's main loop always offers tools:
the ones --tools leaves (Read, Grep, Glob...), with --json-schema also
StructuredOutput, and with tool search on a "DeferredToolPlaceholder" that
has defer_loading.  Its side requests (WebFetch's summary of a page, on the
small model; title and summary generators) carry the anthropic-beta
claude-code-side-query-* and an empty or no tools list.  So a request is
the main turn when it does not carry that beta and has a non-empty tools
list; every other request to /v1/messages is a side request, answered with
the scenario's "side" text, consuming no step.

The permission classifier.  In --permission-mode auto and plan, Claude Code
asks the API itself to judge each tool call: the main-turn request carries
anthropic-beta dangerous-tool-use-2026-09-03 and a body field
  "safeguards": [{"type": "dangerous_tool_use",
                  "classifier_context": {"permission_mode": "auto", ...}}]
and expects the verdict in the stream's message_delta:
  "delta": {"stop_reason": ..., "safeguard_results": [{"type":
   "dangerous_tool_use", "status": {"type": "available", "tool_uses":
   {TOOL_USE_ID: {"type": "evaluated", "outcome": "not_flagged"}}}}]}
There is no local classifier request in this version.  V "allow" answers
not_flagged (the call runs, in plan mode too), "block" flagged with an
explanation (denied: the tool_result quotes it), "unsupported" status
unsupported; with no V the response carries no safeguard_results and the
CLI denies the call as "Auto mode is unavailable".  Requests without
safeguards never get a verdict.

Other requests: GET /api/web/domain_info?domain=D (WebFetch's preflight)
gets {"can_fetch": true}, so that the fetch itself meets the egress proxy;
POST /v1/messages/count_tokens an estimate; the sign-in's requests (below);
anything else (/api/hello, /api/claude_code/settings, policy_limits, event
logging...) a 404 with the API's error body.  A /v1/messages body with
Content-Encoding: gzip (what Claude Code sends when no HTTPS proxy is
set, as when run on a host) is decompressed.

The claude.ai sign-in.  --claude-auth-json FILE writes (mode 0600, before
the port file) a .credentials.json for $CLAUDE_CONFIG_DIR as Claude Code
expects it:
  {"claudeAiOauth": {"accessToken": "sk-ant-oat01-...",
   "refreshToken": "sk-ant-ort01-...", "expiresAt": MS, "scopes": [...],
   "subscriptionType": "max", "rateLimitTier": "default_claude_max_20x"}}
the tokens opaque (the prefix and 95 characters), the access token
expiring in token.expires_in seconds (3600 by default), expiresAt in
milliseconds.  Claude Code sends "Authorization: Bearer ACCESS" (and the
anthropic-beta oauth-2025-04-20 on /v1/messages) and refreshes when
expiresAt is less than five minutes away (before its first request) or
after a 401 from /v1/messages or /v1/mcp_servers (not from the profile):
POST https://platform.claude.com/v1/oauth/token with JSON
{"grant_type": "refresh_token", "refresh_token", "client_id", "scope"}.
A refresh token this vendor.py issued gets 200 {"token_type": "Bearer",
"access_token", "expires_in": 3600, "refresh_token" (a new one),
"scope", "organization": {"uuid", "name"}, "account": {"uuid",
"email_address"}} (Claude Code writes expiresAt = now + expires_in back
to the file) when token.refresh is "allow" (the default); with
"reuse-error" one presented a second time gets 400 {"error":
"invalid_grant", "error_description": ...}, with "reused" every one
does, and so does one this vendor.py never issued (Claude Code then
blanks the file's tokens and ends the run: "OAuth session expired and
could not be refreshed").  With "token" set, a /v1/messages request
whose bearer is not a live access token issued here gets 401
authentication_error (Claude Code refreshes and sends it again), and so
do GET /api/oauth/profile and /v1/mcp_servers (the claude.ai connectors,
fetched at start); for a live one those two answer a Max account's
profile and no connectors (without "token", any other bearer a 404).  POST
/v1/oauth/token/revoke ({"token", "token_type_hint", "client_id"}: claude
auth logout) answers 200 and forgets that refresh token.

The log (--log FILE): one JSON object a line, for every request:
  method, path, answer (what a request other than /v1/messages got), and
  for /v1/messages:
  model, stream, main (bool), kind ("main" or "side"),
  tools      the names of tools[] in the order sent
  deferred   those of them with defer_loading (tool search's placeholder)
  x_api_key, authorization   whether that header came: booleans only,
             never a value
  bearer     "none", "api-key" (x-api-key and no Authorization), or
             Authorization's "valid" / "expired" (an access token this
             vendor.py issued) or "unknown"; never a value (also on
             /api/oauth/profile and /v1/mcp_servers)
  content_encoding  the body's, when compressed
  credential "real" when the credential header holds the key that
             --credential FILE names ("real-2" for a second --credential,
             and so on), "other" or "none" (openai mode too)
POST /v1/probe logs what it carried (credential, the x-probe header, the
body's first 400 characters, the path with its query); /v1/echo as well,
then answers the real credential in an X-Echo header and split across
two chunks of the body ("key=" + it + ";").  POST /v1/bulk?n=N answers N
bytes in chunks of 64 KiB and logs nothing (bench/inject.sh).
  tool_results  [{tool_use_id, is_error, text}] of the messages after the
             last assistant message, text cut to 500 characters
  safeguards the classifier_context's permission_mode, when asked for
  verdict    the classifier verdict sent, if any
  step       the STEP answered ({"big": N} without the text); a side
             request's as {"side": TEXT}
  answer     401 when the sign-in refused the bearer (no step consumed)
and for /v1/oauth/token: host, grant_type, client_id, scope,
refresh_token (whether one came), refresh ("fresh", "reused" or
"unknown"), answer; for /v1/oauth/token/revoke: host, token_type_hint,
client_id, token (whether one came), known (one of ours), answer.

The openai mode.  Codex posts each model request to /v1/responses (API
key: "Authorization: Bearer KEY") or, signed in to ChatGPT, to
/backend-api/codex/responses (the access token and a ChatGPT-Account-Id
header; through the built-in provider the body zstd-compressed, which
vendor.py decompresses), streamed
back as server-sent events: response.created, response.in_progress, per
output item response.output_item.added, its deltas
(response.content_part.added, response.output_text.delta/.done,
response.content_part.done; response.function_call_arguments.delta/.done;
response.custom_tool_call_input.delta/.done) and response.output_item.done,
then response.completed with usage.  Codex keeps no state on the server
(store: false): every request carries the whole conversation in "input",
the results of the previous answer's calls as function_call_output (or
custom_tool_call_output) items.  Its first attempt is a WebSocket (GET
with Upgrade: websocket on the same path, built-in provider or
supports_websockets): vendor.py refuses it with 426, after which Codex
falls back to HTTPS at once ("websocket": 404 instead makes it retry the
WebSocket six more times, about six seconds, first).

The tools.  Codex's default model in 0.163.0 is a code-mode model: its
tools come as an "additional_tools" input item, namespaces of tools, of
which functions.exec is a freeform tool taking JavaScript that calls
tools.exec_command({cmd}), tools.apply_patch(PATCH)... in Codex's own
host; a classic model (-m gpt-5.5) gets tools[]: exec_command {cmd,
workdir, sandbox_permissions, prefix_rule...}, apply_patch (freeform),
write_stdin, view_image...  A request that offers tools is a main turn;
one that offers none (compaction, request_kind "compaction") is a side
request, answered with the scenario's "side" text.

The openai scenario (--script FILE):
  {"turns": [STEP, ...],   the main turns' answers, in order
   "side": TEXT,           every side request's answer ("ok")
   "websocket": 426|404,   the answer to a WebSocket upgrade (426)
   "token": {"expires_in": N, "refresh": R}}
                           the ChatGPT sign-in (below); without it any
                           bearer is taken
Each main-turn request consumes the next STEP, and "done" when they run
out, as in anthropic mode.  A STEP is one of:
  {"text": "..."}                  an assistant message
  {"shell": CMD, "args": {...}}    the call that runs the shell command CMD
                                   on the requested model: for code mode an
                                   exec call, JavaScript that awaits
                                   tools.exec_command({cmd: CMD, ...ARGS})
                                   and returns its result; for a classic
                                   model the exec_command function call
                                   {"cmd": CMD, ...ARGS} (ARGS optional:
                                   sandbox_permissions, justification,
                                   prefix_rule, login, shell, workdir...)
  {"tool": NAME, "input": X}       a raw call: X an object is a
                                   function_call with arguments X (e.g.
                                   exec_command {"cmd": ...}), X a string a
                                   custom_tool_call (freeform: exec's
                                   JavaScript, apply_patch's patch); "id"
                                   optional; a value "$session" in X is
                                   the session ID the last outputs name
                                   ("session ID N": a command still
                                   running), for write_stdin
  {"patch": PATCH}                 the call that applies PATCH (apply_patch's
                                   grammar, "*** Begin Patch" ...) on the
                                   requested model: for code mode an exec
                                   call awaiting tools.apply_patch(PATCH),
                                   for a classic model the apply_patch
                                   custom tool call
  {"structured": OBJ}              OBJ as the message's text, JSON: the
                                   answer to --output-schema
  {"status": N}                    HTTP N with the API's error body
                                   {"error": {"message", "type", "param",
                                   "code"}}, type and code from N (401
                                   invalid_request_error/invalid_api_key,
                                   429 requests/rate_limit_exceeded, 500
                                   server_error...); "message" and "code"
                                   optional; "retry": false adds
                                   x-should-retry: false (Codex ignores it)
  {"cut": true}                    response.created, a message item's start
                                   and half an event, then the connection
                                   is shut mid-event
  {"hang": true}                   headers and response.created, then
                                   nothing until the client goes
  {"big": N}                       a message of exactly N bytes (ASCII)
with "times" and "delay" as in anthropic mode.

The ChatGPT sign-in.  --auth-json FILE writes (mode 0600, before the port
file) an auth.json for $CODEX_HOME as Codex expects it:
  {"auth_mode": "chatgpt", "OPENAI_API_KEY": null,
   "tokens": {"id_token": JWT, "access_token": JWT, "refresh_token": RT,
              "account_id": ACCOUNT},
   "last_refresh": "YYYY-MM-DDTHH:MM:SSZ"}
the JWTs JWT-shaped (unsigned) with the claims Codex reads (exp, email,
"https://api.openai.com/auth": chatgpt_account_id, chatgpt_plan_type,
chatgpt_user_id...), the access token expiring in token.expires_in
seconds (3600 by default; Codex refreshes one that expires within about
five minutes before its first request).  POST /oauth/token (Codex posts
{"client_id", "grant_type": "refresh_token", "refresh_token"} as JSON)
answers new tokens (access token valid an hour) when token.refresh is
"allow" (the default); with "reuse-error" a refresh token presented a
second time to this vendor.py gets 401 {"error": {"code":
"refresh_token_reused"}}, with "reused" every refresh does (a snapshot
refreshed elsewhere), and so does a refresh token this vendor.py never
issued (a placeholder).  With "token" set, a model request to
/backend-api/ whose bearer is not an unexpired access token this
vendor.py issued gets 401 (Codex then reads auth.json again and retries,
and after a second 401 refreshes).  GET /backend-api/wham/accounts/check (workspace
routing discovery, without which Codex will not start a turn) answers the
one workspace ACCOUNT.  A model request with no Authorization gets 401.

Other requests: anything else (/backend-api/codex/models,
/backend-api/wham/settings/user, /backend-api/ps/mcp, plugins...) a 404
with the API's error body.

The openai log: the anthropic fields where they apply (method, path,
answer, model, stream, main, kind, tools (a namespace's as NS.NAME),
authorization, step), and
  t          seconds since vendor.py started, on every entry
  request_kind  x-codex-turn-metadata's ("turn", "compaction")
  bearer     "none", "opaque" (an API key), "valid"/"expired" (an access
             token this vendor.py issued, by its exp) or "forged" (a JWT
             it never issued: a placeholder), never a value; account_id:
             whether ChatGPT-Account-Id came
  outputs    [{call_id, type, text}] the function_call_output and
             custom_tool_call_output items after the model's last item in
             input, text cut to 500 characters
  format, format_name, format_strict  the text.format asked for
             (json_schema, codex_output_schema, true with --output-schema)
  content_encoding  the body's, when compressed
  websocket  true on a refused upgrade
  and for /oauth/token: grant_type, client_id, refresh_token (whether one
  came), refresh ("fresh", "reused" or "unknown"), answer."""
import argparse
import base64
import gzip
import http.server
import json
import os
import re
import socket
import ssl
import sys
import threading
import time
import urllib.parse


def serve(conn, mode, state=None):
    if mode in HANDLERS:
        serve_http(conn, state, HANDLERS[mode])
        return
    try:
        if mode == "hello":
            line = b""
            while not line.endswith(b"\n") and len(line) < 4096:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                line += chunk
            conn.sendall(b"vendor saw: " + line.strip() + b"\n")
        elif mode == "sink":
            while conn.recv(65536):
                pass
        elif mode == "tarpit":
            threading.Event().wait()
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


# ---------------------------------------------------------------- anthropic

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}

# The beta Claude Code marks its side queries with.
SIDE_QUERY_BETA = "claude-code-side-query"

STEP_KINDS = ("text", "tool", "tools", "status", "cut", "hang", "big")
STEP_KEYS = set(STEP_KINDS) | {"input", "id", "message", "retry", "times",
                               "delay", "classifier"}
VERDICTS = ("allow", "block", "unsupported")


def load_scenario(path):
    """The scenario, checked: a mistake in it stops vendor.py before it
    is ready rather than confusing a test later."""
    with open(path) as f:
        sc = json.load(f)
    if not isinstance(sc, dict) or not isinstance(sc.get("turns", []), list):
        sys.exit("vendor.py: %s: not {\"turns\": [...]}" % path)
    if sc.get("classifier") not in (None,) + VERDICTS:
        sys.exit("vendor.py: %s: classifier is one of %s" % (path, VERDICTS))
    check_token(sc, path)
    for i, s in enumerate(sc.get("turns", [])):
        kinds = [k for k in STEP_KINDS if isinstance(s, dict) and k in s]
        if len(kinds) != 1 or set(s) - STEP_KEYS or \
                s.get("classifier") not in (None,) + VERDICTS or \
                not all(isinstance(c, dict) and "tool" in c
                        for c in s.get("tools", [])):
            sys.exit("vendor.py: %s: turn %d is not a step: %s"
                     % (path, i, json.dumps(s)))
    return sc


class State:
    """What every connection shares: the scenario, the next step, the log."""

    def __init__(self, script, log, load=load_scenario):
        self.lock = threading.Lock()
        sc = load(script) if script else {}
        self.scenario = sc
        self.turns = sc.get("turns", [])
        self.classifier = sc.get("classifier")
        self.side = str(sc.get("side", "ok"))
        self.can_fetch = bool(sc.get("can_fetch", True))
        self.remote_settings = sc.get("remote_settings")
        self.next = 0
        self.used = 0  # main turns turns[next] answered so far
        self.seq = 0
        self.log = open(log, "a") if log else None

    def step(self):
        with self.lock:
            if self.next >= len(self.turns):
                return {"text": "done", "default": True}
            s = self.turns[self.next]
            self.used += 1
            times = int(s.get("times", 1))
            if times > 0 and self.used >= times:
                self.next += 1
                self.used = 0
            return s

    def ident(self, prefix):
        with self.lock:
            self.seq += 1
            return "%s_vendor%04d" % (prefix, self.seq)

    def record(self, entry):
        if self.log is None:
            return
        line = json.dumps(entry, sort_keys=True) + "\n"
        with self.lock:
            self.log.write(line)
            self.log.flush()


# The OAuth client Claude Code signs in and refreshes as.
CLAUDE_CLIENT_ID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
# The scopes a claude.ai sign-in of 2.1.332 asks for and is granted.
CLAUDE_SCOPES = ["user:profile", "user:inference", "user:sessions:claude_code",
                 "user:mcp_servers", "user:file_upload", "user:plugins"]


class ClaudeState(State):
    """State, plus the claude.ai sign-in's tokens: the access tokens issued
    (with their expiry), the refresh tokens issued and those used so far;
    never a value in the log."""

    def __init__(self, script, log):
        State.__init__(self, script, log)
        self.token = self.scenario.get("token")
        self.access = {}  # access token: its expiry (epoch seconds)
        self.issued = set()  # refresh tokens issued
        self.used_refresh = set()
        self.account = "00000000-0000-4000-8000-0000000acc07"
        self.org = "00000000-0000-4000-8000-000000000e60"

    def tokens(self, expires_in):
        """A fresh access and refresh token, opaque and shaped as
        platform.claude.com issues them, registered here."""
        def opaque(prefix):
            return prefix + b64url(os.urandom(72))[:93] + "AA"
        acc, rt = opaque("sk-ant-oat01-"), opaque("sk-ant-ort01-")
        with self.lock:
            self.access[acc] = time.time() + expires_in
            self.issued.add(rt)
        return acc, rt

    def auth_json(self, path):
        """Writes a claude.ai sign-in .credentials.json (mode 0600) whose
        access token expires in the scenario's token.expires_in seconds."""
        exp = (self.token or {}).get("expires_in", 3600)
        acc, rt = self.tokens(exp)
        doc = {"claudeAiOauth": {
            "accessToken": acc, "refreshToken": rt,
            "expiresAt": int((time.time() + exp) * 1000),
            "scopes": CLAUDE_SCOPES, "subscriptionType": "max",
            "rateLimitTier": "default_claude_max_20x"}}
        fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                     0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f)
        os.rename(path + ".tmp", path)

    def bearer(self, tok):
        """"valid", "expired" or "unknown": an access token of ours?"""
        with self.lock:
            exp = self.access.get(tok)
        if exp is None:
            return "unknown"
        return "valid" if exp > time.time() else "expired"

    def refresh(self, rt):
        """(status, "fresh" / "reused" / "unknown"): 200, or 400 when the
        refresh token is not one of ours or token.refresh refuses it."""
        with self.lock:
            known = rt in self.issued
            reused = rt in self.used_refresh
            if known:
                self.used_refresh.add(rt)
        if not known:
            return 400, "unknown"
        mode = (self.token or {}).get("refresh", "allow")
        if mode == "reused" or (reused and mode == "reuse-error"):
            return 400, "reused"
        return 200, "reused" if reused else "fresh"


def is_main(body, beta):
    """The main turn, not a side request: see the module's doc."""
    return SIDE_QUERY_BETA not in beta and bool(body.get("tools"))


def block_text(content):
    if isinstance(content, str):
        return content
    out = []
    for b in content if isinstance(content, list) else []:
        if isinstance(b, dict) and b.get("type") == "text":
            out.append(str(b.get("text", "")))
        elif isinstance(b, dict):
            out.append("[%s]" % b.get("type"))
    return "\n".join(out)


def tool_results(body):
    """The tool_result blocks after the last assistant message."""
    msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    last = max([i for i, m in enumerate(msgs) if m.get("role") == "assistant"],
               default=-1)
    out = []
    for m in msgs[last + 1:]:
        content = m.get("content")
        for b in content if isinstance(content, list) else []:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                out.append({
                    "tool_use_id": b.get("tool_use_id"),
                    "is_error": bool(b.get("is_error", False)),
                    "text": block_text(b.get("content"))[:500],
                })
    return out


def safeguards(body):
    """The classifier_context of a request that asks for the server-side
    permission classifier, or None."""
    for g in body.get("safeguards") or []:
        if isinstance(g, dict) and g.get("type") == "dangerous_tool_use":
            ctx = g.get("classifier_context")
            return ctx if isinstance(ctx, dict) else {}
    return None


def verdicts(verdict, ids):
    """message_delta's safeguard_results for the tool_use ids answered."""
    if verdict == "unsupported":
        status = {"type": "unsupported"}
    else:
        if verdict == "allow":
            v = {"type": "evaluated", "outcome": "not_flagged"}
        else:
            v = {"type": "evaluated", "outcome": "flagged",
                 "explanation": "vendor.py: the scenario flags this action"}
        status = {"type": "available", "tool_uses": {i: v for i in ids}}
    return [{"type": "dangerous_tool_use", "status": status}]


def big_text(n):
    line = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+-\n"
    return (line * (n // len(line) + 1))[:n]


def serve_http(conn, state, handler):
    """HTTP/1.1 on one connection, plain or TLS, until either side ends."""
    try:
        handler(conn, conn.getpeername(), state)
    except (OSError, ssl.SSLError, ValueError):
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass


class Handler(http.server.BaseHTTPRequestHandler):
    """HTTP/1.1 plumbing the API modes share: bodies, JSON, chunked SSE."""
    protocol_version = "HTTP/1.1"
    server_version = "vendor.py"
    sys_version = ""
    request_id_header = "request-id"
    timeout = 600  # an idle keep-alive connection goes after this

    def __init__(self, conn, addr, state):
        self.state = state
        http.server.BaseHTTPRequestHandler.__init__(self, conn, addr, None)

    def log_message(self, *args):
        pass

    # -- plumbing

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def send_json(self, status, obj, extra=None):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header(self.request_id_header, self.state.ident("req"))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def sse_start(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header(self.request_id_header, self.state.ident("req"))
        self.end_headers()
        self.wfile.flush()

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def event(self, obj):
        self.chunk(("event: %s\ndata: %s\n\n"
                    % (obj["type"], json.dumps(obj))).encode())

    def sse_end(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def credential(self):
        """Which credential the request carried: "none", "real" (the one
        --credential names) or "other"; never a value."""
        v = self.headers.get("x-api-key")
        if v is None:
            a = self.headers.get("Authorization")
            if a is not None:
                v = a[7:] if a.lower().startswith("bearer ") else a
        if v is None:
            return "none"
        if v in CREDENTIALS:
            i = CREDENTIALS.index(v)
            return "real" if i == 0 else "real-%d" % (i + 1)
        return "other"

    def probe(self, raw):
        """/v1/probe: what a request carried, for the tests of the
        proxy's rewriting (the credential as credential() says); /v1/echo
        as well, then the real credential echoed in a header and split
        across two chunks of the body."""
        self.state.record({"method": self.command, "path": self.path,
                           "probe": True, "credential": self.credential(),
                           "x_probe": self.headers.get("x-probe"),
                           "body": raw.decode("utf-8", "replace")[:400]})
        if self.path.split("?")[0] != "/v1/echo" or CREDENTIAL is None:
            self.send_json(200, {"ok": True})
            return
        k = CREDENTIAL.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("X-Echo", CREDENTIAL)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.chunk(b"key=" + k[:len(k) // 2])
        self.chunk(k[len(k) // 2:] + b";")
        self.sse_end()

    def bulk(self):
        """/v1/bulk?n=N: N bytes streamed back in chunks of 64 KiB, and
        nothing logged (bench/inject.sh times the proxy with it)."""
        q = self.path.partition("?")[2]
        n = int(dict(x.split("=", 1) for x in q.split("&") if "=" in x)
                .get("n", "0"))
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        piece = b"x" * 65536
        while n > 0:
            k = min(n, len(piece))
            self.wfile.write(b"%x\r\n" % k + piece[:k] + b"\r\n")
            n -= k
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def wait_for_client_to_go(self):
        self.close_connection = True
        c = self.connection
        c.settimeout(None)
        try:
            while c.recv(65536):
                pass
        except (OSError, ssl.SSLError, ValueError):
            pass

    def form(self, raw):
        """A token endpoint's request: JSON, as Claude Code posts it, or a
        form."""
        try:
            if "json" in self.headers.get("Content-Type", ""):
                form = json.loads(raw or b"{}")
            else:
                form = dict(urllib.parse.parse_qsl(raw.decode()))
        except ValueError:
            form = {}
        return form if isinstance(form, dict) else {}

    def refresh_grant(self, form, entry):
        """The refresh_token grant of FORM, as both vendors' token
        endpoints take it, ENTRY logged with its answer: None when the
        request is no such grant (answered 400 here), else the status
        of the refresh, for the caller to answer in its vendor's form."""
        if form.get("grant_type") != "refresh_token" or \
                not form.get("refresh_token"):
            entry["answer"] = 400
            self.state.record(entry)
            self.send_json(400, {"error": "invalid_request",
                                 "error_description": "vendor.py: only "
                                 "refresh_token grants"})
            return None
        status, seen = self.state.refresh(str(form["refresh_token"]))
        entry.update(refresh=seen, answer=status)
        self.state.record(entry)
        return status

    def cut(self):
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class Anthropic(Handler):
    def error(self, status, etype, message, extra=None):
        self.send_json(status, {"type": "error", "error": {
            "type": etype, "message": message}}, extra)

    def upgrade(self):
        """GET /v1/upgrade with Upgrade: a 101, then as a tunnel the
        real credential split across two writes ("key=" + it + ";"), and
        "echo:" + the first bytes the client sends; then it closes."""
        self.state.record({"method": "GET", "path": self.path,
                           "upgrade": self.headers.get("Upgrade"),
                           "credential": self.credential()})
        self.send_response(101)
        self.send_header("Upgrade", self.headers.get("Upgrade", "x"))
        self.send_header("Connection", "Upgrade")
        self.end_headers()
        self.wfile.flush()
        k = (CREDENTIAL or "").encode()
        self.wfile.write(b"key=" + k[:len(k) // 2])
        self.wfile.flush()
        time.sleep(0.2)
        self.wfile.write(k[len(k) // 2:] + b";")
        self.wfile.flush()
        got = self.rfile.read1(4096)
        self.wfile.write(b"echo:" + got)
        self.wfile.flush()
        self.close_connection = True

    def do_GET(self):
        self.body()
        if self.path.split("?")[0] == "/v1/upgrade" and \
                self.headers.get("Upgrade"):
            self.upgrade()
            return
        if self.path.split("?")[0] == "/api/claude_code/settings" and \
                self.state.remote_settings is not None:
            ans = {"uuid": "00000000-0000-4000-8000-000000000000",
                   "checksum": "0", "settings": self.state.remote_settings}
            self.state.record({"method": "GET", "path": self.path,
                               "answer": ans})
            self.send_json(200, ans)
            return
        if self.path.startswith("/api/web/domain_info"):
            ans = {"can_fetch": self.state.can_fetch}
            self.state.record({"method": "GET", "path": self.path,
                               "answer": ans})
            self.send_json(200, ans)
            return
        if self.path.split("?")[0] == "/api/oauth/profile":
            self.signed_in(self.profile())
            return
        if self.path.split("?")[0] == "/v1/mcp_servers":
            self.signed_in({"data": [], "next_page": None})
            return
        self.not_found()

    def do_POST(self):
        raw = self.body()
        path = self.path.split("?")[0]
        if path in ("/v1/probe", "/v1/echo"):
            self.probe(raw)
            return
        if path == "/v1/bulk":
            self.bulk()
            return
        if path == "/v1/oauth/token":
            self.oauth(raw)
            return
        if path == "/v1/oauth/token/revoke":
            self.revoke(raw)
            return
        if path == "/v1/messages":
            enc = self.headers.get("Content-Encoding", "").lower()
            try:
                if enc == "gzip":
                    raw = gzip.decompress(raw)
                body = json.loads(raw or b"{}")
            except (ValueError, OSError, EOFError):
                body = None
            if isinstance(body, dict):
                self.messages(body, enc or None)
                return
            self.state.record({"method": "POST", "path": self.path,
                               "answer": 400})
            self.error(400, "invalid_request_error",
                       "vendor.py: the body is not a JSON object")
            return
        if path == "/v1/messages/count_tokens":
            ans = {"input_tokens": max(1, len(raw) // 4)}
            self.state.record({"method": "POST", "path": self.path,
                               "answer": ans})
            self.send_json(200, ans)
            return
        self.not_found()

    def not_found(self):
        self.state.record({"method": self.command, "path": self.path,
                           "answer": 404})
        self.error(404, "not_found_error", "vendor.py: no such path")

    # -- the claude.ai sign-in

    def bearer(self):
        """What the request authenticates with: "none", "api-key"
        (x-api-key), or an Authorization bearer's "valid" / "expired" (an
        access token this vendor.py issued) or "unknown"; never a value."""
        a = self.headers.get("Authorization")
        if a is None:
            return "api-key" if "x-api-key" in self.headers else "none"
        tok = a[7:] if a.lower().startswith("bearer ") else a
        return self.state.bearer(tok.strip())

    def refuse_bearer(self, bearer):
        """With the scenario's "token": a 401 unless the bearer is live."""
        if self.state.token is None or bearer == "valid":
            return False
        self.error(401, "authentication_error",
                   "OAuth token has expired. Please obtain a new token or "
                   "refresh your existing token." if bearer == "expired"
                   else "Invalid bearer token")
        return True

    def signed_in(self, ans):
        """A GET the CLI makes when signed in: ANS for a live access token;
        otherwise 401 with "token" set, else 404 as any unknown path."""
        bearer = self.bearer()
        entry = {"method": "GET", "path": self.path, "bearer": bearer}
        if bearer != "valid":
            entry["answer"] = 401 if self.state.token is not None else 404
            self.state.record(entry)
            if not self.refuse_bearer(bearer):
                self.error(404, "not_found_error", "vendor.py: no such path")
            return
        entry["answer"] = 200
        self.state.record(entry)
        self.send_json(200, ans)

    def profile(self):
        """/api/oauth/profile's answer: the account and its Max plan."""
        st = self.state
        return {"account": {
            "uuid": st.account, "email": "agent@vendor.invalid",
            "full_name": "Vendor Agent", "display_name": "Agent",
            "has_claude_max": True, "has_claude_pro": False,
            "created_at": "2025-01-01T00:00:00Z"},
            "organization": {
            "uuid": st.org, "name": "vendor.py",
            "organization_type": "claude_max",
            "billing_type": "stripe_subscription",
            "rate_limit_tier": "default_claude_max_20x",
            "has_extra_usage_enabled": False,
            "subscription_created_at": "2025-01-01T00:00:00Z"}}

    def revoke(self, raw):
        """POST /v1/oauth/token/revoke (claude auth logout): 200, and a
        refresh token of ours is refused from then on."""
        form = self.form(raw)
        tok = str(form.get("token") or "")
        with self.state.lock:
            known = tok in self.state.issued
            self.state.issued.discard(tok)
            self.state.access.pop(tok, None)
        self.state.record({"method": "POST", "path": self.path,
                           "host": self.headers.get("Host"),
                           "token_type_hint": form.get("token_type_hint"),
                           "client_id": form.get("client_id"),
                           "token": bool(tok), "known": known,
                           "answer": 200})
        self.send_json(200, {})

    def oauth(self, raw):
        """POST /v1/oauth/token: a refresh_token grant, as Claude Code
        posts it to platform.claude.com."""
        form = self.form(raw)
        entry = {"method": "POST", "path": self.path,
                 "host": self.headers.get("Host"),
                 "grant_type": form.get("grant_type"),
                 "client_id": form.get("client_id"),
                 "scope": form.get("scope"),
                 "refresh_token": bool(form.get("refresh_token"))}
        status = self.refresh_grant(form, entry)
        if status is None:
            return
        if status != 200:
            self.send_json(status, {"error": "invalid_grant",
                                    "error_description": "Refresh token not "
                                    "found or invalid"})
            return
        acc, rt = self.state.tokens(3600)
        self.send_json(200, {
            "token_type": "Bearer", "access_token": acc, "expires_in": 3600,
            "refresh_token": rt, "scope": " ".join(CLAUDE_SCOPES),
            "organization": {"uuid": self.state.org, "name": "vendor.py"},
            "account": {"uuid": self.state.account,
                        "email_address": "agent@vendor.invalid"}})

    # -- the Messages API

    def messages(self, body, encoding=None):
        main = is_main(body, self.headers.get("anthropic-beta", ""))
        tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
        entry = {
            "method": "POST", "path": self.path,
            "model": body.get("model"),
            "stream": bool(body.get("stream")),
            "main": main, "kind": "main" if main else "side",
            "tools": [t.get("name") for t in tools],
            "deferred": [t.get("name") for t in tools
                         if t.get("defer_loading")],
            "x_api_key": "x-api-key" in self.headers,
            "authorization": "authorization" in self.headers,
            "credential": self.credential(),
            "bearer": self.bearer(),
            "tool_results": tool_results(body),
        }
        if encoding:
            entry["content_encoding"] = encoding
        if self.state.token is not None and entry["bearer"] != "valid":
            entry["answer"] = 401
            self.state.record(entry)
            self.refuse_bearer(entry["bearer"])
            return
        verdict = None
        if main:
            step = self.state.step()
            ctx = safeguards(body)
            if ctx is not None:
                entry["safeguards"] = ctx.get("permission_mode", True)
                verdict = step.get("classifier", self.state.classifier)
                if verdict is not None:
                    entry["verdict"] = verdict
        else:
            step = {"side": self.state.side}
        entry["step"] = {"big": step["big"]} if "big" in step else step
        self.state.record(entry)
        self.answer(body, step, verdict)

    def answer(self, body, step, verdict):
        stream = bool(body.get("stream"))
        if "status" in step:
            st = int(step["status"])
            self.error(st, ERROR_TYPES.get(st, "api_error"),
                       step.get("message", "vendor.py: scripted %d" % st),
                       {"x-should-retry": "false"}
                       if step.get("retry") is False else None)
            return
        mid = self.state.ident("msg")
        usage = {"input_tokens": 10, "output_tokens": 1,
                 "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        message = {"id": mid, "type": "message", "role": "assistant",
                   "model": body.get("model") or "claude-vendor",
                   "content": [], "stop_reason": None,
                   "stop_sequence": None, "usage": usage}
        start = {"type": "message_start", "message": message}
        if step.get("hang"):
            if stream:
                self.sse_start()
                self.event(start)
            self.wait_for_client_to_go()
            return
        if step.get("cut"):
            if stream:
                self.sse_start()
                self.event(start)
                self.event({"type": "content_block_start", "index": 0,
                            "content_block": {"type": "text", "text": ""}})
                self.chunk(b'event: content_block_delta\ndata: {"type":"'
                           b'content_block_delta","index":0,"delta":{"typ')
            else:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "1000")
                self.end_headers()
                self.wfile.write(b'{"id":"%s","type":"mes' % mid.encode())
                self.wfile.flush()
            self.cut()
            return
        if step.get("delay"):
            time.sleep(float(step["delay"]))
        if "tool" in step or "tools" in step:
            blocks = [{"type": "tool_use",
                       "id": c.get("id") or self.state.ident("toolu"),
                       "name": c["tool"], "input": c.get("input", {})}
                      for c in (step["tools"] if "tools" in step
                                else [step])]
            stop = "tool_use"
        else:
            if "big" in step:
                text = big_text(int(step["big"]))
            elif "side" in step:
                text = step["side"]
            else:
                text = str(step["text"])
            blocks = [{"type": "text", "text": text}]
            stop = "end_turn"
        delta = {"stop_reason": stop, "stop_sequence": None}
        if verdict is not None:
            delta["safeguard_results"] = verdicts(
                verdict, [b["id"] for b in blocks] if stop == "tool_use"
                else [])
        if not stream:
            self.send_json(200, dict(message, content=blocks,
                                     stop_reason=stop,
                                     usage=dict(usage, output_tokens=5)))
            return
        self.sse_start()
        self.event(start)
        for index, block in enumerate(blocks):
            self.block_events(index, block)
        self.event({"type": "message_delta", "delta": delta,
                    "usage": {"output_tokens": 5}})
        self.event({"type": "message_stop"})
        self.sse_end()

    def block_events(self, index, block):
        """One content block of a streamed answer."""
        if block["type"] == "text":
            self.event({"type": "content_block_start", "index": index,
                        "content_block": {"type": "text", "text": ""}})
            text = block["text"]
            for i in range(0, max(len(text), 1), 16384):
                self.event({"type": "content_block_delta", "index": index,
                            "delta": {"type": "text_delta",
                                      "text": text[i:i + 16384]}})
        else:
            self.event({"type": "content_block_start", "index": index,
                        "content_block": {"type": "tool_use",
                                          "id": block["id"],
                                          "name": block["name"],
                                          "input": {}}})
            js = json.dumps(block["input"])
            for part in (js[:len(js) // 2], js[len(js) // 2:]):
                self.event({"type": "content_block_delta", "index": index,
                            "delta": {"type": "input_json_delta",
                                      "partial_json": part}})
        self.event({"type": "content_block_stop", "index": index})


# ------------------------------------------------------------ zstd (RFC 8878)
# Codex compresses its request bodies with zstd when signed in to ChatGPT
# (Content-Encoding: zstd) and Python 3.11 has no zstd: a small decoder of
# the format, frames without dictionaries, enough to read what clients send.

LL_CODES = [(i, 0) for i in range(16)] + [
    (16, 1), (18, 1), (20, 1), (22, 1), (24, 2), (28, 2), (32, 3), (40, 3),
    (48, 4), (64, 6), (128, 7), (256, 8), (512, 9), (1024, 10), (2048, 11),
    (4096, 12), (8192, 13), (16384, 14), (32768, 15), (65536, 16)]
ML_CODES = [(i + 3, 0) for i in range(32)] + [
    (35, 1), (37, 1), (39, 1), (41, 1), (43, 2), (47, 2), (51, 3), (59, 3),
    (67, 4), (83, 4), (99, 5), (131, 7), (259, 8), (515, 9), (1027, 10),
    (2051, 11), (4099, 12), (8195, 13), (16387, 14), (32771, 15),
    (65539, 16)]
LL_DEFAULT = (6, [4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1,
                  2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1,
                  -1, -1, -1, -1])
ML_DEFAULT = (6, [1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1] +
              [1] * 30 + [-1] * 7)
OF_DEFAULT = (5, [1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1,
                  1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1])


class ZstdError(ValueError):
    pass


class BackBits:
    """A backward bitstream (Huffman and FSE payloads): read from its
    last byte's highest set bit down to its first byte's lowest bit."""

    def __init__(self, data):
        if not data or data[-1] == 0:
            raise ZstdError("bitstream without its end mark")
        s = "".join(format(b, "08b") for b in reversed(data))
        self.s = s[s.index("1") + 1:]
        self.i = 0

    def read(self, n):
        if n == 0:
            return 0
        v = self.s[self.i:self.i + n]
        self.i += n
        return int(v.ljust(n, "0"), 2)

    def overflow(self):
        return self.i > len(self.s)


def fse_table(al, counts):
    """FSE decoding table: a list of (symbol, nb_bits, base)."""
    size = 1 << al
    sym = [0] * size
    high = size - 1
    nxt = list(counts)
    for s, c in enumerate(counts):
        if c == -1:
            sym[high] = s
            high -= 1
            nxt[s] = 1
    pos, step, mask = 0, (size >> 1) + (size >> 3) + 3, size - 1
    for s, c in enumerate(counts):
        for _ in range(max(c, 0)):
            sym[pos] = s
            pos = (pos + step) & mask
            while pos > high:
                pos = (pos + step) & mask
    if pos != 0:
        raise ZstdError("bad FSE distribution")
    table = []
    for u in range(size):
        s = sym[u]
        n = nxt[s]
        nxt[s] += 1
        nb = al - (n.bit_length() - 1)
        table.append((s, nb, (n << nb) - size))
    return table


def fse_description(data, p, max_al, max_sym):
    """Reads an FSE table description at data[p:]: (table, al, new p)."""
    bits = int.from_bytes(data[p:p + 64], "little")
    used = 0

    def take(n):
        nonlocal used
        v = (bits >> used) & ((1 << n) - 1)
        used += n
        return v
    al = take(4) + 5
    if al > max_al:
        raise ZstdError("FSE accuracy too large")
    remaining, threshold, nb = (1 << al) + 1, 1 << al, al + 1
    counts = []
    while remaining > 1 and len(counts) <= max_sym:
        mx = (2 * threshold - 1) - remaining
        low = (bits >> used) & (threshold - 1)
        if low < mx:
            v = low
            used += nb - 1
        else:
            v = (bits >> used) & (2 * threshold - 1)
            if v >= threshold:
                v -= mx
            used += nb
        c = v - 1
        remaining -= abs(c)
        counts.append(c)
        if c == 0:
            while True:
                r = take(2)
                counts.extend([0] * r)
                if r != 3:
                    break
        while remaining < threshold and threshold > 1:
            nb -= 1
            threshold >>= 1
    if remaining != 1 or len(counts) > max_sym + 1:
        raise ZstdError("bad FSE table description")
    return fse_table(al, counts), al, p + (used + 7) // 8


def huffman_table(data, p):
    """Reads a Huffman tree description: ((table, max_bits), new p)."""
    head = data[p]
    p += 1
    if head >= 128:
        n = head - 127
        raw = data[p:p + (n + 1) // 2]
        p += (n + 1) // 2
        weights = []
        for b in raw:
            weights += [b >> 4, b & 15]
        weights = weights[:n]
    else:
        table, al, q = fse_description(data, p, 6, 255)
        bb = BackBits(data[q:p + head])
        p += head
        st = [bb.read(al), bb.read(al)]
        weights = []
        k = 0
        while len(weights) < 255:
            s, nb, base = table[st[k]]
            weights.append(s)
            st[k] = base + bb.read(nb)
            if bb.overflow():
                weights.append(table[st[1 - k]][0])
                break
            k = 1 - k
    total = sum(1 << (w - 1) for w in weights if w)
    if total == 0:
        raise ZstdError("empty Huffman tree")
    max_bits = total.bit_length()
    left = (1 << max_bits) - total
    if left & (left - 1):
        raise ZstdError("bad Huffman weights")
    weights.append(left.bit_length())
    ranks = [0] * (max_bits + 2)
    for w in weights:
        ranks[w] += 1
    start, nxt = [0] * (max_bits + 2), 0
    for w in range(1, max_bits + 1):
        start[w] = nxt
        nxt += ranks[w] << (w - 1)
    table = [None] * (1 << max_bits)
    for s, w in enumerate(weights):
        if w:
            n = 1 << (w - 1)
            table[start[w]:start[w] + n] = [(s, max_bits + 1 - w)] * n
            start[w] += n
    return (table, max_bits), p


def huffman_stream(data, huf, count):
    table, max_bits = huf
    bb = BackBits(data)
    s, i = bb.s + "0" * max_bits, 0
    out = bytearray(count)
    for k in range(count):
        sym, nb = table[int(s[i:i + max_bits], 2)]
        out[k] = sym
        i += nb
    if i != len(bb.s):
        raise ZstdError("Huffman stream not fully used")
    return bytes(out)


def zstd_literals(data, p, st):
    b0 = data[p]
    kind, fmt = b0 & 3, (b0 >> 2) & 3
    if kind < 2:
        if fmt in (0, 2):
            size, p = b0 >> 3, p + 1
        elif fmt == 1:
            size, p = (b0 >> 4) | (data[p + 1] << 4), p + 2
        else:
            size = (b0 >> 4) | (data[p + 1] << 4) | (data[p + 2] << 12)
            p += 3
        if kind == 0:
            return data[p:p + size], p + size
        return data[p:p + 1] * size, p + 1
    nhead = {0: 3, 1: 3, 2: 4, 3: 5}[fmt]
    h = int.from_bytes(data[p:p + nhead], "little")
    width = {3: 10, 4: 14, 5: 18}[nhead]
    regen = (h >> 4) & ((1 << width) - 1)
    comp = (h >> (4 + width)) & ((1 << width) - 1)
    p += nhead
    end = p + comp
    if kind == 2:
        st["huf"], p = huffman_table(data, p)
    elif st.get("huf") is None:
        raise ZstdError("treeless literals without a table")
    if fmt == 0:
        return huffman_stream(data[p:end], st["huf"], regen), end
    s1, s2, s3 = (int.from_bytes(data[p + i:p + i + 2], "little")
                  for i in (0, 2, 4))
    p += 6
    part = (regen + 3) // 4
    out = b""
    for n, size in enumerate((s1, s2, s3, end - p - s1 - s2 - s3)):
        out += huffman_stream(data[p:p + size], st["huf"],
                              part if n < 3 else regen - 3 * part)
        p += size
    return out, end


def zstd_block(data, p, end, out, st):
    lits, p = zstd_literals(data, p, st)
    b0 = data[p]
    if b0 == 0:
        out += lits
        return
    if b0 < 128:
        nseq, p = b0, p + 1
    elif b0 < 255:
        nseq, p = ((b0 - 128) << 8) + data[p + 1], p + 2
    else:
        nseq, p = data[p + 1] + (data[p + 2] << 8) + 0x7F00, p + 3
    modes = data[p]
    p += 1
    tables = []
    for name, shift, dflt, max_al, max_sym in (
            ("ll", 6, LL_DEFAULT, 9, 35), ("of", 4, OF_DEFAULT, 8, 31),
            ("ml", 2, ML_DEFAULT, 9, 52)):
        mode = (modes >> shift) & 3
        if mode == 0:
            t = (fse_table(*dflt), dflt[0])
        elif mode == 1:
            t, p = ([(data[p], 0, 0)], 0), p + 1
        elif mode == 2:
            tab, al, p = fse_description(data, p, max_al, max_sym)
            t = (tab, al)
        else:
            t = st.get(name)
            if t is None:
                raise ZstdError("repeated table without one")
        st[name] = t
        tables.append(t)
    (llt, llal), (oft, ofal), (mlt, mlal) = tables
    bb = BackBits(data[p:end])
    ll_s, of_s, ml_s = bb.read(llal), bb.read(ofal), bb.read(mlal)
    reps = st["reps"]
    lp = 0
    for k in range(nseq):
        ofc = oft[of_s][0]
        mlc = mlt[ml_s][0]
        llc = llt[ll_s][0]
        if ofc > 31 or mlc > 52 or llc > 35:
            raise ZstdError("bad sequence code")
        ofv = (1 << ofc) + bb.read(ofc)
        mb, mbits = ML_CODES[mlc]
        ml = mb + bb.read(mbits)
        lb, lbits = LL_CODES[llc]
        ll = lb + bb.read(lbits)
        if ofv > 3:
            off = ofv - 3
            reps[:] = [off, reps[0], reps[1]]
        else:
            idx = ofv + (1 if ll == 0 else 0)
            if idx == 1:
                off = reps[0]
            elif idx == 2:
                off = reps[1]
                reps[:] = [off, reps[0], reps[2]]
            elif idx == 3:
                off = reps[2]
                reps[:] = [off, reps[0], reps[1]]
            else:
                off = reps[0] - 1
                reps[:] = [off, reps[0], reps[1]]
        if k + 1 < nseq:
            _, nb, base = llt[ll_s]
            ll_s = base + bb.read(nb)
            _, nb, base = mlt[ml_s]
            ml_s = base + bb.read(nb)
            _, nb, base = oft[of_s]
            of_s = base + bb.read(nb)
        out += lits[lp:lp + ll]
        lp += ll
        if off <= 0 or off > len(out):
            raise ZstdError("match offset out of the window")
        start = len(out) - off
        if off >= ml:
            out += out[start:start + ml]
        else:
            for i in range(ml):
                out.append(out[start + i])
    if bb.i != len(bb.s):
        raise ZstdError("sequence bitstream not fully used")
    out += lits[lp:]


def zstd_decompress(data):
    """The content of DATA's zstd frames (skippable frames skipped)."""
    out = bytearray()
    p = 0
    while p < len(data):
        magic = int.from_bytes(data[p:p + 4], "little")
        if magic & 0xFFFFFFF0 == 0x184D2A50:
            p += 8 + int.from_bytes(data[p + 4:p + 8], "little")
            continue
        if magic != 0xFD2FB528:
            raise ZstdError("not a zstd frame")
        fhd = data[p + 4]
        p += 5
        single = fhd & 0x20
        if fhd & 3:
            raise ZstdError("zstd dictionaries are not supported")
        if not single:
            p += 1
        fcs = fhd >> 6
        p += {0: 1 if single else 0, 1: 2, 2: 4, 3: 8}[fcs]
        frame = bytearray()
        st = {"reps": [1, 4, 8]}
        while True:
            h = int.from_bytes(data[p:p + 3], "little")
            p += 3
            last, kind, size = h & 1, (h >> 1) & 3, h >> 3
            if kind == 0:
                frame += data[p:p + size]
                p += size
            elif kind == 1:
                frame += data[p:p + 1] * size
                p += 1
            elif kind == 2:
                zstd_block(data, p, p + size, frame, st)
                p += size
            else:
                raise ZstdError("reserved block type")
            if last:
                break
        if fhd & 4:
            p += 4
        out += frame
    return bytes(out)


# ---------------------------------------------------------------- openai

# status: (error.type, error.code) as the API puts them
OPENAI_ERRORS = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", None),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    502: ("server_error", None),
    503: ("server_error", None),
}

OPENAI_STEP_KINDS = ("text", "tool", "shell", "patch", "structured",
                     "status", "cut", "hang", "big")
OPENAI_STEP_KEYS = set(OPENAI_STEP_KINDS) | {
    "input", "args", "id", "message", "code", "retry", "times", "delay"}
REFRESH_MODES = ("allow", "reuse-error", "reused")
# The OAuth client Codex refreshes ChatGPT sign-in tokens as.
CODEX_CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"
# Items the model produced: what comes after the last of them is new input.
MODEL_ITEMS = ("function_call", "custom_tool_call", "local_shell_call",
               "reasoning", "web_search_call", "tool_search_call")
OUTPUT_ITEMS = ("function_call_output", "custom_tool_call_output",
                "tool_search_output")


def check_token(sc, path):
    """The scenario's sign-in "token", checked (both API modes)."""
    tok = sc.get("token")
    if tok is not None and (
            not isinstance(tok, dict) or set(tok) - {"expires_in", "refresh"}
            or tok.get("refresh", "allow") not in REFRESH_MODES
            or not isinstance(tok.get("expires_in", 0), (int, float))):
        sys.exit("vendor.py: %s: token is {\"expires_in\": N, \"refresh\": "
                 "%s}" % (path, " or ".join(REFRESH_MODES)))


def load_openai_scenario(path):
    """The openai mode's scenario, checked like load_scenario's."""
    with open(path) as f:
        sc = json.load(f)
    if not isinstance(sc, dict) or not isinstance(sc.get("turns", []), list):
        sys.exit("vendor.py: %s: not {\"turns\": [...]}" % path)
    check_token(sc, path)
    if sc.get("websocket", 426) not in (404, 426):
        sys.exit("vendor.py: %s: websocket is 404 or 426" % path)
    for i, s in enumerate(sc.get("turns", [])):
        kinds = [k for k in OPENAI_STEP_KINDS
                 if isinstance(s, dict) and k in s]
        if len(kinds) != 1 or set(s) - OPENAI_STEP_KEYS:
            sys.exit("vendor.py: %s: turn %d is not a step: %s"
                     % (path, i, json.dumps(s)))
    return sc


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(claims):
    """A JWT-shaped string: the claims readable, the signature not one."""
    head = {"alg": "RS256", "typ": "JWT", "kid": "vendor.py"}
    return ".".join([b64url(json.dumps(head).encode()),
                     b64url(json.dumps(claims).encode()),
                     b64url(b"vendor.py: not a signature")])


def jwt_claims(token):
    """The payload of a JWT-shaped string, or None."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(
            parts[1] + "=" * (-len(parts[1]) % 4)))
    except ValueError:
        return None
    return claims if isinstance(claims, dict) else None


class OpenAIState(State):
    """State, plus the ChatGPT sign-in's tokens: refresh tokens used so far
    (never their values in the log).  Every log entry has "t", seconds
    since vendor.py started."""

    start = time.time()

    def __init__(self, script, log):
        State.__init__(self, script, log, load_openai_scenario)
        sc = self.scenario
        self.token = sc.get("token")
        self.websocket = int(sc.get("websocket", 426))
        self.used_refresh = set()
        self.issued_access = {}
        self.issued_refresh = set()
        self.account = "00000000-0000-4000-8000-00000000acc7"

    def record(self, entry):
        State.record(self, dict(entry, t=round(time.time() - self.start, 3)))

    def tokens(self, expires_in):
        """A fresh set of ChatGPT sign-in tokens, as auth.openai.com issues
        them: an id_token and an access_token that are JWTs with the claims
        Codex reads, and an opaque refresh_token."""
        now = int(time.time())
        auth = {"chatgpt_account_id": self.account,
                "chatgpt_plan_type": "plus",
                "chatgpt_user_id": "user-vendor0000000000000001",
                "user_id": "user-vendor0000000000000001"}
        profile = {"email": "agent@vendor.invalid", "email_verified": True}
        idt = {"iss": "https://auth.openai.com", "aud": [CODEX_CLIENT_ID],
               "sub": "auth0|vendor", "iat": now, "auth_time": now,
               "exp": now + 3600, "email": profile["email"],
               "email_verified": True,
               "https://api.openai.com/auth": auth,
               "https://api.openai.com/profile": profile}
        acc = {"iss": "https://auth.openai.com",
               "aud": ["https://api.openai.com/v1"],
               "client_id": CODEX_CLIENT_ID, "sub": "auth0|vendor",
               "iat": now, "nbf": now, "exp": now + int(expires_in),
               "jti": self.ident("jti"),
               "scp": ["openid", "profile", "email", "offline_access"],
               "https://api.openai.com/auth": auth,
               "https://api.openai.com/profile": profile}
        t = {"id_token": jwt(idt), "access_token": jwt(acc),
             "refresh_token": "rt_" + b64url(os.urandom(24))}
        with self.lock:
            self.issued_access[t["access_token"]] = acc["exp"]
            self.issued_refresh.add(t["refresh_token"])
        return t

    def auth_json(self, path):
        """Writes a ChatGPT sign-in auth.json (mode 0600) whose access
        token expires in the scenario's token.expires_in seconds."""
        exp = (self.token or {}).get("expires_in", 3600)
        t = self.tokens(exp)
        doc = {"auth_mode": "chatgpt", "OPENAI_API_KEY": None,
               "tokens": dict(t, account_id=self.account),
               "last_refresh": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                             time.gmtime())}
        fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                     0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=2)
        os.rename(path + ".tmp", path)

    def refresh(self, rt):
        """200 and new tokens, or 401: refresh_token_reused, or "unknown"
        for a refresh token this vendor.py never issued."""
        with self.lock:
            if rt not in self.issued_refresh:
                return 401, "unknown"
            reused = rt in self.used_refresh
            self.used_refresh.add(rt)
        mode = (self.token or {}).get("refresh", "allow")
        if mode == "reused" or (reused and mode == "reuse-error"):
            return 401, "reused"
        return 200, "reused" if reused else "fresh"


def tool_names(body):
    """The tools a request offers: tools[] and the additional_tools input
    items Codex's code-mode models get, a namespace's as NS.NAME (the
    default namespace "functions" too)."""
    out = []

    def walk(tools, ns):
        for t in tools if isinstance(tools, list) else []:
            if not isinstance(t, dict):
                continue
            if t.get("type") == "namespace":
                walk(t.get("tools"), t.get("name"))
                continue
            name = t.get("name") or t.get("type")
            out.append("%s.%s" % (ns, name) if ns else name)
    walk(body.get("tools"), None)
    for it in body.get("input") or []:
        if isinstance(it, dict) and it.get("type") == "additional_tools":
            walk(it.get("tools"), None)
    return out


def output_text(out):
    if isinstance(out, str):
        return out
    if isinstance(out, dict):
        return output_text(out.get("content", out.get("output", "")))
    parts = []
    for c in out if isinstance(out, list) else []:
        if isinstance(c, dict) and "text" in c:
            parts.append(str(c["text"]))
        elif isinstance(c, dict):
            parts.append("[%s]" % c.get("type"))
    return "\n".join(parts)


def call_outputs(body):
    """The tool outputs after the model's last item in input."""
    items = [i for i in body.get("input") or [] if isinstance(i, dict)]
    last = max([n for n, i in enumerate(items)
                 if i.get("type") in MODEL_ITEMS or
                 (i.get("type") == "message" and
                  i.get("role") == "assistant")], default=-1)
    out = []
    for i in items[last + 1:]:
        if i.get("type") in OUTPUT_ITEMS:
            out.append({"call_id": i.get("call_id"), "type": i.get("type"),
                        "text": output_text(i.get("output"))[:500]})
    return out


def patch_call(patch, tools):
    """The call that makes the requested model apply PATCH (apply_patch's
    own grammar): code mode's exec, JavaScript awaiting tools.apply_patch
    and returning its result, else the freeform apply_patch tool."""
    if "functions.exec" in tools or "exec" in tools:
        return "exec", ("const r = await tools.apply_patch(%s);\n"
                        "text(JSON.stringify(r));\n" % json.dumps(patch))
    return "apply_patch", patch


def with_session(inp, outputs):
    """INP with every value "$session" replaced by the session ID the last
    outputs name ("session ID N": a command still running), so that a
    scenario can write to a process it started."""
    sid = None
    for o in outputs:
        m = re.search(r"session ID (\d+)|\"session_id\": ?(\d+)", o["text"])
        if m:
            sid = int(m.group(1) or m.group(2))
    if isinstance(inp, dict):
        return {k: (sid if v == "$session" else v) for k, v in inp.items()}
    return inp


def shell_call(cmd, args, tools):
    """The call that makes the requested model run CMD (with exec_command's
    other ARGS): code mode's exec, JavaScript calling tools.exec_command,
    else the exec_command function (shell_command or shell when only
    those are offered)."""
    if "functions.exec" in tools or "exec" in tools:
        js = ("const r = await tools.exec_command(%s);\n"
              "text(JSON.stringify(r));\n" % json.dumps(dict(args, cmd=cmd)))
        return "exec", js
    if "exec_command" not in tools and "shell_command" in tools:
        return "shell_command", dict(args, command=cmd)
    if "exec_command" not in tools and "shell" in tools:
        return "shell", dict(args, command=["bash", "-lc", cmd])
    return "exec_command", dict(args, cmd=cmd)


class OpenAI(Handler):
    request_id_header = "x-request-id"

    def api_error(self, status, message, etype=None, code=None, extra=None):
        t, c = OPENAI_ERRORS.get(status, ("server_error", None))
        self.send_json(status, {"error": {
            "message": message, "type": etype or t, "param": None,
            "code": code if code is not None else c}}, extra)

    def not_found(self, status=404):
        self.state.record({"method": self.command, "path": self.path,
                           "answer": status})
        self.api_error(status, "vendor.py: no such path")

    def do_GET(self):
        self.body()
        if self.headers.get("Upgrade", "").lower() == "websocket":
            st = self.state.websocket
            self.state.record({"method": "GET", "path": self.path,
                               "websocket": True, "answer": st,
                               "authorization":
                               "authorization" in self.headers})
            self.close_connection = True
            self.api_error(st, "vendor.py: no WebSocket here",
                           extra={"Connection": "close"})
            return
        if self.path.split("?")[0] == "/backend-api/wham/accounts/check":
            self.accounts_check()
            return
        self.not_found()

    def accounts_check(self):
        """ChatGPT sign-in's workspace routing discovery, which Codex needs
        before its first turn: the one workspace, the account auth.json
        names, with no routing constraint (the requests stay on the
        chatgpt.com this server stands in for)."""
        acct = self.state.account
        ans = {"accounts": [{
            "id": acct, "name": "vendor.py", "structure": "personal",
            "plan_type": "plus", "profile_picture_url": None,
            "workspace_backend_origin": "NO_CONSTRAINT",
            "account_routing_override": "NO_CONSTRAINT",
            "can_access_with_session": True}],
            "default_account_id": acct, "account_ordering": [acct]}
        self.state.record({"method": "GET", "path": self.path,
                           "bearer": self.bearer(),
                           "account_id": "chatgpt-account-id" in self.headers,
                           "answer": 200})
        self.send_json(200, ans)

    def do_POST(self):
        raw = self.body()
        path = self.path.split("?")[0]
        if path == "/oauth/token":
            self.oauth(raw)
            return
        if path in ("/v1/responses", "/backend-api/codex/responses"):
            enc = self.headers.get("Content-Encoding", "").lower()
            try:
                if enc == "zstd":
                    raw = zstd_decompress(raw)
                elif enc == "gzip":
                    raw = gzip.decompress(raw)
                body = json.loads(raw or b"{}")
            except (ValueError, OSError, EOFError, IndexError):
                body = None
            if isinstance(body, dict):
                self.model_request(body, enc or None)
                return
            self.state.record({"method": "POST", "path": self.path,
                               "content_encoding": enc or None,
                               "answer": 400})
            self.api_error(400, "vendor.py: the body is not a JSON object")
            return
        self.not_found()

    # -- ChatGPT sign-in

    def oauth(self, raw):
        form = self.form(raw)
        entry = {"method": "POST", "path": self.path,
                 "grant_type": form.get("grant_type"),
                 "client_id": form.get("client_id"),
                 "refresh_token": bool(form.get("refresh_token"))}
        status = self.refresh_grant(form, entry)
        if status is None:
            return
        if status != 200:
            self.send_json(401, {"error": {
                "message": "Your refresh token has already been used to "
                "generate a new access token. Please try signing in again.",
                "type": "invalid_request_error", "param": None,
                "code": "refresh_token_reused"}})
            return
        t = self.state.tokens(3600)
        self.send_json(200, dict(t, token_type="Bearer", expires_in=3600,
                                 scope="openid profile email "
                                 "offline_access"))

    def bearer(self):
        """What the Authorization header carries: "none", "opaque" (an API
        key), an access token this vendor.py issued, "valid" or "expired"
        by its exp, or "forged" (a JWT it never issued)."""
        v = self.headers.get("Authorization", "")
        if not v:
            return "none"
        tok = v.split(" ", 1)[1] if " " in v else v
        if jwt_claims(tok) is None:
            return "opaque"
        with self.state.lock:
            exp = self.state.issued_access.get(tok)
        if exp is None:
            return "forged"
        return "valid" if exp > time.time() else "expired"

    # -- the Responses API

    def model_request(self, body, encoding=None):
        tools = tool_names(body)
        meta = {}
        try:
            meta = json.loads(self.headers.get("x-codex-turn-metadata")
                              or "{}")
        except ValueError:
            pass
        kind = meta.get("request_kind") if isinstance(meta, dict) else None
        main = bool(tools)
        fmt = (body.get("text") or {}).get("format") \
            if isinstance(body.get("text"), dict) else None
        entry = {
            "method": "POST", "path": self.path,
            "model": body.get("model"),
            "stream": bool(body.get("stream")),
            "main": main, "kind": "main" if main else "side",
            "request_kind": kind,
            "tools": tools,
            "authorization": "authorization" in self.headers,
            "credential": self.credential(),
            "bearer": self.bearer(),
            "account_id": "chatgpt-account-id" in self.headers,
            "outputs": call_outputs(body),
        }
        if encoding:
            entry["content_encoding"] = encoding
        if isinstance(fmt, dict):
            entry["format"] = fmt.get("type")
            entry["format_name"] = fmt.get("name")
            entry["format_strict"] = fmt.get("strict")
        if entry["bearer"] == "none":
            entry["answer"] = 401
            self.state.record(entry)
            self.send_json(401, {"error": {
                "message": "You didn't provide an API key.",
                "type": "invalid_request_error", "param": None,
                "code": None}})
            return
        if self.state.token is not None and \
                self.path.startswith("/backend-api/") and \
                entry["bearer"] != "valid":
            entry["answer"] = 401
            self.state.record(entry)
            self.api_error(401, "Your authentication token has expired. "
                           "Please try signing in again.",
                           code="token_expired")
            return
        step = self.state.step() if main else {"side": self.state.side}
        entry["step"] = {"big": step["big"]} if "big" in step else step
        self.state.record(entry)
        self.answer(body, step, tools)

    def items(self, step, tools, outputs):
        """The output items a step answers with."""
        if "tool" in step or "shell" in step or "patch" in step:
            if "shell" in step:
                name, inp = shell_call(str(step["shell"]),
                                       step.get("args") or {}, tools)
            elif "patch" in step:
                name, inp = patch_call(str(step["patch"]), tools)
            else:
                name, inp = step["tool"], with_session(
                    step.get("input", {}), outputs)
            cid = step.get("id") or self.state.ident("call")
            if isinstance(inp, str):
                return [{"type": "custom_tool_call",
                         "id": self.state.ident("ctc"), "status": "completed",
                         "call_id": cid, "name": name, "input": inp}]
            return [{"type": "function_call", "id": self.state.ident("fc"),
                     "status": "completed", "call_id": cid, "name": name,
                     "arguments": json.dumps(inp)}]
        if "big" in step:
            text = big_text(int(step["big"]))
        elif "structured" in step:
            text = json.dumps(step["structured"])
        elif "side" in step:
            text = step["side"]
        else:
            text = str(step["text"])
        return [{"type": "message", "id": self.state.ident("msg"),
                 "status": "completed", "role": "assistant",
                 "content": [{"type": "output_text", "text": text,
                              "annotations": []}]}]

    def answer(self, body, step, tools):
        if "status" in step:
            st = int(step["status"])
            self.api_error(st, step.get("message", "vendor.py: scripted %d"
                                        % st), code=step.get("code"),
                           extra={"x-should-retry": "false"}
                           if step.get("retry") is False else None)
            return
        seq = [0]

        def ev(obj):
            obj["sequence_number"] = seq[0]
            seq[0] += 1
            self.event(obj)
        resp = {"id": self.state.ident("resp"), "object": "response",
                "created_at": int(time.time()), "status": "in_progress",
                "model": body.get("model") or "gpt-vendor", "output": [],
                "usage": None}
        if step.get("hang"):
            self.sse_start()
            ev({"type": "response.created", "response": resp})
            self.wait_for_client_to_go()
            return
        if step.get("cut"):
            self.sse_start()
            ev({"type": "response.created", "response": resp})
            ev({"type": "response.output_item.added", "output_index": 0,
                "item": {"type": "message", "id": "msg_cut",
                         "status": "in_progress", "role": "assistant",
                         "content": []}})
            self.chunk(b'event: response.output_text.delta\ndata: {"type":'
                       b'"response.output_text.delta","item_id":"msg_cu')
            self.cut()
            return
        if step.get("delay"):
            time.sleep(float(step["delay"]))
        out = self.items(step, tools, call_outputs(body))
        self.sse_start()
        ev({"type": "response.created", "response": resp})
        ev({"type": "response.in_progress", "response": resp})
        for n, item in enumerate(out):
            self.stream_item(ev, n, item)
        usage = {"input_tokens": 10, "input_tokens_details":
                 {"cached_tokens": 0}, "output_tokens": 5,
                 "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 15}
        ev({"type": "response.completed", "response": dict(
            resp, status="completed", output=out, usage=usage)})
        self.sse_end()

    def stream_item(self, ev, n, item):
        iid = item["id"]
        if item["type"] == "message":
            text = item["content"][0]["text"]
            ev({"type": "response.output_item.added", "output_index": n,
                "item": dict(item, status="in_progress", content=[])})
            part = {"type": "output_text", "text": "", "annotations": []}
            ev({"type": "response.content_part.added", "item_id": iid,
                "output_index": n, "content_index": 0, "part": part})
            for i in range(0, max(len(text), 1), 16384):
                ev({"type": "response.output_text.delta", "item_id": iid,
                    "output_index": n, "content_index": 0,
                    "delta": text[i:i + 16384]})
            ev({"type": "response.output_text.done", "item_id": iid,
                "output_index": n, "content_index": 0, "text": text})
            ev({"type": "response.content_part.done", "item_id": iid,
                "output_index": n, "content_index": 0,
                "part": dict(part, text=text)})
        else:
            key, kind = ("arguments", "function_call_arguments") \
                if item["type"] == "function_call" \
                else ("input", "custom_tool_call_input")
            v = item[key]
            ev({"type": "response.output_item.added", "output_index": n,
                "item": dict(item, status="in_progress", **{key: ""})})
            for part in (v[:len(v) // 2], v[len(v) // 2:]):
                ev({"type": "response.%s.delta" % kind, "item_id": iid,
                    "output_index": n, "delta": part})
            ev({"type": "response.%s.done" % kind, "item_id": iid,
                "output_index": n, key: v})
        ev({"type": "response.output_item.done", "output_index": n,
            "item": item})


HANDLERS = {"anthropic": Anthropic, "openai": OpenAI}
CREDENTIAL = None  # the first --credential FILE's key: /v1/echo's
CREDENTIALS = []  # every --credential's, in order, for credential()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True)
    ap.add_argument("--ready", required=True)
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--mode", default="hello",
                    choices=["hello", "echo", "sink", "tarpit", "anthropic",
                             "openai"])
    ap.add_argument("--script")
    ap.add_argument("--log")
    ap.add_argument("--auth-json")  # openai mode: see the module's doc
    ap.add_argument("--claude-auth-json")  # anthropic mode: the same
    ap.add_argument("--credential", action="append", default=[])
    a = ap.parse_args()
    global CREDENTIAL
    for c in a.credential:
        with open(c) as f:
            CREDENTIALS.append(f.read().rstrip("\n"))
    CREDENTIAL = CREDENTIALS[0] if CREDENTIALS else None
    state = None
    if a.mode == "anthropic":
        state = ClaudeState(a.script, a.log)
        if a.claude_auth_json:
            state.auth_json(a.claude_auth_json)
    elif a.mode == "openai":
        state = OpenAIState(a.script, a.log)
        if a.auth_json:
            state.auth_json(a.auth_json)
    ctx = None
    if a.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.cert, a.key)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if a.mode == "tarpit":
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.bind((a.listen, 0))
    s.listen(128)
    with open(a.ready + ".tmp", "w") as f:
        f.write("%d\n" % s.getsockname()[1])
    os.rename(a.ready + ".tmp", a.ready)
    while True:
        conn, _ = s.accept()
        # As a vendor's server would: an answer's last small write is
        # not held for the client's delayed ACK.
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def handshake(c=conn):
            if ctx is not None:
                try:
                    c.settimeout(10)
                    c = ctx.wrap_socket(c, server_side=True)
                    c.settimeout(None)
                except (OSError, ssl.SSLError):
                    c.close()
                    return
            serve(c, a.mode, state)
        threading.Thread(target=handshake, daemon=True).start()


if __name__ == "__main__":
    main()
