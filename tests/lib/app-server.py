#!/usr/bin/env python3
"""app-server.py MODE LOG: a stand-in for `codex app-server`, for the tests
of ab-codex as a process (tests/ab-codex.bats): JSON-RPC, one object a line,
on stdin and stdout, as Codex CLI 0.163.0 speaks it, with the thread's
answer and the turn scripted by MODE:
  ok        the thread as asked; the turn asks to add /work-relative
            file a.txt (announced first), and completes with a message
  policy    the thread comes back with approval policy "never"
  reviewer  the thread comes back reviewed by "auto_review"
  remote    remote control reports "connected" before the thread
  other     a command approval for a thread ab-codex did not start
  hang      the turn starts and nothing more comes
  die       the server exits once the turn has started
  nul       the turn runs `cat bin.dat`, whose output holds NUL bytes
            (\u0000, as Codex reports them), and completes
LOG gets one JSON line per message ab-codex sent, and first a line with
the working directory and CODEX_HOME's config.toml as the server saw them.
Test helper only: the real app-server is tested in tests/codex.bats."""
import json
import os
import sys
import time

mode, log = sys.argv[1], open(sys.argv[2], "a")


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


cfg = os.path.join(os.environ.get("CODEX_HOME", "/nonexistent"), "config.toml")
log.write(json.dumps({"cwd": os.getcwd(),
                      "config": open(cfg).read() if os.path.exists(cfg)
                      else None}) + "\n")
log.flush()
root = os.getcwd()
for line in sys.stdin:
    msg = json.loads(line)
    log.write(json.dumps(msg) + "\n")
    log.flush()
    method = msg.get("method")
    if method == "initialize":
        if mode == "remote":
            out({"method": "remoteControl/status/changed",
                 "params": {"status": "connected"}})
        out({"id": msg["id"], "result": {"userAgent": "app-server.py"}})
    elif method == "thread/start":
        p = msg["params"]
        res = {"thread": {"id": "thr-1", "ephemeral": True},
               "model": p.get("model", "gpt-default"), "cwd": p["cwd"],
               "approvalPolicy": "never" if mode == "policy"
               else p["approvalPolicy"],
               "approvalsReviewer": "auto_review" if mode == "reviewer"
               else p["approvalsReviewer"],
               "sandbox": {"type": "workspaceWrite", "writableRoots": [],
                           "networkAccess": False}}
        out({"id": msg["id"], "result": res})
    elif method == "turn/start":
        out({"id": msg["id"], "result": {"turn": {"id": "t1"}}})
        if mode == "hang":
            continue
        if mode == "die":
            sys.exit(3)
        if mode == "nul":
            cmd = {"type": "commandExecution", "id": "c1",
                   "command": "cat bin.dat", "status": "inProgress"}
            out({"method": "item/started",
                 "params": {"threadId": "thr-1", "item": cmd}})
            out({"method": "item/completed", "params": {
                "threadId": "thr-1", "item": dict(
                    cmd, status="completed", aggregatedOutput="a\0b\0c\n",
                    exitCode=0)}})
            out({"method": "item/completed", "params": {
                "threadId": "thr-1", "item": {"type": "agentMessage",
                                              "id": "m", "text": "done"}}})
            out({"method": "turn/completed", "params": {
                "threadId": "thr-1", "turn": {"id": "t1",
                                              "status": "completed",
                                              "items": []}}})
            continue
        if mode == "other":
            out({"id": 0, "method": "item/commandExecution/requestApproval",
                 "params": {"threadId": "thr-2", "itemId": "c"}})
            continue
        change = [{"path": root + "/a.txt", "kind": {"type": "add"},
                   "diff": "a\n"}]
        out({"method": "item/started", "params": {
            "threadId": "thr-1", "item": {"type": "fileChange", "id": "f1",
                                          "changes": change,
                                          "status": "inProgress"}}})
        out({"id": 0, "method": "item/fileChange/requestApproval",
             "params": {"threadId": "thr-1", "itemId": "f1"}})
    elif msg.get("id") == 0 and "result" in msg:
        ok = msg["result"].get("decision") == "accept"
        out({"method": "item/completed", "params": {
            "threadId": "thr-1", "item": {
                "type": "fileChange", "id": "f1",
                "changes": [{"path": root + "/a.txt",
                             "kind": {"type": "add"}, "diff": "a\n"}],
                "status": "completed" if ok else "declined"}}})
        out({"method": "item/completed", "params": {
            "threadId": "thr-1", "item": {"type": "agentMessage", "id": "m",
                                          "text": "done"}}})
        out({"method": "turn/completed", "params": {
            "threadId": "thr-1", "turn": {"id": "t1", "status": "completed",
                                          "items": []}}})
time.sleep(0.2)
