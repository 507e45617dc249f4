package sqlstore

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

	"github.com/pds-dev/pds/internal/domain"
)

// DeliveredStates reads the kept states of the persons (delivered_states).
func (s *Store) DeliveredStates(ctx context.Context, accountID string, personIDs []string) (_ map[string]domain.TrackedMembers, err error) {
	defer named("DeliveredStates", &err)
	out := map[string]domain.TrackedMembers{}
	for chunk := range slices.Chunk(personIDs, finishChunk) {
		var a sqlArgs
		where := `account_id = ` + a.add(accountID) + ` AND person_id IN (` + a.list(anySlice(chunk)...) + `)`
		type kept struct {
			person string
			state  domain.TrackedMembers
		}
		rows, err := queryAll(ctx, s.reader(), func(sc scanner) (kept, error) {
			var k kept
			var state string
			if err := sc.Scan(&k.person, &state); err != nil {
				return k, err
			}
			return k, json.Unmarshal([]byte(state), &k.state)
		}, `SELECT person_id, state FROM delivered_states WHERE `+where, a...)
		if err != nil {
			return nil, err
		}
		for _, k := range rows {
			out[k.person] = k.state
		}
	}
	return out, nil
}

// KeepDeliveredStates writes the states in one transaction, a person at a
// time in id order. Each statement reads its person's row as a share lock
// does (Dialect.ShareRows) and writes only while the person exists, so an
// erasure or a merge that deletes the person, and its kept state, either
// comes first and nothing is written, or waits for this one and deletes
// what it wrote.
func (s *Store) KeepDeliveredStates(ctx context.Context, accountID string, states map[string]domain.TrackedMembers) (err error) {
	defer named("KeepDeliveredStates", &err)
	if len(states) == 0 {
		return nil
	}
	encoded := make(map[string]string, len(states))
	for person, m := range states {
		b, err := json.Marshal(m.Normal())
		if err != nil {
			return err
		}
		encoded[person] = string(b)
	}
	return s.inTx(ctx, func(q querier) error {
		for _, person := range slices.Sorted(maps.Keys(encoded)) {
			if _, err := q.exec(ctx, `INSERT INTO delivered_states (account_id, person_id, state)
				SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM persons WHERE account_id = $1 AND id = $2`+q.s.dialect.ShareRows+`)
				ON CONFLICT (account_id, person_id) DO UPDATE SET state = excluded.state`,
				accountID, person, encoded[person]); err != nil {
				return err
			}
		}
		return nil
	})
}
