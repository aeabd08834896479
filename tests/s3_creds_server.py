"""The AWS credential endpoints a pod or an instance reaches, for tests/s3_auth.bats.

s3_creds_server.py [--token T | --token-file F] [--lifetime S] [--fail-after N]
  prints its port, then serves on loopback:
  GET  /creds                      the container endpoint (ECS, EKS Pod Identity): refuses
                                   (401) an Authorization header other than the token (read
                                   again from --token-file at each request)
  PUT  /latest/api/token           IMDSv2's session token; needs its TTL header
  GET  /latest/meta-data/iam/security-credentials/[ROLE]
                                   the role's name, then its credentials; refuses (401) a
                                   request without the session token, as IMDSv2 does
  GET  /stats                      what it served and refused, as JSON
Each credential it hands out is new (ASIATEST<n>) and expires --lifetime seconds later;
after --fail-after of them it answers 500.
"""
import argparse
import datetime
import json
import secrets
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--token")
ap.add_argument("--token-file")
ap.add_argument("--lifetime", type=int, default=3600)
ap.add_argument("--fail-after", type=int, default=-1)
opt = ap.parse_args()

ROLE = "mtc-node-role"
CREDS = "/latest/meta-data/iam/security-credentials/"
stats = {"issued": 0, "refused": 0, "imds_tokens": 0, "failed": 0}
imds_tokens = set()


def new_creds():
    if 0 <= opt.fail_after <= stats["issued"]:
        stats["failed"] += 1
        return None
    stats["issued"] += 1
    exp = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=opt.lifetime)
    return {"Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": "ASIATEST%d" % stats["issued"],
            "SecretAccessKey": "secret%d" % stats["issued"], "Token": "token%d" % stats["issued"],
            "Expiration": exp.strftime("%Y-%m-%dT%H:%M:%SZ")}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, status, body, ctype="application/json"):
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def refuse(self, why):
        stats["refused"] += 1
        self.send(401, why, "text/plain")

    def creds(self):
        c = new_creds()
        if c is None:
            self.send(500, "injected failure", "text/plain")
        else:
            self.send(200, c)

    def do_PUT(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path != "/latest/api/token":
            return self.send(404, "not found", "text/plain")
        if not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            return self.send(400, "missing TTL", "text/plain")
        tok = secrets.token_urlsafe(16)
        imds_tokens.add(tok)
        stats["imds_tokens"] += 1
        self.send(200, tok, "text/plain")

    def do_GET(self):
        if self.path == "/stats":
            return self.send(200, stats)
        if self.path == "/creds":
            want = opt.token
            if opt.token_file:
                want = open(opt.token_file).read().strip()
            if want is not None and self.headers.get("Authorization") != want:
                return self.refuse("bad Authorization")
            return self.creds()
        if self.path.startswith(CREDS):
            if self.headers.get("X-aws-ec2-metadata-token") not in imds_tokens:
                return self.refuse("IMDSv2 token required")
            if self.path == CREDS:
                return self.send(200, ROLE, "text/plain")
            if self.path == CREDS + ROLE:
                return self.creds()
        self.send(404, "not found", "text/plain")


srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(srv.server_address[1], flush=True)
sys.stdout.close()
srv.serve_forever()
