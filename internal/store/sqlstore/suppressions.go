package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// Suppression's check on the write path. A write refused for naming a
// suppressed identifier stores nothing. The check runs in the write's own
// transaction, in the statement that reads the holders of its identifiers
// (holdersAndSuppressed), whatever the write's caller knew of the account:
// a check before the transaction, or a key's word that the account
// suppressed nothing when it was read, may predate an erasure that
// committed since, whose person the look-up of holders no longer finds;
// in one statement the two reads see one snapshot, so a write either
// meets the person holding the identifier or meets its suppression. And
// it runs after the rest of the body was checked (custom values,
// references), so that a bad body answers the same for any identifier.
//
// Its price is a part of that statement: with the account's secret known
// to the process (read once and kept, since it never changes once made),
// the hashes looked up by the unique index; without it, whether the
// account has a secret at all, which an account that never suppressed
// anything has not. Only the first write of a suppressing account in a
// process reads the secret, beside the writer (warmSecret), when the
// caller does not vouch that the account suppresses nothing
// (store.Write.NoSuppressions, the API's requests, from the key's read).

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
	if secret, err = s.sealer.Open(secret, suppressionPlace(accountID)); err != nil {
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
func (s *Store) suppressedAt(ctx context.Context, q querier, accountID string, writes [][]domain.SuppressedValue) (map[int]error, error) {
	refused := map[int]error{}
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
	found, err := queryAll(ctx, q, scanHashID, `SELECT hash, id FROM suppressions WHERE account_id = `+account+
		` AND hash IN (`+a.list(hashes...)+`)`, a...)
	if err != nil || len(found) == 0 {
		return refused, err
	}
	suppressed := map[string]string{} // hash: the suppression's id
	for _, f := range found {
		suppressed[f.hash] = f.id
	}
	for i, vs := range writes {
		// The first in SuppressionKinds order.
		for _, v := range vs {
			if id, ok := suppressed[domain.SuppressionHash(secret, v)]; ok {
				refused[i] = &domain.SuppressedError{Kind: v.Kind, Pointer: v.Pointer, SuppressionID: id}
				break
			}
		}
	}
	return refused, nil
}

type hashID struct{ hash, id string }

func scanHashID(sc scanner) (hashID, error) {
	var h hashID
	err := sc.Scan(&h.hash, &h.id)
	return h, err
}

// refuseSuppressed is a *domain.SuppressedError when the values name a
// suppressed identifier: a statement of its own, in q's transaction, for
// a write whose holders were read before it (or that reads none).
func (s *Store) refuseSuppressed(ctx context.Context, q querier, accountID string, values []domain.SuppressedValue) error {
	_, err := holdersAndSuppressed(ctx, q, accountID, domain.Identifiers{}, values)
	return err
}

// warmSecret reads the account's secret beside the writer, where the
// process would otherwise first read it inside a write transaction (which
// may not keep it: see suppressionSecret), unless w vouches that the
// account suppressed nothing when the write arrived. It decides nothing.
func (s *Store) warmSecret(ctx context.Context, accountID string, w store.Write) {
	if w.NoSuppressions {
		return
	}
	if _, known := s.secrets.Load(accountID); !known {
		_, _ = s.suppressionSecret(ctx, s.reader(), accountID)
	}
}

// holdersAndSuppressed reads, in one statement of q's transaction, the
// persons holding ids (as identifierHolders) and whether any of values is
// suppressed, which it answers as a *domain.SuppressedError naming the
// first in SuppressionKinds order. Its rows are the holders' (id,
// external_id, email_norm, f_id) and marks with an empty id: a suppressed
// hash's kind, suppression id and hash in the other columns, or, when the process does not know
// the account's secret, a mark that the account has one, after which the
// values are checked under it in a statement of their own.
func holdersAndSuppressed(ctx context.Context, q querier, accountID string, ids domain.Identifiers,
	values []domain.SuppressedValue) ([]service.Holder, error) {
	var secret []byte
	if v, ok := q.s.secrets.Load(accountID); ok {
		secret = v.([]byte)
	}
	var parts []string
	var args sqlArgs
	if ids.Any() {
		var holders string
		holders, args = holdersOrSurvivorsQuery(accountID, ids)
		parts = append(parts, holders)
	}
	account := args.add(accountID)
	checks := len(values) > 0 && !(secret == nil && q.noSecret[accountID])
	switch {
	case !checks:
	case secret != nil:
		hashes := make([]any, len(values))
		for i, v := range values {
			hashes[i] = domain.SuppressionHash(secret, v)
		}
		// Each suppressed hash with its kind and id: the refusal names
		// the suppression, so that the caller can lift that one.
		parts = append(parts, `SELECT '', kind, id, hash FROM suppressions WHERE account_id = `+account+
			` AND hash IN (`+args.list(hashes...)+`)`)
	default:
		parts = append(parts, `SELECT '', NULL, NULL, NULL WHERE EXISTS (SELECT 1 FROM suppression_secrets WHERE account_id = `+account+`)`)
	}
	if len(parts) == 0 {
		return nil, nil
	}
	rows, err := q.query(ctx, strings.Join(parts, ` UNION ALL `), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		holders       []service.Holder
		suppressed    = map[string]string{} // hash: the suppression's id
		unknownSecret bool
	)
	for rows.Next() {
		var r struct {
			id                         string
			externalID, emailNorm, fID sql.NullString
		}
		if err := rows.Scan(&r.id, &r.externalID, &r.emailNorm, &r.fID); err != nil {
			return nil, err
		}
		switch {
		case r.id != "":
			holders = addHolder(holders, r.id, r.externalID, r.emailNorm, r.fID)
		case r.externalID.Valid:
			suppressed[r.fID.String] = r.emailNorm.String
		default:
			unknownSecret = true
		}
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if checks && secret == nil && !unknownSecret && q.noSecret != nil {
		// This transaction sees one snapshot (SQLite): the account stays
		// without a secret in it unless it makes one (suppress).
		q.noSecret[accountID] = true
	}
	if unknownSecret {
		refused, err := q.s.suppressedAt(ctx, q, accountID, [][]domain.SuppressedValue{values})
		if err != nil {
			return nil, err
		}
		return holders, refused[0]
	}
	for _, v := range values {
		if len(suppressed) == 0 {
			break // the common case: no hash computed again
		}
		if id, ok := suppressed[domain.SuppressionHash(secret, v)]; ok {
			return holders, &domain.SuppressedError{Kind: v.Kind, Pointer: v.Pointer, SuppressionID: id}
		}
	}
	return holders, nil
}

// upsertValues are the identifiers an upsert names that suppression concerns.
func upsertValues(in domain.PersonUpsert) []domain.SuppressedValue {
	return domain.CheckedValues(in.Email.Ptr(), in.ExternalID.Ptr(), in.FID.Ptr(), in.Phone.Ptr())
}

// breadcrumbValues are those a breadcrumb names.
func breadcrumbValues(in domain.BreadcrumbInput) []domain.SuppressedValue {
	return domain.CheckedValues(in.Email, in.ExternalID, in.FID, nil)
}
