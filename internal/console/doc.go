// Package console is the second face of the service: server-rendered pages
// at /console over the same account data the API serves. A console session
// acts as one API key: its account, its scopes, its rate budget, through
// the same service functions and store methods as the API, so that no rule
// is written twice. The pages load nothing from elsewhere and run no
// script: their stylesheet is embedded, and the Content-Security-Policy
// allows only it.
//
// The console decides nothing of its own: each page or action needs the
// scope of the API operation it performs (page and action, guard.go),
// parses its parameters with internal/params, validates with the same
// service and domain functions, calls the same store method, and shows the
// problem the API would answer (problems.For) beside the form's fields (a
// problem's pointer /custom_fields/plan is the field custom_fields.plan). A
// page shows exactly what the API answers the same key: a value that one
// read carries but another scope guards shows only to a key that holds that
// scope too (service.SeesDeliveryBody, SeesTagNames, SeesFieldLabels, asked
// through viewer); without it a person's tags show as ids and its custom
// fields by key, as Get Person answers them.
//
// # Sign-in and sessions
//
// A key pasted once (session.go) is checked by service.Authenticate, the
// API's rules, and dropped; a bad sign-in, link or session cookie counts
// against the address's budget of failed authentications, the API's own
// (throttled). The session (store.Consoles) names the key by its hash, and
// every page checks it again (service.ActiveKey), counts against its rate
// budget and runs under the API's database deadline. The cookie holds a
// random token (HttpOnly, SameSite=Strict, Secure over TLS); every form
// carries the session's token and must come from a console page
// (Sec-Fetch-Site, Origin; sameOrigin). pds console link mints a key and a
// one-time link (MintLink); the link's page (linkPage) reads it without
// spending it, so that a scanner's GET or HEAD changes nothing, and only its
// button's post (followLink, with a confirmation its page put in both the
// form and a SameSite=Strict cookie) spends it and starts the session.
//
// # Pages
//
// One layout, one template per page (templates/, render.go), one stylesheet
// with light and dark schemes (assets/console.css). An action ends in a 303
// back to its page with a fixed notice (done), or, when refused for its
// input, the page drawn again with the problem (after).
//
// Erasure (erasure.go, under persons:erase) is offered on the person page
// only to a key with that scope; its confirmation (confirmErase) counts what
// goes (Store.PersonRecord; breadcrumbs and pending deliveries as the lists
// count them) and shows identifiers only to a key with persons:read.
// The merge (merge.go, under persons:write, the scope of Merge Persons) is
// offered on the person page: the operator names the duplicate by id, or
// by email or external id as List Persons' lookup finds it (which needs
// persons:read too); its page (confirmMerge, a GET that changes nothing)
// names what moves, each identifier's fate decided by
// service.MergeIdentifier, the tags the survivor lacks and the breadcrumbs,
// before its button posts the merge (Store.MergePersons) and leads to the
// survivor. A merged id's problem page links to its survivor. The
// suppressions screen pages Store.ListSuppressions and lifts one with
// Store.DeleteSuppression. The keys page, under keys:write, the one scope no
// API operation needs, mints with service.NewKey and revokes with
// Store.RevokeAccountKey, which names the account. The log of every
// subscription is Store.ListAccountDeliveries; logs show a person's email
// beside its id to a key with persons:read (personEmails, one GetPersons a
// page); the tags screen counts each tag's holders from the tag bits
// (Store.TagHolderCounts).
//
// # Tests
//
// console_test.go (sessions, scopes, accounts, forms from elsewhere),
// erasure_test.go, merge_test.go, scopes_test.go (TestEveryPageShowsWhatTheAPIAnswersTheKey:
// a key of each single scope, and one of every scope, on every page, against
// what the API answers it), throttle_test.go, and TestConsoleInChromium
// (browser_*_test.go: Debian's Chromium over chromedp, axe-core on every
// page, every page at a phone's width too, screenshots), on both engines.
package console
