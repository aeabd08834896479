#!/usr/bin/env python3
"""A loopback server speaking the subset of the GCS JSON API that mtc uses, for tests.

Real semantics: generations, metagenerations, preconditions, resumable sessions that answer
308 with the stored range, pagination, CRC32C/MD5 in metadata and x-goog-hash. Plus an OAuth
token endpoint, a metadata-server endpoint and per-test fault injection under /_fake/.
See README.md beside this file for the command line and the control API.
"""
import argparse
import base64
import bisect
import fnmatch
import hashlib
import json
import os
import secrets
import socket
import struct
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlsplit

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import auth  # noqa: E402
import crc32c  # noqa: E402
import s3  # noqa: E402
from blobs import Chain, FileBlob, MemBlob  # noqa: E402
from protocol import (HTTPError, check_hashes, check_preconditions, decode_token,  # noqa: E402
                      encode_token, expectations, list_page, parse_content_range, parse_goog_hash,
                      parse_complete_mpu, parse_range, parse_rate, rfc3339, split_multipart,
                      multipart_boundary,
                      xml_doc, xml_error)

ALIGN = 256 * 1024
PIECE = 1 << 20
MAX_PAGE = 1000
MPU_MIN_PART = 5 << 20
MPU_MAX_PARTS = 10000


class DropConnection(Exception):
    pass


class _NoHash:
    def update(self, _data):
        pass


MD5 = True


def new_md5():
    return hashlib.md5() if MD5 else _NoHash()


def md5_b64(h):
    return base64.b64encode(h.digest()).decode() if MD5 else None


# ---------------------------------------------------------------- state

class Obj:
    def __init__(self, bucket, name, blob, generation, content_type, metadata, crc, md5):
        now = time.time()
        self.bucket, self.name, self.blob = bucket, name, blob
        self.generation, self.metageneration = generation, 1
        self.size = blob.size()
        self.content_type = content_type or "application/octet-stream"
        self.metadata = metadata
        self.crc32c, self.md5 = crc, md5
        self.created = self.updated = now

    def resource(self, host):
        enc = quote(self.name, safe="")
        base = "http://%s" % host
        r = {
            "kind": "storage#object",
            "id": "%s/%s/%d" % (self.bucket, self.name, self.generation),
            "selfLink": "%s/storage/v1/b/%s/o/%s" % (base, self.bucket, enc),
            "mediaLink": "%s/download/storage/v1/b/%s/o/%s?generation=%d&alt=media"
                         % (base, self.bucket, enc, self.generation),
            "name": self.name,
            "bucket": self.bucket,
            "generation": str(self.generation),
            "metageneration": str(self.metageneration),
            "contentType": self.content_type,
            "storageClass": "STANDARD",
            "size": str(self.size),
            "crc32c": self.crc32c,
            "etag": base64.b64encode(b"%d/%d" % (self.generation, self.metageneration)).decode(),
            "timeCreated": rfc3339(self.created),
            "updated": rfc3339(self.updated),
            "timeStorageClassUpdated": rfc3339(self.created),
        }
        if self.md5:
            r["md5Hash"] = self.md5
        if self.metadata:
            r["metadata"] = self.metadata
        return r


class Session:
    def __init__(self, bucket, name, meta, query, blob, expect):
        self.id = secrets.token_urlsafe(18)
        self.bucket, self.name, self.meta, self.query = bucket, name, meta, query
        self.blob, self.expect = blob, expect
        self.total = None
        self.crc, self.md5, self.hashed = 0, new_md5(), 0
        self.done = None
        self.failed = None
        self.lock = threading.Lock()

    def stored(self):
        return self.blob.size()

    def commit_to(self, end):
        """Keeps the first `end` bytes and folds the newly kept ones into the hashes."""
        self.blob.truncate(end)
        if self.hashed < end:
            r = self.blob.reader()
            try:
                off = self.hashed
                while off < end:
                    piece = r.read_at(off, min(PIECE * 8, end - off))
                    self.crc = crc32c.update(self.crc, piece)
                    self.md5.update(piece)
                    off += len(piece)
            finally:
                if r is not self.blob:
                    r.close()
            self.hashed = end


class MultipartUpload:
    """An XML API multipart upload: parts by number, each (blob, etag, crc32c), until completed."""

    def __init__(self, bucket, name, meta, query):
        self.id = secrets.token_urlsafe(18)
        self.bucket, self.name, self.meta, self.query = bucket, name, meta, query
        self.parts = {}
        self.lock = threading.Lock()

    def discard(self):
        for part in self.parts.values():
            part[0].discard()
        self.parts = {}


class State:
    def __init__(self, args):
        self.lock = threading.RLock()
        self.data_dir = args.data_dir
        self.strict_buckets = args.strict_buckets
        self.require_auth = args.require_auth
        self.public_keys = args.public_key or []
        self.static_tokens = set(args.accept_token or [])
        self.refresh_tokens = args.refresh_token or []
        self.config = {"page_size": args.page_size, "token_lifetime": args.token_lifetime,
                       "conn_rate": args.conn_rate, "first_byte_latency": args.first_byte_latency}
        self.last_generation = 0
        self.reset()

    def reset(self):
        with self.lock:
            for b in getattr(self, "buckets", {}).values():
                for o in b["objects"].values():
                    o.blob.discard()
            for s in getattr(self, "sessions", {}).values():
                s.blob.discard()
            for u in getattr(self, "mpus", {}).values():
                u.discard()
            self.buckets = {}
            self.sessions = {}
            self.mpus = {}
            self.faults = []
            self.fault_seq = 0
            self.tokens = {}
            self.reset_stats()

    def reset_stats(self):
        self.stats = {"requests": {}, "status": {}, "requests_total": 0, "connections": 0,
                      "bytes_received": 0, "bytes_sent": 0, "upload_bytes_stored": 0,
                      "upload_bytes_duplicate": 0, "faults_fired": 0, "tokens_issued": 0,
                      "auth_failures": 0}

    def count(self, key, n=1, sub=None):
        with self.lock:
            if sub is None:
                self.stats[key] = self.stats.get(key, 0) + n
            else:
                d = self.stats[sub]
                d[key] = d.get(key, 0) + n

    def new_blob(self):
        return FileBlob(self.data_dir) if self.data_dir else MemBlob()

    def next_generation(self):
        self.last_generation = max(self.last_generation + 1, time.time_ns() // 1000)
        return self.last_generation

    def bucket(self, name, create=None):
        with self.lock:
            b = self.buckets.get(name)
            if b is None:
                if create is False or (create is None and self.strict_buckets):
                    raise HTTPError(404, "The specified bucket does not exist.", "notFound")
                b = {"name": name, "created": time.time(), "objects": {}}
                self.buckets[name] = b
            return b

    def add_faults(self, faults):
        ids = []
        with self.lock:
            for f in faults:
                if not isinstance(f, dict) or "action" not in f:
                    raise HTTPError(400, "a fault needs an action")
                if f["action"] not in ("status", "drop-request", "drop-response", "short-308",
                                       "flip", "empty-pages", "delay"):
                    raise HTTPError(400, "unknown fault action %r" % f["action"])
                self.fault_seq += 1
                f = dict(f, id=self.fault_seq)
                f.setdefault("times", 1)
                f.setdefault("skip", 0)
                f["fired"] = 0
                self.faults.append(f)
                ids.append(f["id"])
        return ids

    def take_fault(self, method, kind, bucket, name):
        with self.lock:
            for f in self.faults:
                if f.get("method") and f["method"].upper() != method:
                    continue
                if f.get("kind") and not fnmatch.fnmatchcase(kind, f["kind"]):
                    continue
                if f.get("bucket") and f["bucket"] != bucket:
                    continue
                if f.get("object") and (name is None or not fnmatch.fnmatchcase(name, f["object"])):
                    continue
                if f["times"] is not None and 0 <= f["times"] <= f["fired"]:
                    continue
                if f["skip"] > 0:
                    f["skip"] -= 1
                    continue
                f["fired"] += 1
                self.stats["faults_fired"] += 1
                return f
        return None

    def issue_token(self, lifetime=None):
        lifetime = self.config["token_lifetime"] if lifetime is None else lifetime
        tok = "fake-" + secrets.token_urlsafe(24)
        with self.lock:
            self.tokens[tok] = time.time() + lifetime
            self.stats["tokens_issued"] += 1
        return {"access_token": tok, "expires_in": int(lifetime), "token_type": "Bearer"}


STATE = None


def join(sources):
    """One blob of (blob, crc32c) sources end to end, and its CRC32C as GCS gives it."""
    crc = 0
    for blob, c in sources:
        crc = crc32c.combine(crc, c, blob.size())
    return Chain([blob for blob, _ in sources]), crc32c.b64(crc)


def commit_object(bucket, name, blob, q, meta, crc, md5):
    """Makes the object visible as a new generation, if the preconditions hold."""
    b = STATE.bucket(bucket)
    with STATE.lock:
        try:
            check_preconditions(q, b["objects"].get(name))
        except HTTPError:
            blob.discard()
            raise
        blob.close()
        o = Obj(bucket, name, blob, STATE.next_generation(), meta.get("contentType"),
                meta.get("metadata") or None, crc, md5)
        old = b["objects"].get(name)
        b["objects"][name] = o
    if old is not None:
        old.blob.discard()
    return o


class Pacer:
    """The per-connection bandwidth cap (`conn_rate`, bytes a second; 0 = none): a token
    bucket over the bodies read and written on one connection. Bytes move in steps of about
    5 ms of traffic and the bucket holds at most about 10 ms, so a stream is paced smoothly."""

    def __init__(self):
        self.tokens, self.t = 0.0, time.monotonic()

    @staticmethod
    def rate():
        return STATE.config.get("conn_rate") or 0

    def step(self):
        r = self.rate()
        return PIECE if not r else int(min(PIECE, max(16 * 1024, r / 200)))

    def take(self, n):
        r = self.rate()
        if not r:
            return
        now = time.monotonic()
        self.tokens = min(max(r / 100, 64 * 1024), self.tokens + (now - self.t) * r) - n
        self.t = now
        if self.tokens < 0:
            time.sleep(-self.tokens / r)


# ---------------------------------------------------------------- the handler

class Handler(s3.S3Handler, BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fakegcs/1"

    def setup(self):
        super().setup()
        # Headers and body go out in separate writes: without this, delayed ACK
        # costs every request on a reused connection about 40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.pacer = Pacer()
        STATE.count("connections")

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("fakegcs: %s %s\n" % (self.address_string(), fmt % args))

    def do_GET(self):
        self.dispatch()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_GET

    # ---- request body

    def body_length(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return None
        return int(self.headers.get("Content-Length") or 0)

    def body_pieces(self):
        """Yields the request body; honours a drop-request fault by raising DropConnection."""
        if self.body_started:
            return
        self.body_started = True
        limit = None
        f = self.fault
        if f and f["action"] == "drop-request":
            limit = int(f.get("after_bytes", 0))
        got = 0
        for piece in self._raw_body():
            if limit is not None and got + len(piece) > limit:
                piece = piece[:limit - got]
                if piece:
                    got += len(piece)
                    STATE.count("bytes_received", len(piece))
                    yield piece
                raise DropConnection()
            got += len(piece)
            STATE.count("bytes_received", len(piece))
            yield piece
        self.body_done = True
        if limit is not None:
            self.drop_after_handling = True

    def _raw_body(self):
        try:
            yield from self._raw_body_pieces()
        except OSError:
            raise DropConnection()

    def _raw_body_pieces(self):
        n = self.body_length()
        if n is not None:
            while n > 0:
                piece = self.rfile.read(min(self.pacer.step(), n))
                if not piece:
                    raise DropConnection()
                self.pacer.take(len(piece))
                n -= len(piece)
                yield piece
            return
        while True:
            line = self.rfile.readline(1024)
            if not line:
                raise DropConnection()
            size = int(line.split(b";")[0].strip(), 16)
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass
                return
            while size > 0:
                piece = self.rfile.read(min(self.pacer.step(), size))
                if not piece:
                    raise DropConnection()
                self.pacer.take(len(piece))
                size -= len(piece)
                yield piece
            self.rfile.readline(1024)

    def read_body(self):
        return b"".join(self.body_pieces())

    def discard_body(self):
        for _ in self.body_pieces():
            pass

    def read_json(self):
        raw = self.read_body()
        if not raw.strip():
            return {}
        try:
            return json.loads(raw)
        except ValueError:
            raise HTTPError(400, "request body is not JSON", "parseError")

    # ---- responses

    def host(self):
        return self.headers.get("Host") or "%s:%d" % self.server.server_address[:2]

    def send(self, status, body=b"", headers=None, content_type="application/json; charset=UTF-8",
             total_length=None, pieces=None, base_offset=0):
        if not self.body_done and not self.drop_after_handling:
            try:
                self.discard_body()
            except DropConnection:
                raise
        if self.drop_after_handling:
            raise DropConnection()
        f = self.fault
        length = len(body) if pieces is None else total_length
        latency = STATE.config.get("first_byte_latency") or 0
        if latency > 0 and self.kind != "control":
            time.sleep(latency)
        self.answer_started = True
        self.send_response(status)
        if content_type and (length or pieces is not None):
            self.send_header("Content-Type", content_type)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        STATE.count(str(status), sub="status")
        if self.command == "HEAD":
            return
        cut = int(f["after_bytes"]) if f and f["action"] == "drop-response" else None
        flip = int(f["offset"]) if f and f["action"] == "flip" else None
        sent = 0
        for piece in ([body] if pieces is None else pieces):
            if flip is not None and base_offset + sent <= flip < base_offset + sent + len(piece):
                piece = bytearray(piece)
                piece[flip - base_offset - sent] ^= int(f.get("xor", 1)) & 0xFF
            if cut is not None and sent + len(piece) >= cut:
                self.write_body(piece[:cut - sent])
                STATE.count("bytes_sent", cut - sent)
                raise DropConnection()
            self.write_body(piece)
            sent += len(piece)
            if pieces is not None:
                STATE.count("bytes_sent", len(piece))

    def write_body(self, piece):
        step = self.pacer.step()
        if len(piece) <= step and not self.pacer.rate():
            self.wfile.write(piece)
            return
        view = memoryview(piece)
        for off in range(0, len(view), step):
            part = view[off:off + step]
            self.pacer.take(len(part))
            self.wfile.write(part)

    def send_json(self, status, obj, headers=None):
        self.send(status, json.dumps(obj).encode(), headers)

    def send_error_json(self, e):
        if (self.kind or "").startswith(("xml-", "s3-")):
            self.send(e.status, xml_error(e), e.headers, "application/xml; charset=UTF-8")
            return
        errors = [{"domain": "global", "reason": e.reason or "error", "message": e.message}]
        body = {"error": {"code": e.status, "message": e.message, "errors": errors}}
        self.send_json(e.status, body, e.headers)

    # ---- dispatch

    def dispatch(self):
        self.body_started = self.body_done = self.drop_after_handling = self.answer_started = False
        self.fault = self.kind = None
        url = urlsplit(self.path)
        self.q = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        method = self.command
        try:
            try:
                route = self.route(method, url.path)
                kind, fn, bucket, name = route
                self.kind = kind
                STATE.count("%s %s" % (method, kind), sub="requests")
                STATE.count("requests_total")
                if kind not in ("control", "token", "metadata-server") and not kind.startswith("s3-"):
                    self.check_auth()
                if kind != "control":
                    self.fault = STATE.take_fault(method, kind, bucket, name)
                f = self.fault
                if f and f["action"] == "delay":
                    time.sleep(float(f.get("seconds", 1)))
                if f and f["action"] == "status":
                    headers = {}
                    if f.get("retry_after") is not None:
                        headers["Retry-After"] = str(f["retry_after"])
                    code = int(f.get("status", 503))
                    reason = f.get("reason") or ("rateLimitExceeded" if code == 429 else "backendError")
                    raise HTTPError(code, "injected fault", reason, headers)
                fn(bucket, name)
            except HTTPError as e:
                self.send_error_json(e)
        except DropConnection:
            self.abort()
        except (ConnectionError, BrokenPipeError):
            self.close_connection = True
        except Exception:
            traceback.print_exc()
            self.close_connection = True
            if not self.answer_started:
                self.drop_after_handling = False
                self.body_done = True
                body = json.dumps({"error": {"code": 500, "message": "fakegcs bug: see its log"}})
                try:
                    self.send(500, body.encode())
                except OSError:
                    pass

    def abort(self):
        """Ends the connection without (the rest of) an answer: a reset while the request is
        being read; a plain close after part of an answer so that the client gets those bytes."""
        self.close_connection = True
        try:
            self.wfile.flush()
            if self.answer_started:
                self.connection.shutdown(socket.SHUT_WR)
            else:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass

    def route(self, method, raw_path):
        parts = raw_path.split("/")[1:]
        head = parts[0] if parts else ""
        if head == "_fake":
            return ("control", self.control, None, "/".join(parts[1:]))
        if self.server.s3:
            return self.route_s3(method, parts)
        if head == "token" and method == "POST":
            return ("token", self.oauth_token, None, None)
        if head == "computeMetadata":
            return ("metadata-server", self.metadata_server, None, "/".join(parts[1:]))
        if head not in ("upload", "resumable", "download", "storage", "b") and len(parts) >= 2 and parts[1] \
                and ("uploads" in self.q or "uploadId" in self.q):
            return self.route_xml(method, parts)
        mode = "json"
        if parts[:3] == ["upload", "storage", "v1"]:
            mode, parts = "upload", parts[3:]
        elif parts[:4] == ["resumable", "upload", "storage", "v1"]:
            # apitools' (gcloud's) resumable path: the upload endpoint under another root
            mode, parts = "upload", parts[4:]
        elif parts[:3] == ["download", "storage", "v1"]:
            mode, parts = "download", parts[3:]
        elif parts[:2] == ["storage", "v1"]:
            parts = parts[2:]
        if not parts or parts[0] != "b":
            raise HTTPError(404, "Not Found", "notFound")
        if len(parts) == 1 or (len(parts) == 2 and parts[1] == ""):
            if mode == "json" and method in ("GET", "POST"):
                return ("bucket", self.buckets_root, None, None)
            raise HTTPError(404, "Not Found", "notFound")
        bucket = unquote(parts[1])
        if len(parts) == 2:
            if mode == "json" and method in ("GET", "DELETE"):
                return ("bucket", self.bucket_one, bucket, None)
            raise HTTPError(405, "method not allowed")
        if len(parts) == 3 and parts[2] == "storageLayout" and mode == "json" and method == "GET":
            return ("bucket", self.storage_layout, bucket, None)
        if parts[2] != "o":
            raise HTTPError(404, "Not Found", "notFound")
        if len(parts) == 3 or (len(parts) == 4 and parts[3] == ""):
            if mode == "upload":
                if "upload_id" in self.q and method in ("PUT", "POST", "DELETE"):
                    if method == "DELETE":
                        return ("upload-cancel", self.upload_cancel, bucket, None)
                    cr = self.headers.get("Content-Range", "")
                    kind = "upload-status" if cr.replace(" ", "").startswith("bytes*/") else "upload-chunk"
                    return (kind, self.upload_put, bucket, None)
                t = self.q.get("uploadType", "media")
                if method == "POST" and t in ("media", "multipart", "resumable"):
                    kind = {"media": "upload-media", "multipart": "upload-multipart",
                            "resumable": "upload-init"}[t]
                    return (kind, getattr(self, "upload_" + t), bucket, self.q.get("name"))
                raise HTTPError(400, "unsupported upload", "invalid")
            if mode == "json" and method == "GET":
                return ("list", self.list_objects, bucket, None)
            raise HTTPError(405, "method not allowed")
        if mode == "json" and method == "POST" and len(parts) == 5 and parts[4] == "compose":
            return ("compose", self.compose_object, bucket, unquote(parts[3]))
        name = unquote("/".join(parts[3:]))
        if mode == "download" or (method in ("GET", "HEAD") and self.q.get("alt") == "media"):
            if method in ("GET", "HEAD"):
                return ("download", self.download, bucket, name)
            raise HTTPError(405, "method not allowed")
        if mode == "json":
            if method == "GET":
                return ("metadata", self.get_metadata, bucket, name)
            if method == "DELETE":
                return ("delete", self.delete_object, bucket, name)
            if method == "PATCH":
                return ("patch", self.patch_object, bucket, name)
        raise HTTPError(405, "method not allowed")

    def route_xml(self, method, parts):
        """The XML API's multipart upload, path style: /BUCKET/OBJECT?uploads, ?uploadId=ID."""
        bucket, name = unquote(parts[0]), unquote("/".join(parts[1:]))
        if "uploadId" not in self.q and method == "POST":
            return ("xml-mpu-init", self.xml_mpu_init, bucket, name)
        if "uploadId" in self.q:
            if method == "PUT" and "partNumber" in self.q:
                return ("xml-mpu-part", self.xml_mpu_part, bucket, name)
            if method == "POST":
                return ("xml-mpu-complete", self.xml_mpu_complete, bucket, name)
            if method == "DELETE":
                return ("xml-mpu-abort", self.xml_mpu_abort, bucket, name)
        raise HTTPError(405, "method not allowed", "MethodNotAllowed")

    # ---- auth

    def check_auth(self):
        if not STATE.require_auth:
            return
        h = self.headers.get("Authorization", "")
        tok = h[7:].strip() if h[:7].lower() == "bearer " else None
        why = "Anonymous caller does not have storage access."
        if tok:
            if tok in STATE.static_tokens:
                return
            with STATE.lock:
                exp = STATE.tokens.get(tok)
            if exp is not None and exp > time.time():
                return
            why = "Invalid Credentials" if exp is None else "Invalid Credentials: token expired"
        STATE.count("auth_failures")
        raise HTTPError(401, why, "authError", {"WWW-Authenticate": 'Bearer realm="fakegcs"'})

    def oauth_token(self, _bucket, _name):
        form = {k: v[-1] for k, v in parse_qs(self.read_body().decode("utf-8", "replace")).items()}
        aud = "http://%s%s" % (self.host(), urlsplit(self.path).path)
        grant = form.get("grant_type", "")
        try:
            if grant == "urn:ietf:params:oauth:grant-type:jwt-bearer":
                auth.check_assertion(form.get("assertion", ""), aud, STATE.public_keys)
            elif grant == "refresh_token":
                auth.check_refresh(form, STATE.refresh_tokens)
            else:
                raise auth.Rejected("Invalid grant_type: " + grant, "unsupported_grant_type")
        except auth.Rejected as e:
            self.send_json(e.status, {"error": e.error, "error_description": str(e)})
            return
        self.send_json(200, STATE.issue_token())

    def metadata_server(self, _bucket, path):
        if self.headers.get("Metadata-Flavor") != "Google":
            self.send(403, b"Missing Metadata-Flavor:Google header.", content_type="text/html")
            return
        mf = {"Metadata-Flavor": "Google"}
        path = path.rstrip("/")
        if path == "v1/instance/service-accounts/default/token":
            self.send_json(200, STATE.issue_token(), mf)
        elif path == "v1/instance/service-accounts/default/email":
            self.send(200, b"fake@fake-project.iam.gserviceaccount.com", mf, "application/text")
        elif path == "v1/project/project-id":
            self.send(200, b"fake-project", mf, "application/text")
        elif path in ("v1", ""):
            self.send(200, b"", mf, "application/text")
        else:
            self.send(404, b"not found", mf, "text/html")

    # ---- buckets

    def bucket_resource(self, b):
        return {"kind": "storage#bucket", "id": b["name"], "name": b["name"],
                "projectNumber": "0", "metageneration": "1", "location": "US",
                "storageClass": "STANDARD", "etag": "CAE=",
                "selfLink": "http://%s/storage/v1/b/%s" % (self.host(), b["name"]),
                "timeCreated": rfc3339(b["created"]), "updated": rfc3339(b["created"])}

    def buckets_root(self, _bucket, _name):
        if self.command == "POST":
            name = self.read_json().get("name")
            if not name:
                raise HTTPError(400, "bucket name required", "required")
            with STATE.lock:
                if name in STATE.buckets:
                    raise HTTPError(409, "Your previous request to create the named bucket "
                                    "succeeded and you already own it.", "conflict")
            self.send_json(200, self.bucket_resource(STATE.bucket(name, create=True)))
            return
        with STATE.lock:
            items = [self.bucket_resource(STATE.buckets[n]) for n in sorted(STATE.buckets)]
        self.send_json(200, {"kind": "storage#buckets", "items": items})

    def bucket_one(self, bucket, _name):
        if self.command == "GET":
            self.send_json(200, self.bucket_resource(STATE.bucket(bucket)))
            return
        with STATE.lock:
            b = STATE.buckets.get(bucket)
            if b is None:
                raise HTTPError(404, "The specified bucket does not exist.", "notFound")
            if b["objects"]:
                raise HTTPError(409, "The bucket you tried to delete is not empty.", "conflict")
            del STATE.buckets[bucket]
        self.send(204)

    def storage_layout(self, bucket, _name):
        """buckets.getStorageLayout, which gcloud asks before a copy into a bucket: a flat
        namespace."""
        b = STATE.bucket(bucket)
        self.send_json(200, {"kind": "storage#storageLayout", "bucket": b["name"],
                             "location": "US", "locationType": "multi-region",
                             "hierarchicalNamespace": {"enabled": False}})

    # ---- objects

    def selected(self, b, bucket, name):
        """The object the request's generation and preconditions select; STATE.lock held."""
        o = b["objects"].get(name)
        g = self.q.get("generation")
        if o is None or (g and g != str(o.generation)):
            raise HTTPError(404, "No such object: %s/%s" % (bucket, name), "notFound")
        check_preconditions(self.q, o)
        return o

    def lookup(self, bucket, name):
        b = STATE.bucket(bucket)
        with STATE.lock:
            return self.selected(b, bucket, name)

    def get_metadata(self, bucket, name):
        self.send_json(200, self.lookup(bucket, name).resource(self.host()))

    def delete_object(self, bucket, name):
        b = STATE.bucket(bucket)
        with STATE.lock:
            o = self.selected(b, bucket, name)
            del b["objects"][name]
        o.blob.discard()
        self.send(204)

    def patch_object(self, bucket, name):
        meta = self.read_json()
        b = STATE.bucket(bucket)
        with STATE.lock:
            o = b["objects"].get(name)
            if o is None:
                raise HTTPError(404, "No such object: %s/%s" % (bucket, name), "notFound")
            check_preconditions(self.q, o)
            if "metadata" in meta:
                md = dict(o.metadata or {})
                for k, v in (meta["metadata"] or {}).items():
                    if v is None:
                        md.pop(k, None)
                    else:
                        md[k] = v
                o.metadata = md or None
            if meta.get("contentType"):
                o.content_type = meta["contentType"]
            o.metageneration += 1
            o.updated = time.time()
            res = o.resource(self.host())
        self.send_json(200, res)

    def download(self, bucket, name):
        o = self.lookup(bucket, name)
        size, status = o.size, 200
        headers = {"x-goog-generation": str(o.generation),
                   "x-goog-metageneration": str(o.metageneration),
                   "x-goog-hash": "crc32c=%s" % o.crc32c + (",md5=%s" % o.md5 if o.md5 else ""),
                   "x-goog-stored-content-length": str(size),
                   "x-goog-stored-content-encoding": "identity",
                   "ETag": '"%s"' % (base64.b64decode(o.md5).hex() if o.md5 else o.generation),
                   "Accept-Ranges": "bytes",
                   "Last-Modified": time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(o.updated))}
        start, end, span = self.byte_range(size, "The requested range cannot be satisfied.",
                                           "requestedRangeNotSatisfiable")
        if span:
            status = 206
            headers["Content-Range"] = span
        self.send_blob(o, status, headers, start, end)

    def byte_range(self, size, msg, reason):
        """(start, end, Content-Range) the Range header asks for; (0, size, None) without one."""
        rng = self.headers.get("Range")
        if not rng:
            return 0, size, None
        start, end = parse_range(rng, size)
        if start is None:
            raise HTTPError(416, msg, reason, {"Content-Range": "bytes */%d" % size})
        return start, end, "bytes %d-%d/%d" % (start, end - 1, size)

    def send_blob(self, o, status, headers, start, end):
        """Answers with bytes [start, end) of o, read piece by piece."""
        reader = o.blob.reader()
        try:
            def pieces():
                off = start
                while off < end:
                    piece = reader.read_at(off, min(PIECE, end - off))
                    if not piece:
                        raise DropConnection()
                    off += len(piece)
                    yield piece
            self.send(status, headers=headers, content_type=o.content_type,
                      total_length=end - start, pieces=pieces(), base_offset=start)
        finally:
            if reader is not o.blob:
                reader.close()

    def list_objects(self, bucket, _name):
        b = STATE.bucket(bucket)
        q = self.q
        prefix, delim = q.get("prefix", ""), q.get("delimiter", "")
        try:
            limit = int(q.get("maxResults") or MAX_PAGE)
        except ValueError:
            raise HTTPError(400, "invalid maxResults", "invalid")
        limit = max(1, min(limit, MAX_PAGE))
        if STATE.config.get("page_size"):
            limit = min(limit, int(STATE.config["page_size"]))
        start_after = decode_token(q["pageToken"]) if q.get("pageToken") else None
        f = self.fault
        if f and f["action"] == "empty-pages":
            self.send_json(200, {"kind": "storage#objects",
                                 "nextPageToken": encode_token(start_after)})
            return
        with STATE.lock:
            names = sorted(n for n in b["objects"] if n.startswith(prefix))
            snapshot = b["objects"]
            i = bisect.bisect_right(names, start_after) if start_after is not None else 0
            lo, hi = q.get("startOffset"), q.get("endOffset")
            keys, prefixes, last, more = list_page(
                names, i, prefix, delim, limit, lambda n: (lo and n < lo) or (hi and n >= hi))
            items = [snapshot[n].resource(self.host()) for n in keys]
        if prefixes and last == prefixes[-1]:
            last += "\U0010ffff"  # the next page starts past every name under it
        out = {"kind": "storage#objects"}
        if items:
            out["items"] = items
        if prefixes:
            out["prefixes"] = prefixes
        if more:
            out["nextPageToken"] = encode_token(last)
        self.send_json(200, out)

    def compose_object(self, bucket, name):
        """POST .../o/DEST/compose: a new object made of 1 to 32 sources' bytes in order, a
        composite (crc32c, no md5). ifGenerationMatch applies to DEST, each source's
        objectPreconditions.ifGenerationMatch to it; deleteSourceObjects removes the sources."""
        body = self.read_json()
        srcs = body.get("sourceObjects") or []
        if not isinstance(srcs, list) or not 1 <= len(srcs) <= 32:
            raise HTTPError(400, "a compose takes 1 to 32 source objects", "invalid")
        b = STATE.bucket(bucket)
        objs = []
        with STATE.lock:
            for src in srcs:
                o = b["objects"].get(src.get("name"))
                gen = src.get("generation")
                if o is None or (gen and str(gen) != str(o.generation)):
                    raise HTTPError(404, "No such object: %s/%s" % (bucket, src.get("name")), "notFound")
                want = (src.get("objectPreconditions") or {}).get("ifGenerationMatch")
                if want is not None and str(want) != str(o.generation):
                    raise HTTPError(412, "At least one of the pre-conditions you specified did not hold.",
                                    "conditionNotMet")
                objs.append(o)
        blob, crc = join([(o.blob, crc32c.from_b64(o.crc32c)) for o in objs])
        dest = body.get("destination") or {}
        made = commit_object(bucket, name, blob, self.q, dest, crc, None)
        if body.get("deleteSourceObjects"):
            gone = []
            with STATE.lock:
                for o in objs:
                    if b["objects"].get(o.name) is o:
                        del b["objects"][o.name]
                        gone.append(o)
            for o in gone:
                o.blob.discard()
        self.send_json(200, made.resource(self.host()))

    # ---- uploads

    def object_name(self, meta):
        name = self.q.get("name") or meta.get("name")
        if not name:
            raise HTTPError(400, "Required parameter: name", "required")
        return name

    def receive_into(self, blob):
        crc, md5 = 0, new_md5()
        for piece in self.body_pieces():
            blob.append(piece)
            crc = crc32c.update(crc, piece)
            md5.update(piece)
        STATE.count("upload_bytes_stored", blob.size())
        return crc32c.b64(crc), md5_b64(md5)

    def upload_media(self, bucket, _name):
        name = self.object_name({})
        STATE.bucket(bucket)
        blob = STATE.new_blob()
        try:
            crc, md5 = self.receive_into(blob)
            check_hashes(expectations({}, self.headers.get("x-goog-hash")), crc, md5)
        except BaseException:
            blob.discard()
            raise
        meta = {"contentType": self.headers.get("Content-Type")}
        o = commit_object(bucket, name, blob, self.q, meta, crc, md5)
        self.send_json(200, o.resource(self.host()))

    def upload_multipart(self, bucket, _name):
        ctype = self.headers.get("Content-Type", "")
        boundary = multipart_boundary(ctype)
        if not ctype.lower().startswith("multipart/") or not boundary:
            raise HTTPError(400, "multipart upload needs a multipart Content-Type with a boundary",
                            "invalid")
        body = self.read_body()
        parts = split_multipart(body, boundary.encode())
        if len(parts) != 2:
            raise HTTPError(400, "multipart upload needs exactly two parts", "invalid")
        (_, meta_raw), (media_headers, data) = parts
        try:
            meta = json.loads(meta_raw) if meta_raw.strip() else {}
        except ValueError:
            raise HTTPError(400, "metadata part is not JSON", "parseError")
        name = self.object_name(meta)
        if not meta.get("contentType") and media_headers.get("content-type"):
            meta["contentType"] = media_headers["content-type"]
        STATE.bucket(bucket)
        crc = crc32c.b64(crc32c.update(0, data))
        h = new_md5()
        h.update(data)
        md5 = md5_b64(h)
        check_hashes(expectations(meta, self.headers.get("x-goog-hash")), crc, md5)
        blob = STATE.new_blob()
        blob.append(data)
        STATE.count("upload_bytes_stored", len(data))
        o = commit_object(bucket, name, blob, self.q, meta, crc, md5)
        self.send_json(200, o.resource(self.host()))

    def upload_resumable(self, bucket, _name):
        meta = self.read_json()
        name = self.object_name(meta)
        b = STATE.bucket(bucket)
        with STATE.lock:
            check_preconditions(self.q, b["objects"].get(name))
        if not meta.get("contentType") and self.headers.get("X-Upload-Content-Type"):
            meta["contentType"] = self.headers["X-Upload-Content-Type"]
        s = Session(bucket, name, meta, dict(self.q), STATE.new_blob(),
                    expectations(meta, self.headers.get("x-goog-hash")))
        if self.headers.get("X-Upload-Content-Length"):
            s.total = int(self.headers["X-Upload-Content-Length"])
        with STATE.lock:
            STATE.sessions[s.id] = s
        loc = "http://%s/upload/storage/v1/b/%s/o?uploadType=resumable&name=%s&upload_id=%s" % (
            self.host(), quote(bucket, safe=""), quote(name, safe=""), s.id)
        self.send(200, headers={"Location": loc, "X-GUploader-UploadID": s.id})

    def session(self):
        with STATE.lock:
            s = STATE.sessions.get(self.q.get("upload_id", ""))
        if s is None:
            raise HTTPError(404, "No such upload session", "notFound")
        return s

    def upload_cancel(self, _bucket, _name):
        s = self.session()
        with s.lock:
            if s.done is None:
                s.failed = HTTPError(410, "The upload session was cancelled", "gone")
                s.blob.discard()
        self.send(499)

    def finalize(self, s):
        crc, md5 = crc32c.b64(s.crc), md5_b64(s.md5)
        expect = dict(s.expect)
        expect.update(parse_goog_hash(self.headers.get("x-goog-hash")))
        try:
            check_hashes(expect, crc, md5)
            s.done = commit_object(s.bucket, s.name, s.blob, s.query, s.meta, crc, md5)
        except HTTPError as e:
            s.failed = e
            raise
        return s.done

    def send_incomplete(self, s):
        """308 with the stored range; as 200 plus an override header when the client asks
        with X-GUploader-No-308 (Go's client does)."""
        n = s.stored()
        headers = {"Range": "bytes=0-%d" % (n - 1)} if n else {}
        if self.headers.get("X-GUploader-No-308", "").lower() == "yes":
            headers["X-Http-Status-Code-Override"] = "308"
            self.send(200, headers=headers)
        else:
            self.send(308, headers=headers)

    def upload_put(self, _bucket, _name):
        s = self.session()
        with s.lock:
            if s.done is not None:
                self.send_json(200, s.done.resource(self.host()))
                return
            if s.failed is not None:
                raise s.failed
            start, last, total = parse_content_range(self.headers.get("Content-Range"),
                                                     self.body_length())
            if total is not None:
                if s.total is not None and s.total != total:
                    raise HTTPError(400, "total size %d differs from %d given before" % (total, s.total),
                                    "invalid")
                s.total = total
            if start is None:
                if s.total is not None and s.stored() == s.total:
                    o = self.finalize(s)
                    self.send_json(200, o.resource(self.host()))
                    return
                self.send_incomplete(s)
                return
            stored = s.stored()
            if start > stored:
                raise HTTPError(400, "chunk starts at %d but only %d bytes are stored"
                                % (start, stored), "invalid")
            if s.total is not None and last is not None and last + 1 > s.total:
                raise HTTPError(400, "chunk ends past the total size", "invalid")
            skip = stored - start
            received = body = 0
            try:
                for piece in self.body_pieces():
                    body += len(piece)
                    if skip > 0:
                        d = min(skip, len(piece))
                        skip -= d
                        STATE.count("upload_bytes_duplicate", d)
                        piece = piece[d:]
                    if piece:
                        s.blob.append(piece)
                        received += len(piece)
            except DropConnection:
                keep = max(stored, (stored + received) // ALIGN * ALIGN)
                s.commit_to(keep)
                STATE.count("upload_bytes_stored", keep - stored)
                raise
            if last is None:
                # `bytes A-*/…`: this body runs to the end of the object.
                if start + body < stored or (s.total is not None and start + body != s.total):
                    s.commit_to(stored)
                    raise HTTPError(400, "Content-Range %d-*/%s ends at %d, not at the total size"
                                    % (start, s.total if s.total is not None else "*", start + body),
                                    "invalid")
                s.total = start + body
            elif body != last - start + 1:
                s.commit_to(stored)
                raise HTTPError(400, "Content-Range %d-%d does not match the %d bytes sent"
                                % (start, last, body), "invalid")
            end = stored + received
            final = s.total is not None and end == s.total
            f = self.fault
            if f and f["action"] == "short-308":
                keep = min(end, stored + int(f.get("keep_bytes", 0)))
                final = False
            elif final:
                keep = end
            else:
                keep = max(stored, end // ALIGN * ALIGN)
            s.commit_to(keep)
            STATE.count("upload_bytes_stored", keep - stored)
            if final:
                o = self.finalize(s)
                self.send_json(200, o.resource(self.host()))
                return
            self.send_incomplete(s)

    # ---- XML API multipart uploads

    def send_xml(self, status, root, fields, headers=None):
        self.send(status, xml_doc(root, fields), headers, "application/xml; charset=UTF-8")

    def xml_mpu_init(self, bucket, name):
        meta = {}
        md = {k.lower()[len("x-goog-meta-"):]: v for k, v in self.headers.items()
              if k.lower().startswith("x-goog-meta-")}
        if md:
            meta["metadata"] = md
        ctype = self.headers.get("Content-Type", "")
        if ctype and not ctype.startswith("application/x-www-form-urlencoded"):
            meta["contentType"] = ctype
        query = {}
        if self.headers.get("x-goog-if-generation-match") is not None:
            query["ifGenerationMatch"] = self.headers["x-goog-if-generation-match"]
        self.discard_body()
        STATE.bucket(bucket)
        u = MultipartUpload(bucket, name, meta, query)
        with STATE.lock:
            STATE.mpus[u.id] = u
        self.send_xml(200, "InitiateMultipartUploadResult",
                      [("Bucket", bucket), ("Key", name), ("UploadId", u.id)])

    def mpu(self, bucket, name, msg="The requested upload was not found."):
        """The multipart upload of bucket/name that uploadId names; else 404 NoSuchUpload, msg."""
        with STATE.lock:
            u = STATE.mpus.get(self.q.get("uploadId", ""))
        if u is None or u.bucket != bucket or u.name != name:
            raise HTTPError(404, msg, "NoSuchUpload")
        return u

    def part_number(self, msg):
        """partNumber, 1 to MPU_MAX_PARTS; else 400 InvalidArgument, msg."""
        try:
            n = int(self.q["partNumber"])
        except ValueError:
            n = 0
        if not 1 <= n <= MPU_MAX_PARTS:
            raise HTTPError(400, msg, "InvalidArgument")
        return n

    def xml_mpu_part(self, bucket, name):
        u = self.mpu(bucket, name)
        n = self.part_number("Part number must be an integer between 1 and %d." % MPU_MAX_PARTS)
        blob, crc, md5 = STATE.new_blob(), 0, hashlib.md5()
        try:
            for piece in self.body_pieces():
                blob.append(piece)
                crc = crc32c.update(crc, piece)
                md5.update(piece)
            expect = expectations({}, self.headers.get("x-goog-hash"))
            if self.headers.get("Content-MD5"):
                expect["md5"] = self.headers["Content-MD5"]
            try:
                check_hashes(expect, crc32c.b64(crc), base64.b64encode(md5.digest()).decode())
            except HTTPError as e:
                raise HTTPError(400, e.message, "BadDigest")
        except BaseException:
            blob.discard()
            raise
        STATE.count("upload_bytes_stored", blob.size())
        etag = '"%s"' % md5.hexdigest()
        with u.lock:
            with STATE.lock:
                live = STATE.mpus.get(u.id) is u
            if not live:
                blob.discard()
                raise HTTPError(404, "The requested upload was not found.", "NoSuchUpload")
            old = u.parts.get(n)
            u.parts[n] = (blob, etag, crc)
        if old is not None:
            old[0].discard()
        self.send(200, headers={"ETag": etag})

    def xml_mpu_complete(self, bucket, name):
        """Joins the listed parts (numbers ascending, ETags as answered, all but the last at
        least 5 MiB) into the object: crc32c and no md5, as GCS gives such objects."""
        u = self.mpu(bucket, name)
        listed = parse_complete_mpu(self.read_body())
        with u.lock:
            with STATE.lock:
                if STATE.mpus.get(u.id) is not u:
                    raise HTTPError(404, "The requested upload was not found.", "NoSuchUpload")
            parts, prev = [], 0
            for i, (n, etag) in enumerate(listed):
                if n <= prev:
                    raise HTTPError(400, "The list of parts was not in ascending order.",
                                    "InvalidPartOrder")
                prev = n
                part = u.parts.get(n)
                if part is None or part[1].strip('"') != etag:
                    raise HTTPError(400, "Part %d was not found or its ETag does not match." % n,
                                    "InvalidPart")
                if i < len(listed) - 1 and part[0].size() < MPU_MIN_PART:
                    raise HTTPError(400, "Part %d is smaller than the minimum allowed size." % n,
                                    "EntityTooSmall")
                parts.append((part[0], part[2]))
            blob, crc = join(parts)
            try:
                o = commit_object(bucket, name, blob, u.query, u.meta, crc, None)
            except HTTPError as e:
                raise HTTPError(e.status, e.message, "PreconditionFailed" if e.status == 412 else None)
            with STATE.lock:
                STATE.mpus.pop(u.id, None)
            u.discard()
        etag = '"%s"' % base64.b64decode(o.crc32c).hex()
        self.send_xml(200, "CompleteMultipartUploadResult",
                      [("Location", "http://%s/%s/%s" % (self.host(), quote(bucket, safe=""), quote(name))),
                       ("Bucket", bucket), ("Key", name), ("ETag", etag)],
                      {"x-goog-generation": str(o.generation), "ETag": etag})

    def xml_mpu_abort(self, bucket, name):
        u = self.mpu(bucket, name)
        with u.lock:
            with STATE.lock:
                STATE.mpus.pop(u.id, None)
            u.discard()
        self.send(204)

    # ---- control

    def control(self, _bucket, path):
        m = self.command
        if path == "health":
            self.send_json(200, {"ok": True, "port": self.server.server_address[1],
                                 "native_crc32c": crc32c.NATIVE})
        elif path == "faults" and m == "POST":
            body = self.read_json()
            faults = body.get("faults", body) if isinstance(body, dict) else body
            faults = [faults] if isinstance(faults, dict) else faults
            self.send_json(200, {"ids": STATE.add_faults(faults)})
        elif path == "faults" and m == "GET":
            with STATE.lock:
                body = json.dumps({"faults": STATE.faults}).encode()
            self.send(200, body)
        elif path == "faults" and m == "DELETE":
            with STATE.lock:
                STATE.faults = []
            self.send(204)
        elif path == "stats" and m == "GET":
            with STATE.lock:
                body = json.dumps(STATE.stats).encode()
            self.send(200, body)
        elif path == "stats" and m == "DELETE":
            with STATE.lock:
                STATE.reset_stats()
            self.send(204)
        elif path == "config" and m == "POST":
            body = self.read_json()
            limits = limit_config(body)
            with STATE.lock:
                for k in ("page_size", "token_lifetime"):
                    if k in body:
                        STATE.config[k] = body[k]
                STATE.config.update(limits)
                if "require_auth" in body:
                    STATE.require_auth = bool(body["require_auth"])
            self.send_json(200, dict(STATE.config, require_auth=STATE.require_auth))
        elif path == "config" and m == "GET":
            self.send_json(200, dict(STATE.config, require_auth=STATE.require_auth))
        elif path == "tokens" and m == "POST":
            body = self.read_json()
            self.send_json(200, STATE.issue_token(body.get("lifetime")))
        elif path == "sessions" and m == "GET":
            with STATE.lock:
                out = {i: {"bucket": s.bucket, "name": s.name, "stored": s.stored(),
                           "total": s.total, "done": s.done is not None}
                       for i, s in STATE.sessions.items()}
            self.send_json(200, out)
        elif path == "reset" and m == "POST":
            STATE.reset()
            self.send(204)
        else:
            raise HTTPError(404, "unknown control path", "notFound")


def limit_config(body):
    """The `conn_rate` (bytes a second, a number or a string such as "100M") and
    `first_byte_latency` (seconds) of a /_fake/config body, checked."""
    out = {}
    try:
        if "conn_rate" in body:
            out["conn_rate"] = parse_rate(body["conn_rate"] or 0)
        if "first_byte_latency" in body:
            out["first_byte_latency"] = float(body["first_byte_latency"] or 0)
            if not 0 <= out["first_byte_latency"] < 3600:
                raise ValueError("first_byte_latency out of range")
    except (TypeError, ValueError) as e:
        raise HTTPError(400, str(e), "invalid")
    return out


def rate_arg(value):
    try:
        return parse_rate(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


def latency_arg(value):
    try:
        return limit_config({"first_byte_latency": value})["first_byte_latency"]
    except HTTPError as e:
        raise argparse.ArgumentTypeError(e.message)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64


def watch_parent(pid):
    while True:
        time.sleep(1)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            os._exit(0)
        except PermissionError:
            pass


def main():
    p = argparse.ArgumentParser(description="fake GCS JSON API server for tests")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port")
    p.add_argument("--port-file", help="write the bound port here once listening")
    p.add_argument("--data-dir", help="keep object bytes in files here instead of memory")
    p.add_argument("--strict-buckets", action="store_true",
                   help="buckets must be created with POST /storage/v1/b")
    p.add_argument("--require-auth", action="store_true",
                   help="GCS requests need a Bearer token issued by this server")
    p.add_argument("--public-key", action="append",
                   help="PEM public key that JWT assertions at POST /token must verify with")
    p.add_argument("--accept-token", action="append", help="a static token that never expires")
    p.add_argument("--refresh-token", action="append", type=auth.parse_refresh_token,
                   metavar="CLIENT_ID:SECRET:TOKEN",
                   help="a user's refresh token that POST /token exchanges (grant_type=refresh_token)")
    p.add_argument("--token-lifetime", type=float, default=3600, help="seconds (default 3600)")
    p.add_argument("--page-size", type=int, default=0, help="cap on listing page size")
    p.add_argument("--no-md5", action="store_true",
                   help="compute no MD5 (objects look composite: crc32c only); for benchmarks")
    p.add_argument("--conn-rate", type=rate_arg, default=0, metavar="BYTES_PER_S",
                   help="cap each connection's request and response bodies at this many bytes a "
                        "second (100M = 100*10^6; 0, the default, is no cap)")
    p.add_argument("--first-byte-latency", type=latency_arg, default=0, metavar="SEC",
                   help="wait this long before the first byte of every response (e.g. 0.03)")
    p.add_argument("--s3", action="store_true",
                   help="speak the S3 REST subset (s3.py), path-style, instead of the GCS APIs")
    p.add_argument("--faults", help="JSON file of faults to install at start")
    p.add_argument("--exit-with", type=int, help="exit when this process id is gone")
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args()

    global STATE, MD5
    MD5 = not args.no_md5
    STATE = State(args)
    if args.faults:
        with open(args.faults) as f:
            body = json.load(f)
        faults = body.get("faults", body) if isinstance(body, dict) else body
        STATE.add_faults([faults] if isinstance(faults, dict) else faults)
    srv = Server((args.host, args.port), Handler)
    srv.verbose = args.verbose
    srv.s3 = args.s3
    s3.bind(sys.modules[__name__])
    port = srv.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.rename(tmp, args.port_file)
    if args.exit_with:
        threading.Thread(target=watch_parent, args=(args.exit_with,), daemon=True).start()
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
