// Verifies a pds webhook delivery exactly as the Go package pkg/webhookverify
// does. Node 18.3+, node:crypto only; usable from TypeScript (see verify.d.ts).
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
//     res.writeHead(204).end(); // then handle the body, once per Service-Delivery-Id
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

// The first value, as Go's Header.Get: from req.headers, req.headersDistinct or a fetch Headers.
function first(headers, name) {
  if (typeof headers.get === 'function') return headers.get(name) ?? '';
  const value = Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
  return (Array.isArray(value) ? value[0] : value) ?? '';
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

// Returns if the raw body is authentic under any one of the secrets, throws a VerifyError
// if not. tolerance is in seconds (0: the default, 300), now in unix seconds.
export function verify(body, headers, secrets, { tolerance = 300, now = Date.now() / 1000 } = {}) {
  // An unset variable must verify nothing: the whole list is refused.
  const empty = (s) => typeof s !== 'string' || trim(s.replace(/^whsec_/, '')) === '';
  if (!secrets?.length || secrets.some(empty)) throw new VerifyError('no_secret');
  const header = first(headers, 'service-signature');
  if (header === '') throw new VerifyError('missing_header');
  const { t, sigs } = parse(header);
  const stamp = first(headers, 'service-timestamp');
  if (stamp !== '' && stamp !== t.toString()) throw new VerifyError('timestamp_headers');
  const tol = BigInt(Math.trunc(tolerance > 0 ? tolerance : 300));
  const age = BigInt(Math.floor(now)) - t;
  if (age > tol || age < -tol) throw new VerifyError('timestamp');
  for (const secret of secrets) { // the key is the whole secret, "whsec_" included
    const want = createHmac('sha256', secret).update(`${t}.`).update(body).digest();
    if (sigs.some((sig) => timingSafeEqual(sig, want))) return;
  }
  throw new VerifyError('no_match');
}
