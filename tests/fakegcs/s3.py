"""The S3 REST subset that mtc, the AWS CLI and rclone use for objects, path-style only
(`http://HOST:PORT/BUCKET/KEY`), served by server.py when started with `--s3`.

A benchmark server, not the protocol's reference: moto (tests/s3.bats) is that, and checks
signatures. Here a request must carry a SigV4 `Authorization: AWS4-HMAC-SHA256 ...` header
(or a presigned query), but the signature and `x-amz-content-sha256` are not verified. Body
checksums are: `Content-MD5`, `x-amz-checksum-crc32c` and `x-amz-checksum-crc32` that do not
match the bytes answer 400 `BadDigest` and nothing is stored.
"""
import base64
import bisect
import hashlib
import time
import zlib
import xml.etree.ElementTree as ET
from urllib.parse import quote, unquote
from xml.sax.saxutils import escape

import crc32c
from protocol import HTTPError, XML_NS, decode_token, encode_token, list_page

MAX_KEYS = 1000
MIN_PART = 5 << 20

ENV = None  # the server module: STATE, Obj, MultipartUpload, commit_object, join, PIECE...


def bind(server_module):
    global ENV
    ENV = server_module


def http_date(t):
    return time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(t))


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % int(t * 1000 % 1000)


def doc(root, inner):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<%s xmlns="%s">%s</%s>'
            % (root, XML_NS, inner, root)).encode()


def el(tag, value):
    return "<%s>%s</%s>" % (tag, escape(str(value)), tag)


def xml_children(body, root_tag, item_tag):
    """[{child: text}] of each <item_tag> of a request body whose root is <root_tag>."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        raise HTTPError(400, "The XML you provided was not well-formed.", "MalformedXML")
    if root.tag.rsplit("}", 1)[-1] != root_tag:
        raise HTTPError(400, "The XML you provided was not well-formed.", "MalformedXML")
    out = []
    for item in root.iter():
        if item.tag.rsplit("}", 1)[-1] == item_tag:
            out.append({c.tag.rsplit("}", 1)[-1]: (c.text or "").strip() for c in item})
    return out, root


class S3Handler:
    """Mixed into server.py's Handler: route_s3 maps a request to (kind, fn, bucket, key)."""

    def route_s3(self, method, parts):
        if not self.s3_signed():
            raise HTTPError(403, "Request is not signed with AWS Signature Version 4.",
                            "AccessDenied")
        bucket = unquote(parts[0]) if parts and parts[0] else None
        key = unquote("/".join(parts[1:])) if len(parts) > 1 else ""
        q = self.q
        if bucket is None:
            if method == "GET":
                return ("s3-bucket", self.s3_list_buckets, None, None)
        elif not key:
            if method == "GET" and "uploads" in q:
                return ("s3-mpu-list", self.s3_list_uploads, bucket, None)
            if method == "GET" and "location" in q:
                return ("s3-bucket", self.s3_bucket_location, bucket, None)
            if method == "GET":
                return ("s3-list", self.s3_list, bucket, None)
            if method == "POST" and "delete" in q:
                return ("s3-delete", self.s3_delete_many, bucket, None)
            if method in ("PUT", "HEAD", "DELETE"):
                return ("s3-bucket", self.s3_bucket, bucket, None)
        elif "uploadId" in q:
            if method == "PUT" and "partNumber" in q:
                return ("s3-mpu-part", self.s3_part, bucket, key)
            if method == "GET":
                return ("s3-mpu-parts", self.s3_list_parts, bucket, key)
            if method == "POST":
                return ("s3-mpu-complete", self.s3_complete, bucket, key)
            if method == "DELETE":
                return ("s3-mpu-abort", self.s3_abort, bucket, key)
        elif method == "POST" and "uploads" in q:
            return ("s3-mpu-init", self.s3_create_mpu, bucket, key)
        elif method == "PUT":
            return ("s3-put", self.s3_put, bucket, key)
        elif method in ("GET", "HEAD"):
            return ("s3-get", self.s3_get, bucket, key)
        elif method == "DELETE":
            return ("s3-delete", self.s3_delete, bucket, key)
        raise HTTPError(405, "The specified method is not allowed against this resource.",
                        "MethodNotAllowed")

    def s3_signed(self):
        a = self.headers.get("Authorization", "")
        return a.startswith("AWS4-HMAC-SHA256 ") or self.q.get("X-Amz-Algorithm") == "AWS4-HMAC-SHA256"

    def send_s3(self, status, body=b"", headers=None):
        self.send(status, body, headers, "application/xml")

    # ---- buckets

    def s3_bucket_or_404(self, bucket):
        with ENV.STATE.lock:
            b = ENV.STATE.buckets.get(bucket)
        if b is None:
            raise HTTPError(404, "The specified bucket does not exist", "NoSuchBucket")
        return b

    def s3_list_buckets(self, _b, _k):
        with ENV.STATE.lock:
            inner = "".join("<Bucket>%s%s</Bucket>" % (el("Name", n), el("CreationDate", iso(b["created"])))
                            for n, b in sorted(ENV.STATE.buckets.items()))
        self.send_s3(200, doc("ListAllMyBucketsResult",
                              "<Owner><ID>fake</ID></Owner><Buckets>%s</Buckets>" % inner))

    def s3_bucket(self, bucket, _k):
        m = self.command
        if m == "PUT":
            with ENV.STATE.lock:
                if bucket in ENV.STATE.buckets:
                    raise HTTPError(409, "Your previous request to create the named bucket succeeded "
                                    "and you already own it.", "BucketAlreadyOwnedByYou")
            ENV.STATE.bucket(bucket, create=True)
            self.send(200, headers={"Location": "/" + bucket})
        elif m == "HEAD":
            self.s3_bucket_or_404(bucket)
            self.send(200, headers={"x-amz-bucket-region": "us-east-1"})
        else:
            with ENV.STATE.lock:
                b = ENV.STATE.buckets.get(bucket)
                if b is None:
                    raise HTTPError(404, "The specified bucket does not exist", "NoSuchBucket")
                if b["objects"]:
                    raise HTTPError(409, "The bucket you tried to delete is not empty", "BucketNotEmpty")
                del ENV.STATE.buckets[bucket]
            self.send(204)

    def s3_bucket_location(self, bucket, _k):
        self.s3_bucket_or_404(bucket)
        self.send_s3(200, doc("LocationConstraint", ""))

    # ---- objects

    def s3_object(self, bucket, key):
        b = self.s3_bucket_or_404(bucket)
        with ENV.STATE.lock:
            o = b["objects"].get(key)
        if o is None:
            raise HTTPError(404, "The specified key does not exist.", "NoSuchKey")
        return o

    def s3_conditions(self, o):
        """If-Match / If-None-Match of a read (o is the object) or a write (o may be None)."""
        im, inm = self.headers.get("If-Match"), self.headers.get("If-None-Match")
        tag = o.s3_etag if o is not None else None
        if im is not None and (tag is None or (im.strip() != "*" and im.strip().strip('"') != tag.strip('"'))):
            raise HTTPError(412, "At least one of the pre-conditions you specified did not hold",
                            "PreconditionFailed")
        if inm is not None and tag is not None and (inm.strip() == "*" or inm.strip().strip('"') == tag.strip('"')):
            if self.command in ("GET", "HEAD"):
                raise HTTPError(304, "Not Modified", "NotModified")
            raise HTTPError(412, "At least one of the pre-conditions you specified did not hold",
                            "PreconditionFailed")

    def s3_meta(self):
        md = {k.lower()[len("x-amz-meta-"):]: v for k, v in self.headers.items()
              if k.lower().startswith("x-amz-meta-")}
        meta = {"contentType": self.headers.get("Content-Type") or "binary/octet-stream"}
        if md:
            meta["metadata"] = md
        return meta

    def s3_receive_new(self):
        """The body into a new blob, dropped if it fails: (blob, crc32c, md5 digest or None)."""
        blob = ENV.STATE.new_blob()
        try:
            return (blob,) + self.s3_receive(blob)
        except BaseException:
            blob.discard()
            raise

    def s3_receive(self, blob):
        """The body into blob, its sums checked against the request's checksum headers:
        (crc32c, md5 digest or None)."""
        if "aws-chunked" in self.headers.get("Content-Encoding", ""):
            raise HTTPError(501, "aws-chunked bodies are not implemented by this server.",
                            "NotImplemented")
        want_md5 = self.headers.get("Content-MD5")
        want_c = self.headers.get("x-amz-checksum-crc32c")
        want_z = self.headers.get("x-amz-checksum-crc32")
        md5 = hashlib.md5() if (ENV.MD5 or want_md5) else None
        crc, zcrc = 0, 0
        for piece in self.body_pieces():
            blob.append(piece)
            crc = crc32c.update(crc, piece)
            if md5 is not None:
                md5.update(piece)
            if want_z:
                zcrc = zlib.crc32(piece, zcrc)
        if want_md5 and base64.b64encode(md5.digest()).decode() != want_md5.strip():
            raise HTTPError(400, "The Content-MD5 you specified did not match what we received.",
                            "BadDigest")
        if want_c and crc32c.b64(crc) != want_c.strip():
            raise HTTPError(400, "The CRC32C you specified did not match the calculated checksum.",
                            "BadDigest")
        if want_z and base64.b64encode(zcrc.to_bytes(4, "big")).decode() != want_z.strip():
            raise HTTPError(400, "The CRC32 you specified did not match the calculated checksum.",
                            "BadDigest")
        ENV.STATE.count("upload_bytes_stored", blob.size())
        return crc, (md5.digest() if md5 is not None and ENV.MD5 else None)

    def s3_commit(self, bucket, key, blob, meta, crc, etag, s3crc):
        """Makes the object visible, if If-None-Match / If-Match still hold."""
        b = self.s3_bucket_or_404(bucket)
        with ENV.STATE.lock:
            try:
                self.s3_conditions(b["objects"].get(key))
            except HTTPError:
                blob.discard()
                raise
            blob.close()
            o = ENV.Obj(bucket, key, blob, ENV.STATE.next_generation(), meta.get("contentType"),
                        meta.get("metadata") or None, crc32c.b64(crc), None)
            o.s3_etag, o.s3_crc = etag, s3crc
            old = b["objects"].get(key)
            b["objects"][key] = o
        if old is not None:
            old.blob.discard()
        return o

    def s3_put(self, bucket, key):
        if self.headers.get("x-amz-copy-source"):
            raise HTTPError(501, "CopyObject is not implemented by this server.", "NotImplemented")
        self.s3_bucket_or_404(bucket)
        blob, crc, md5 = self.s3_receive_new()
        etag = '"%s"' % (md5.hex() if md5 else "%08x-1" % crc)
        o = self.s3_commit(bucket, key, blob, self.s3_meta(), crc, etag, crc32c.b64(crc))
        self.send(200, headers={"ETag": o.s3_etag, "x-amz-checksum-crc32c": o.s3_crc})

    def s3_headers(self, o):
        h = {"ETag": o.s3_etag, "Last-Modified": http_date(o.updated), "Accept-Ranges": "bytes"}
        for k, v in (o.metadata or {}).items():
            h["x-amz-meta-" + k] = v
        if self.headers.get("x-amz-checksum-mode", "").upper() == "ENABLED" and o.s3_crc:
            h["x-amz-checksum-crc32c"] = o.s3_crc
            if "-" in o.s3_crc:
                h["x-amz-checksum-type"] = "COMPOSITE"
        return h

    def s3_get(self, bucket, key):
        o = self.s3_object(bucket, key)
        self.s3_conditions(o)
        headers = self.s3_headers(o)
        status = 200
        start, end, span = self.byte_range(o.size, "The requested range is not satisfiable",
                                           "InvalidRange")
        if span:
            status = 206
            headers["Content-Range"] = span
            headers.pop("x-amz-checksum-crc32c", None)
            headers.pop("x-amz-checksum-type", None)
        self.send_blob(o, status, headers, start, end)

    def s3_delete(self, bucket, key):
        b = self.s3_bucket_or_404(bucket)
        with ENV.STATE.lock:
            o = b["objects"].pop(key, None)
        if o is not None:
            o.blob.discard()
        self.send(204)

    def s3_delete_many(self, bucket, _k):
        b = self.s3_bucket_or_404(bucket)
        items, root = xml_children(self.read_body(), "Delete", "Object")
        if len(items) > 1000:
            raise HTTPError(400, "The XML you provided was not well-formed.", "MalformedXML")
        quiet = any(c.tag.rsplit("}", 1)[-1] == "Quiet" and (c.text or "").strip().lower() == "true"
                    for c in root)
        gone = []
        with ENV.STATE.lock:
            for it in items:
                o = b["objects"].pop(it.get("Key", ""), None)
                if o is not None:
                    gone.append(o)
        for o in gone:
            o.blob.discard()
        inner = "" if quiet else "".join("<Deleted>%s</Deleted>" % el("Key", it.get("Key", ""))
                                         for it in items)
        self.send_s3(200, doc("DeleteResult", inner))

    def s3_list(self, bucket, _k):
        """ListObjectsV2 (list-type=2) and ListObjects (v1: marker), prefix, delimiter,
        max-keys, encoding-type=url."""
        b = self.s3_bucket_or_404(bucket)
        q = self.q
        v2 = q.get("list-type") == "2"
        prefix, delim = q.get("prefix", ""), q.get("delimiter", "")
        try:
            limit = max(0, min(int(q.get("max-keys") or MAX_KEYS), MAX_KEYS))
        except ValueError:
            raise HTTPError(400, "Provided max-keys not an integer or within integer range",
                            "InvalidArgument")
        if ENV.STATE.config.get("page_size"):
            limit = min(limit, int(ENV.STATE.config["page_size"]))
        if v2:
            after = decode_token(q["continuation-token"]) if q.get("continuation-token") else q.get("start-after")
        else:
            after = q.get("marker") or None
        enc = (lambda s: quote(s, safe="/")) if q.get("encoding-type") == "url" else (lambda s: s)
        with ENV.STATE.lock:
            names = sorted(n for n in b["objects"] if n.startswith(prefix))
            i = bisect.bisect_right(names, after) if after else 0
            keys, prefixes, last, more = list_page(names, i, prefix, delim, limit)
            contents = []
            for n in keys:
                o = b["objects"][n]
                contents.append("<Contents>%s%s%s%s%s</Contents>" % (
                    el("Key", enc(n)), el("LastModified", iso(o.updated)), el("ETag", o.s3_etag),
                    el("Size", o.size), el("StorageClass", "STANDARD")))
        inner = el("Name", bucket) + el("Prefix", enc(prefix)) + el("MaxKeys", limit)
        if delim:
            inner += el("Delimiter", enc(delim))
        if q.get("encoding-type") == "url":
            inner += el("EncodingType", "url")
        inner += el("IsTruncated", "true" if more else "false")
        if v2:
            inner += el("KeyCount", len(contents) + len(prefixes))
            if q.get("continuation-token"):
                inner += el("ContinuationToken", q["continuation-token"])
            if more:
                inner += el("NextContinuationToken", encode_token(last))
        else:
            inner += el("Marker", enc(q.get("marker", "")))
            if more and delim:
                inner += el("NextMarker", enc(last))
        inner += "".join(contents)
        inner += "".join("<CommonPrefixes>%s</CommonPrefixes>" % el("Prefix", enc(p)) for p in prefixes)
        self.send_s3(200, doc("ListBucketResult", inner))

    # ---- multipart uploads

    def s3_create_mpu(self, bucket, key):
        self.s3_bucket_or_404(bucket)
        self.discard_body()
        u = ENV.MultipartUpload(bucket, key, self.s3_meta(), {})
        u.initiated = time.time()
        u.algorithm = self.headers.get("x-amz-checksum-algorithm", "").upper()
        with ENV.STATE.lock:
            ENV.STATE.mpus[u.id] = u
        self.send_s3(200, doc("InitiateMultipartUploadResult",
                              el("Bucket", bucket) + el("Key", key) + el("UploadId", u.id)))

    def s3_upload(self, bucket, key):
        return self.mpu(bucket, key, "The specified upload does not exist. The upload ID may be "
                        "invalid, or the upload may have been aborted or completed.")

    def s3_part(self, bucket, key):
        u = self.s3_upload(bucket, key)
        n = self.part_number("Part number must be an integer between 1 and 10000, inclusive")
        blob, crc, md5 = self.s3_receive_new()
        etag = '"%s"' % (md5.hex() if md5 else "%08x%08x" % (crc, n))
        with u.lock:
            with ENV.STATE.lock:
                live = ENV.STATE.mpus.get(u.id) is u
            if not live:
                blob.discard()
                raise HTTPError(404, "The specified upload does not exist.", "NoSuchUpload")
            old = u.parts.get(n)
            u.parts[n] = (blob, etag, crc, md5, time.time())
        if old is not None:
            old[0].discard()
        self.send(200, headers={"ETag": etag, "x-amz-checksum-crc32c": crc32c.b64(crc)})

    def s3_list_parts(self, bucket, key):
        u = self.s3_upload(bucket, key)
        try:
            after = int(self.q.get("part-number-marker") or 0)
            limit = max(1, min(int(self.q.get("max-parts") or 1000), 1000))
        except ValueError:
            raise HTTPError(400, "Argument part-number-marker or max-parts must be an integer",
                            "InvalidArgument")
        with u.lock:
            nums = sorted(k for k in u.parts if k > after)
            shown, more = nums[:limit], len(nums) > limit
            inner = "".join("<Part>%s%s%s%s%s</Part>" % (
                el("PartNumber", k), el("LastModified", iso(u.parts[k][4])), el("ETag", u.parts[k][1]),
                el("Size", u.parts[k][0].size()), el("ChecksumCRC32C", crc32c.b64(u.parts[k][2])))
                for k in shown)
        head = el("Bucket", bucket) + el("Key", key) + el("UploadId", u.id)
        head += el("PartNumberMarker", after) + el("MaxParts", limit)
        head += el("IsTruncated", "true" if more else "false")
        if more:
            head += el("NextPartNumberMarker", shown[-1])
        self.send_s3(200, doc("ListPartsResult", head + inner))

    def s3_complete(self, bucket, key):
        u = self.s3_upload(bucket, key)
        items, _ = xml_children(self.read_body(), "CompleteMultipartUpload", "Part")
        if not items:
            raise HTTPError(400, "The XML you provided was not well-formed.", "MalformedXML")
        with u.lock:
            with ENV.STATE.lock:
                if ENV.STATE.mpus.get(u.id) is not u:
                    raise HTTPError(404, "The specified upload does not exist.", "NoSuchUpload")
            parts, prev, md5s, crcs = [], 0, b"", b""
            for i, it in enumerate(items):
                try:
                    n = int(it.get("PartNumber", ""))
                except ValueError:
                    raise HTTPError(400, "The XML you provided was not well-formed.", "MalformedXML")
                if n <= prev:
                    raise HTTPError(400, "The list of parts was not in ascending order. Parts must "
                                    "be ordered by part number.", "InvalidPartOrder")
                prev = n
                part = u.parts.get(n)
                if part is None or part[1].strip('"') != it.get("ETag", "").strip('"'):
                    raise HTTPError(400, "One or more of the specified parts could not be found. "
                                    "The part may not have been uploaded, or the specified entity "
                                    "tag may not match the part's entity tag.", "InvalidPart")
                if i < len(items) - 1 and part[0].size() < MIN_PART:
                    raise HTTPError(400, "Your proposed upload is smaller than the minimum allowed "
                                    "size", "EntityTooSmall")
                parts.append((part[0], part[2]))
                md5s += part[3] or b""
                crcs += part[2].to_bytes(4, "big")
            blob, crc_b64 = ENV.join(parts)
            n = len(parts)
            tag = hashlib.md5(md5s).hexdigest() if ENV.MD5 else "%08x" % crc32c.update(0, crcs)
            etag = '"%s-%d"' % (tag, n)
            s3crc = "%s-%d" % (crc32c.b64(crc32c.update(0, crcs)), n) if u.algorithm == "CRC32C" else None
            o = self.s3_commit(bucket, key, blob, u.meta, crc32c.from_b64(crc_b64), etag, s3crc)
            with ENV.STATE.lock:
                ENV.STATE.mpus.pop(u.id, None)
            u.discard()
        self.send_s3(200, doc("CompleteMultipartUploadResult",
                              el("Location", "http://%s/%s/%s" % (self.host(), bucket, quote(key)))
                              + el("Bucket", bucket) + el("Key", key) + el("ETag", o.s3_etag)))

    def s3_abort(self, bucket, key):
        u = self.s3_upload(bucket, key)
        with u.lock:
            with ENV.STATE.lock:
                ENV.STATE.mpus.pop(u.id, None)
            u.discard()
        self.send(204)

    def s3_list_uploads(self, bucket, _k):
        self.s3_bucket_or_404(bucket)
        prefix = self.q.get("prefix", "")
        with ENV.STATE.lock:
            ups = sorted((u for u in ENV.STATE.mpus.values()
                          if u.bucket == bucket and u.name.startswith(prefix)),
                         key=lambda u: (u.name, u.initiated))
            inner = "".join("<Upload>%s%s%s%s</Upload>" % (
                el("Key", u.name), el("UploadId", u.id), el("StorageClass", "STANDARD"),
                el("Initiated", iso(u.initiated))) for u in ups)
        head = el("Bucket", bucket) + el("Prefix", prefix) + el("MaxUploads", 1000)
        head += el("IsTruncated", "false")
        self.send_s3(200, doc("ListMultipartUploadsResult", head + inner))
