"""Verifies a pds webhook delivery exactly as the Go package pkg/webhookverify does;
Python 3.9+, standard library only:

    SECRETS = [os.environ.get("PDS_WEBHOOK_SECRET")]  # and the previous one while rotating

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            try:
                verify(body, self.headers, SECRETS)
                self.send_response(204)  # then handle the body, once per Service-Delivery-Id
            except VerifyError as e:  # 4xx is never retried; a missing secret is ours: 5xx
                self.send_response(500 if e.kind == "no_secret" else 400)
            self.end_headers()
"""
import hashlib
import hmac
import re
import time


class VerifyError(Exception):
    """kind is one per error of the Go verifier: no_secret (no key material: a configuration
    error), missing_header, malformed_header, timestamp_headers (Service-Timestamp is not t),
    timestamp (outside the tolerance, late or early) or no_match (under every secret)."""

    def __init__(self, kind):
        super().__init__("pds webhook: " + kind.replace("_", " "))
        self.kind = kind


# White space as Go's strings.TrimSpace sees it (str.strip() alone removes more).
SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000" + "".join(map(chr, range(0x2000, 0x200B)))


def _first(headers, name):
    """The first value, as Go's Header.Get: headers is a dict (of strings or lists) or the like."""
    value = next((v for k, v in headers.items() if k.lower() == name), "")
    return (value[0] if value else "") if isinstance(value, (list, tuple)) else value


def _parse(header):
    """Reads "t=<unix>,v1=<hex>[,v1=<hex>...]", skipping elements of other schemes."""
    if len(header.encode("utf-8", "replace")) > 4096:  # bounds the work on a hostile header
        raise VerifyError("malformed_header")
    t, sigs = None, []
    for element in header.split(","):
        key, _, value = element.strip(SPACE).partition("=")
        # t is a decimal int64 as strconv.ParseInt reads it (int() alone takes "1_0"), not negative;
        # v1 is 64 hex digits (bytes.fromhex alone takes white space).
        if key == "t" and t is None and re.fullmatch(r"[+-]?[0-9]+", value) and 0 <= int(value) < 2**63:
            t = int(value)
        elif key == "v1" and re.fullmatch(r"[0-9a-fA-F]{64}", value):
            sigs.append(bytes.fromhex(value))
        elif key in ("t", "v1") or not key or not value:
            raise VerifyError("malformed_header")
    if t is None or not sigs:
        raise VerifyError("malformed_header")
    return t, sigs


def verify(body, headers, secrets, tolerance=300, now=None):
    """Returns if the raw body (bytes) is authentic under any one of the secrets, raises
    VerifyError if not. tolerance is in seconds (0: the default, 300), now in unix seconds."""
    # An unset variable must verify nothing: the whole list is refused.
    if not secrets or any(not isinstance(s, str) or not s.removeprefix("whsec_").strip(SPACE)
                          for s in secrets):
        raise VerifyError("no_secret")
    header = _first(headers, "service-signature")
    if not header:
        raise VerifyError("missing_header")
    t, sigs = _parse(header)
    stamp = _first(headers, "service-timestamp")
    if stamp and stamp != str(t):
        raise VerifyError("timestamp_headers")
    tolerance = int(tolerance) if tolerance > 0 else 300
    if abs(int(time.time() if now is None else now) - t) > tolerance:
        raise VerifyError("timestamp")
    signed = b"%d." % t + body  # t in its canonical form, then the raw body
    for secret in secrets:  # the key is the whole secret, "whsec_" included
        want = hmac.new(secret.encode(), signed, hashlib.sha256).digest()
        if any(hmac.compare_digest(sig, want) for sig in sigs):
            return
    raise VerifyError("no_match")
