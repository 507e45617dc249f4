package sqlstore

import (
	"context"
	"errors"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// Placeholders until the catalogue lands; this file is deleted then.

var errNotBuilt = errors.New("not built yet")

func (s *Store) CreateTag(ctx context.Context, t domain.Tag) (domain.Tag, bool, error) {
	return domain.Tag{}, false, errNotBuilt
}
func (s *Store) GetTag(ctx context.Context, accountID, id string) (*domain.Tag, error) {
	return nil, errNotBuilt
}
func (s *Store) ListTags(ctx context.Context, accountID string, tagContext *string, p domain.PageRequest) ([]domain.Tag, int, error) {
	return nil, 0, errNotBuilt
}
func (s *Store) UpdateTag(ctx context.Context, accountID, id string, patch domain.TagPatch) (*domain.Tag, error) {
	return nil, errNotBuilt
}
func (s *Store) ArchiveTag(ctx context.Context, accountID, id string, at time.Time) error {
	return errNotBuilt
}
func (s *Store) CreateCustomField(ctx context.Context, f domain.CustomField, limit int) (domain.CustomField, error) {
	return domain.CustomField{}, errNotBuilt
}
func (s *Store) GetCustomField(ctx context.Context, accountID, id string) (*domain.CustomField, error) {
	return nil, errNotBuilt
}
func (s *Store) ListCustomFields(ctx context.Context, accountID string, collection *string, p domain.PageRequest) ([]domain.CustomField, int, error) {
	return nil, 0, errNotBuilt
}
func (s *Store) UpdateCustomField(ctx context.Context, accountID, id string, patch domain.CustomFieldPatch) (*domain.CustomField, error) {
	return nil, errNotBuilt
}
func (s *Store) ArchiveCustomField(ctx context.Context, accountID, id string, at time.Time) error {
	return errNotBuilt
}
func (s *Store) ImportCustomFields(ctx context.Context, accountID string, fields []domain.CustomField) error {
	return errNotBuilt
}
func (s *Store) GetCampaign(ctx context.Context, accountID, id string) (*domain.Campaign, error) {
	return nil, errNotBuilt
}
func (s *Store) ListCampaigns(ctx context.Context, accountID string, p domain.PageRequest) ([]domain.Campaign, int, error) {
	return nil, 0, errNotBuilt
}
func (s *Store) ImportCampaigns(ctx context.Context, accountID string, campaigns []domain.Campaign) error {
	return errNotBuilt
}
func (s *Store) GetProject(ctx context.Context, accountID, id string) (*domain.Project, error) {
	return nil, errNotBuilt
}
func (s *Store) ListProjects(ctx context.Context, accountID string, p domain.PageRequest) ([]domain.Project, int, error) {
	return nil, 0, errNotBuilt
}
func (s *Store) ImportProjects(ctx context.Context, accountID string, projects []domain.Project) error {
	return errNotBuilt
}
