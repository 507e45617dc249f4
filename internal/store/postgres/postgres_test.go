package postgres_test

import (
	"testing"

	"github.com/pds-dev/pds/internal/store/storetest"
	"github.com/pds-dev/pds/internal/testenv"
)

func TestConformance(t *testing.T) {
	testenv.PostgresURL(t)
	storetest.Run(t, testenv.Postgres.NewStore)
}
