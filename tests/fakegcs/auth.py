"""The OAuth grants as Google's token endpoint checks them: the JWT bearer grant of a service
account (an RS256 signature, verified by `openssl dgst`, the standard library having no RSA, and
the claims) and the refresh-token grant of a user's login (its client and refresh token)."""
import base64
import json
import os
import subprocess
import tempfile
import time

STORAGE_SCOPES = ("https://www.googleapis.com/auth/devstorage.",
                  "https://www.googleapis.com/auth/cloud-platform")


class Rejected(Exception):
    """A refused grant: Google answers {"error": error, "error_description": str} with status."""

    def __init__(self, description, error="invalid_grant", status=400):
        super().__init__(description)
        self.error = error
        self.status = status


def b64url_decode(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def verify_rs256(signed, sig, keys):
    with tempfile.TemporaryDirectory(prefix="fakegcs-jwt") as d:
        data, sigf = os.path.join(d, "data"), os.path.join(d, "sig")
        with open(data, "wb") as f:
            f.write(signed)
        with open(sigf, "wb") as f:
            f.write(sig)
        for key in keys:
            r = subprocess.run(["openssl", "dgst", "-sha256", "-verify", key, "-signature", sigf, data],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
            if r.returncode == 0:
                return True
    return False


def check_assertion(jwt, aud, keys):
    """Raises Rejected unless jwt is signed by one of keys and its claims are acceptable."""
    pieces = jwt.split(".")
    if len(pieces) != 3:
        raise Rejected("assertion is not a JWT")
    try:
        header = json.loads(b64url_decode(pieces[0]))
        claims = json.loads(b64url_decode(pieces[1]))
        sig = b64url_decode(pieces[2])
    except ValueError:
        raise Rejected("assertion is not a JWT")
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise Rejected("assertion is not a JWT")
    if header.get("alg") != "RS256":
        raise Rejected("alg must be RS256")
    if not verify_rs256((pieces[0] + "." + pieces[1]).encode(), sig, keys):
        raise Rejected("Invalid JWT Signature.")
    now = time.time()
    if not claims.get("iss"):
        raise Rejected("Invalid JWT: iss missing")
    if claims.get("aud") != aud:
        raise Rejected("Invalid JWT: aud %r is not %r" % (claims.get("aud"), aud))
    iat, exp = claims.get("iat"), claims.get("exp")
    if not isinstance(iat, (int, float)) or not isinstance(exp, (int, float)):
        raise Rejected("Invalid JWT: iat and exp must be numbers")
    if exp <= now or iat > now + 60 or exp - iat > 3600 or exp <= iat:
        raise Rejected("Invalid JWT: Token must be a short-lived token (60 minutes) and in a "
                       "reasonable timeframe. Check your iat and exp values in the JWT claim.")
    scopes = str(claims.get("scope", "")).split()
    if not any(sc.startswith(STORAGE_SCOPES) for sc in scopes):
        raise Rejected("invalid_scope: no storage scope")


def parse_refresh_token(spec):
    """CLIENT_ID:SECRET:TOKEN (the token may hold colons) -> (client_id, secret, token)."""
    parts = spec.split(":", 2)
    if len(parts) != 3 or not all(parts):
        raise ValueError("--refresh-token wants CLIENT_ID:SECRET:TOKEN, not %r" % spec)
    return tuple(parts)


def check_refresh(form, known):
    """Raises Rejected unless form's client and refresh token are among known (a list of
    (client_id, secret, token)), as Google's endpoint words it."""
    client, secret, token = (form.get(k, "") for k in ("client_id", "client_secret", "refresh_token"))
    if not token:
        raise Rejected("Missing required parameter: refresh_token", "invalid_request")
    clients = [k for k in known if k[0] == client]
    if not client or not clients:
        raise Rejected("The OAuth client was not found.", "invalid_client", 401)
    if not any(k[1] == secret for k in clients):
        raise Rejected("Unauthorized", "invalid_client", 401)
    if not any(k[1] == secret and k[2] == token for k in clients):
        raise Rejected("Bad Request")
