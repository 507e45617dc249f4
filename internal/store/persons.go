package store

import (
	"context"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// Persons holds persons, their tags and custom field values, and breadcrumbs.
//
// Every method that creates or changes a person does it in one transaction
// that also moves date_last_seen, sets upsert_result and records the change
// in the outbox (the bursts table) that webhook deliveries are made from. A
// write that changes nothing records nothing.
type Persons interface {
	// UpsertPerson matches a person by external_id, then email
	// (case-insensitively), then f_id, creates one when none matches, and
	// applies every supplied field. created tells which. Applying an
	// identifier that another person holds is a *domain.ConflictError naming
	// that person; an unknown or archived custom field key, or a value that
	// does not fit its data_type, is a *domain.ValidationError.
	UpsertPerson(ctx context.Context, accountID string, in domain.PersonUpsert, w Write) (p *domain.Person, created bool, err error)
	// UpsertPersons runs UpsertPerson for each item, in order, in one
	// transaction, each item in a savepoint of its own: an item refused
	// (domain.IsRefusal) is undone alone and answered in its result, and
	// each item sees the items before it. Any other error undoes the whole
	// batch and is returned, with no results.
	UpsertPersons(ctx context.Context, accountID string, items []domain.PersonUpsert, w Write) ([]UpsertResult, error)
	// UpdatePerson applies a patch to an existing person (domain.NotFound
	// when absent); errors as UpsertPerson.
	UpdatePerson(ctx context.Context, accountID, id string, in domain.PersonUpdate, w Write) (*domain.Person, error)
	// AddPersonTags attaches live tags of the account the person does not
	// hold yet. Any id that is not a live tag of the account is a
	// domain.NotFound and nothing is attached.
	AddPersonTags(ctx context.Context, accountID, id string, tagIDs []string, w Write) (*domain.Person, error)
	// RemovePersonTag detaches a live tag; not holding it is no error. An
	// absent person is domain.NotFound.
	RemovePersonTag(ctx context.Context, accountID, id, tagID string, w Write) error
	// MergePersons merges the person fromID into survivorID in one
	// transaction, both locked in the lock order (by id): the survivor
	// keeps its identifiers and takes each kind it lacks from the merged
	// person, whose other identifiers become its aliases; its null
	// attributes and custom values are filled from the merged person; it
	// takes the union of their tags and all of the merged person's
	// breadcrumbs; the merged person's open burst is folded into the
	// survivor's change, each subscription listing person.merged gets one
	// delivery, and the merged person's feed entry becomes a tombstone
	// carrying merged_into. It returns the survivor. An absent or foreign
	// id is a domain.NotFound, one merged away a *domain.MergedError (but
	// a fromID merged into survivorID already answers the survivor: the
	// merge is idempotent); fromID equal to survivorID is a
	// *domain.ValidationError naming /from.
	MergePersons(ctx context.Context, accountID, survivorID, fromID string, w Write) (*domain.Person, error)
	// PersonAliases returns a page of the person's aliases, by date
	// merged then kind and value, with their total; a merged id is a
	// *domain.MergedError, an absent one a domain.NotFound.
	PersonAliases(ctx context.Context, accountID, personID string, p domain.PageRequest) ([]domain.PersonAlias, int, error)

	// GetPerson returns the stored person with its live tags and the values
	// of its live Person custom fields; domain.NotFound when absent or foreign.
	GetPerson(ctx context.Context, accountID, id string) (*domain.Person, error)
	// GetPersons returns the persons of ids as GetPerson returns each, by
	// id, read in one snapshot; an id that is absent or foreign is left out.
	GetPersons(ctx context.Context, accountID string, ids []string) (map[string]*domain.Person, error)
	// ListPersons returns a page of the persons a selection names (see
	// domain.PersonListMode), by last seen then id, and the exact total.
	ListPersons(ctx context.Context, accountID string, sel domain.PersonSelection, p domain.PageRequest) ([]domain.Person, int, error)
	// ExportPersons returns up to limit persons of the account that the
	// export selects, with ids after sel.After, in id order, each with its
	// tags and custom field values. A reader continues after the last id
	// it got; each call reads the persons as they stand then.
	ExportPersons(ctx context.Context, accountID string, sel domain.PersonExport, limit int) ([]domain.Person, error)
	// OpenExport starts an export of the account read from one snapshot:
	// every chunk it reads belongs to it, and its position in the change
	// feed is that snapshot's (following from it returns every change
	// committed after it and none before). ctx holds the export's
	// transaction for as long as it lasts; Close ends it.
	OpenExport(ctx context.Context, accountID string) (PersonExport, error)
	// PersonChanges reads up to limit entries of the account's change feed
	// after a position, in feed order, each person as it stands at the
	// read, and the position to follow from: the last entry's, or after
	// itself when there is none. It never passes a change that may still
	// commit before one it returns.
	PersonChanges(ctx context.Context, accountID string, after domain.ChangePosition, limit int) ([]domain.PersonChange, domain.ChangePosition, error)
	// ChangesHead is the position after every change committed now: where
	// a follower starting now begins.
	ChangesHead(ctx context.Context, accountID string) (domain.ChangePosition, error)
	// PruneChanges deletes the tombstones of the change feed made before
	// before, every account's, at most batch of them; it says how many.
	PruneChanges(ctx context.Context, before time.Time, batch int) (int, error)
	// ListPersonFields returns every live Person custom field of the account,
	// oldest first.
	ListPersonFields(ctx context.Context, accountID string) ([]domain.CustomField, error)

	// AppendBreadcrumb stores a breadcrumb whose references
	// service.CheckBreadcrumbRefs accepted, resolving its person from
	// PersonID (domain.NotFound when absent) or by matching ExternalID, Email,
	// FID, and creating the person from them when none matches; matching
	// never writes identifiers onto an existing person. CampaignID and
	// ProjectID must name records of the account (domain.NotFound). When
	// in.ID is set and already stored, that record is overwritten and
	// replayed is true.
	AppendBreadcrumb(ctx context.Context, accountID string, in domain.BreadcrumbInput, w Write) (b domain.Breadcrumb, replayed bool, err error)
	// ListBreadcrumbs returns a page of breadcrumbs, newest activity first
	// then id descending, and the exact total.
	ListBreadcrumbs(ctx context.Context, accountID string, f domain.BreadcrumbFilter, p domain.PageRequest) ([]domain.Breadcrumb, int, error)

	// PendingBurst reads the open burst of a person (domain.ErrNotFound when
	// none): what the person writes left in the outbox.
	PendingBurst(ctx context.Context, accountID, personID string) (*PersonBurst, error)
}

// PersonExport is an export read from one snapshot (Persons.OpenExport).
type PersonExport interface {
	// Position is the change feed's position of the export's snapshot.
	Position(ctx context.Context) (domain.ChangePosition, error)
	// Read returns up to limit persons as ExportPersons does, from the
	// export's snapshot.
	Read(ctx context.Context, sel domain.PersonExport, limit int) ([]domain.Person, error)
	Close() error
}

// UpsertResult is the outcome of one item of UpsertPersons: the person and
// whether it was created, or the refusal (Err) that undid the item.
type UpsertResult struct {
	Person  *domain.Person
	Created bool
	Err     error
}

// Write stamps a person write: when it happens, and how long the burst it
// opens or extends stays open after it (the webhook coalescing window).
type Write struct {
	Now    time.Time
	Window time.Duration
	// Later, when set, gives the time for each further part of a long
	// write (an import's chunks), so that a million imported persons are
	// not all seen in one instant; nil keeps Now throughout.
	Later func() time.Time
	// NoSuppressions, set by a caller that knows the account held no
	// suppression when the write arrived (the API, from the key's read,
	// domain.APIKey.AccountSuppresses), spares the write the read of the
	// account's suppression secret beside the writer. It decides nothing:
	// the write's transaction checks its identifiers either way.
	NoSuppressions bool
}

// PersonBurst is an outbox row: the open burst of changes to one person.
type PersonBurst struct {
	PersonID string
	// Event is decided by the write that opened the burst.
	Event        string
	OpenedAt     time.Time
	LastChangeAt time.Time
	DueAt        time.Time
}
