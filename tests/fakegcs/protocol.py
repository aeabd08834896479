"""Pure pieces of the GCS JSON API: errors, preconditions, hashes, ranges, page tokens,
multipart bodies."""
import base64
import bisect
import json
import secrets
import time
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape


class HTTPError(Exception):
    def __init__(self, status, message, reason=None, headers=None):
        super().__init__(message)
        self.status, self.message, self.reason, self.headers = status, message, reason, headers or {}


def rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % int(t * 1000 % 1000)


def b64url_decode(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def check_preconditions(q, obj):
    def want(key):
        v = q.get(key)
        if v is None:
            return None
        try:
            return int(v)
        except ValueError:
            raise HTTPError(400, "invalid %s" % key, "invalid")

    fail = HTTPError(412, "At least one of the pre-conditions you specified did not hold.",
                     "conditionNotMet")
    g = want("ifGenerationMatch")
    if g is not None:
        if g == 0 and obj is not None:
            raise fail
        if g != 0 and (obj is None or obj.generation != g):
            raise fail
    g = want("ifGenerationNotMatch")
    if g is not None and ((obj is None and g == 0) or (obj is not None and obj.generation == g)):
        raise fail
    m = want("ifMetagenerationMatch")
    if m is not None and (obj is None or obj.metageneration != m):
        raise fail
    m = want("ifMetagenerationNotMatch")
    if m is not None and obj is not None and obj.metageneration == m:
        raise fail


def parse_goog_hash(value):
    out = {}
    if not value:
        return out
    for part in value.split(","):
        k, _, v = part.strip().partition("=")
        if k in ("crc32c", "md5") and v:
            out[k] = v
    return out


def check_hashes(expect, crc, md5):
    if expect.get("crc32c") and expect["crc32c"] != crc:
        raise HTTPError(400, 'Provided CRC32C "%s" doesn\'t match calculated CRC32C "%s".'
                        % (expect["crc32c"], crc), "invalid")
    if expect.get("md5") and md5 and expect["md5"] != md5:
        raise HTTPError(400, 'Provided MD5 hash "%s" doesn\'t match calculated MD5 hash "%s".'
                        % (expect["md5"], md5), "invalid")


def expectations(meta, header):
    e = {}
    if isinstance(meta, dict):
        if meta.get("crc32c"):
            e["crc32c"] = meta["crc32c"]
        if meta.get("md5Hash"):
            e["md5"] = meta["md5Hash"]
    e.update(parse_goog_hash(header))
    return e


def list_page(names, i, prefix, delim, limit, skip=None):
    """One page of a listing over the sorted names from index i, as both APIs page it:
    (keys, prefixes, last, more). A name that delim cuts after prefix counts once, as its
    common prefix; names skip(name) is true of are passed over; last is the last key or
    common prefix taken, more whether names were left at limit entries."""
    keys, prefixes, last, more = [], [], None, False
    while i < len(names):
        n = names[i]
        if skip and skip(n):
            i += 1
            continue
        if len(keys) + len(prefixes) >= limit:
            more = True
            break
        cut = n.find(delim, len(prefix)) if delim else -1
        if cut >= 0:
            p = n[:cut + len(delim)]
            prefixes.append(p)
            last = p
            i = bisect.bisect_right(names, p + "\U0010ffff", i)
            continue
        keys.append(n)
        last = n
        i += 1
    return keys, prefixes, last, more


def encode_token(start_after):
    raw = json.dumps({"a": start_after, "n": secrets.token_hex(4)}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_token(tok):
    try:
        return json.loads(b64url_decode(tok))["a"]
    except (ValueError, KeyError, TypeError):
        raise HTTPError(400, "Invalid pageToken", "invalid")


def parse_range(value, size):
    """Returns [start, end) for a single bytes range, or (None, None) if unsatisfiable."""
    v = value.strip()
    if not v.startswith("bytes=") or "," in v:
        return 0, size
    a, _, b = v[6:].strip().partition("-")
    try:
        if a == "":
            n = int(b)
            return (max(0, size - n), size) if n > 0 and size > 0 else (None, None)
        start = int(a)
        end = min(size, int(b) + 1) if b else size
    except ValueError:
        return 0, size
    if start >= size or end <= start:
        return None, None
    return start, end


def parse_content_range(value, length):
    """Returns (start, last, total) of a resumable upload's Content-Range, in every form GCS
    accepts: `bytes A-B/N` and `bytes A-B/*` (a chunk), `bytes A-*/N` and `bytes A-*/*` (the
    rest of the object in this one body, its end the end of the upload), `bytes */N` and
    `bytes */*` (a status query, or with N the final request without data).
    start is None for a status query; last is None for `A-*`; total is None for `*`."""
    if value is None:
        if not length:
            return None, None, None
        return 0, length - 1, length
    v = value.strip()
    if not v.lower().startswith("bytes"):
        raise HTTPError(400, "bad Content-Range %r" % value, "invalid")
    rng, _, tot = v[5:].strip().partition("/")
    rng = rng.strip()
    try:
        total = None if tot.strip() == "*" else int(tot)
        if rng == "*":
            return None, None, total
        a, _, b = rng.partition("-")
        start = int(a)
        last = None if b.strip() == "*" else int(b)
    except ValueError:
        raise HTTPError(400, "bad Content-Range %r" % value, "invalid")
    if start < 0 or (total is not None and total < 0):
        raise HTTPError(400, "bad Content-Range %r" % value, "invalid")
    if last is None:
        if total is not None and length is not None and start + length != total:
            raise HTTPError(400, "Content-Range %r does not match the body length" % value, "invalid")
        return start, None, total
    if last < start or (length is not None and last - start + 1 != length):
        raise HTTPError(400, "Content-Range %r does not match the body length" % value, "invalid")
    return start, last, total


XML_NS = "http://s3.amazonaws.com/doc/2006-03-01/"
XML_CODES = {400: "InvalidArgument", 401: "AuthenticationRequired", 403: "AccessDenied",
             404: "NoSuchKey", 409: "Conflict", 412: "PreconditionFailed", 429: "SlowDown",
             500: "InternalError", 502: "BadGateway", 503: "ServiceUnavailable"}


def xml_doc(root, fields, ns=True):
    """A small XML API answer: <root><k>v</k>...</root>."""
    inner = "".join("<%s>%s</%s>" % (k, escape(str(v)), k) for k, v in fields)
    attr = ' xmlns="%s"' % XML_NS if ns else ""
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<%s%s>%s</%s>' % (root, attr, inner, root)).encode()


def xml_error(e):
    """An XML API error body; an error raised with an XML code (CamelCase) as its reason keeps it."""
    code = e.reason if e.reason and e.reason[:1].isupper() else XML_CODES.get(e.status, "InternalError")
    return xml_doc("Error", [("Code", code), ("Message", e.message)], ns=False)


def parse_complete_mpu(body):
    """[(part_number, etag), ...] of a CompleteMultipartUpload body, in its order."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        raise HTTPError(400, "The XML you provided was not well-formed.", "MalformedXML")
    out = []
    for part in root.iter():
        if part.tag.rsplit("}", 1)[-1] != "Part":
            continue
        fields = {c.tag.rsplit("}", 1)[-1]: (c.text or "").strip() for c in part}
        try:
            out.append((int(fields["PartNumber"]), fields.get("ETag", "").strip('"')))
        except (KeyError, ValueError):
            raise HTTPError(400, "A Part needs a PartNumber.", "MalformedXML")
    if root.tag.rsplit("}", 1)[-1] != "CompleteMultipartUpload" or not out:
        raise HTTPError(400, "The XML you provided was not well-formed.", "MalformedXML")
    return out


RATE_UNITS = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "KI": 1 << 10, "MI": 1 << 20, "GI": 1 << 30}


def parse_rate(value):
    """Bytes a second from a number with an optional suffix: 100M = 100*10^6, 64Ki = 65536,
    an optional trailing B or B/s ignored. 0 means no limit. Raises ValueError."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        n = float(value)
    else:
        v = str(value).strip().upper()
        for tail in ("B/S", "/S", "B"):
            if v.endswith(tail) and len(v) > len(tail):
                v = v[:-len(tail)]
                break
        i = len(v)
        while i > 0 and v[i - 1].isalpha():
            i -= 1
        if v[i:] not in RATE_UNITS:
            raise ValueError("bad rate %r (want e.g. 100M, 512Ki, 2G)" % value)
        n = float(v[:i]) * RATE_UNITS[v[i:]]
    if n < 0 or n != n:
        raise ValueError("bad rate %r" % value)
    return n


def multipart_boundary(content_type):
    """The boundary parameter of a multipart Content-Type, or None. Its value may be quoted,
    with double quotes (RFC 2045) or with the single quotes Python's email package (apitools,
    so gcloud) writes; GCS accepts both."""
    for param in content_type.split(";")[1:]:
        k, _, v = param.strip().partition("=")
        if k.strip().lower() == "boundary":
            v = v.strip()
            if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
                v = v[1:-1]
            return v or None
    return None


def split_multipart(body, boundary):
    """Returns [(headers, payload), ...] of a multipart/related body (RFC 2046): each
    delimiter is "--boundary" at the start of a line, the line break before it belongs to
    it, and only blanks may follow it on its line. Line breaks are CRLF, or the bare LF that
    gcloud (apitools) sends and GCS accepts."""
    delim = b"--" + boundary
    starts = []  # (where the delimiter's line break begins, where its line ends, closing)
    at = 0
    while True:
        k = body.find(delim, at)
        if k < 0:
            break
        at = k + len(delim)
        if k == 0:
            lead = 0
        elif body[k - 1:k] == b"\n":
            lead = k - 2 if body[k - 2:k] == b"\r\n" else k - 1
        else:
            continue
        closing = body[at:at + 2] == b"--"
        eol = body.find(b"\n", at)
        if not closing and body[at:len(body) if eol < 0 else eol].strip(b" \t\r"):
            continue  # "--boundary" followed by more text on its line is data, not a delimiter
        starts.append((lead, len(body) if eol < 0 else eol + 1, closing))
        if closing:
            break
    if len(starts) < 2 or not starts[-1][2]:
        raise HTTPError(400, "malformed multipart body", "invalid")
    parts = []
    for (_, begin, _), (end, _, _) in zip(starts, starts[1:]):
        raw = body[begin:end]
        headers = {}
        while True:
            nl = raw.find(b"\n")
            if nl < 0:
                raise HTTPError(400, "malformed multipart part", "invalid")
            line, raw = raw[:nl].rstrip(b"\r"), raw[nl + 1:]
            if not line:
                break
            k, _, v = line.decode("latin-1").partition(":")
            if k:
                headers[k.strip().lower()] = v.strip()
        parts.append((headers, raw))
    return parts
