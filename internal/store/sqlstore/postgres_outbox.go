package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
)

// OutboxCombined puts a person write's statements together where a WITH
// clause may write (PostgreSQL), where each round trip to the server
// counts: the stamps' UPDATE also reads the outbox row it decides on, and
// the outbox write also reads the person back.
var OutboxCombined Outbox = outboxCombined{}

type outboxCombined struct{}

func (outboxCombined) stampLocking(ctx context.Context, q querier, update string, args []any) (*service.Burst, bool, error) {
	cur, err := scanBurst(q.queryRow(ctx, `WITH u AS (`+update+` RETURNING id)
			SELECT `+burstColumns+` FROM bursts WHERE person_id = (SELECT id FROM u)`+q.s.dialect.LockRows, args...))
	return cur, true, err
}

func (outboxCombined) writeReading(ctx context.Context, q querier, write string, wargs sqlArgs, accountID, personID string) (*domain.Person, error) {
	// The read sees the transaction's earlier writes, not the outbox
	// row this statement writes, which it does not read.
	where := `p.account_id = ` + wargs.add(accountID) + ` AND p.id = ` + wargs.add(personID)
	p, err := scanPersonWithDetails(q.queryRow(ctx, `WITH b AS (`+write+`) `+personWithDetailsSQL(q.s.dialect, `persons p`, where, ``), wargs...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.NotFound("person", personID)
	}
	return p, err
}
