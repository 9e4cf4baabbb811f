# SPDX-License-Identifier: Apache-2.0
"""A stand-in for ClickHouse's HTTP interface, for the fleet tests that
need a server to behave on cue (t02), to record what the client sends
(t05), or to hand the client's requests to another engine (t06): the
HTTP side only; what it answers is the caller's function.

    srv = StandIn(respond)    # listening on 127.0.0.1, a free port
    srv.url                   # http://127.0.0.1:PORT
    srv.stop()

respond(req) gets a Request (path, query: the URL's parameters as
parse_qs gives them, headers, body: the bytes of the POST) and returns
(status, body: str or bytes), or DROP to close the connection without an
answer.  It runs in the server's threads, one per connection.

uleb(body, i) reads one unsigned LEB128 (RowBinary's string and array
lengths) of a body the client sent: (value, the offset after it)."""

import socket
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DROP = object()


class Request:
    def __init__(self, path, headers, body):
        self.path = path
        self.query = urllib.parse.parse_qs(urllib.parse.urlparse(path).query)
        self.headers = headers
        self.body = body

    def param(self, name, default=""):
        return self.query.get(name, [default])[0]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        ans = self.server.respond(Request(self.path, self.headers, body))
        if ans is DROP:
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        code, text = ans
        data = text.encode() if isinstance(text, str) else text
        try:
            self.send_response(code)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass                        # the client gave up waiting


class StandIn:
    def __init__(self, respond):
        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.srv.respond = respond
        self.th = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.th.start()
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()


def uleb(b, i):
    """The unsigned LEB128 at b[i]: (value, offset after it)."""
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i
