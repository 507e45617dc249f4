// Verifies a pds webhook delivery exactly as the Go package pkg/webhookverify
// does, in either signature scheme, chosen by the headers the delivery carries.
// Node 18.3+, node:crypto only; usable from TypeScript (see verify.d.ts).
//
//   import http from 'node:http';
//   import { verify, VerifyError } from './verify.mjs';
//   const secrets = [process.env.PDS_WEBHOOK_SECRET]; // and the previous one while rotating
//   http.createServer(async (req, res) => {
//     const chunks = [];
//     for await (const chunk of req) chunks.push(chunk);
//     try { verify(Buffer.concat(chunks), req.headersDistinct, secrets); } catch (e) {
//       // 4xx is never retried; a missing secret is the receiver's own fault: 5xx, retried.
//       return res.writeHead(e instanceof VerifyError && e.kind !== 'no_secret' ? 400 : 500).end();
//     }
//     res.writeHead(204).end(); // then handle the body, once per delivery id
//   }).listen(8080);

import { createHmac, timingSafeEqual } from 'node:crypto';

// kind is one per error of the Go verifier: no_secret (no key material: a configuration
// error), missing_header, malformed_header, timestamp_headers (Service-Timestamp is not t),
// timestamp (outside the tolerance, late or early) or no_match (under every secret).
export class VerifyError extends Error {
  constructor(kind) { super(`pds webhook: ${kind.replaceAll('_', ' ')}`); this.kind = kind; }
}

// White space as Go's strings.TrimSpace sees it (String.prototype.trim differs).
const SPACE = '[\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const SPACE_AT_ENDS = new RegExp(`^${SPACE}+|${SPACE}+$`, 'g');
const trim = (s) => s.replace(SPACE_AT_ENDS, '');

// Standard base64, padded, and nothing else (Buffer.from alone skips what it cannot read).
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const decode64 = (s) => (BASE64.test(s) ? Buffer.from(s, 'base64') : null);
const onlyZeros = (bytes) => bytes.every((b) => b === 0);
const afterPrefix = (s) => s.replace(/^whsec_/, '');

// A secret holds key material unless its text after "whsec_", trimmed, is empty, zero bytes
// ("\0") only, or base64 of zero bytes only: each is the empty key, in either scheme.
function hasKeyMaterial(secret) {
  if (typeof secret !== 'string') return false;
  const m = trim(afterPrefix(secret));
  const decoded = decode64(m);
  return !/^\0*$/.test(m) && !(decoded && onlyZeros(decoded));
}

// The Standard Webhooks key: the base64 after "whsec_", decoded; null if it is none.
function standardKey(secret) {
  const key = decode64(afterPrefix(secret));
  return key && !onlyZeros(key) ? key : null;
}

// The first value, as Go's Header.Get: from req.headers, req.headersDistinct or a fetch Headers.
function first(headers, name) {
  if (typeof headers.get === 'function') return headers.get(name) ?? '';
  const value = Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
  return (Array.isArray(value) ? value[0] : value) ?? '';
}

function checkTolerance(t, tolerance, now) {
  const tol = BigInt(Math.trunc(tolerance > 0 ? tolerance : 300));
  const age = BigInt(Math.floor(now)) - t;
  if (age > tol || age < -tol) throw new VerifyError('timestamp');
}

// Reads "t=<unix>,v1=<hex>[,v1=<hex>...]", skipping elements of other schemes.
function parse(header) {
  const malformed = new VerifyError('malformed_header');
  if (Buffer.byteLength(header) > 4096) throw malformed; // bounds the work on a hostile header
  let t = null, sigs = [];
  for (const element of header.split(',').map(trim)) {
    const eq = element.indexOf('='), key = element.slice(0, eq), value = element.slice(eq + 1);
    if (eq <= 0 || value === '') throw malformed;
    if (key === 't') { // a decimal int64 as strconv.ParseInt reads it, not negative
      if (t !== null || !/^[+-]?[0-9]+$/.test(value)) throw malformed;
      t = BigInt(value); // a hostile t may be far beyond 2^53
      if (t < 0n || t >= 2n ** 63n) throw malformed;
    } else if (key === 'v1') {
      if (!/^[0-9a-fA-F]{64}$/.test(value)) throw malformed; // Buffer.from stops at a bad digit
      sigs.push(Buffer.from(value, 'hex'));
    }
  }
  if (t === null || sigs.length === 0) throw malformed;
  return { t, sigs };
}

// The pds scheme: Service-Signature, keyed with the whole secret, "whsec_" included.
function verifyPds(body, headers, secrets, tolerance, now) {
  const header = first(headers, 'service-signature');
  if (header === '') throw new VerifyError('missing_header');
  const { t, sigs } = parse(header);
  const stamp = first(headers, 'service-timestamp');
  if (stamp !== '' && stamp !== t.toString()) throw new VerifyError('timestamp_headers');
  checkTolerance(t, tolerance, now);
  for (const secret of secrets) {
    const want = createHmac('sha256', secret).update(`${t}.`).update(body).digest();
    if (sigs.some((sig) => timingSafeEqual(sig, want))) return;
  }
  throw new VerifyError('no_match');
}

// Reads "<version>,<value>[ <version>,<value>...]" (single spaces), skipping versions other
// than v1; every v1 is the padded base64 of 32 bytes.
function parseStandard(header) {
  const malformed = new VerifyError('malformed_header');
  if (Buffer.byteLength(header) > 4096) throw malformed;
  const sigs = [];
  for (const element of header.split(' ')) {
    const comma = element.indexOf(','), version = element.slice(0, comma), value = element.slice(comma + 1);
    if (comma <= 0 || value === '') throw malformed;
    if (version !== 'v1') continue;
    if (!/^[A-Za-z0-9+/]{43}=$/.test(value)) throw malformed;
    sigs.push(Buffer.from(value));
  }
  if (sigs.length === 0) throw malformed;
  return sigs;
}

// The Standard Webhooks scheme: webhook-id, webhook-timestamp and webhook-signature alone,
// keyed with the base64-decoded secret, over "<id>.<timestamp>.<body>".
function verifyStandard(body, headers, secrets, tolerance, now) {
  const keys = secrets.map(standardKey);
  if (keys.includes(null)) throw new VerifyError('no_secret'); // not "whsec_" and base64
  const id = first(headers, 'webhook-id'), stamp = first(headers, 'webhook-timestamp');
  const header = first(headers, 'webhook-signature');
  if (id === '' || stamp === '' || header === '') throw new VerifyError('missing_header');
  // id: visible ASCII, so that every language signs the same bytes; the timestamp: a
  // canonical decimal int64, not negative.
  if (!/^[!-~]{1,4096}$/.test(id) || !/^(0|[1-9][0-9]{0,18})$/.test(stamp) || BigInt(stamp) >= 2n ** 63n) {
    throw new VerifyError('malformed_header');
  }
  const sigs = parseStandard(header);
  checkTolerance(BigInt(stamp), tolerance, now);
  for (const key of keys) {
    const want = Buffer.from(createHmac('sha256', key).update(`${id}.${stamp}.`).update(body).digest('base64'));
    if (sigs.some((sig) => timingSafeEqual(sig, want))) return; // the base64 text, as the official libraries compare
  }
  throw new VerifyError('no_match');
}

// Returns if the raw body is authentic under any one of the secrets, throws a VerifyError
// if not. tolerance is in seconds (0: the default, 300), now in unix seconds. A delivery
// carrying any webhook-* header is verified by the Standard Webhooks headers alone (pds
// sends them, beside its Service-* ones, to a subscription of that scheme); any other by
// Service-Signature.
export function verify(body, headers, secrets, { tolerance = 300, now = Date.now() / 1000 } = {}) {
  // An unset variable must verify nothing: the whole list is refused.
  if (!secrets?.length || !secrets.every(hasKeyMaterial)) throw new VerifyError('no_secret');
  const standard = ['webhook-id', 'webhook-timestamp', 'webhook-signature'].some((name) => first(headers, name) !== '');
  return (standard ? verifyStandard : verifyPds)(body, headers, secrets, tolerance, now);
}
