#!/usr/bin/env python3
"""bench/api-floor.py IMAGE: the engine's own cost of what one agentbox
task must do at the least, with nothing checked: three tmpfs volumes, a
keeper started on them, an agent created on them, started, waited for,
and everything removed, on one connection to the engine's socket, from
one process.  No seeding, no inspect, no proof.  Prints the seconds.
For bench/task.sh: agentbox cannot cost less than this."""
import http.client
import json
import os
import socket
import sys
import time


class Unix(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost")
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(self.path)


def call(c, method, url, body=None, ok=(200, 201, 204)):
    data = json.dumps(body).encode() if body is not None else None
    c.request(method, "/v1.41" + url, data,
              {"Content-Type": "application/json"} if data else {})
    r = c.getresponse()
    out = r.read()
    if r.status not in ok:
        sys.exit("api-floor: %s %s: %d %s" % (method, url, r.status, out[:200]))
    return json.loads(out) if out else None


image = sys.argv[1]
name = "ab-floor-%d" % os.getpid()
c = Unix("/var/run/docker.sock")
mounts = []
t0 = time.monotonic()
for v, size in (("task", 268435456), ("git", 268435456), ("inputs", 16777216)):
    call(c, "POST", "/volumes/create", {
        "Name": "%s-%s" % (name, v), "Driver": "local",
        "Labels": {"org.agentbox.bench": "floor"},
        "DriverOpts": {"type": "tmpfs", "device": "tmpfs",
                       "o": "size=%d,nr_inodes=100000" % size}})
    mounts.append({"Type": "volume", "Source": "%s-%s" % (name, v),
                   "Target": {"task": "/work", "git": "/work/.git",
                              "inputs": "/run/agentbox/inputs"}[v],
                   "VolumeOptions": {"NoCopy": True}})
# NetworkDisabled as agentbox sets it: without it the engine builds a
# network sandbox, some 50 ms a start.
host = {"NetworkMode": "none", "ReadonlyRootfs": True, "Mounts": mounts}
label = {"org.agentbox.bench": "floor"}
k = call(c, "POST", "/containers/create?name=%s-keeper" % name, {
    "Image": image, "Entrypoint": ["/bin/sleep"], "Cmd": ["2147483647"],
    "NetworkDisabled": True, "Labels": label, "HostConfig": host})["Id"]
call(c, "POST", "/containers/%s/start" % k)
a = call(c, "POST", "/containers/create?name=%s-agent" % name, {
    "Image": image, "Entrypoint": ["true"], "NetworkDisabled": True,
    "Labels": label, "HostConfig": host})["Id"]
call(c, "POST", "/containers/%s/start" % a)
call(c, "POST", "/containers/%s/wait" % a)
call(c, "DELETE", "/containers/%s?force=1" % a)
call(c, "DELETE", "/containers/%s?force=1" % k)
for v in ("task", "git", "inputs"):
    call(c, "DELETE", "/volumes/%s-%s" % (name, v))
print("%.3f" % (time.monotonic() - t0))
