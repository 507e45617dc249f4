package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/storetest"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestImportLeavesTheWriterToOthers: while pds import persons writes into
// the file, another process's writes (a running server's) go on, each
// within its deadline; the import commits chunk by chunk and leaves the
// write lock free between chunks. Before, it held the lock from its first
// line to its commit, and every write meanwhile waited for it and failed.
func TestImportLeavesTheWriterToOthers(t *testing.T) {
	t.Parallel()
	path := testenv.SQLite.NewDatabase(t)
	importer := testenv.SQLite.Open(t, path)
	server := testenv.SQLite.Open(t, path) // another process on the same file
	ctx := context.Background()
	acc := storetest.NewAccount(t, importer)
	now := storetest.Epoch

	// The lines come slowly, as from a slow disk: the import takes far
	// longer than a write's deadline (a second here, four in pds serve).
	const lines = 3000
	seq := func(yield func(store.PersonImport, error) bool) {
		for i := range lines {
			time.Sleep(200 * time.Microsecond)
			ext := fmt.Sprint("imported-", i)
			if !yield(store.PersonImport{Line: i + 1, Person: domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: ext}}}, nil) {
				return
			}
		}
	}
	var wg sync.WaitGroup
	var importErr error
	var res store.PersonImportResult
	wg.Go(func() {
		res, importErr = importer.ImportPersons(ctx, acc, seq, store.Write{Now: now, Window: time.Minute})
	})
	var failed []error
	for i := 0; i < 20; i++ {
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		_, _, err := server.UpsertPerson(wctx, acc, domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: fmt.Sprint("live-", i)}},
			store.Write{Now: now, Window: time.Minute})
		cancel()
		if err != nil {
			failed = append(failed, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	if importErr != nil || res.Created != lines {
		t.Fatalf("import: %+v, %v", res, importErr)
	}
	if len(failed) > 0 {
		t.Fatalf("%d of 20 writes during the import failed; first: %v", len(failed), errors.Join(failed[0]))
	}
}

// TestImportStopsAtARefusedLineWithTheChunksBefore: on SQLite a line the
// database refuses ends the import with the chunks before it committed,
// and the result names the last line they hold.
func TestImportStopsAtARefusedLineWithTheChunksBefore(t *testing.T) {
	t.Parallel()
	st := testenv.SQLite.NewStore(t)
	ctx := context.Background()
	acc := storetest.NewAccount(t, st)
	w := store.Write{Now: storetest.Epoch, Window: time.Minute}
	seq := func(yield func(store.PersonImport, error) bool) {
		for i := range 1200 {
			rec := store.PersonImport{Line: i + 1, Person: domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: fmt.Sprint("p-", i)}}}
			if i == 1100 {
				rec.TagIDs = []string{"tag_unknown"}
			}
			if !yield(rec, nil) {
				return
			}
		}
	}
	res, err := st.ImportPersons(ctx, acc, seq, w)
	var le *store.ImportLineError
	if !errors.As(err, &le) || le.Line != 1101 {
		t.Fatalf("import: %v, want line 1101 refused", err)
	}
	if res.ImportedThrough != 1024 || res.Created != 1024 {
		t.Fatalf("imported through line %d, %+v; want the two chunks before the refused line's, 1024 lines", res.ImportedThrough, res.PersonImportCounts)
	}
	counts, err := st.AccountCounts(ctx, acc)
	if err != nil || counts.Persons != 1024 {
		t.Fatalf("persons after the import: %+v, %v", counts, err)
	}
}
