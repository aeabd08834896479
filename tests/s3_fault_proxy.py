"""A loopback proxy in front of an S3 server that answers some requests with an error itself.

s3_fault_proxy.py UPSTREAM METHOD STATUS CODE TIMES
    listens on a free loopback port (printed on stdout), forwards every request to UPSTREAM
    (the Host header kept, so that signatures still match) except the first TIMES whose method
    is METHOD, answered STATUS with an S3 error body of CODE. GET /proxy-stats answers
    "<faults fired> <requests forwarded>". STATUS "reset" closes the connection with a TCP
    reset instead of answering, the request read.
s3_fault_proxy.py UPSTREAM region REGION
    answers as AWS S3 does a request signed for another region than the bucket's, REGION:
    400 AuthorizationHeaderMalformed naming REGION; forwards the others.
"""
import http.client
import re
import socket
import struct
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

up = urlsplit(sys.argv[1])
if sys.argv[2] == "region":
    METHOD, STATUS, CODE, TIMES, REGION = None, 0, "", 0, sys.argv[3]
else:
    METHOD, STATUS, CODE, TIMES, REGION = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), None
CHUNK = 64 * 1024
lock = threading.Lock()
stats = {"fired": 0, "forwarded": 0}


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        parts = []
        while n > 0:
            b = self.rfile.read(min(n, CHUNK))
            if not b:
                break
            parts.append(b)
            n -= len(b)
        body = b"".join(parts)
        if self.path == "/proxy-stats":
            return self.answer(200, ("%d %d" % (stats["fired"], stats["forwarded"])).encode(), [])
        if REGION:
            m = re.search(r"Credential=[^/]*/[^/]*/([^/]*)/", self.headers.get("Authorization", ""))
            fire = bool(m) and m.group(1) != REGION
            with lock:
                stats["fired" if fire else "forwarded"] += 1
            if fire:
                err = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>AuthorizationHeaderMalformed"
                       "</Code><Message>The authorization header is malformed; the region '%s' is "
                       "wrong; expecting '%s'</Message><Region>%s</Region></Error>"
                       % (m.group(1), REGION, REGION)).encode()
                return self.answer(400, err, [("Content-Type", "application/xml")])
            return self.forward(body)
        with lock:
            fire = self.command == METHOD and stats["fired"] < TIMES
            stats["fired" if fire else "forwarded"] += 1
        if fire and STATUS == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        if fire:
            err = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>%s</Code>"
                   "<Message>injected by the test</Message></Error>" % CODE).encode()
            return self.answer(int(STATUS), err, [("Content-Type", "application/xml")])
        self.forward(body)

    def forward(self, body):
        c = http.client.HTTPConnection(up.hostname, up.port, timeout=60)
        c.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for k, v in self.headers.items():
            c.putheader(k, v)
        c.endheaders(body)
        r = c.getresponse()
        data = r.read()
        self.answer(r.status, data, [(k, v) for k, v in r.getheaders()
                                     if k.lower() not in ("content-length", "transfer-encoding",
                                                          "connection")],
                    head=self.command == "HEAD", length=r.getheader("Content-Length"))
        c.close()

    def answer(self, status, data, headers, head=False, length=None):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", length if head and length else str(len(data)))
        self.end_headers()
        if not head:
            for i in range(0, len(data), CHUNK):
                self.wfile.write(data[i:i + CHUNK])

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_any


srv = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
print(srv.server_address[1], flush=True)
srv.serve_forever()
