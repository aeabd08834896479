#!/usr/bin/env python3
"""Hostile inputs for the peer daemon (tests/peer.bats).

  peer_hostile.py tar KIND > body.tar     a tar stream of one hostile kind
  peer_hostile.py stall URL SENT TOTAL SEC a PUT declaring TOTAL bytes that
                                          sends SENT of them, then waits SEC s
"""
import io
import socket
import sys
import tarfile
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


if __name__ == "__main__":
    if sys.argv[1] == "tar":
        sys.stdout.buffer.write(hostile_tar(sys.argv[2]) if sys.argv[2] != "truncated"
                                else hostile_tar("big")[:1500])
    elif sys.argv[1] == "stall":
        stall(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
