// Types of verify.mjs, so that TypeScript imports it as is, with no build step.

export type VerifyErrorKind =
  | 'no_secret' // no key material (or, for a Standard Webhooks delivery, not whsec_ and base64): a configuration error, answer 5xx
  | 'missing_header'
  | 'malformed_header'
  | 'timestamp_headers' // Service-Timestamp is not the signature's t (pds scheme only)
  | 'timestamp' // outside the tolerance, late or early
  | 'no_match'; // no v1 matches the body under any of the secrets

export class VerifyError extends Error {
  readonly kind: VerifyErrorKind;
  constructor(kind: VerifyErrorKind);
}

/** req.headers, req.headersDistinct, or a fetch Headers (which joins repeated headers). */
export type HeaderSource =
  | Record<string, string | string[] | undefined>
  | { get(name: string): string | null };

export interface VerifyOptions {
  /** Seconds the signing time may be from now, either way; 0 is the default, 300. */
  tolerance?: number;
  /** The receiver's clock, in unix seconds; Date.now() / 1000 by default. */
  now?: number;
}

/**
 * Returns if the raw body is authentic under any one of the secrets (several while a
 * rotation is under way), throws a VerifyError if not. A delivery carrying any of
 * webhook-id, webhook-timestamp or webhook-signature is verified as a Standard Webhooks
 * delivery, by those headers alone; any other by Service-Signature, the pds way.
 */
export function verify(
  body: Uint8Array,
  headers: HeaderSource,
  secrets: ReadonlyArray<string | undefined>,
  options?: VerifyOptions,
): void;
