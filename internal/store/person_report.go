package store

import (
	"context"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// PersonReports reads everything held about one person, for an access
// request (pds persons report): the person with every tag link and custom
// value it holds, then its breadcrumbs and the deliveries that carried it,
// each a keyset page that a reader continues from the last row it got. A
// report of any length is thus read, and written, one page at a time; each
// page reads the rows as they stand then.
type PersonReports interface {
	// PersonRecord reads the person (as GetPerson does), every tag link and
	// custom value it holds, those of archived tags and fields included,
	// and its open burst, in one snapshot; domain.NotFound when the person
	// is absent or another account's.
	PersonRecord(ctx context.Context, accountID, personID string) (*PersonRecord, error)
	// ReportBreadcrumbs returns up to limit of the person's breadcrumbs,
	// oldest activity first then by id, after the one after names (from
	// the first when nil). An absent person has none.
	ReportBreadcrumbs(ctx context.Context, accountID, personID string, after *BreadcrumbKey, limit int) ([]domain.Breadcrumb, error)
	// ReportDeliveries returns up to limit of the stored deliveries that
	// carried the person, each with its body and its attempts as the
	// delivery log keeps them, ordered by subscription id, then oldest
	// first, after the one after names (from the first when nil). An
	// absent person has none.
	ReportDeliveries(ctx context.Context, accountID, personID string, after *DeliveryKey, limit int) ([]ReportedDelivery, error)
}

// PersonRecord is a person as an access request reports it.
type PersonRecord struct {
	// Person is what Get Person reads: live tags and live values.
	Person domain.Person
	// Tags are every tag the person is linked to, in the order attached.
	Tags []HeldTag
	// Values are every custom field value the person holds, by key.
	Values []HeldValue
	// Burst is the person's open burst (changes not yet delivered), nil
	// when none.
	Burst *PersonBurst
	// Aliases are the identifiers of persons merged into this one that
	// still find it, oldest merge first: held about the person too.
	Aliases []domain.PersonAlias
}

// HeldTag is one tag link of a person.
type HeldTag struct {
	ID, Name, Context string
	Archived          bool
	LinkedAt          time.Time
}

// HeldValue is one custom field value of a person.
type HeldValue struct {
	FieldID, Collection, Key, DataType string
	Label                              *string
	Archived                           bool
	Value                              string
}

// BreadcrumbKey names a breadcrumb in the order ReportBreadcrumbs reads.
type BreadcrumbKey struct {
	ActivityAt time.Time
	ID         string
}

// DeliveryKey names a delivery in the order ReportDeliveries reads.
type DeliveryKey struct {
	WebhookID string
	CreatedAt time.Time
	ID        string
}

// ReportedDelivery is a stored delivery, its body included, and its
// attempts, oldest first.
type ReportedDelivery struct {
	Delivery domain.Delivery
	Attempts []domain.DeliveryAttempt
}
