package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

const campaignColumns = `id, account_id, name, description, kind, state, is_enabled, project_id, created_at, start_at, end_at`

func scanCampaign(sc scanner) (domain.Campaign, error) {
	var c domain.Campaign
	var description, kind, state, project sql.NullString
	var created int64
	var start, end sql.NullInt64
	if err := sc.Scan(&c.ID, &c.AccountID, &c.Name, &description, &kind, &state, &c.IsEnabled, &project,
		&created, &start, &end); err != nil {
		return c, err
	}
	c.Description, c.Kind, c.State, c.ProjectID = strPtr(description), strPtr(kind), strPtr(state), strPtr(project)
	c.DateCreated = domain.T(domain.FromMillis(created))
	c.DateStart, c.DateEnd = domain.TP(timePtr(start)), domain.TP(timePtr(end))
	return c, nil
}

// GetCampaign returns a campaign of the account.
func (s *Store) GetCampaign(ctx context.Context, accountID, id string) (_ *domain.Campaign, err error) {
	defer named("GetCampaign", &err)
	return safeValue(ctx, s, func(q querier) (*domain.Campaign, error) {
		return getOne(ctx, q, domain.NotFound("campaign", id), scanCampaign,
			`SELECT `+campaignColumns+` FROM campaigns WHERE account_id = $1 AND id = $2`, accountID, id)
	})
}

// ListCampaigns pages the account's campaigns, oldest first.
func (s *Store) ListCampaigns(ctx context.Context, accountID string, p domain.PageRequest) (_ []domain.Campaign, _ int, err error) {
	defer named("ListCampaigns", &err)
	return safePage(ctx, s, func(q querier) ([]domain.Campaign, int, error) {
		return listPage(ctx, q, campaignColumns, `campaigns WHERE account_id = $1`, `created_at, id`, []any{accountID}, p, scanCampaign)
	})
}

// ImportCampaigns upserts campaigns by id, all or none. A project_id must
// name a project of the same account.
func (s *Store) ImportCampaigns(ctx context.Context, accountID string, campaigns []domain.Campaign) (err error) {
	defer named("ImportCampaigns", &err)
	record := func(i int) (string, time.Time) { return campaigns[i].ID, campaigns[i].DateCreated.Time }
	return s.importAll(ctx, "campaigns", domain.CampaignIDPrefix, accountID, len(campaigns), record, func(q querier, i int, t importTarget) error {
		c := campaigns[i]
		if c.ProjectID != nil {
			var found string
			err := q.queryRow(ctx, `SELECT id FROM projects WHERE account_id = $1 AND id = $2`, accountID, *c.ProjectID).Scan(&found)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("project_id %q names no project of this account", *c.ProjectID)
			}
			if err != nil {
				return err
			}
		}
		args := []any{c.Name, nullable(c.Description), nullable(c.Kind), nullable(c.State), c.IsEnabled, nullable(c.ProjectID),
			t.created.UnixMilli(), nullMillis(c.DateStart), nullMillis(c.DateEnd), accountID, t.id}
		query := `INSERT INTO campaigns (name, description, kind, state, is_enabled, project_id, created_at, start_at, end_at, account_id, id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`
		if t.exists {
			query = `UPDATE campaigns SET name = $1, description = $2, kind = $3, state = $4, is_enabled = $5, project_id = $6,
				created_at = $7, start_at = $8, end_at = $9 WHERE account_id = $10 AND id = $11`
		}
		_, err := q.exec(ctx, query, args...)
		return err
	})
}
