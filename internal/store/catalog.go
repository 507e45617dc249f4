package store

import (
	"context"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// Catalog holds tags, custom field definitions, campaigns and projects.
// Archived tags and fields are kept but never returned by Get or List.
type Catalog interface {
	// CreateTag inserts t, or revives the archived tag with the same
	// (name, context) and returns it with revived true. A live duplicate is a
	// *domain.ConflictError naming the existing id.
	CreateTag(ctx context.Context, t domain.Tag) (tag domain.Tag, revived bool, err error)
	GetTag(ctx context.Context, accountID, id string) (*domain.Tag, error)
	ListTags(ctx context.Context, accountID string, tagContext *string, p domain.PageRequest) ([]domain.Tag, int, error)
	UpdateTag(ctx context.Context, accountID, id string, patch domain.TagPatch) (*domain.Tag, error)
	ArchiveTag(ctx context.Context, accountID, id string, at time.Time) error

	// CreateCustomField inserts f unless the account already holds limit live
	// fields (*domain.LimitError) or the (collection, key) pair is taken, by
	// a live or archived field (*domain.ConflictError).
	CreateCustomField(ctx context.Context, f domain.CustomField, limit int) (domain.CustomField, error)
	GetCustomField(ctx context.Context, accountID, id string) (*domain.CustomField, error)
	ListCustomFields(ctx context.Context, accountID string, collection *string, p domain.PageRequest) ([]domain.CustomField, int, error)
	UpdateCustomField(ctx context.Context, accountID, id string, patch domain.CustomFieldPatch) (*domain.CustomField, error)
	ArchiveCustomField(ctx context.Context, accountID, id string, at time.Time) error
	// ImportCustomFields upserts fields by id (kept when given), all or none.
	ImportCustomFields(ctx context.Context, accountID string, fields []domain.CustomField) error

	GetCampaign(ctx context.Context, accountID, id string) (*domain.Campaign, error)
	ListCampaigns(ctx context.Context, accountID string, p domain.PageRequest) ([]domain.Campaign, int, error)
	ImportCampaigns(ctx context.Context, accountID string, campaigns []domain.Campaign) error
	GetProject(ctx context.Context, accountID, id string) (*domain.Project, error)
	ListProjects(ctx context.Context, accountID string, p domain.PageRequest) ([]domain.Project, int, error)
	ImportProjects(ctx context.Context, accountID string, projects []domain.Project) error
}
