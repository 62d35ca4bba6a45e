#!/usr/bin/env python3
"""old-proxy.py ALLOC_RECORD: makes an allocation's egress proxy one of an
allocation made before agentbox put credentials in at its proxy (0.1.0):
the same container in every field but its command, which has neither
--vault nor --anchors.  The container is created again through the Engine
API from its own inspect, under its own name, and the allocation's record
names the new one.  For tests/inject.bats; the engine is the real one."""
import http.client
import json
import os
import socket
import sys


class Unix(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost")
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(self.path)


def call(method, path, body=None):
    c = Unix(os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
             .replace("unix://", ""))
    c.request(method, path, json.dumps(body) if body is not None else None,
              {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    if r.status >= 300:
        raise SystemExit("old-proxy: %s %s: %d %s" % (method, path, r.status,
                                                      data[:200]))
    return json.loads(data) if data else None


def main():
    rec_path = sys.argv[1]
    rec = json.load(open(rec_path))
    old = rec["egress"]["proxy_id"]
    i = call("GET", "/containers/%s/json" % old)
    cfg = dict(i["Config"])
    cfg["Cmd"] = [a for a in cfg["Cmd"] if not a.startswith(("--vault=",
                                                             "--anchors="))]
    if len(cfg["Cmd"]) != len(i["Config"]["Cmd"]) - 2:
        raise SystemExit("old-proxy: the command had no --vault and "
                         "--anchors")
    cfg["HostConfig"] = i["HostConfig"]
    cfg["NetworkingConfig"] = {"EndpointsConfig": {
        n: {"Aliases": v.get("Aliases")}
        for n, v in i["NetworkSettings"]["Networks"].items()}}
    name = i["Name"].lstrip("/")
    call("POST", "/containers/%s/stop?t=1" % old)
    call("DELETE", "/containers/%s?force=1" % old)
    new = call("POST", "/containers/create?name=%s" % name, cfg)["Id"]
    call("POST", "/containers/%s/start" % new)
    rec["egress"]["proxy_id"] = new
    with open(rec_path + ".new", "w") as f:
        json.dump(rec, f)
    os.rename(rec_path + ".new", rec_path)


if __name__ == "__main__":
    main()
