package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

const fieldColumns = `id, account_id, collection, data_type, key, label, description, form_type, is_default, is_read_only, created_at, archived_at`

func scanField(sc scanner) (domain.CustomField, error) {
	var f domain.CustomField
	var label, description sql.NullString
	var created int64
	var archived sql.NullInt64
	if err := sc.Scan(&f.ID, &f.AccountID, &f.Collection, &f.DataType, &f.Key, &label, &description, &f.FormType,
		&f.IsDefault, &f.IsReadOnly, &created, &archived); err != nil {
		return f, err
	}
	f.Label, f.Description = strPtr(label), strPtr(description)
	f.DateCreated = domain.T(domain.FromMillis(created))
	f.ArchivedAt = timePtr(archived)
	return f, nil
}

// CreateCustomField inserts a field (with a new id when it has none) under
// the account lock, so that two concurrent creations cannot both pass the
// limit. The key and the limit are decided in service.
func (s *Store) CreateCustomField(ctx context.Context, f domain.CustomField, limit int) (_ domain.CustomField, err error) {
	defer named("CreateCustomField", &err)
	if f.ID == "" {
		f.ID = domain.NewID(domain.CustomFieldIDPrefix)
	}
	err = s.inTx(ctx, func(q querier) error {
		if err := s.lockAccount(ctx, q, f.AccountID, "custom_fields"); err != nil {
			return err
		}
		if err := checkKeyFree(ctx, q, f); err != nil {
			return err
		}
		var live int
		if err := q.queryRow(ctx, `SELECT COUNT(*) FROM custom_fields WHERE account_id = $1 AND archived_at IS NULL`,
			f.AccountID).Scan(&live); err != nil {
			return err
		}
		if err := service.CheckFieldLimit(live, limit); err != nil {
			return err
		}
		return insertField(ctx, q, f)
	})
	if err != nil {
		return domain.CustomField{}, err
	}
	f.DateCreated, f.ArchivedAt = domain.T(domain.FromMillis(f.DateCreated.UnixMilli())), nil
	return f, nil
}

func insertField(ctx context.Context, q querier, f domain.CustomField) error {
	_, err := q.exec(ctx, `INSERT INTO custom_fields
		(id, account_id, collection, data_type, key, label, description, form_type, is_default, is_read_only, archived_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL, $11)`,
		f.ID, f.AccountID, f.Collection, f.DataType, f.Key, nullable(f.Label), nullable(f.Description), f.FormType,
		f.IsDefault, f.IsReadOnly, f.DateCreated.UnixMilli())
	return err
}

// checkKeyFree loads the field other than f, live or archived, that holds
// f's (collection, key), and has service.FieldKeyCollision decide on it.
func checkKeyFree(ctx context.Context, q querier, f domain.CustomField) error {
	holder := domain.CustomField{AccountID: f.AccountID, Collection: f.Collection, Key: f.Key}
	var archived sql.NullInt64
	err := q.queryRow(ctx, `SELECT id, archived_at FROM custom_fields WHERE account_id = $1 AND collection = $2 AND key = $3 AND id <> $4`,
		f.AccountID, f.Collection, f.Key, f.ID).Scan(&holder.ID, &archived)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	holder.ArchivedAt = timePtr(archived)
	return service.FieldKeyCollision(holder)
}

// GetCustomField returns a live field of the account.
func (s *Store) GetCustomField(ctx context.Context, accountID, id string) (_ *domain.CustomField, err error) {
	defer named("GetCustomField", &err)
	return safeValue(ctx, s, func(q querier) (*domain.CustomField, error) { return getLiveField(ctx, q, accountID, id) })
}

func getLiveField(ctx context.Context, q querier, accountID, id string) (*domain.CustomField, error) {
	return getOne(ctx, q, domain.NotFound("custom field", id), scanField,
		`SELECT `+fieldColumns+` FROM custom_fields WHERE account_id = $1 AND id = $2 AND archived_at IS NULL`, accountID, id)
}

// ListCustomFields pages the account's live fields, oldest first.
func (s *Store) ListCustomFields(ctx context.Context, accountID string, collection *string, p domain.PageRequest) (_ []domain.CustomField, _ int, err error) {
	defer named("ListCustomFields", &err)
	var args sqlArgs
	where := `custom_fields WHERE account_id = ` + args.add(accountID) + ` AND archived_at IS NULL`
	if collection != nil {
		where += ` AND collection = ` + args.add(*collection)
	}
	return safePage(ctx, s, func(q querier) ([]domain.CustomField, int, error) {
		return listPage(ctx, q, fieldColumns, where, `created_at, id`, args, p, scanField)
	})
}

// writableField loads a live field that the API may change.
func writableField(ctx context.Context, q querier, accountID, id string) (*domain.CustomField, error) {
	f, err := getLiveField(ctx, q, accountID, id)
	if err != nil {
		return nil, err
	}
	if f.IsReadOnly {
		return nil, &domain.ForbiddenError{Detail: fmt.Sprintf(
			"The custom field %s is read-only: an integration manages it, and only pds import changes it.", id)}
	}
	return f, nil
}

// UpdateCustomField changes display attributes as service.PatchField decides.
func (s *Store) UpdateCustomField(ctx context.Context, accountID, id string, patch domain.CustomFieldPatch) (_ *domain.CustomField, err error) {
	defer named("UpdateCustomField", &err)
	var out *domain.CustomField
	err = s.inTx(ctx, func(q querier) error {
		f, err := writableField(ctx, q, accountID, id)
		if err != nil {
			return err
		}
		*f = service.PatchField(*f, patch)
		if _, err := q.exec(ctx, `UPDATE custom_fields SET label = $1, description = $2, form_type = $3 WHERE account_id = $4 AND id = $5`,
			nullable(f.Label), nullable(f.Description), f.FormType, accountID, id); err != nil {
			return err
		}
		out = f
		return nil
	})
	return out, err
}

// ArchiveCustomField hides a live field; its stored values and its key stay.
func (s *Store) ArchiveCustomField(ctx context.Context, accountID, id string, at time.Time) (err error) {
	defer named("ArchiveCustomField", &err)
	return s.inTx(ctx, func(q querier) error {
		if _, err := writableField(ctx, q, accountID, id); err != nil {
			return err
		}
		_, err := q.exec(ctx, `UPDATE custom_fields SET archived_at = $1 WHERE account_id = $2 AND id = $3`, at.UnixMilli(), accountID, id)
		return err
	})
}

// ImportCustomFields upserts fields by id under the account lock.
func (s *Store) ImportCustomFields(ctx context.Context, accountID string, fields []domain.CustomField) (err error) {
	defer named("ImportCustomFields", &err)
	record := func(i int) (string, time.Time) { return fields[i].ID, fields[i].DateCreated.Time }
	return s.importAll(ctx, "custom_fields", domain.CustomFieldIDPrefix, accountID, len(fields), record, func(q querier, i int, t importTarget) error {
		f := fields[i]
		f.ID, f.AccountID, f.DateCreated = t.id, accountID, domain.T(t.created)
		if err := checkKeyFree(ctx, q, f); err != nil {
			return err
		}
		if !t.exists {
			return insertField(ctx, q, f)
		}
		_, err := q.exec(ctx, `UPDATE custom_fields SET collection = $1, data_type = $2, key = $3, label = $4, description = $5,
			form_type = $6, is_default = $7, is_read_only = $8, created_at = $9 WHERE account_id = $10 AND id = $11`,
			f.Collection, f.DataType, f.Key, nullable(f.Label), nullable(f.Description), f.FormType, f.IsDefault, f.IsReadOnly,
			f.DateCreated.UnixMilli(), accountID, f.ID)
		return err
	})
}

var _ store.Catalog = (*Store)(nil)
