package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// savedFixture is what a --keep run writes beside its database, so that
// --reuse can measure the same million rows again without seeding them:
// the seed takes longer than the rows.
type savedFixture struct {
	Database     string    `json:"database"`
	Account      string    `json:"account"`
	Key          string    `json:"key"`
	TagA         string    `json:"tag_a"`
	TagB         string    `json:"tag_b"`
	Since        time.Time `json:"since"`
	Seeded       int       `json:"seeded"`
	SamplePerson []string  `json:"sample_person"`
}

func saveFixture(path, database string, fx fixture) error {
	b, err := json.MarshalIndent(savedFixture{Database: database, Account: fx.account, Key: fx.key, TagA: fx.tagA, TagB: fx.tagB,
		Since: fx.since, Seeded: fx.seeded, SamplePerson: fx.samplePerson}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

func loadFixture(path string) (savedFixture, error) {
	var s savedFixture
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	return s, err
}

func (s savedFixture) fixture() fixture {
	return fixture{key: s.Key, account: s.Account, tagA: s.TagA, tagB: s.TagB, since: s.Since, seeded: s.Seeded,
		samplePerson: s.SamplePerson}
}

// recount reads the totals the rows expect from the database, which holds
// what earlier runs' write rows added to the seed. The seeded persons
// keep their tags, so the two-tag total stays the seed's. It first folds
// the timeline deltas an earlier run's writes left, as a seed ends with
// none, so that a reused database is measured as a fresh one is.
func recount(ctx context.Context, engine, database string, fx *fixture) error {
	st, err := open(ctx, database)
	if err != nil {
		return err
	}
	err = foldTimelines(ctx, st)
	st.Close()
	if err != nil {
		return fmt.Errorf("folding the timelines left by earlier runs: %w", err)
	}
	db, err := rawDB(engine, database)
	if err != nil {
		return err
	}
	defer db.Close()
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM persons WHERE account_id = $1`, fx.account).Scan(&fx.persons)
	if err == nil {
		err = db.QueryRowContext(ctx, `SELECT count(*) FROM breadcrumbs WHERE account_id = $1`, fx.account).Scan(&fx.breadcrumbs)
	}
	if err == nil {
		err = db.QueryRowContext(ctx, `SELECT count(*) FROM breadcrumbs WHERE account_id = $1 AND flavor = $2`,
			fx.account, breadcrumbFlavors[0]).Scan(&fx.flavored)
	}
	return err
}
