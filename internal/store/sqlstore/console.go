package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// CreateConsoleSession stores a session, and drops the sessions and links
// that have expired, so that neither table grows with sign-ins.
func (s *Store) CreateConsoleSession(ctx context.Context, cs domain.ConsoleSession) (err error) {
	defer named("CreateConsoleSession", &err)
	return s.inTx(ctx, func(q querier) error {
		if err := pruneConsole(ctx, q, cs.CreatedAt); err != nil {
			return err
		}
		_, err := q.exec(ctx, `INSERT INTO console_sessions (id_hash, account_id, key_hash, csrf, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6)`,
			cs.IDHash, cs.AccountID, cs.KeyHash, cs.CSRF, cs.CreatedAt.UnixMilli(), cs.ExpiresAt.UnixMilli())
		return err
	})
}

func pruneConsole(ctx context.Context, q querier, now time.Time) error {
	if _, err := q.exec(ctx, `DELETE FROM console_sessions WHERE expires_at <= $1`, now.UnixMilli()); err != nil {
		return err
	}
	_, err := q.exec(ctx, `DELETE FROM console_links WHERE expires_at <= $1`, now.UnixMilli())
	return err
}

var errNoSession = &domain.NotFoundError{Detail: "No console session: sign in again."}

// ConsoleSession finds an unexpired session.
func (s *Store) ConsoleSession(ctx context.Context, idHash []byte, now time.Time) (_ *domain.ConsoleSession, err error) {
	defer named("ConsoleSession", &err)
	return getOne(ctx, s.reader(), errNoSession, func(sc scanner) (domain.ConsoleSession, error) {
		cs := domain.ConsoleSession{IDHash: idHash}
		var created, expires int64
		err := sc.Scan(&cs.AccountID, &cs.KeyHash, &cs.CSRF, &created, &expires)
		cs.CreatedAt, cs.ExpiresAt = domain.FromMillis(created), domain.FromMillis(expires)
		return cs, err
	}, `SELECT account_id, key_hash, csrf, created_at, expires_at FROM console_sessions WHERE id_hash = $1 AND expires_at > $2`,
		idHash, now.UnixMilli())
}

// EndConsoleSession deletes a session.
func (s *Store) EndConsoleSession(ctx context.Context, idHash []byte) (err error) {
	defer named("EndConsoleSession", &err)
	_, err = s.writer().exec(ctx, `DELETE FROM console_sessions WHERE id_hash = $1`, idHash)
	return err
}

// CreateConsoleLink stores a one-time sign-in link.
func (s *Store) CreateConsoleLink(ctx context.Context, l domain.ConsoleLink) (err error) {
	defer named("CreateConsoleLink", &err)
	_, err = s.writer().exec(ctx, `INSERT INTO console_links (token_hash, account_id, key_hash, expires_at) VALUES ($1, $2, $3, $4)`,
		l.TokenHash, l.AccountID, l.KeyHash, l.ExpiresAt.UnixMilli())
	return err
}

var errNoLink = &domain.NotFoundError{Detail: "This sign-in link has been used or has expired; ask for a new one (pds console link)."}

// ConsoleLink reads an unexpired link and leaves it to be taken.
func (s *Store) ConsoleLink(ctx context.Context, tokenHash []byte, now time.Time) (_ *domain.ConsoleLink, err error) {
	defer named("ConsoleLink", &err)
	return getOne(ctx, s.reader(), errNoLink, func(sc scanner) (domain.ConsoleLink, error) {
		l := domain.ConsoleLink{TokenHash: tokenHash}
		var expires int64
		err := sc.Scan(&l.AccountID, &l.KeyHash, &expires)
		l.ExpiresAt = domain.FromMillis(expires)
		return l, err
	}, `SELECT account_id, key_hash, expires_at FROM console_links WHERE token_hash = $1 AND expires_at > $2`,
		tokenHash, now.UnixMilli())
}

// TakeConsoleLink deletes the link and returns it when it was unexpired:
// of two instances following it at once, one deletes it.
func (s *Store) TakeConsoleLink(ctx context.Context, tokenHash []byte, now time.Time) (_ *domain.ConsoleLink, err error) {
	defer named("TakeConsoleLink", &err)
	var link *domain.ConsoleLink
	err = s.inTx(ctx, func(q querier) error {
		// Reset: the committer may run this function again (see committer).
		link = nil
		l := domain.ConsoleLink{TokenHash: tokenHash}
		var expires int64
		err := q.queryRow(ctx, `DELETE FROM console_links WHERE token_hash = $1 RETURNING account_id, key_hash, expires_at`,
			tokenHash).Scan(&l.AccountID, &l.KeyHash, &expires)
		if err != nil {
			return err
		}
		if l.ExpiresAt = domain.FromMillis(expires); l.ExpiresAt.After(now) {
			link = &l
		}
		return nil
	})
	if errors.Is(err, sql.ErrNoRows) || (err == nil && link == nil) {
		return nil, errNoLink
	}
	return link, err
}
