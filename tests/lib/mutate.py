#!/usr/bin/env python3
"""mutate.py RECORD NAME [STATEMENT]: creates container NAME through the
engine API (DOCKER_HOST's socket, or the host's) from the create body
frozen in profile RECORD, after running the Python STATEMENT on it (the
body is `b`), and prints the container's ID.  Without a statement it
creates an unchanged copy.  Test helper only."""
import http.client
import json
import os
import socket
import sys
import urllib.parse


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost")
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def main():
    record, name = sys.argv[1], sys.argv[2]
    with open(record) as f:
        b = json.load(f)["body"]
    if len(sys.argv) > 3:
        exec(sys.argv[3], {"b": b})
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not host.startswith("unix://"):
        sys.exit("mutate.py: DOCKER_HOST must be unix://")
    c = UnixHTTP(host[len("unix://"):])
    c.request("POST", "/v1.41/containers/create?name=" +
              urllib.parse.quote(name), json.dumps(b),
              {"Content-Type": "application/json"})
    r = c.getresponse()
    reply = json.loads(r.read() or b"{}")
    if r.status != 201:
        sys.exit("mutate.py: %d %s" % (r.status, reply.get("message")))
    print(reply["Id"])


main()
