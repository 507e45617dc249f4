package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
	"github.com/pds-dev/pds/internal/store/storetest"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestImportLeavesTheWriterToOthers: while pds import persons writes into
// the file, another process's writes (a running server's) go on; the
// import commits chunk by chunk and leaves the write lock free between
// chunks. Before, it held the lock from its first line to its commit, and
// every write meanwhile waited for it and failed.
//
// The server's writes are made from within the import, as it reads a line
// past its first chunk, four times: each is one the import cannot be
// waiting behind, and the import goes on only once it went through, so
// that nothing depends on how fast either runs. The deadline is generous:
// should the import hold the lock across the pause, the write waits for it
// to the end and fails.
func TestImportLeavesTheWriterToOthers(t *testing.T) {
	t.Parallel()
	path := testenv.SQLite.NewDatabase(t)
	importer := testenv.SQLite.Open(t, path)
	server := testenv.SQLite.Open(t, path) // another process on the same file
	ctx := context.Background()
	acc := storetest.NewAccount(t, importer)
	now := storetest.Epoch

	const lines, every = 3000, 600
	var failed []error
	writes := 0
	seq := func(yield func(store.PersonImport, error) bool) {
		for i := range lines {
			if i > 0 && i%every == 0 {
				writes++
				wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				_, _, err := server.UpsertPerson(wctx, acc, domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: fmt.Sprint("live-", i)}},
					store.Write{Now: now, Window: time.Minute})
				cancel()
				if err != nil {
					failed = append(failed, fmt.Errorf("at line %d: %w", i+1, err))
				}
			}
			ext := fmt.Sprint("imported-", i)
			if !yield(store.PersonImport{Line: i + 1, Person: domain.PersonUpsert{ExternalID: domain.Opt[string]{Set: true, Value: ext}}}, nil) {
				return
			}
		}
	}
	res, err := importer.ImportPersons(ctx, acc, seq, store.Write{Now: now, Window: time.Minute})
	if err != nil || res.Created != lines {
		t.Fatalf("import: %+v, %v", res, err)
	}
	if len(failed) > 0 {
		t.Fatalf("%d of %d writes during the import failed: %v", len(failed), writes, errors.Join(failed...))
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
