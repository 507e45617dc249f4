package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

const projectColumns = `id, account_id, name, location, registration_url, site_url, created_at, start_at, end_at`

func scanProject(sc scanner) (domain.Project, error) {
	var p domain.Project
	var location, registration, site sql.NullString
	var created int64
	var start, end sql.NullInt64
	if err := sc.Scan(&p.ID, &p.AccountID, &p.Name, &location, &registration, &site, &created, &start, &end); err != nil {
		return p, err
	}
	p.Location, p.RegistrationURL, p.SiteURL = strPtr(location), strPtr(registration), strPtr(site)
	p.DateCreated = domain.T(domain.FromMillis(created))
	p.DateStart, p.DateEnd = domain.TP(timePtr(start)), domain.TP(timePtr(end))
	return p, nil
}

// GetProject returns a project of the account.
func (s *Store) GetProject(ctx context.Context, accountID, id string) (_ *domain.Project, err error) {
	defer named("GetProject", &err)
	return safeValue(ctx, s, func(q querier) (*domain.Project, error) {
		return getOne(ctx, q, domain.NotFound("project", id), scanProject,
			`SELECT `+projectColumns+` FROM projects WHERE account_id = $1 AND id = $2`, accountID, id)
	})
}

// ListProjects pages the account's projects, oldest first.
func (s *Store) ListProjects(ctx context.Context, accountID string, p domain.PageRequest) (_ []domain.Project, _ int, err error) {
	defer named("ListProjects", &err)
	return safePage(ctx, s, func(q querier) ([]domain.Project, int, error) {
		return listPage(ctx, q, projectColumns, `projects WHERE account_id = $1`, `created_at, id`, []any{accountID}, p, scanProject)
	})
}

// ImportProjects upserts projects by id, all or none.
func (s *Store) ImportProjects(ctx context.Context, accountID string, projects []domain.Project) (err error) {
	defer named("ImportProjects", &err)
	record := func(i int) (string, time.Time) { return projects[i].ID, projects[i].DateCreated.Time }
	return s.importAll(ctx, "projects", domain.ProjectIDPrefix, accountID, len(projects), record, func(q querier, i int, t importTarget) error {
		p := projects[i]
		args := []any{p.Name, nullable(p.Location), nullable(p.RegistrationURL), nullable(p.SiteURL),
			t.created.UnixMilli(), nullMillis(p.DateStart), nullMillis(p.DateEnd), accountID, t.id}
		query := `INSERT INTO projects (name, location, registration_url, site_url, created_at, start_at, end_at, account_id, id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`
		if t.exists {
			query = `UPDATE projects SET name = $1, location = $2, registration_url = $3, site_url = $4, created_at = $5,
				start_at = $6, end_at = $7 WHERE account_id = $8 AND id = $9`
		}
		_, err := q.exec(ctx, query, args...)
		return err
	})
}
