package sqlite_test

import (
	"testing"

	"github.com/pds-dev/pds/internal/store/storetest"
	"github.com/pds-dev/pds/internal/testenv"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, testenv.SQLite.NewStore)
}
