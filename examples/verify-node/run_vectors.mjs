// run_vectors.mjs FILE runs verify.mjs over the vectors the Go test writes
// (examples/vectors_test.go) and prints, as JSON, what it decided for each:
// "ok" or the kind of VerifyError.
import { readFileSync } from 'node:fs';
import { verify, VerifyError } from './verify.mjs';

const vectors = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const results = vectors.map((v) => {
  // What node:http gives a handler in req.headersDistinct: lower-case names, every value in order.
  const headers = Object.fromEntries(Object.entries(v.headers).map(([name, values]) => [name.toLowerCase(), values]));
  try {
    verify(Buffer.from(v.body, 'base64'), headers, v.secrets, { tolerance: v.tolerance, now: v.now });
    return { name: v.name, got: 'ok' };
  } catch (e) {
    return { name: v.name, got: e instanceof VerifyError ? e.kind : `threw ${e}` };
  }
});
console.log(JSON.stringify(results));
