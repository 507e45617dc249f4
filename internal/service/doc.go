// Package service holds the rules of the spec: each a plain function over
// values (or a method in internal/domain) with a table test whose rows are
// named after the spec's cases, called from one place, whichever face (the
// API, the console, the command line) the input came through. It imports
// nothing of the project but domain; what a rule needs of the store it
// declares beside itself (Keys, KeyMinter, Bootstrapper).
//
// # Where each rule is decided
//
//   - Upsert's match order (external_id, email, f_id) and the 409 on an
//     identifier another person holds: UpsertTarget (over MatchPerson),
//     called by sqlstore's applyUpsert (the API, batches and imports) and
//     its one-statement paths on PostgreSQL.
//   - Update Person's email held by another person: CheckIdentifiersFree
//     (sqlstore's UpdatePerson).
//   - What a breadcrumb's identifiers resolve to, match or create:
//     MatchOrCreate (sqlstore's breadcrumbs); its references checked once,
//     at the door, by CheckBreadcrumbRefs.
//   - Custom field values (a known live key, per data_type):
//     CustomValueChanges (sqlstore's person writes).
//   - List Persons: window or lookup mode, ignored parameters, the 30-day
//     bound: SelectPersons, returning a domain.PersonSelection (httpapi's
//     listPersons, the console's persons screen); the console's window is
//     newest first (domain.PersonSelection.NewestFirst), the API's ascending.
//   - Coalescing: a burst opened, slid, or queued after a closed window, and
//     what a closing burst delivers: BurstAfterChange (sqlstore's
//     recordChange), CloseBurst (the webhook worker, through the store);
//     the stamps a change writes: StampsFor.
//   - What a person.updated burst changed, for a subscription with
//     include_changes: ChangedMembers (the webhook worker's build).
//   - Tag revival and (name, context) conflicts, and which tags Add Person
//     Tags attaches: CreateTagOnto, RenameTagOnto, TagsToAttach (sqlstore's
//     tags and persons).
//   - Catalogue input (names, lengths, enumerations, import lines): NewTag,
//     NewCustomField, CheckCampaign and their kin, with Problems collecting
//     every bad member (httpapi, the console, pds import).
//   - What a key may see of what it reads: a delivery's body
//     (SeesDeliveryBody: persons:read as well as webhooks:read), tags' names
//     (SeesTagNames), custom fields' labels and definitions
//     (SeesFieldLabels, SeesFieldDefinitions), an erasure's counts
//     (MaySeeErasureCounts); httpapi's getDelivery and the console's viewer
//     ask them.
//   - Who may send deliveries where it chooses, or again: every scope their
//     bodies reveal (BodyScopes: persons:read, tags:read and
//     custom_fields:read for person.created and person.updated,
//     webhooks:read for webhook.disabled, none for person.deleted), and
//     webhooks:read too for a redelivery:
//     MayDirectDeliveries, MayChangeSubscription, MayRedeliver,
//     MayRedeliverFailed (httpapi's and the console's create, update and
//     redeliver).
//   - Finding the suppression of one identifier (exactly one of email,
//     external_id, f_id, phone, in the forms a write is checked in):
//     SuppressionLookup, then store.Erasures' FindSuppressions (httpapi's
//     listSuppressions, the console's Suppressions search).
//   - The change feed's cursor, opaque, bound to its account, refused after
//     --change-retention (410 cursor_expired): EncodeChangeCursor,
//     DecodeChangeCursor (httpapi's listChanges, the export's
//     Pds-Changes-Cursor).
//   - Keys: Authenticate and ActiveKey (both faces' sign-in), NewKey,
//     MintKey, Bootstrap (the first start's account and key).
//
// Rules that are methods of domain values:
//
//   - The one normal form of identifiers (refusals, NFKC, emails lower-cased),
//     in which they are matched, held unique, suppressed and stored:
//     domain.NormalIdentifier, PersonUpsert.Normalize,
//     BreadcrumbInput.NormalizeIdentifiers, a phone's suppression form
//     domain.PhoneDigits; applied at every door and again in each store
//     write (migration 00210, sqlstore.NormalIdentifiersMigration, for what
//     earlier versions stored).
//   - Which identifiers suppression concerns and in which form:
//     domain.SuppressedValues (what an erasure keeps) and
//     domain.CheckedValues (what a write is checked as, a phone also as
//     written); how one is kept, an HMAC-SHA256 of kind, NUL and value under
//     the account's secret: domain.SuppressionHash; a write that names one:
//     domain.SuppressedError, a 409 whose type names suppression
//     (problems.For).
//   - What a person.deleted delivery, and an erased person's earlier bodies,
//     hold (its id and date_deleted): domain.DeletedBody.
//   - What the delivery log keeps of a signature: domain.RedactSignatures.
//   - What moves a person in the change feed (a write of its attributes,
//     identifiers, links or values, never activity alone): the triggers of
//     migration 00240, in each engine.
package service
