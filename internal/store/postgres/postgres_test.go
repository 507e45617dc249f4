package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/pds-dev/pds/internal/store/postgres"
	"github.com/pds-dev/pds/internal/store/storetest"
	"github.com/pds-dev/pds/internal/testenv"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	testenv.PostgresURL(t)
	storetest.Run(t, testenv.Postgres.NewStore)
}

// TestConcurrentStartsMigrateOnce: instances starting together on one empty
// database all come up; the advisory lock serialises the migrations.
func TestConcurrentStartsMigrateOnce(t *testing.T) {
	t.Parallel()
	db := testenv.Postgres.NewDatabase(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := postgres.Open(context.Background(), db)
			if err == nil {
				err = st.Ping(context.Background())
				st.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent start: %v", err)
		}
	}
}
