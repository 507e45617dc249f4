package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
)

const tagColumns = `id, account_id, name, context, created_at, archived_at`

func scanTag(sc scanner) (domain.Tag, error) {
	var t domain.Tag
	var created int64
	var archived sql.NullInt64
	if err := sc.Scan(&t.ID, &t.AccountID, &t.Name, &t.Context, &created, &archived); err != nil {
		return t, err
	}
	t.DateCreated = domain.T(domain.FromMillis(created))
	t.ArchivedAt = timePtr(archived)
	return t, nil
}

// CreateTag inserts t (with a new id when it has none). The insert yields to the unique (name, context) index
// instead of failing, so that service.CreateTagOnto settles a collision in
// the same transaction.
func (s *Store) CreateTag(ctx context.Context, t domain.Tag) (_ domain.Tag, _ bool, err error) {
	defer named("CreateTag", &err)
	if t.ID == "" {
		t.ID = domain.NewID(domain.TagIDPrefix)
	}
	var out domain.Tag
	revived := false
	err = s.inTx(ctx, func(q querier) error {
		// Reset: the committer may run this function again (see committer).
		out, revived = domain.Tag{}, false
		created := t.DateCreated.UnixMilli()
		res, err := q.exec(ctx, `INSERT INTO tags (id, account_id, name, context, archived_at, created_at)
			VALUES ($1, $2, $3, $4, NULL, $5) ON CONFLICT (account_id, context, name) DO NOTHING`,
			t.ID, t.AccountID, t.Name, t.Context, created)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 1 {
			out = t
			out.DateCreated, out.ArchivedAt = domain.T(domain.FromMillis(created)), nil
			return nil
		}
		// Locked, so that of two requests reviving the same tag the second
		// decides on the tag the first revived.
		holder, err := scanTag(q.queryRow(ctx, `SELECT `+tagColumns+` FROM tags WHERE account_id = $1 AND context = $2 AND name = $3`+s.dialect.LockRows,
			t.AccountID, t.Context, t.Name))
		if err != nil {
			return err
		}
		if _, err := service.CreateTagOnto(holder); err != nil {
			return err
		}
		if _, err := q.exec(ctx, `UPDATE tags SET archived_at = NULL WHERE account_id = $1 AND id = $2`, t.AccountID, holder.ID); err != nil {
			return err
		}
		holder.ArchivedAt = nil
		out, revived = holder, true
		return nil
	})
	return out, revived, err
}

// GetTag returns a live tag of the account.
func (s *Store) GetTag(ctx context.Context, accountID, id string) (_ *domain.Tag, err error) {
	defer named("GetTag", &err)
	return safeValue(ctx, s, func(q querier) (*domain.Tag, error) { return getLiveTag(ctx, q, accountID, id) })
}

func getLiveTag(ctx context.Context, q querier, accountID, id string) (*domain.Tag, error) {
	return getOne(ctx, q, domain.NotFound("tag", id), scanTag,
		`SELECT `+tagColumns+` FROM tags WHERE account_id = $1 AND id = $2 AND archived_at IS NULL`, accountID, id)
}

// ListTags pages the account's live tags, oldest first.
func (s *Store) ListTags(ctx context.Context, accountID string, tagContext *string, p domain.PageRequest) (_ []domain.Tag, _ int, err error) {
	defer named("ListTags", &err)
	var args sqlArgs
	where := `tags WHERE account_id = ` + args.add(accountID) + ` AND archived_at IS NULL`
	if tagContext != nil {
		where += ` AND context = ` + args.add(*tagContext)
	}
	return safePage(ctx, s, func(q querier) ([]domain.Tag, int, error) {
		return listPage(ctx, q, tagColumns, where, `created_at, id`, args, p, scanTag)
	})
}

// UpdateTag renames or moves a live tag. A null member leaves its value as
// it is: a tag always has a name and a context.
func (s *Store) UpdateTag(ctx context.Context, accountID, id string, patch domain.TagPatch) (_ *domain.Tag, err error) {
	defer named("UpdateTag", &err)
	var out, next *domain.Tag
	err = s.inTx(ctx, func(q querier) error {
		cur, err := getLiveTag(ctx, q, accountID, id)
		if err != nil {
			return err
		}
		moved := *cur
		next = &moved
		if v := patch.Name.Ptr(); v != nil {
			next.Name = *v
		}
		if v := patch.Context.Ptr(); v != nil {
			next.Context = *v
		}
		if next.Name == cur.Name && next.Context == cur.Context {
			out = cur
			return nil
		}
		holder, err := pairHolder(ctx, q, accountID, next.Name, next.Context)
		if err != nil {
			return err
		}
		if holder != nil {
			return service.RenameTagOnto(*holder)
		}
		if _, err := q.exec(ctx, `UPDATE tags SET name = $1, context = $2 WHERE account_id = $3 AND id = $4`,
			next.Name, next.Context, accountID, id); err != nil {
			return err
		}
		out = next
		return nil
	})
	if err != nil && s.isUnique(err) && next != nil {
		// Another request took the pair between the check and the update.
		if holder, lookErr := pairHolder(ctx, s.reader(), accountID, next.Name, next.Context); lookErr == nil && holder != nil {
			return nil, service.RenameTagOnto(*holder)
		}
	}
	return out, err
}

// pairHolder returns the tag, live or archived, that holds (name, context),
// or nil when the pair is free.
func pairHolder(ctx context.Context, q querier, accountID, name, tagContext string) (*domain.Tag, error) {
	var holder string
	var archived sql.NullInt64
	err := q.queryRow(ctx, `SELECT id, archived_at FROM tags WHERE account_id = $1 AND context = $2 AND name = $3`,
		accountID, tagContext, name).Scan(&holder, &archived)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &domain.Tag{ID: holder, AccountID: accountID, Name: name, Context: tagContext, ArchivedAt: timePtr(archived)}, nil
}

// ArchiveTag hides a live tag; its links to persons stay.
func (s *Store) ArchiveTag(ctx context.Context, accountID, id string, at time.Time) (err error) {
	defer named("ArchiveTag", &err)
	res, err := s.writer().exec(ctx, `UPDATE tags SET archived_at = $1 WHERE account_id = $2 AND id = $3 AND archived_at IS NULL`,
		at.UnixMilli(), accountID, id)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return domain.NotFound("tag", id)
	}
	return nil
}
