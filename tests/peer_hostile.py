#!/usr/bin/env python3
"""Hostile inputs for the peer daemon (tests/peer.bats).

  peer_hostile.py tar KIND > body.tar     a tar stream of one hostile kind
  peer_hostile.py stall URL SENT TOTAL SEC a PUT declaring TOTAL bytes that
                                          sends SENT of them, then waits SEC s
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
"""
import io
import os
import socket
import sys
import tarfile
import threading
import time
import urllib.parse


def add(tf, name, data=b"x", kind=tarfile.REGTYPE, link=""):
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.linkname = link
    ti.mode = 0o644
    if kind == tarfile.REGTYPE:
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    else:
        tf.addfile(ti)


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
        else:
            raise SystemExit("unknown kind " + kind)
    data = buf.getvalue()
    if kind == "truncated":
        data = data[:700]
    return data


def stall(url, sent, total, seconds):
    u = urllib.parse.urlsplit(url)
    s = socket.create_connection((u.hostname, u.port), timeout=30)
    s.sendall(("PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n"
               % (u.path, u.netloc, total)).encode())
    s.sendall(b"\0" * sent)
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


if __name__ == "__main__":
    if sys.argv[1] == "tar":
        sys.stdout.buffer.write(hostile_tar(sys.argv[2]) if sys.argv[2] != "truncated"
                                else hostile_tar("big")[:1500])
    elif sys.argv[1] == "swap":
        sys.stdout.buffer.write(swapped_tar(sys.argv[2], sys.argv[3], sys.argv[4]))
    elif sys.argv[1] == "flip":
        flip_relay(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif sys.argv[1] == "upgrade":
        with open(sys.argv[3], "rb") as f:
            upgrade_put(sys.argv[2], f.read())
    elif sys.argv[1] == "stall":
        stall(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
