"""Verifies a pds webhook delivery exactly as the Go package pkg/webhookverify does, in
either signature scheme, chosen by the headers the delivery carries; Python 3.9+, standard
library only:

    SECRETS = [os.environ.get("PDS_WEBHOOK_SECRET")]  # and the previous one while rotating

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            try:
                verify(body, self.headers, SECRETS)
                self.send_response(204)  # then handle the body, once per delivery id
            except VerifyError as e:  # 4xx is never retried; a missing secret is ours: 5xx
                self.send_response(500 if e.kind == "no_secret" else 400)
            self.end_headers()
"""
import base64
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

# Standard base64, padded, and nothing else (b64decode alone skips what it cannot read).
BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def _decode64(s):
    return base64.b64decode(s) if BASE64.fullmatch(s) else None


def _has_key_material(secret):
    """A secret holds key material unless its text after "whsec_", trimmed, is empty, zero
    bytes ("\\0") only, or base64 of zero bytes only: each is the empty key, in either scheme."""
    if not isinstance(secret, str):
        return False
    m = secret.removeprefix("whsec_").strip(SPACE)
    decoded = _decode64(m)
    return m.strip("\0") != "" and not (decoded is not None and not decoded.strip(b"\0"))


def _standard_key(secret):
    """The Standard Webhooks key: the base64 after "whsec_", decoded; None if it is none."""
    key = _decode64(secret.removeprefix("whsec_"))
    return key if key and key.strip(b"\0") else None


def _first(headers, name):
    """The first value, as Go's Header.Get: headers is a dict (of strings or lists) or the like."""
    value = next((v for k, v in headers.items() if k.lower() == name), "")
    return (value[0] if value else "") if isinstance(value, (list, tuple)) else value


def _check_tolerance(t, tolerance, now):
    tolerance = int(tolerance) if tolerance > 0 else 300
    if abs(int(time.time() if now is None else now) - t) > tolerance:
        raise VerifyError("timestamp")


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


def _verify_pds(body, headers, secrets, tolerance, now):
    """The pds scheme: Service-Signature, keyed with the whole secret, "whsec_" included."""
    header = _first(headers, "service-signature")
    if not header:
        raise VerifyError("missing_header")
    t, sigs = _parse(header)
    stamp = _first(headers, "service-timestamp")
    if stamp and stamp != str(t):
        raise VerifyError("timestamp_headers")
    _check_tolerance(t, tolerance, now)
    signed = b"%d." % t + body  # t in its canonical form, then the raw body
    for secret in secrets:
        want = hmac.new(secret.encode(), signed, hashlib.sha256).digest()
        if any(hmac.compare_digest(sig, want) for sig in sigs):
            return
    raise VerifyError("no_match")


def _parse_standard(header):
    """Reads "<version>,<value>[ <version>,<value>...]" (single spaces), skipping versions other
    than v1; every v1 is the padded base64 of 32 bytes."""
    if len(header.encode("utf-8", "replace")) > 4096:
        raise VerifyError("malformed_header")
    sigs = []
    for element in header.split(" "):
        version, comma, value = element.partition(",")
        if not comma or not version or not value:
            raise VerifyError("malformed_header")
        if version == "v1":
            if not re.fullmatch(r"[A-Za-z0-9+/]{43}=", value):
                raise VerifyError("malformed_header")
            sigs.append(value.encode())
    if not sigs:
        raise VerifyError("malformed_header")
    return sigs


def _verify_standard(body, headers, secrets, tolerance, now):
    """The Standard Webhooks scheme: webhook-id, webhook-timestamp and webhook-signature alone,
    keyed with the base64-decoded secret, over "<id>.<timestamp>.<body>"."""
    keys = [_standard_key(s) for s in secrets]
    if None in keys:  # not "whsec_" and base64
        raise VerifyError("no_secret")
    msg_id, stamp = _first(headers, "webhook-id"), _first(headers, "webhook-timestamp")
    header = _first(headers, "webhook-signature")
    if not msg_id or not stamp or not header:
        raise VerifyError("missing_header")
    # id: visible ASCII, so that every language signs the same bytes; the timestamp: a
    # canonical decimal int64, not negative (re's [0-9] takes no other digits).
    if (not re.fullmatch(r"[!-~]{1,4096}", msg_id) or not re.fullmatch(r"0|[1-9][0-9]{0,18}", stamp)
            or int(stamp) >= 2**63):
        raise VerifyError("malformed_header")
    sigs = _parse_standard(header)
    _check_tolerance(int(stamp), tolerance, now)
    signed = ("%s.%s." % (msg_id, stamp)).encode() + body
    for key in keys:
        want = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest())
        if any(hmac.compare_digest(sig, want) for sig in sigs):  # the base64 text, as the official libraries compare
            return
    raise VerifyError("no_match")


def verify(body, headers, secrets, tolerance=300, now=None):
    """Returns if the raw body (bytes) is authentic under any one of the secrets, raises
    VerifyError if not. tolerance is in seconds (0: the default, 300), now in unix seconds.
    A delivery carrying any webhook-* header is verified by the Standard Webhooks headers
    alone (pds sends them, beside its Service-* ones, to a subscription of that scheme); any
    other by Service-Signature."""
    # An unset variable must verify nothing: the whole list is refused.
    if not secrets or not all(_has_key_material(s) for s in secrets):
        raise VerifyError("no_secret")
    standard = any(_first(headers, name) for name in ("webhook-id", "webhook-timestamp", "webhook-signature"))
    (_verify_standard if standard else _verify_pds)(body, headers, secrets, tolerance, now)
