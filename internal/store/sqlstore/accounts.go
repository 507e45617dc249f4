package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// CreateAccount stores a new account.
func (s *Store) CreateAccount(ctx context.Context, a domain.Account) (err error) {
	defer named("CreateAccount", &err)
	_, err = s.writer().exec(ctx, `INSERT INTO accounts (id, name, created_at) VALUES ($1, $2, $3)`,
		a.ID, a.Name, a.CreatedAt.UnixMilli())
	return err
}

func scanAccount(sc scanner) (domain.Account, error) {
	var a domain.Account
	var created int64
	err := sc.Scan(&a.ID, &a.Name, &created)
	a.CreatedAt = domain.FromMillis(created)
	return a, err
}

// ListAccounts returns every account, oldest first.
func (s *Store) ListAccounts(ctx context.Context) (_ []domain.Account, err error) {
	defer named("ListAccounts", &err)
	return queryAll(ctx, s.reader(), scanAccount, `SELECT id, name, created_at FROM accounts ORDER BY created_at, id`)
}

// GetAccount returns one account or domain.ErrNotFound.
func (s *Store) GetAccount(ctx context.Context, id string) (_ *domain.Account, err error) {
	defer named("GetAccount", &err)
	return getOne(ctx, s.reader(), &domain.NotFoundError{Detail: "No account with id " + strconv.Quote(id) + " exists."},
		scanAccount, `SELECT id, name, created_at FROM accounts WHERE id = $1`, id)
}

// Bootstrap creates the first account and key on an empty database. The
// insert keyed by the account id settles a race between instances starting
// together: only one of them inserts.
func (s *Store) Bootstrap(ctx context.Context, a domain.Account, k domain.APIKey) (_ bool, err error) {
	defer named("Bootstrap", &err)
	created := false
	err = s.inTx(ctx, func(q querier) error {
		// Reset: the committer may run this function again (see committer).
		created = false
		var n int
		if err := q.queryRow(ctx, `SELECT COUNT(*) FROM accounts`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		res, err := q.exec(ctx, `INSERT INTO accounts (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`,
			a.ID, a.Name, a.CreatedAt.UnixMilli())
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		created = true
		return insertKey(ctx, q, k)
	})
	if err != nil && s.isUnique(err) {
		return false, nil
	}
	return created, err
}

// CreateKey stores a new key.
func (s *Store) CreateKey(ctx context.Context, k domain.APIKey) (err error) {
	defer named("CreateKey", &err)
	return insertKey(ctx, s.writer(), k)
}

func insertKey(ctx context.Context, q querier, k domain.APIKey) error {
	var rate any
	if k.RateLimit != nil {
		rate = *k.RateLimit
	}
	_, err := q.exec(ctx, `INSERT INTO api_keys
		(id, account_id, name, prefix, last_four, hash, scopes, rate_limit, expires_at, revoked_at, last_used_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, NULL, $10)`,
		k.ID, k.AccountID, nullable(k.Name), k.Prefix, k.LastFour, k.Hash, joinScopes(k.Scopes), rate,
		nullMillis(k.ExpiresAt), k.CreatedAt.UnixMilli())
	return err
}

const keyColumns = `id, account_id, name, prefix, last_four, hash, scopes, rate_limit, expires_at, revoked_at, last_used_at, created_at`

func scanKey(sc scanner) (*domain.APIKey, error) {
	var k domain.APIKey
	var name sql.NullString
	var scopes string
	var rate, expires, revoked, used sql.NullInt64
	var created int64
	if err := sc.Scan(&k.ID, &k.AccountID, &name, &k.Prefix, &k.LastFour, &k.Hash, &scopes, &rate,
		&expires, &revoked, &used, &created); err != nil {
		return nil, err
	}
	k.Name = strPtr(name)
	for _, sc := range strings.Fields(scopes) {
		k.Scopes = append(k.Scopes, domain.Scope(sc))
	}
	if rate.Valid {
		r := int(rate.Int64)
		k.RateLimit = &r
	}
	k.ExpiresAt, k.RevokedAt, k.LastUsedAt = timePtr(expires), timePtr(revoked), timePtr(used)
	k.CreatedAt = domain.FromMillis(created)
	return &k, nil
}

// KeyByHash finds a key by the hash of its secret: from the key cache when
// the engine keeps one (CacheKeys), else through the unique index.
func (s *Store) KeyByHash(ctx context.Context, hash []byte) (_ *domain.APIKey, err error) {
	defer named("KeyByHash", &err)
	if s.keys != nil {
		return s.keys.get(ctx, hash, s.readKey)
	}
	return s.readKey(ctx, hash)
}

// readKey reads a key by the hash of its secret, through the unique index.
func (s *Store) readKey(ctx context.Context, hash []byte) (*domain.APIKey, error) {
	var suppresses bool
	k, err := scanKey(withExtra{s.reader().queryRow(ctx, `SELECT `+keyColumns+`,
		EXISTS (SELECT 1 FROM suppressions WHERE suppressions.account_id = api_keys.account_id)
		FROM api_keys WHERE hash = $1`, hash), []any{&suppresses}})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.ErrNotFound
	}
	if k != nil {
		k.AccountSuppresses = suppresses
	}
	return k, err
}

// ListKeys returns an account's keys, oldest first.
func (s *Store) ListKeys(ctx context.Context, accountID string) (_ []domain.APIKey, err error) {
	defer named("ListKeys", &err)
	return queryAll(ctx, s.reader(), byValue(scanKey),
		`SELECT `+keyColumns+` FROM api_keys WHERE account_id = $1 ORDER BY created_at, id`, accountID)
}

// RevokeKey marks a key revoked; revoking twice keeps the first time.
func (s *Store) RevokeKey(ctx context.Context, keyID string, at time.Time) (_ time.Time, err error) {
	defer named("RevokeKey", &err)
	return s.revokeKey(ctx, "", keyID, at)
}

// RevokeAccountKey is RevokeKey for a key of the account alone.
func (s *Store) RevokeAccountKey(ctx context.Context, accountID, keyID string, at time.Time) (_ time.Time, err error) {
	defer named("RevokeAccountKey", &err)
	return s.revokeKey(ctx, accountID, keyID, at)
}

// revokeKey revokes keyID, of accountID unless it is "" (the command
// line, which names a key and no account).
func (s *Store) revokeKey(ctx context.Context, accountID, keyID string, at time.Time) (time.Time, error) {
	var args sqlArgs
	query := `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ` + args.add(at.UnixMilli()) + `) WHERE id = ` + args.add(keyID)
	if accountID != "" {
		query += ` AND account_id = ` + args.add(accountID)
	}
	var revokedAt int64
	found := false
	err := s.writeQuery(ctx, func(rows *sql.Rows) error {
		found = false
		for rows.Next() {
			found = true
			if err := rows.Scan(&revokedAt); err != nil {
				return err
			}
		}
		return rows.Err()
	}, query+` RETURNING revoked_at`, args...)
	if err != nil {
		return time.Time{}, err
	}
	if !found {
		return time.Time{}, domain.NotFound("key", keyID)
	}
	// Every instance hears of it through its KeySync; this one forgets the
	// key at once.
	if s.keys != nil {
		s.keys.forgetID(keyID)
	}
	return time.UnixMilli(revokedAt).UTC(), nil
}

// TouchKey records the last use of a key. A touch is no change the key
// cache must hear of (the triggers pass over last_used_at); this instance
// notes it in its own cached copy.
func (s *Store) TouchKey(ctx context.Context, keyID string, at time.Time) (err error) {
	defer named("TouchKey", &err)
	_, err = s.writer().exec(ctx, `UPDATE api_keys SET last_used_at = $1 WHERE id = $2`, at.UnixMilli(), keyID)
	if err == nil && s.keys != nil {
		s.keys.touched(keyID, at)
	}
	return err
}

// LeaseRate takes up to want requests of a key's budget in a window for
// one instance: min(want, limit - taken), in one atomic upsert, so that
// the instances together never take more than limit. It returns what it
// took and what every instance has taken in the window since.
func (s *Store) LeaseRate(ctx context.Context, keyID string, windowStart time.Time, limit, want int) (granted, taken int, err error) {
	defer named("LeaseRate", &err)
	err = s.writeQuery(ctx, func(rows *sql.Rows) error {
		if !rows.Next() {
			return errors.Join(rows.Err(), sql.ErrNoRows)
		}
		return rows.Scan(&granted, &taken)
	}, `INSERT INTO rate_windows (key_id, window_start, count, granted)
		VALUES ($1, $2, $5, $5)
		ON CONFLICT (key_id, window_start) DO UPDATE SET
			count = rate_windows.count + CASE WHEN rate_windows.count >= $3 THEN 0
				WHEN $3 - rate_windows.count < $4 THEN $3 - rate_windows.count ELSE $4 END,
			granted = CASE WHEN rate_windows.count >= $3 THEN 0
				WHEN $3 - rate_windows.count < $4 THEN $3 - rate_windows.count ELSE $4 END
		RETURNING granted, count`, keyID, windowStart.UnixMilli(), limit, want, min(limit, want))
	return granted, taken, err
}

// RateCount reads a key's count in a window.
func (s *Store) RateCount(ctx context.Context, keyID string, windowStart time.Time) (_ int, err error) {
	defer named("RateCount", &err)
	var n int
	err = s.reader().queryRow(ctx, `SELECT COALESCE(SUM(count), 0) FROM rate_windows WHERE key_id = $1 AND window_start = $2`,
		keyID, windowStart.UnixMilli()).Scan(&n)
	return n, err
}

// PruneRate drops finished windows.
func (s *Store) PruneRate(ctx context.Context, before time.Time) (err error) {
	defer named("PruneRate", &err)
	_, err = s.writer().exec(ctx, `DELETE FROM rate_windows WHERE window_start < $1`, before.UnixMilli())
	return err
}

func joinScopes(scopes []domain.Scope) string {
	parts := make([]string, len(scopes))
	for i, sc := range scopes {
		parts[i] = string(sc)
	}
	return strings.Join(parts, " ")
}

// RecordPublicURL notes the public URL of the pds serve starting now.
func (s *Store) RecordPublicURL(ctx context.Context, url string, at time.Time) (err error) {
	defer named("RecordPublicURL", &err)
	_, err = s.writer().exec(ctx, `INSERT INTO served_public_url (id, url, recorded_at) VALUES (1, $1, $2)
		ON CONFLICT (id) DO UPDATE SET url = excluded.url, recorded_at = excluded.recorded_at`, url, at.UnixMilli())
	return err
}

// PublicURL is the public URL the last pds serve to start recorded.
func (s *Store) PublicURL(ctx context.Context) (_ string, err error) {
	defer named("PublicURL", &err)
	var url string
	err = s.reader().queryRow(ctx, `SELECT url FROM served_public_url WHERE id = 1`).Scan(&url)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return url, err
}
