// verify.mjs reads vectors on its standard input (JSON, the format of
// examples/vectors_test.go: headers as lists of values, the body in base64,
// the receiver's secrets, its clock in unix seconds) and prints, as JSON, the
// verdict of each official Standard Webhooks verifier pinned here: npm
// standardwebhooks and svix's Webhook. Each is given one secret at a time,
// as a receiver with several secrets tries each; "ok" when one verifies, or
// the errors they threw. The libraries read the clock, so Date.now is set to
// the vector's.
import { readFileSync } from 'node:fs';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';

const libraries = {
  standardwebhooks: (secret, body, headers) => new StandardWebhook(secret).verify(body, headers, { jsonParse: false }),
  svix: (secret, body, headers) => new SvixWebhook(secret).verify(body, headers),
};

const realNow = Date.now;
const vectors = JSON.parse(readFileSync(0, 'utf8'));
const results = vectors.map((v) => {
  // A header as a framework hands it over: its name in lower case, one value.
  const headers = Object.fromEntries(Object.entries(v.headers).map(([name, values]) => [name.toLowerCase(), values[0]]));
  const body = Buffer.from(v.body, 'base64');
  const result = { name: v.name };
  for (const [library, verify] of Object.entries(libraries)) {
    const errors = v.secrets.length === 0 ? ['no secrets'] : [];
    Date.now = () => v.now * 1000;
    try {
      for (const secret of v.secrets) {
        try {
          verify(secret, body, headers);
          errors.length = 0;
          break;
        } catch (e) {
          errors.push(String(e?.message ?? e));
        }
      }
    } finally {
      Date.now = realNow;
    }
    result[library] = errors.length === 0 ? 'ok' : `error: ${errors.join('; ')}`;
  }
  return result;
});
console.log(JSON.stringify(results));
