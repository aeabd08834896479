"""Where object and upload bytes live: a bytearray, or a file in --data-dir."""
import os
import tempfile

class MemBlob:
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

    def discard(self):
        pass


class FileBlob:
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

    def discard(self):
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
