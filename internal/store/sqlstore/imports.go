package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// lockAccount serialises the writes of one account that check a count or a
// uniqueness of a table before inserting, each table on its own (an import
// of persons; a custom field's creation or import; an import of campaigns
// or of projects), and reports a domain.NotFound for an account that does
// not exist. PostgreSQL takes a transaction-level advisory lock named for
// the account and the table, not the account row: every new person, breadcrumb and tag of the account
// checks its foreign key against that row, and would wait for an import's
// whole transaction. SQLite's write transactions are exclusive already.
func (s *Store) lockAccount(ctx context.Context, q querier, accountID, table string) error {
	var id string
	err := q.queryRow(ctx, `SELECT id FROM accounts WHERE id = $1`, accountID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.NotFound("account", accountID)
	}
	if err != nil || s.dialect.AccountLock == "" {
		return err
	}
	_, err = q.exec(ctx, s.dialect.AccountLock, "pds "+table+" of "+accountID)
	return err
}

// importTarget is where one imported record goes.
type importTarget struct {
	id      string    // the given id, or a new one
	exists  bool      // the account holds a record with this id already
	created time.Time // the given date_created, else the stored one, else the import time
}

// importAll writes n records of table in one transaction under the account
// lock: all or none. record reports the id and date_created a record was
// given (zero values when absent); write stores it at its target. A record
// that fails is reported as a *store.ImportError with its index. Once the
// records are committed, the table's statistics are brought up to date, as
// after a person import.
func (s *Store) importAll(ctx context.Context, table, idPrefix, accountID string, n int,
	record func(i int) (id string, created time.Time), write func(q querier, i int, t importTarget) error) error {
	// The command line, not a request, runs imports; its clock is the wall clock.
	now := time.Now().UTC()
	err := s.inTx(ctx, func(q querier) error {
		if err := s.lockAccount(ctx, q, accountID, table); err != nil {
			return err
		}
		for i := range n {
			id, created := record(i)
			t, err := resolveTarget(ctx, q, table, idPrefix, accountID, id, created, now)
			if err == nil {
				err = write(q, i, t)
			}
			if err != nil {
				return &store.ImportError{Index: i, Err: err}
			}
		}
		return nil
	})
	if err == nil {
		// The records stand either way; a catalogue holds few rows, and
		// autovacuum catches up with them.
		_, _ = s.analyzeTables(ctx, []string{table})
	}
	return err
}

func resolveTarget(ctx context.Context, q querier, table, idPrefix, accountID, id string, created, now time.Time) (importTarget, error) {
	t := importTarget{id: id, created: created}
	if id == "" {
		t.id = domain.NewID(idPrefix)
	} else {
		var owner string
		var stored int64
		err := q.queryRow(ctx, `SELECT account_id, created_at FROM `+table+` WHERE id = $1`, id).Scan(&owner, &stored)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return t, err
		case owner != accountID:
			return t, fmt.Errorf("the id %q belongs to another account", id)
		default:
			t.exists = true
			if created.IsZero() {
				t.created = domain.FromMillis(stored)
			}
		}
	}
	if t.created.IsZero() {
		t.created = now
	}
	return t, nil
}
