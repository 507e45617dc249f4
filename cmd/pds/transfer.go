package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"

	"github.com/pds-dev/pds/internal/store/transfer"
)

const transferHelp = `Copy a whole instance from one database to another, SQLite to PostgreSQL or back:
every account, API key (its hash), webhook subscription with its secrets, person, tag,
custom field and value, breadcrumb (a replayed Idempotency-Key finds it), suppression and
its secret, erasure record, campaign, project and the delivery log, every id kept.

It reads one snapshot of --from, which may be serving meanwhile (what it writes after the
snapshot is not carried: stop it, or stop writing to it, for a cut-over that leaves nothing
behind), and writes into --to, which must be empty: a new SQLite file or an empty
PostgreSQL database (or schema). --to is migrated first; one that holds an account is
refused, with exit status 2, and left as it was. Everything is written in one transaction
and each table's count checked against the snapshot before it commits, so a transfer that
fails leaves --to migrated and empty.

The change feed is numbered again in the target, in the source's order: a feed cursor
from the source does not carry over (read the feed from its start). Console sessions and
sign-in links, rate-limit windows and the recorded public URL stay behind. Sealed
secrets are copied sealed: serve the target with the same --secrets-key-file.`

// transfer copies an instance between databases (internal/store/transfer).
func (e cmdEnv) transfer(fs *pflag.FlagSet) func([]string) error {
	from := fs.String("from", "", "the database to copy: an SQLite file path or a postgres:// URL (required)")
	to := fs.String("to", "", "the empty database to copy into: an SQLite file path (created) or a postgres:// URL (required)")
	var jsonOut bool
	jsonFlag(fs, &jsonOut, "machine-readable output: one JSON object")
	keyFile := fs.String("secrets-key-file", "", "the key file the target will be served with, if the source's secrets are sealed "+
		"(used only to finish an erasure the snapshot caught under way; secrets are copied as they are)")
	return func([]string) error {
		switch {
		case *from == "":
			return usageError{errors.New("transfer: --from is required; e.g. --from pds.db")}
		case *to == "":
			return usageError{errors.New("transfer: --to is required; e.g. --to postgres://pds@db.example.com/pds")}
		}
		for _, d := range []struct{ flag, value string }{{"from", *from}, {"to", *to}} {
			if err := checkDatabaseFlag(d.flag, d.value); err != nil {
				return err
			}
		}
		keys, err := secretsKeys(&commonFlags{secretsKeyFile: *keyFile})
		if err != nil {
			return err
		}
		var bar *progressbar.ProgressBar
		opts := transfer.Options{From: *from, To: *to, Secrets: keys}
		if w := e.progressOn(); w != nil {
			opts.Progress = func(done, total int64) {
				if bar == nil {
					bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("transferring"),
						progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("rows"),
						progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(200*time.Millisecond),
						progressbar.OptionSetWidth(30), progressbar.OptionClearOnFinish())
				}
				_ = bar.Set64(done)
			}
		}
		rep, err := transfer.Run(e.ctx, opts)
		if bar != nil {
			_ = bar.Clear()
		}
		var notEmpty *transfer.NotEmptyError
		switch {
		case errors.As(err, &notEmpty), errors.Is(err, transfer.ErrSameDatabase):
			return usageError{fmt.Errorf("transfer: %w", err)}
		case err != nil:
			return fmt.Errorf("transfer from %s to %s: %w", redact(*from), redact(*to), err)
		}
		if jsonOut {
			tables := rep.Tables
			if tables == nil {
				tables = []transfer.TableReport{}
			}
			return e.printJSON(map[string]any{"from": redact(*from), "to": redact(*to), "rows": rep.Rows,
				"copy_ms": rep.Copy.Milliseconds(), "finish_ms": rep.Finish.Milliseconds(), "checked": true, "tables": tables})
		}
		fmt.Fprintf(e.stdout, "Transferred %s to %s: %s in %s (then %s for statistics and derived tables); every table's count checked.\n\n",
			redact(*from), redact(*to), plural(int(rep.Rows), "row", "rows"), rep.Copy.Round(time.Millisecond), rep.Finish.Round(time.Millisecond))
		rows := make([][]string, 0, len(rep.Tables))
		for _, t := range rep.Tables {
			rows = append(rows, []string{t.Table, t.Action, fmt.Sprint(t.Source), fmt.Sprint(t.Target), t.Note})
		}
		e.table("TABLE\tACTION\tSOURCE\tTARGET\tNOTE", rows)
		return nil
	}
}
