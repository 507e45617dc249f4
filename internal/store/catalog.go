package store

import (
	"context"
	"fmt"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// Catalog holds tags, custom field definitions, campaigns and projects.
// Archived tags and fields are kept but never returned by Get or List.
//
// The Import methods (the administrative command line) upsert validated
// records by id, all or none, in one transaction. An empty id gets a new one;
// a zero DateCreated keeps the stored time of an existing record and is the
// import time for a new one. A record the store refuses (an id of another
// account, a taken custom field key, a campaign's project_id that is not the
// account's) fails the whole import with an *ImportError naming it.
type Catalog interface {
	// CreateTag inserts t, or revives the archived tag with the same
	// (name, context) and returns it with revived true. A live duplicate is a
	// *domain.ConflictError naming the existing id.
	CreateTag(ctx context.Context, t domain.Tag) (tag domain.Tag, revived bool, err error)
	GetTag(ctx context.Context, accountID, id string) (*domain.Tag, error)
	ListTags(ctx context.Context, accountID string, tagContext *string, p domain.PageRequest) ([]domain.Tag, int, error)
	// UpdateTag applies a validated patch. Moving onto the (name, context) of
	// any other tag, live or archived, is a *domain.ConflictError: an archived
	// tag keeps its pair so that creating it again revives it.
	UpdateTag(ctx context.Context, accountID, id string, patch domain.TagPatch) (*domain.Tag, error)
	ArchiveTag(ctx context.Context, accountID, id string, at time.Time) error
	// TagHolderCounts counts the persons of the account holding each of
	// tagIDs, exactly, in one snapshot, from the tags' bitmaps: a few
	// hundred short rows a tag at a million persons, never a walk over its
	// links. An id the account has no tag of counts 0.
	TagHolderCounts(ctx context.Context, accountID string, tagIDs []string) (map[string]int, error)

	// CreateCustomField inserts f unless the account already holds limit live
	// fields (*domain.LimitError) or the (collection, key) pair is taken, by
	// a live or archived field (*domain.ConflictError).
	CreateCustomField(ctx context.Context, f domain.CustomField, limit int) (domain.CustomField, error)
	GetCustomField(ctx context.Context, accountID, id string) (*domain.CustomField, error)
	ListCustomFields(ctx context.Context, accountID string, collection *string, p domain.PageRequest) ([]domain.CustomField, int, error)
	// UpdateCustomField and ArchiveCustomField refuse a read-only field with
	// a *domain.ForbiddenError.
	UpdateCustomField(ctx context.Context, accountID, id string, patch domain.CustomFieldPatch) (*domain.CustomField, error)
	ArchiveCustomField(ctx context.Context, accountID, id string, at time.Time) error
	// ImportCustomFields upserts fields by id (kept when given), all or none.
	// It may set IsReadOnly and IsDefault, leaves a field's archived state as
	// it is, and is not held to the API's live field limit.
	ImportCustomFields(ctx context.Context, accountID string, fields []domain.CustomField) error

	GetCampaign(ctx context.Context, accountID, id string) (*domain.Campaign, error)
	ListCampaigns(ctx context.Context, accountID string, p domain.PageRequest) ([]domain.Campaign, int, error)
	ImportCampaigns(ctx context.Context, accountID string, campaigns []domain.Campaign) error
	GetProject(ctx context.Context, accountID, id string) (*domain.Project, error)
	ListProjects(ctx context.Context, accountID string, p domain.PageRequest) ([]domain.Project, int, error)
	ImportProjects(ctx context.Context, accountID string, projects []domain.Project) error
}

// ImportError names the record that made an import fail; Index counts from 0
// in the slice given to the Import method.
type ImportError struct {
	Index int
	Err   error
}

func (e *ImportError) Error() string { return fmt.Sprintf("record %d: %v", e.Index+1, e.Err) }
func (e *ImportError) Unwrap() error { return e.Err }
