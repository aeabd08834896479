#!/usr/bin/env python3
"""Hostile inputs for the peer daemon (tests/peer.bats).

  peer_hostile.py tar KIND > body.tar     a tar stream of one hostile kind
  peer_hostile.py stall URL SENT TOTAL SEC [HELD]  a PUT declaring TOTAL bytes
                                          that sends SENT of them, writes HELD
                                          (when given), then waits SEC s
  peer_hostile.py swap DIR A B > body.tar   DIR as tar with the contents of its
                                          files A and B swapped
  peer_hostile.py upgrade URL FILE        a tree PUT the way push sends it (Upgrade:
                                          mtc-tar, FILE on the connection after the
                                          101); prints the final HTTP code
  peer_hostile.py flip HOST:PORT METHOD N OFFSET
                                          a TCP relay to HOST:PORT printing its
                                          own port; in the first N requests of
                                          METHOD (PUT or GET) for data it flips
                                          the body byte at OFFSET (PUT: the
                                          request body, GET: the response body)
  peer_hostile.py ranges KIND FILE          a daemon serving FILE as <its b3sum>.data
                                          that says it serves byte ranges and
                                          prints its port; KIND: whole (a 200 of
                                          the whole file instead), mislabeled (a
                                          206 naming another range), shifted (a
                                          206 of the bytes one further on)
  peer_hostile.py probes URL TOKENFILE MANIFEST HASH HEAD_TIMEOUT
                                          every probe below against one daemon
                                          (MANIFEST: a legitimate tree's manifest
                                          named HASH), under a flood of half-open
                                          connections; prints one line per probe
                                          and exits 1 if one did not hold;
                                          an https:// URL runs them over TLS with
                                          $MTC_TEST_TLS_DIR's ca.crt, tls.crt and
                                          tls.key, and adds a flood of TCP
                                          connections that never start the
                                          handshake
  peer_hostile.py framing URL FIRST SECOND each request whose framing is ambiguous
                                          (two Content-Lengths, Content-Length
                                          with Transfer-Encoding, a coding other
                                          than one chunked) as FIRST ("METHOD
                                          PATH"), with the request SECOND
                                          pipelined behind it: each must be
                                          answered 400 and its connection closed,
                                          SECOND never answered (while it is
                                          behind a sound FIRST); over TLS for
                                          an https:// URL
                                          as probes; prints one line per case
                                          and exits 1 if one did not hold
"""
import http.client
import io
import os
import random
import select
import socket
import ssl
import sys
import tarfile
import threading
import time
import urllib.parse


def add(tf, name, data=b"x", kind=tarfile.REGTYPE, link="", pax=None):
    ti = tarfile.TarInfo(name)
    ti.pax_headers = pax or {}
    ti.type = kind
    ti.linkname = link
    ti.mode = 0o644
    if kind == tarfile.REGTYPE:
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    else:
        tf.addfile(ti)


RANGE = "SCHILY.xattr.mtc.range"  # a range of a big file (peer_wire.h)


def hostile_tar(kind):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        add(tf, "ok.txt", b"fine\n")
        if kind == "traversal":
            add(tf, "../escaped.txt")
        elif kind == "traversal-inner":
            add(tf, "a/../../escaped.txt")
        elif kind == "absolute":
            add(tf, "/tmp/mtc-peer-absolute.txt")
        elif kind == "symlink":
            add(tf, "link", kind=tarfile.SYMTYPE, link="/etc")
            add(tf, "link/escaped.txt")
        elif kind == "hardlink":
            add(tf, "hard", kind=tarfile.LNKTYPE, link="/etc/passwd")
        elif kind == "device":
            add(tf, "null", kind=tarfile.CHRTYPE)
        elif kind == "fifo":
            add(tf, "fifo", kind=tarfile.FIFOTYPE)
        elif kind == "duplicate":
            add(tf, "ok.txt", b"again\n")
        elif kind == "many":
            for i in range(20):
                add(tf, "f%02d" % i)
        elif kind == "deep":
            add(tf, "/".join(["d"] * 10) + "/f")
        elif kind == "big":
            add(tf, "big", b"\0" * 200000)
        elif kind == "control":
            add(tf, "bad\nname")
        elif kind == "range-beside":  # a range of a file that also came whole
            add(tf, "ok.txt", b"fine\n", pax={RANGE: "0 5"})
        elif kind == "range-unaligned":
            add(tf, "ok.txt", b"ine\n", pax={RANGE: "1 5"})
        elif kind == "range-past":
            add(tf, "ok.txt", b"x", pax={RANGE: "65536 5"})
        elif kind == "range-short":  # stops short of the file's end, not at a unit
            add(tf, "ok.txt", b"fin", pax={RANGE: "0 5"})
        else:
            raise SystemExit("unknown kind " + kind)
    data = buf.getvalue()
    if kind == "truncated":
        data = data[:700]
    return data


def stall(url, sent, total, seconds, held=None):
    u = urllib.parse.urlsplit(url)
    s = socket.create_connection((u.hostname, u.port), timeout=30)
    s.sendall(("PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n"
               % (u.path, u.netloc, total)).encode())
    s.sendall(b"\0" * sent)
    if held:
        with open(held, "w") as f:
            f.write("held\n")
    time.sleep(seconds)
    s.close()


def read_code(s):
    data = b""
    while True:
        try:
            d = s.recv(65536)
        except OSError:
            break
        if not d:
            break
        data += d
        if b"\r\n\r\n" in data and not data.startswith(b"HTTP/1.1 101"):
            continue
        if data.startswith(b"HTTP/1.1 101") and b"\r\n\r\n" in data:
            break
    return data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/") else "000"


def upgrade_put(url, body):
    u = urllib.parse.urlsplit(url)
    s = socket.create_connection((u.hostname, u.port), timeout=30)
    s.sendall(("PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\n"
               "Connection: Upgrade\r\nUpgrade: mtc-tar\r\n\r\n" % (u.path, u.netloc)).encode())
    code = read_code(s)
    if code == "101":
        try:
            s.sendall(body)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        code = read_code(s)
    s.close()
    print(code)


def swapped_tar(root, a, b):
    """The tree as a tar stream, with a's bytes under b's name and b's under a's."""
    swap = {a: b, b: a}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for d, dirs, files in os.walk(root):
            dirs.sort()
            rel = os.path.relpath(d, root)
            if rel != ".":
                tf.add(d, arcname=rel, recursive=False)
            for f in sorted(files):
                name = os.path.normpath(os.path.join(rel, f))
                src = os.path.join(root, swap.get(name, name))
                ti = tf.gettarinfo(os.path.join(d, f), arcname=name)
                with open(src, "rb") as fh:
                    data = fh.read()
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def pump(src, dst, flip_at, first=b""):
    """Copies src to dst (first: bytes already read from src); with flip_at,
    flips the byte flip_at bytes after the end of the headers."""
    data = first
    try:
        if flip_at is not None:
            while b"\r\n\r\n" not in data:
                more = src.recv(65536)
                if not more:
                    break
                data += more
            end = data.find(b"\r\n\r\n") + 4
            if end >= 4:
                dst.sendall(data[:end])
                data = data[end:]
        while True:
            if flip_at is not None and flip_at < len(data):
                b = bytearray(data)
                b[flip_at] ^= 0xFF
                data, flip_at = bytes(b), None
            elif flip_at is not None:
                flip_at -= len(data)
            if data:
                dst.sendall(data)
            data = src.recv(65536)
            if not data:
                break
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def flip_relay(upstream, method, count, offset):
    host, port = upstream.rsplit(":", 1)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    print(srv.getsockname()[1], flush=True)
    left = count
    while True:
        c, _ = srv.accept()
        u = socket.create_connection((host, int(port)))
        first = c.recv(65536)
        line = first.split(b"\r\n", 1)[0]
        hit = left > 0 and line.startswith(method.encode() + b" ") and (
            b".data " in line or (method == "PUT" and b"/v1/uploads/" in line))
        left -= hit
        threading.Thread(target=pump, args=(c, u, offset if hit and method == "PUT" else None,
                                            first), daemon=True).start()
        threading.Thread(target=pump, args=(u, c, offset if hit and method == "GET" else None),
                         daemon=True).start()


def range_server(kind, path):
    import http.server
    import re
    data = open(path, "rb").read()
    size = len(data)

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_HEAD(self):
            self.send_response(200)
            self.send_header("X-Mtc-Size", str(size))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self):
            m = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
            a, b = (int(m.group(1)), int(m.group(2))) if m else (0, size - 1)
            body, label = data[a:b + 1], (a, b)
            if kind == "whole" or not m:
                self.send_response(200)
                body = data
            else:
                self.send_response(206)
                if kind == "mislabeled":
                    label = (a + 65536, b + 65536)
                elif kind == "shifted":
                    body = data[a + 1:b + 2].ljust(b + 1 - a, b"\0")
                self.send_header("Content-Range", "bytes %d-%d/%d" % (label[0], label[1], size))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.handle_error = lambda *args: None  # a client that hangs up on a bad answer
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


def whole_only_server(root):
    """A daemon from before a one-file object could come in ranges: it
    opens no upload session for a file (400) and stores what is PUT whole."""
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def answer(self, code, body=b""):
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_HEAD(self):
            self.answer(404)

        def do_POST(self):
            self.answer(400, b"upload sessions are for trees; PUT a file whole\n")

        def do_PUT(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            name = os.path.basename(self.path)
            with open(os.path.join(root, name), "wb") as f:
                f.write(body)
            with open(os.path.join(root, "puts"), "a") as f:
                f.write("%s %s\n" % (name, self.headers.get("Content-Range", "whole")))
            self.answer(201)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


TLS = None  # the client's ssl.SSLContext for https:// URLs
SILENT = 100  # connections that never start the handshake: beyond the daemon's 64, within its burst allowance


def tls_context():
    d = os.environ["MTC_TEST_TLS_DIR"]
    ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.crt"))
    ctx.load_cert_chain(os.path.join(d, "tls.crt"), os.path.join(d, "tls.key"))
    return ctx


def connect(addr, timeout):
    """A connection to (host, port): over TLS when TLS is set, handshake done."""
    s = socket.create_connection(addr, timeout=timeout)
    return TLS.wrap_socket(s, server_hostname=addr[0]) if TLS else s


def request(url, method, path, body=None, token=None, headers=(), timeout=30):
    """One request on a fresh connection: (HTTP code, body), or (0, why)."""
    u = urllib.parse.urlsplit(url)
    h = dict(headers)
    if token:
        h["Authorization"] = "Bearer " + token
    c = (http.client.HTTPSConnection(u.hostname, u.port, timeout=timeout, context=TLS)
         if TLS else http.client.HTTPConnection(u.hostname, u.port, timeout=timeout))
    try:
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        return r.status, r.read()
    except (OSError, http.client.HTTPException) as e:
        return 0, str(e).encode()
    finally:
        c.close()


def closed_by_peer(s):
    try:
        if not select.select([s], [], [], 0)[0]:
            return False
        return s.recv(4096) == b""
    except (BlockingIOError, ssl.SSLWantReadError):
        return False
    except OSError:
        return True


class Flood:
    """n half-open connections, each sending one header line every interval s
    (never the end of its head); records how long each one stayed open.
    silent: plain TCP connections that send nothing, not even a TLS hello."""

    def __init__(self, url, n, interval, limit, silent=False):
        u = urllib.parse.urlsplit(url)
        self.addr, self.n, self.interval, self.limit = (u.hostname, u.port), n, interval, limit
        self.silent = silent
        self.lives, self.stop = [], threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        open_ = []
        for _ in range(self.n):
            try:
                if self.silent:
                    s = socket.create_connection(self.addr, timeout=5)
                else:
                    s = connect(self.addr, 5)
                    s.sendall(b"PUT /v1/objects/x.data HTTP/1.1\r\n")
                s.settimeout(None)
                open_.append((s, time.monotonic()))
            except OSError:
                self.lives.append(0.0)
        t_end = time.monotonic() + self.limit
        while open_ and not self.stop.is_set() and time.monotonic() < t_end:
            time.sleep(self.interval)
            still = []
            for s, t0 in open_:
                try:
                    if closed_by_peer(s):
                        raise OSError
                    if not self.silent:
                        s.sendall(b"X-Trickle: 1\r\n")
                    still.append((s, t0))
                except OSError:
                    self.lives.append(time.monotonic() - t0)
                    s.close()
            open_ = still
        for s, t0 in open_:
            self.lives.append(float("inf"))
            s.close()


def healthz_watch(url, stop, lat):
    while not stop.is_set():
        t0 = time.monotonic()
        code, why = request(url, "GET", "/healthz", timeout=5)
        if code != 200:
            print("healthz: %d %s" % (code, why), file=sys.stderr, flush=True)
        lat.append(time.monotonic() - t0 if code == 200 else float("inf"))
        time.sleep(0.1)


def fake_manifest(size):
    """A manifest of about size bytes whose entries parse but do not compose."""
    rnd = random.Random(size)
    parts, n = ['{"path":"","type":"dir","size":0,"digest":"D' + "0" * 64 + '"}'], 0
    total = len(parts[0]) + 2
    while total < size - 200:
        e = '{"path":"f%07d","type":"file","size":1,"digest":"%064x"}' % (n, rnd.getrandbits(256))
        parts.append(e)
        total += len(e) + 1
        n += 1
    return ("[" + ",".join(parts) + "]").encode()


def trickle_body(url, path, token, per_s, limit):
    """A PUT sending one byte every 1/per_s s: seconds until the daemon cut it (inf: never)."""
    u = urllib.parse.urlsplit(url)
    s = connect((u.hostname, u.port), 5)
    s.settimeout(None)
    s.sendall(("PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
               "Content-Length: 100000\r\n\r\n" % (path, token)).encode())
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < limit:
            if closed_by_peer(s):
                return time.monotonic() - t0
            s.sendall(b"\0")
            time.sleep(1.0 / per_s)
    except OSError:
        return time.monotonic() - t0
    finally:
        s.close()
    return float("inf")


def endless_chunked(url, path, token, limit):
    """A chunked PUT that never ends: bytes sent before the daemon cut it (-1: never)."""
    u = urllib.parse.urlsplit(url)
    s = connect((u.hostname, u.port), 5)
    s.sendall(("PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
               "Transfer-Encoding: chunked\r\n\r\n" % (path, token)).encode())
    chunk, sent = b"%x\r\n" % (1 << 20) + b"\0" * (1 << 20) + b"\r\n", 0
    try:
        while sent < limit:
            s.sendall(chunk)
            sent += 1 << 20
    except OSError:
        return sent
    finally:
        s.close()
    return -1

# Requests whose body has no one meaning (RFC 9112 §6.3): a proxy in front
# could read them one way and the daemon another, so that bytes one takes for
# a body the other serves as a second request (request smuggling).
AMBIGUOUS = [
    ("two different Content-Lengths", b"Content-Length: 5\r\nContent-Length: 12\r\n",
     b"hello, world"),
    ("two equal Content-Lengths", b"Content-Length: 5\r\nContent-Length: 5\r\n", b"hello"),
    ("a Content-Length list", b"Content-Length: 5, 5\r\n", b"hello"),
    ("a signed Content-Length", b"Content-Length: +5\r\n", b"hello"),
    ("Content-Length and Transfer-Encoding: chunked",
     b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", b"5\r\nhello\r\n0\r\n\r\n"),
    ("Transfer-Encoding: chunked and Content-Length",
     b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", b"5\r\nhello\r\n0\r\n\r\n"),
    ("Transfer-Encoding: gzip", b"Transfer-Encoding: gzip\r\n", b"hello"),
    ("Transfer-Encoding: identity", b"Transfer-Encoding: identity\r\nContent-Length: 5\r\n",
     b"hello"),
    ("Transfer-Encoding: chunked, gzip", b"Transfer-Encoding: chunked, gzip\r\n",
     b"5\r\nhello\r\n0\r\n\r\n"),
    ("Transfer-Encoding: gzip, chunked", b"Transfer-Encoding: gzip, chunked\r\n",
     b"5\r\nhello\r\n0\r\n\r\n"),
    ("whitespace before a colon", b"Content-Length: 5\r\nTransfer-Encoding : chunked\r\n",
     b"hello"),
    ("Transfer-Encoding: chunked twice",
     b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
     b"5\r\nhello\r\n0\r\n\r\n"),
]


def answers(data):
    """The status codes of the HTTP answers one after another in data."""
    codes = []
    while data.startswith(b"HTTP/"):
        end = data.find(b"\r\n\r\n")
        if end < 0:
            break
        head, data = data[:end].decode("latin-1"), data[end + 4:]
        codes.append(int(head.split(" ", 2)[1]))
        n = 0
        for line in head.split("\r\n")[1:]:
            k, _, v = line.partition(":")
            if k.strip().lower() == "content-length":
                n = int(v)
        data = data[n:]
    return codes


def exchange(url, raw, limit):
    """Sends raw on a fresh connection: (the answers' codes, whether the daemon
    closed it within limit s)."""
    u = urllib.parse.urlsplit(url)
    s = connect((u.hostname, u.port), limit)
    s.sendall(raw)
    data, closed, t_end = b"", False, time.monotonic() + limit
    try:
        while time.monotonic() < t_end:
            s.settimeout(max(0.01, t_end - time.monotonic()))
            d = s.recv(65536)
            if not d:
                closed = True
                break
            data += d
    except (socket.timeout, ssl.SSLWantReadError):
        pass
    except OSError:  # reset, or a TLS connection cut without close_notify
        closed = True
    s.close()
    return answers(data), closed


def framing(url, first, second):
    u = urllib.parse.urlsplit(url)
    method, target = second.split(" ", 1)
    follow = ("%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\n\r\n"
              % (method, target, u.netloc)).encode()
    failed = 0
    for name, headers, body in [("one Content-Length", b"Content-Length: 5\r\n", b"hello")] + AMBIGUOUS:
        raw = (("%s HTTP/1.1\r\nHost: %s\r\n" % (first, u.netloc)).encode() + headers
               + b"\r\n" + body + follow)
        codes, closed = exchange(url, raw, 5)
        if name == "one Content-Length":  # behind a sound request, SECOND is answered
            ok = len(codes) == 2
        else:
            ok = codes == [400] and closed
        print("%s, then %s: answers %s, %s%s" % (name, second, codes,
                                                  "closed" if closed else "left open",
                                                  "" if ok else "  <- FAILED"), flush=True)
        failed += not ok
    return 1 if failed else 0


def probes(url, token_file, manifest_file, tree_hash, head_timeout):
    token = open(token_file).read().strip()
    failed = []

    clock = [time.monotonic()]

    def check(ok, name, detail):
        now = time.monotonic()
        print("%s: %s (%.1f s)%s" % (name, detail, now - clock[0], "" if ok else "  <- FAILED"),
              flush=True)
        clock[0] = now
        if not ok:
            failed.append(name)

    flood = Flood(url, 70, 1.0, head_timeout + 30)
    silent = Flood(url, SILENT, 0.5, head_timeout + 30, silent=True) if TLS else None
    stop, lat = threading.Event(), []
    watch = threading.Thread(target=healthz_watch, args=(url, stop, lat), daemon=True)
    watch.start()
    time.sleep(1.5)
    code, _ = request(url, "GET", "/v1/inventory", token=token, timeout=10)
    check(code == 200, "an authorized request under the flood", "HTTP %d" % code)

    big = fake_manifest(16 << 20)
    codes, ths = [], []
    for i in range(6):
        name = "/v1/objects/D%064x.manifest" % (i + 1)
        ths.append(threading.Thread(target=lambda n=name: codes.append(
            request(url, "PUT", n, big, token, timeout=60)[0])))
    for t in ths:
        t.start()
    for t in ths:
        t.join(90)
    check(len(codes) == 6 and set(codes) <= {422, 503}, "6 concurrent 16 MiB manifests",
          " ".join(map(str, sorted(codes))))
    del big

    with open(manifest_file, "rb") as f:
        body = f.read()
    code, _ = request(url, "PUT", "/v1/objects/%s.manifest" % tree_hash, body, token, timeout=60)
    check(code == 201, "a legitimate tree's manifest (%d bytes)" % len(body), "HTTP %d" % code)
    del body

    opened, seen = [], {}
    for _ in range(500):
        code, b = request(url, "POST", "/v1/uploads/%s.data" % tree_hash, token=token)
        seen[code] = seen.get(code, 0) + 1
        if code == 201:
            opened.append(b.decode().split('"')[3])
    for sid in opened:
        request(url, "DELETE", "/v1/uploads/" + sid, token=token)
    check(set(seen) <= {201, 503} and 0 < len(opened) <= 32, "500 session opens",
          " ".join("%d x%d" % kv for kv in sorted(seen.items())))

    for what, name in (("a file's", "%064x.data?size=100000" % 9), ("a tree's", tree_hash + ".data")):
        code, b = request(url, "POST", "/v1/uploads/" + name, token=token)
        sid = b.decode().split('"')[3] if code == 201 else "0" * 32
        done, _ = request(url, "POST", "/v1/uploads/%s/commit" % sid, token=token)
        alive, _ = request(url, "GET", "/healthz")
        check(code == 201 and done == 422 and alive == 200,
              "%s upload session committed before anything arrived" % what,
              "HTTP %d, commit %d, then /healthz %d" % (code, done, alive))

    cut = trickle_body(url, "/v1/objects/%064x.data" % 7, token, 2, 20)
    check(cut < 15, "a body at 2 bytes/s", "cut after %.1f s" % cut)
    sent = endless_chunked(url, "/v1/objects/%064x.data" % 8, token, 1 << 30)
    check(sent >= 0, "an endless chunked body", "cut after %d MiB" % (sent >> 20))

    if silent:
        silent.thread.join(head_timeout + 30)
        lives = sorted(silent.lives)
        check(len(lives) == SILENT and lives[-1] <= head_timeout + 3,
              "%d connections that never start the TLS handshake" % SILENT,
              "%d cut within 1.5 s, the longest open %.1f s (--head-timeout %d)"
              % (sum(1 for x in lives if x < 1.5), lives[-1] if lives else -1, head_timeout))
    flood.thread.join(head_timeout + 30)
    stop.set()
    watch.join(10)
    lives = sorted(flood.lives)
    check(len(lives) == 70 and lives[-1] <= head_timeout + 3,
          "70 half-open connections trickling a head",
          "%d refused or cut within 1.5 s, the longest open %.1f s (--head-timeout %d)"
          % (sum(1 for x in lives if x < 1.5), lives[-1] if lives else -1, head_timeout))
    worst = max(lat) if lat else float("inf")
    median = sorted(lat)[len(lat) // 2] if lat else float("inf")
    check(len(lat) > 10 and median < 0.1 and worst < 1.0, "/healthz throughout",
          "%d probes, median %.0f ms, worst %.0f ms" % (len(lat), 1000 * median, 1000 * worst))
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1] == "tar":
        sys.stdout.buffer.write(hostile_tar(sys.argv[2]) if sys.argv[2] != "truncated"
                                else hostile_tar("big")[:1500])
    elif sys.argv[1] == "swap":
        sys.stdout.buffer.write(swapped_tar(sys.argv[2], sys.argv[3], sys.argv[4]))
    elif sys.argv[1] == "ranges":
        range_server(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "whole-only":
        whole_only_server(sys.argv[2])
    elif sys.argv[1] == "flip":
        flip_relay(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif sys.argv[1] == "upgrade":
        with open(sys.argv[3], "rb") as f:
            upgrade_put(sys.argv[2], f.read())
    elif sys.argv[1] == "probes":
        if sys.argv[2].startswith("https://"):
            TLS = tls_context()
        sys.exit(probes(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6])))
    elif sys.argv[1] == "framing":
        if sys.argv[2].startswith("https://"):
            TLS = tls_context()
        sys.exit(framing(sys.argv[2], sys.argv[3], sys.argv[4]))
    elif sys.argv[1] == "stall":
        stall(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]),
              sys.argv[6] if len(sys.argv) > 6 else None)
