"""botocore as the oracle of mtc's SigV4 signer and S3 addressing (tests/s3_sign.bats).

s3_oracle.py S3_SIGN   builds requests with boto3's own S3 client (its serializer encodes
                       keys and queries, its SigV4Auth signs), catches each before it is
                       sent, has mtc sign the same request (the unit binary's "sign") and
                       compares Authorization, path and query; then compares where each
                       bucket's requests go ("target") with the URL botocore built.
Prints TAP.
"""
import datetime
import json
import subprocess
import sys
import urllib.parse

import boto3
import botocore.auth
import botocore.config

S3_SIGN = sys.argv[1]
KEY, SECRET = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
ADDED_BY_MTC = {"host", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"}
n = failed = 0


class Caught(Exception):
    pass


def catch(region, token=None, endpoint=None, style="auto"):
    """A boto3 S3 client whose requests are caught, signed, just before they are sent."""
    c = boto3.session.Session().client(
        "s3", region_name=region, endpoint_url=endpoint, aws_access_key_id=KEY,
        aws_secret_access_key=SECRET, aws_session_token=token,
        config=botocore.config.Config(s3={"addressing_style": style},
                                      retries={"max_attempts": 1, "mode": "standard"}))
    caught = []

    def before_send(request, **kw):
        caught.append(request)
        raise Caught()

    c.meta.events.register("before-send.s3.*", before_send)
    return c, caught


def ok(cond, name, *diag):
    global n, failed
    n += 1
    print(("ok" if cond else "not ok") + " %d - %s" % (n, name))
    if not cond:
        failed += 1
        for d in diag:
            print("#   " + str(d).replace("\n", "\n#   "))


def compare(name, region, call, token=None, **kw):
    c, caught = catch(region, token)
    try:
        call(c)
    except Caught:
        pass
    req = caught[-1]
    u = urllib.parse.urlsplit(req.url)
    h = {k.lower(): (v.decode() if isinstance(v, bytes) else v) for k, v in req.headers.items()}
    auth = h["authorization"]
    signed = auth.split("SignedHeaders=")[1].split(",")[0].split(";")
    when = datetime.datetime.strptime(h["x-amz-date"], "%Y%m%dT%H%M%SZ")
    params = [[k, v] for k, v in urllib.parse.parse_qsl(u.query, keep_blank_values=True)]
    spec = {
        "method": req.method, "host": u.netloc, "path": urllib.parse.unquote(u.path),
        "params": params,
        "headers": [[k, h[k]] for k in signed if k not in ADDED_BY_MTC],
        "payload_hash": h["x-amz-content-sha256"], "region": region, "service": "s3",
        "when": int(when.replace(tzinfo=datetime.timezone.utc).timestamp()),
        "access_key": KEY, "secret_key": SECRET, "session_token": token,
    }
    out = subprocess.run([S3_SIGN, "sign"], input=json.dumps(spec), capture_output=True,
                         text=True)
    if out.returncode:
        return ok(False, name, out.stderr)
    mine = json.loads(out.stdout)
    # botocore sends a bare "?uploads" where mtc sends "?uploads=": S3 reads both alike
    sorted_query = "&".join(sorted(p if "=" in p else p + "=" for p in u.query.split("&"))) \
        if u.query else ""
    ok(mine["authorization"] == auth and mine["path"] == u.path
       and mine["query"] == sorted_query, name,
       "botocore: %s %s" % (req.method, req.url), "botocore: " + auth,
       "mtc:      " + mine["authorization"], "mtc path/query: %s ? %s" % (mine["path"], mine["query"]),
       "mtc canonical request:\n" + mine["canonical_request"])


def signatures():
    compare("GET with a Range, a plain key", "us-east-1",
            lambda c: c.get_object(Bucket="bkt", Key="a/b.txt", Range="bytes=0-9"))
    compare("a key of spaces, '+', '=', '&', '%', '*' and UTF-8", "eu-west-1",
            lambda c: c.get_object(Bucket="bkt", Key="dir/a b+c=d&e%41*(1)~é中.txt"))
    compare("a key whose '//', '.' and '..' are not normalised", "us-west-2",
            lambda c: c.head_object(Bucket="bkt", Key="a//b/./../c/"))
    compare("PUT with a body, metadata and checksum headers", "eu-central-1",
            lambda c: c.put_object(Bucket="bkt", Key="job/2025-06-30_14-30/x.meta",
                                   Body=b"hello", Metadata={"Mtc-Digest": "  a   b "}))
    compare("ListObjectsV2: prefix, delimiter, a token with '/', '+' and '='", "us-east-1",
            lambda c: c.list_objects_v2(Bucket="bkt", Prefix="job/2025 06/", Delimiter="/",
                                        ContinuationToken="1/a+b==", MaxKeys=1000,
                                        StartAfter="job/ä"))
    compare("CreateMultipartUpload: a bare ?uploads", "us-east-1",
            lambda c: c.create_multipart_upload(Bucket="bkt", Key="big file"))
    compare("UploadPart: partNumber and an uploadId with '/', '+' and '='", "ap-south-1",
            lambda c: c.upload_part(Bucket="bkt", Key="big", PartNumber=10,
                                    UploadId="VXBsb2Fk/IElE+IGZvcg==", Body=b"x" * 100))
    compare("DeleteObjects: POST ?delete with an XML body", "us-east-1",
            lambda c: c.delete_objects(Bucket="bkt", Delete={
                "Objects": [{"Key": "a & b"}, {"Key": "c<d>"}], "Quiet": True}))
    compare("session credentials: x-amz-security-token signed", "us-east-1",
            lambda c: c.get_object(Bucket="bkt", Key="k"), token="FQoGZXIvYXdz+/token==")
    compare("a path-style request (a dotted bucket)", "eu-west-1",
            lambda c: c.get_object(Bucket="my.dotted.bucket", Key="k"))


def where(bucket, region, endpoint=None, style="auto"):
    c, caught = catch(region, endpoint=endpoint, style=style)
    try:
        c.get_object(Bucket=bucket, Key="k")
    except Caught:
        pass
    u = urllib.parse.urlsplit(caught[-1].url)
    prefix = u.path[: -len("/k")] or "-"
    host = botocore.auth._host_from_url(caught[-1].url)  # the Host signed and sent
    return "%s %s://%s %s %s" % (region, u.scheme, host, host, prefix)


def targets():
    cases = [
        ("bkt", "us-east-1", None, "auto", "virtual-hosted on s3.amazonaws.com in us-east-1"),
        ("bkt", "eu-west-1", None, "auto", "virtual-hosted on s3.REGION.amazonaws.com"),
        ("bkt", "cn-north-1", None, "auto", "China's amazonaws.com.cn"),
        ("a.b.c", "eu-west-1", None, "auto", "a dotted bucket path-style over https"),
        ("bkt", "eu-west-1", None, "path", "path-style when asked"),
        ("bkt", "us-east-1", "http://127.0.0.1:9000", "path", "a loopback endpoint, path-style"),
        ("bkt", "us-east-1", "https://minio.example:443/base", "path",
         "a named endpoint: its default port dropped, its own path kept"),
        ("bkt", "auto", "https://acct.r2.example", "virtual", "virtual-hosted on a named endpoint"),
    ]
    for bucket, region, endpoint, style, name in cases:
        env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "AWS_REGION": region}
        out = subprocess.run([S3_SIGN, "target", bucket, endpoint or "",
                              style if style != "auto" else ""],
                             capture_output=True, text=True, env=env)
        want = where(bucket, region, endpoint, style)
        ok(out.stdout.strip() == want, "target: " + name, "botocore: " + want,
           "mtc:      " + (out.stdout.strip() or out.stderr.strip()))


signatures()
targets()
print("1..%d" % n)
sys.exit(1 if failed else 0)
