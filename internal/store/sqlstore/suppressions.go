package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// Suppression's check on the write path. A write refused for naming a
// suppressed identifier stores nothing. Its price: nothing at all for a
// write whose caller vouches that the account holds no suppression
// (store.Write.NoSuppressions; the API's requests, from the key read,
// which says whether the key's account holds any and which the key
// cache's sync keeps true: every suppression added or lifted bumps the
// key change counter and notifies as a key change does, migration 00160).
// Otherwise one statement: the account's secret, read once per process
// and kept (it never changes once made), then the hashes looked up by the
// unique index; an account without a secret has never suppressed anything.

// suppressionSecret is the account's secret, nil when it has none yet.
func (s *Store) suppressionSecret(ctx context.Context, q querier, accountID string) ([]byte, error) {
	if v, ok := s.secrets.Load(accountID); ok {
		return v.([]byte), nil
	}
	if q.noSecret[accountID] {
		return nil, nil
	}
	var secret []byte
	err := q.queryRow(ctx, `SELECT secret FROM suppression_secrets WHERE account_id = $1`, accountID).Scan(&secret)
	if errors.Is(err, sql.ErrNoRows) {
		// A missing secret is not kept past the transaction: another
		// process, or another instance, may make one next. Within a
		// transaction that sees one snapshot it stays missing until the
		// transaction makes it (suppress), so the creates of a group
		// commit read it once, not once each.
		if q.noSecret != nil {
			q.noSecret[accountID] = true
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// Kept only once committed: read in a write transaction, it may be the
	// one a suppressing erasure of the same group commit just made, which
	// a rollback would replace by another.
	if q.tx == nil {
		s.secrets.Store(accountID, secret)
	}
	return secret, nil
}

// suppressedAt returns, by index, the refusal of each of the writes whose
// values name a suppressed identifier: one statement for them all.
func (s *Store) suppressedAt(ctx context.Context, q querier, accountID string, w store.Write, writes [][]domain.SuppressedValue) (map[int]error, error) {
	refused := map[int]error{}
	if w.NoSuppressions {
		return refused, nil
	}
	named := false
	for _, vs := range writes {
		named = named || len(vs) > 0
	}
	if !named {
		return refused, nil
	}
	secret, err := s.suppressionSecret(ctx, q, accountID)
	if err != nil || secret == nil {
		return refused, err
	}
	var a sqlArgs
	account := a.add(accountID)
	seen := map[string]bool{}
	var hashes []any
	for _, vs := range writes {
		for _, v := range vs {
			if h := domain.SuppressionHash(secret, v); !seen[h] {
				seen[h] = true
				hashes = append(hashes, h)
			}
		}
	}
	found, err := queryAll(ctx, q, scanString, `SELECT hash FROM suppressions WHERE account_id = `+account+
		` AND hash IN (`+a.list(hashes...)+`)`, a...)
	if err != nil || len(found) == 0 {
		return refused, err
	}
	suppressed := map[string]bool{}
	for _, h := range found {
		suppressed[h] = true
	}
	for i, vs := range writes {
		// The first in SuppressionKinds order.
		for _, v := range vs {
			if suppressed[domain.SuppressionHash(secret, v)] {
				refused[i] = &domain.SuppressedError{Kind: v.Kind, Pointer: v.Pointer}
				break
			}
		}
	}
	return refused, nil
}

// refuseSuppressed is a *domain.SuppressedError when the values name a
// suppressed identifier.
func (s *Store) refuseSuppressed(ctx context.Context, q querier, accountID string, w store.Write, values []domain.SuppressedValue) error {
	refused, err := s.suppressedAt(ctx, q, accountID, w, [][]domain.SuppressedValue{values})
	if err != nil {
		return err
	}
	return refused[0]
}

// refuseSuppressedCreate checks, in the transaction that creates a person,
// after its look-up of the identifiers' holders, that none is suppressed,
// whatever the write's caller vouched: the check before the transaction
// (or the key's word that the account suppresses nothing) may predate an
// erasure that committed since, whose person the look-up no longer finds.
func refuseSuppressedCreate(ctx context.Context, q querier, accountID string, values []domain.SuppressedValue) error {
	return q.s.refuseSuppressed(ctx, q, accountID, store.Write{}, values)
}

// upsertValues are the identifiers an upsert names that suppression concerns.
func upsertValues(in domain.PersonUpsert) []domain.SuppressedValue {
	return domain.SuppressedValues(in.Email.Ptr(), in.ExternalID.Ptr(), in.FID.Ptr(), in.Phone.Ptr())
}

// breadcrumbValues are those a breadcrumb names.
func breadcrumbValues(in domain.BreadcrumbInput) []domain.SuppressedValue {
	return domain.SuppressedValues(in.Email, in.ExternalID, in.FID, nil)
}
