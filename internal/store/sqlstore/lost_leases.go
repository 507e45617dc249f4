package sqlstore

import (
	"context"
	"sync"
)

// A claim of due work (ClaimBursts, ClaimDeliveriesFairly) leases rows under
// a token of its own in one commit. When the claim fails, the worker never
// learns which rows it leased, but the claim may have committed all the
// same (its connection lost at the commit, in a failover), and those rows
// would wait for the lease to run out, a minute or more, before anyone
// delivers them. So the token of a claim that failed is kept, and the next
// claim first hands back whatever it leased: rows of a claim that did not
// commit hold no such token, and nothing happens to them.

// lostLeases are the tokens of failed claims whose rows are not yet handed
// back, per table.
type lostLeases struct {
	mu     sync.Mutex
	tokens map[string][]string
}

// lost records the token of a claim of table that failed.
func (l *lostLeases) lost(table, token string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tokens == nil {
		l.tokens = map[string][]string{}
	}
	l.tokens[table] = append(l.tokens[table], token)
}

// handBack clears the leases of table's failed claims, keeping the tokens
// it could not clear for the next claim.
func (s *Store) handBack(ctx context.Context, table string) error {
	s.lost.mu.Lock()
	tokens := s.lost.tokens[table]
	delete(s.lost.tokens, table)
	s.lost.mu.Unlock()
	for i, token := range tokens {
		if _, err := s.writer().exec(ctx, `UPDATE `+table+` SET lease_until = NULL, lease_token = NULL WHERE lease_token = $1`, token); err != nil {
			for _, t := range tokens[i:] {
				s.lost.lost(table, t)
			}
			return err
		}
	}
	return nil
}
