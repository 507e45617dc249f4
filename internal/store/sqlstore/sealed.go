package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/pds-dev/pds/internal/secrets"
	"github.com/pds-dev/pds/internal/store"
)

// Secrets at rest. Webhook signing secrets (current, previous, retired)
// and suppression secrets are written sealed under the operator's key
// (secrets.Keyring, --secrets-key-file) when the store has one, and read
// through it: what the database, its write-ahead log and every backup hold
// is the sealed text, never a secret. Each value is sealed for its place
// (webhookPlace, suppressionPlace), so that one moved to another row does
// not open. Without a key the store writes them in clear, as before.

// webhookPlace is what a subscription's secrets are sealed for: all of
// its versions, so that one read in any of its columns opens.
func webhookPlace(webhookID string) string { return "webhook:" + webhookID }

// suppressionPlace is what an account's suppression secret is sealed for.
func suppressionPlace(accountID string) string { return "suppression:" + accountID }

// UseSecretsKeys makes the store seal the secrets it writes under k's
// first key and open those it reads with any of k's keys. With a key it
// checks the database first: a secret sealed under a key k lacks (another
// key file) refuses it, a *secrets.MissingKeyError naming that key.
// Without one (nil) secrets are written in clear, and a sealed one fails
// only where it is read: the administrative commands that touch none work
// without the key, and pds serve checks for itself (SecretKeys).
func (s *Store) UseSecretsKeys(ctx context.Context, k *secrets.Keyring) (err error) {
	defer named("UseSecretsKeys", &err)
	s.sealer = k
	if k == nil {
		return nil
	}
	inUse, err := s.SecretKeys(ctx)
	if err != nil {
		return err
	}
	for id := range inUse {
		if id != "" && !k.Has(id) {
			return &secrets.MissingKeyError{KeyID: id}
		}
	}
	return nil
}

// SealsSecrets says whether the store writes its secrets sealed.
func (s *Store) SealsSecrets() bool { return s.sealer != nil }

// sealedColumn is one column that holds a secret, with what reads its
// rows and names their place.
type sealedColumn struct {
	table, column string
	// key are the columns that name a row, the first of them its place's.
	key   []string
	place func(string) string
}

var sealedColumns = []sealedColumn{
	{"webhooks", "secret", []string{"id"}, webhookPlace},
	{"webhooks", "previous_secret", []string{"id"}, webhookPlace},
	{"webhooks", "headers", []string{"id"}, webhookPlace},
	{"webhook_secrets", "secret", []string{"webhook_id", "version"}, webhookPlace},
	{"suppression_secrets", "secret", []string{"account_id"}, suppressionPlace},
}

// SecretKeys counts the stored secrets by the id of the key that sealed
// them ("" for those in clear).
func (s *Store) SecretKeys(ctx context.Context) (_ map[string]int, err error) {
	defer named("SecretKeys", &err)
	out := map[string]int{}
	for _, c := range sealedColumns {
		values, err := queryAll(ctx, s.reader(), func(sc scanner) ([]byte, error) {
			var v []byte
			err := sc.Scan(&v)
			return v, err
		}, `SELECT `+c.column+` FROM `+c.table+` WHERE `+c.column+` IS NOT NULL`)
		if err != nil {
			return nil, err
		}
		for _, v := range values {
			id, _ := secrets.KeyOf(v)
			out[id]++
		}
	}
	return out, nil
}

// ResealSecrets seals again, under the first key of the store's keyring,
// every stored secret that is not sealed under it (only those in clear
// when onlyClear is set), in one transaction whose reads lock the rows
// they rewrite, so that a rotation of a subscription's secret meanwhile
// is not undone. It returns how many it rewrote.
func (s *Store) ResealSecrets(ctx context.Context, onlyClear bool) (_ int, err error) {
	defer named("ResealSecrets", &err)
	if s.sealer == nil {
		return 0, errors.New("there is no key to seal secrets under: give --secrets-key-file (PDS_SECRETS_KEY_FILE)")
	}
	var n int
	err = s.inTxAlone(ctx, func(q querier) error {
		n = 0
		for _, c := range sealedColumns {
			rewrote, err := s.resealColumn(ctx, q, c, onlyClear)
			if err != nil {
				return fmt.Errorf("%s.%s: %w", c.table, c.column, err)
			}
			n += rewrote
		}
		return nil
	})
	return n, err
}

func (s *Store) resealColumn(ctx context.Context, q querier, c sealedColumn, onlyClear bool) (int, error) {
	type stored struct {
		key   []any
		value []byte
	}
	// The key columns are read and written back as the driver gives them
	// (a version is an integer), so that each engine compares them as
	// their own type.
	cols := c.key[0]
	for _, k := range c.key[1:] {
		cols += ", " + k
	}
	rows, err := queryAll(ctx, q, func(sc scanner) (stored, error) {
		r := stored{key: make([]any, len(c.key))}
		dest := []any{&r.value}
		for i := range r.key {
			dest = append(dest, &r.key[i])
		}
		return r, sc.Scan(dest...)
	}, `SELECT `+c.column+`, `+cols+` FROM `+c.table+` WHERE `+c.column+` IS NOT NULL ORDER BY `+cols+s.dialect.LockRows)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rows {
		id, sealed := secrets.KeyOf(r.value)
		if sealed && (onlyClear || id == s.sealer.ID()) {
			continue
		}
		place := c.place(fmt.Sprint(text(r.key[0])))
		value, err := s.sealer.Open(r.value, place)
		if err != nil {
			return 0, err
		}
		resealed, err := s.sealer.Seal(value, place)
		if err != nil {
			return 0, err
		}
		var a sqlArgs
		set := c.column + ` = ` + a.add(s.stored(c, resealed))
		where := ""
		for i, k := range c.key {
			if i > 0 {
				where += " AND "
			}
			where += k + ` = ` + a.add(r.key[i])
		}
		if _, err := q.exec(ctx, `UPDATE `+c.table+` SET `+set+` WHERE `+where, a...); err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}

// stored is a sealed value as its column holds it: text in the webhooks'
// columns, bytes in suppression_secrets.
func (s *Store) stored(c sealedColumn, value []byte) any {
	if c.table == "suppression_secrets" {
		return value
	}
	return string(value)
}

// sealText seals a text secret for place (as it is without a key).
func (s *Store) sealText(value, place string) (string, error) {
	return s.sealer.SealString(value, place)
}

// openText opens a stored text secret of place.
func (s *Store) openText(stored, place string) (string, error) {
	return s.sealer.OpenString(stored, place)
}

// text is a value scanned into an any as text: drivers give text columns
// as string or []byte.
func text(v any) any {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return v
}

var _ store.Secrets = (*Store)(nil)
