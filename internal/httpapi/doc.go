// Package httpapi is the REST interface: routes on the standard ServeMux,
// bearer-key authentication, scopes, rate limits and problem+json errors.
// Handlers decide nothing the spec rules on: they parse, call internal/service
// to validate and decide what the input alone decides, call one store
// method, and write the view (internal/personview for persons). The
// console (Config.Console) is mounted in the same mux, behind the same
// request ids, logs, metrics and drain; instance.New builds the two
// together, for pds serve and the tests.
//
// # How a request flows
//
//  1. Middleware (middleware.go): a request id, one JSON log line per
//     request through the server's own logger (a request whose client went
//     away is logged as 499, not as a server error), request metrics by
//     route pattern when configured, panic recovery.
//  2. The route wrapper (Server.register, through handle and handleStream):
//     the request's database work runs under Config.DatabaseTimeout; an
//     answer to a request with a key is marked Cache-Control: no-store and
//     X-Content-Type-Options: nosniff whatever its status (keepPrivate,
//     which apitest checks on every answer); an address that has spent its
//     budget of failed authentications is refused with a 429 before its key
//     is read (ratelimit.Failures, one for the API and the console; the
//     address is serving.Settings.ClientAddress: the peer, or the last
//     address of --client-address-header); the Bearer key is authenticated
//     by the SHA-256 hash of its secret (a failure is counted against the
//     budget at once, so that of bad keys checked together no more than the
//     budget are answered 401); the scope is checked; the request is counted
//     against the key's rate budget (ratelimit: in memory on SQLite, leased
//     from the database on PostgreSQL); the query string is checked
//     (checkRequest, below).
//  3. The handler decodes the body, calls service, then one store method,
//     and writes the answer. Neither the key nor Get Person costs a statement
//     of its own on most requests: see the key cache and Get Person in
//     internal/store/sqlstore.
//  4. Errors are returned, not written: Server.writeError classifies the
//     error (Store.Classify), answers a database that cannot serve with a
//     503 (refuse, problem.go), maps every other error to its problem
//     document (internal/problems) and logs the cause of a 500 with the
//     request id.
//
// # Input is parsed once, at the door
//
// checkRequest (text.go) parses the query string strictly: a string that
// does not parse is a 400, never a dropped filter; a parameter the
// operation does not declare in api/openapi.yaml is refused
// (api.QueryParameters reads them from the document, so the contract is the
// one list), as is a parameter given twice where one value is expected and
// text no engine can hold. decodeJSON (decode.go) reads a body as I-JSON
// with exact member names, every member known and well typed (the JSON v2
// decoder). Handlers read the parsed query through query(r), never
// r.URL.Query(). Identifiers are put in their normal form at the door
// (domain.PersonUpsert.Normalize and its kin) and again by the store.
//
// # How a fault is answered
//
// A database that cannot serve is a 503 with Retry-After and a cause
// (unreachable, timeout, disk full, disk error, contention), never a 500:
// the engine names its driver's faults, Store.Classify turns them into a
// *domain.UnavailableError, and writeError answers it. The outage log
// (internal/outage) hears of every refusal and of every request served, so
// an operator reads one line as an outage begins and one as it ends. A
// request's deadline is Config.DatabaseTimeout (--database-timeout); the
// export bounds each chunk's read instead (handleStream). /readyz answers
// 503 while the database does not answer or takes no writes (saying which),
// and once the server drains (Drain, which also adds Connection: close to
// every answer).
// The tests with real faults are in cmd/pds.
//
// # Batches and the export
//
// POST /persons/batch (persons_batch.go) decodes each item on its own with
// the single upsert's strictness (DecodeObject, then Normalize), so a bad
// item is refused alone with its pointers under /persons/<index>; the rest
// go to Store.UpsertPersons in one transaction. GET /persons/export
// (persons_export.go) opens one read snapshot for the whole export
// (Store.OpenExport), reports its position in the change feed
// (Pds-Changes-Cursor, service.EncodeChangeCursor), then streams JSON lines
// from chunks read one ahead of the writer, each under the database
// deadline; each line is personview.AppendCompactLine. After the first line
// an error can no longer be a problem document: the handler cuts the
// connection (http.ErrAbortHandler), and a client resumes with after.
//
// # The contract
//
// api/openapi.yaml is the contract: apitest validates every answer of every
// test against it, TestRoutesMatchTheContract holds the routes (Route, from
// Server.register) to its operations, scopes and statuses, and
// TestEveryOperationHasValidExamples its examples. The /docs page runs the
// vendored Scalar API Reference on /openapi.json, kept to its own origin by
// its Content-Security-Policy (ops.go); TestDocsInChromium looks at it.
package httpapi
