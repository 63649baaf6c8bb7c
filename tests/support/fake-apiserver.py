#!/usr/bin/env python3
"""A scripted HTTPS API server for the sync's transport tests.

usage: fake-apiserver.py DIR

DIR holds server.crt, server.key, ca.crt (client certificates are asked
for and verified against it) and script.json: a list of answers, one per
request, the last one repeated:
  {"status": 200, "body": "..."}   an answer
  {"cut": true}                   headers promising 4096 bytes, 10 sent, the
                                  connection closed (curl: partial answer)
  {"stall": true}                 nothing, for ever
It writes its port to DIR/port once listening and each request as one JSON
line to DIR/requests.jsonl (method, path, user_agent, body, client_cert).
"""

import json
import os
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIR = sys.argv[1]
SCRIPT = json.load(open(os.path.join(DIR, "script.json")))
LOCK = threading.Lock()
SEEN = [0]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        cert = self.connection.getpeercert() or {}
        subject = dict(x[0] for x in cert.get("subject", ()))
        with LOCK:
            n = SEEN[0]
            SEEN[0] += 1
            with open(os.path.join(DIR, "requests.jsonl"), "a") as log:
                log.write(json.dumps({
                    "method": self.command,
                    "path": self.path,
                    "user_agent": self.headers.get("User-Agent"),
                    "body": body,
                    "client_cert": subject.get("commonName"),
                }) + "\n")
        step = SCRIPT[min(n, len(SCRIPT) - 1)]
        if step.get("stall"):
            time.sleep(3600)
            return
        if step.get("cut"):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "4096")
            self.end_headers()
            self.wfile.write(b'{"kind":"No')
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        data = step.get("body", "").encode()
        self.send_response(step.get("status", 200))
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_PATCH = do_POST = do_PUT = do_DELETE = answer


def main():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(DIR, "server.crt"), os.path.join(DIR, "server.key"))
    ctx.load_verify_locations(os.path.join(DIR, "ca.crt"))
    ctx.verify_mode = ssl.CERT_REQUIRED
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    port_file = os.path.join(DIR, "port")
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


main()
