"""Where object and upload bytes live: a bytearray, or a file in --data-dir.

A stored blob may be shared: a compose or a completed multipart upload joins its
sources into a Chain that holds them (as GCS composes by reference, in about the
time of a metadata write), and a blob's bytes go when its last holder discards it.
"""
import bisect
import os
import tempfile
import threading

_refs_lock = threading.Lock()


class _Shared:
    refs = 1

    def hold(self):
        with _refs_lock:
            self.refs += 1

    def discard(self):
        with _refs_lock:
            self.refs -= 1
            last = self.refs == 0
        if last:
            self.free()


class MemBlob(_Shared):
    def __init__(self):
        self.buf = bytearray()

    def size(self):
        return len(self.buf)

    def append(self, data):
        self.buf += data

    def truncate(self, n):
        del self.buf[n:]

    def reader(self):
        return self

    def read_at(self, off, n):
        return bytes(self.buf[off:off + n])

    def close(self):
        pass

    def free(self):
        self.buf = bytearray()


class FileBlob(_Shared):
    def __init__(self, directory):
        fd, self.path = tempfile.mkstemp(dir=directory, prefix="blob-")
        self.f = os.fdopen(fd, "r+b")
        self.n = 0

    def size(self):
        return self.n

    def append(self, data):
        self.f.seek(self.n)
        self.f.write(data)
        self.n += len(data)

    def truncate(self, n):
        self.f.truncate(n)
        self.n = min(self.n, n)

    def reader(self):
        if not self.f.closed:
            self.f.flush()
        return _FileReader(open(self.path, "rb"))

    def close(self):
        self.f.close()

    def free(self):
        self.f.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class _FileReader:
    def __init__(self, f):
        self.f = f

    def read_at(self, off, n):
        self.f.seek(off)
        return self.f.read(n)

    def close(self):
        self.f.close()


class Chain:
    """Stored blobs end to end, read in place; a chain of chains holds their leaves."""

    def __init__(self, blobs):
        self.parts, self.starts, self.n = [], [], 0
        for b in blobs:
            for leaf in b.parts if isinstance(b, Chain) else [b]:
                leaf.hold()
                self.parts.append(leaf)
                self.starts.append(self.n)
                self.n += leaf.size()

    def size(self):
        return self.n

    def reader(self):
        return _ChainReader(self)

    def close(self):
        pass

    def discard(self):
        for leaf in self.parts:
            leaf.discard()
        self.parts = []


class _ChainReader:
    """Reads at most to the end of the part an offset falls in."""

    def __init__(self, chain):
        self.c, self.open = chain, {}

    def read_at(self, off, n):
        i = bisect.bisect_right(self.c.starts, off) - 1
        if i < 0 or off >= self.c.n:
            return b""
        leaf, within = self.c.parts[i], off - self.c.starts[i]
        r = self.open.get(i)
        if r is None:
            r = self.open[i] = leaf.reader()
        return r.read_at(within, min(n, leaf.size() - within))

    def close(self):
        for i, r in self.open.items():
            if r is not self.c.parts[i]:
                r.close()
        self.open = {}
