package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriterLeavesCheckpointsToTheCheckpointer: commits past SQLite's
// default threshold of 1,000 pages stay in the WAL until the checkpointer
// copies them, and a WAL past restartFrames starts over on the next write.
func TestWriterLeavesCheckpointsToTheCheckpointer(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pds.db")
	// Stopped at once: the test alone runs its checkpoints.
	c, err := startCheckpointer(path)
	if err != nil {
		t.Fatal(err)
	}
	c.stop.Do(func() { close(c.quit) })
	<-c.done
	defer c.db.Close()

	w, err := sql.Open("sqlite", dsn(path, false, busyTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.SetMaxOpenConns(1)
	if _, err := w.ExecContext(ctx, `CREATE TABLE filler (b BLOB)`); err != nil {
		t.Fatal(err)
	}
	fill := func(commits int) {
		t.Helper()
		for range commits {
			// About three pages a commit.
			if _, err := w.ExecContext(ctx, `INSERT INTO filler VALUES (?)`, []byte(strings.Repeat("x", 10000))); err != nil {
				t.Fatal(err)
			}
		}
	}
	fill(600)

	c.restartFrames = 1 << 30
	got, err := c.run(ctx, "PASSIVE")
	if err != nil {
		t.Fatal(err)
	}
	if got.frames < 1500 {
		t.Fatalf("the WAL holds %d frames after 600 commits of three pages: the writer checkpointed on its own", got.frames)
	}
	fill(1)
	got, err = c.checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.copied != got.frames {
		t.Fatalf("checkpoint copied %d of %d frames with nothing else running", got.copied, got.frames)
	}

	c.restartFrames = 1000
	if _, err := c.checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	fill(1)
	got, err = c.run(ctx, "PASSIVE")
	if err != nil {
		t.Fatal(err)
	}
	if got.frames > 10 {
		t.Fatalf("the WAL holds %d frames after a restart and one commit, want it started over", got.frames)
	}
}
