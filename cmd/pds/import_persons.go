package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi"
	"github.com/pds-dev/pds/internal/store"
)

// maxLineTags bounds tag_ids on one line, as Add Person Tags bounds its body.
const maxLineTags = 100

const importPersonsHelp = `Each line is one Upsert Person body: {"external_id", "email", "f_id", "first_name",
"last_name", "phone", "custom_fields"}, plus "tag_ids": live tags of the account to attach.
Each line follows Upsert Person: it matches by external_id, then email, then f_id, or
creates a person; an identifier another person holds, an unknown or archived tag, or an
unknown custom field fails the import at that line.

The lines of GET /persons/export are taken as they are ("id", "date_created",
"date_last_seen" and "aliases" too; aliases are not restored: pds transfer copies them). Into the account they were exported from, a line whose id is a
person of the account restores that person exactly as exported: identifiers, names,
phone, its custom values and tags exactly those of the line (others removed), and its
dates; a person already so is unchanged. Into another account, ids are kept only where
no person of the database has them (a person of another account in the same database
does: the new person gets a new id); custom fields are matched by key among the
account's Person fields; tag ids are another account's tags, which this account does
not hold, so such lines fail: drop them first (jq -c '.tag_ids = []'). A person created
keeps the line's dates; one matched by identifiers keeps its own. Lines are decoded as strictly as API
bodies (unknown members, wrong types, a member twice are errors). Every line is checked
before anything is written: a bad line imports nothing. On PostgreSQL the file is
written in one transaction, so a line the database refuses imports nothing either; on
SQLite, whose one writer would keep a running server's writes waiting for the whole
import, each chunk of 512 lines commits on its own, and a line the database refuses
stops the import there, with the lines of the chunks before it imported (the error says
up to which line). Person events fire for every person created or changed, as for the
API. Blank lines are skipped.`

// importPersons loads persons from JSON lines. The input is read twice: a
// first pass checks every line without the database, so that a bad line
// costs no write; the second streams the lines into the store (one
// transaction, or a chunk at a time on SQLite). Standard input is kept in a
// temporary file for the second pass.
func (e cmdEnv) importPersons(fs *pflag.FlagSet) func([]string) error {
	c := commonFlagsOn(fs)
	account := fs.String("account", "", "account id (required)")
	window := fs.Duration("webhook-window", 5*time.Minute, "coalescing window of the person events the import opens (as pds serve's)")
	return func(files []string) error {
		switch {
		case *account == "":
			return usageError{errors.New("import persons: --account is required; e.g. --account acc_01a209d69f8a9aba61380d0e (pds accounts list)")}
		case *window <= 0:
			return positiveDuration("webhook-window", *window)
		}
		src, err := e.openSpooled(files[0])
		if err != nil {
			return fmt.Errorf("import persons: %w", err)
		}
		defer src.close()

		started := time.Now()
		progress := e.progressOn()
		n, err := checkPersonLines(src.f, progress)
		if err != nil {
			return fmt.Errorf("import persons: nothing was imported: %w", err)
		}
		st, err := openAccountStore(e.ctx, c, "import persons", *account)
		if err != nil {
			return err
		}
		defer st.Close()
		if _, err := src.f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		var bar *progressbar.ProgressBar
		if progress != nil && n > 0 {
			bar = progressbar.NewOptions(n, progressbar.OptionSetWriter(progress), progressbar.OptionSetDescription("importing"),
				progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("persons"),
				progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(200*time.Millisecond),
				progressbar.OptionSetWidth(30), progressbar.OptionClearOnFinish())
		}
		res, err := st.ImportPersons(e.ctx, *account, readAhead(personLines(src.f, bar), 512), store.Write{Now: time.Now().UTC(), Window: *window,
			Later: func() time.Time { return time.Now().UTC() }})
		if bar != nil {
			_ = bar.Clear()
		}
		if err != nil && res.ImportedThrough > 0 {
			return fmt.Errorf("import persons: lines 1 to %d were imported (%d created, %d updated, %d unchanged), none after them: %w; "+
				"import the rest from line %d on (for example: tail -n +%d FILE)",
				res.ImportedThrough, res.Created, res.Updated, res.Unchanged, err, res.ImportedThrough+1, res.ImportedThrough+1)
		}
		if err != nil {
			return fmt.Errorf("import persons: nothing was imported: %w", err)
		}
		if res.AnalyzeErr != nil {
			fmt.Fprintf(e.stderr, "import persons: the persons are imported, but bringing the planner's statistics up to date failed (%v); "+
				"reads may be slow until the database analyzes the tables (autovacuum, or ANALYZE).\n", res.AnalyzeErr)
		}
		if c.json {
			return e.printJSON(map[string]any{"kind": "persons", "account_id": *account, "imported": n,
				"created": res.Created, "updated": res.Updated, "unchanged": res.Unchanged, "analyze_ms": res.Analyze.Milliseconds()})
		}
		analyzed := "" // an engine that needed nothing after the import did nothing
		if res.Analyze > 0 {
			analyzed = fmt.Sprintf("; planner statistics brought up to date in %s", res.Analyze.Round(time.Millisecond))
		}
		fmt.Fprintf(e.stdout, "Imported %d persons into account %s in %s: %d created, %d updated, %d unchanged%s.\n",
			n, *account, time.Since(started).Round(time.Millisecond), res.Created, res.Updated, res.Unchanged, analyzed)
		return nil
	}
}

// progressOn returns where a progress bar may be drawn: standard error when
// it is a terminal, else nil (a pipe or a file gets only the summary).
func (e cmdEnv) progressOn() io.Writer {
	if f, ok := e.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return f
	}
	return nil
}

// spooled is an input that can be read twice.
type spooled struct {
	f     *os.File
	close func()
}

// openSpooled opens the file, or copies standard input into a temporary
// file, removed on close.
func (e cmdEnv) openSpooled(name string) (spooled, error) {
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return spooled{}, err
		}
		return spooled{f, func() { f.Close() }}, nil
	}
	f, err := os.CreateTemp("", "pds-import-*.jsonl")
	if err != nil {
		return spooled{}, err
	}
	drop := func() { f.Close(); os.Remove(f.Name()) }
	if _, err := io.Copy(f, e.stdin); err != nil {
		drop()
		return spooled{}, fmt.Errorf("reading standard input: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		drop()
		return spooled{}, err
	}
	return spooled{f, drop}, nil
}

// personLine is one line of the input: an Upsert Person body plus tag_ids,
// and the members of a line of GET /persons/export (id and the dates).
type personLine struct {
	domain.PersonUpsert `json:",inline"`
	// Pointers tell a null item, which would decode as "", from a string.
	TagIDs       []*string    `json:"tag_ids"`
	ID           *string      `json:"id"`
	DateCreated  *domain.Time `json:"date_created"`
	DateLastSeen *domain.Time `json:"date_last_seen"`
	// Aliases, on the line of a person others were merged into, are read
	// (strictly, as the export writes them) and left out: they belong to
	// a merge the database imported into has not seen, and writing them
	// would make identifiers resolve to a person that no merge there made.
	Aliases []domain.PersonAlias `json:"aliases"`
}

// decodePersonLine reads and checks one line as POST /persons reads and
// checks its body, and checks its tag_ids as Add Person Tags does (without
// the database: whether each tag is live is the store's to say).
func decodePersonLine(raw []byte) (store.PersonImport, error) {
	var l personLine
	if err := httpapi.DecodeObject("The line", raw, &l); err != nil {
		return store.PersonImport{}, lineProblem(err)
	}
	if err := l.Normalize(); err != nil {
		return store.PersonImport{}, lineProblem(err)
	}
	if len(l.TagIDs) > maxLineTags {
		return store.PersonImport{}, fmt.Errorf("/tag_ids may hold at most %d tag ids; got %d", maxLineTags, len(l.TagIDs))
	}
	rec := store.PersonImport{Person: l.PersonUpsert, TagIDs: make([]string, len(l.TagIDs)), HasTagIDs: l.TagIDs != nil}
	if l.ID != nil {
		if !strings.HasPrefix(*l.ID, domain.PersonIDPrefix+"_") {
			return store.PersonImport{}, fmt.Errorf("/id: %q is not a person id (per_...)", *l.ID)
		}
		rec.ID = *l.ID
	}
	if l.DateCreated != nil {
		rec.DateCreated = &l.DateCreated.Time
	}
	if l.DateLastSeen != nil {
		rec.DateLastSeen = &l.DateLastSeen.Time
	}
	for i, id := range l.TagIDs {
		if id == nil || *id == "" {
			return store.PersonImport{}, fmt.Errorf("/tag_ids/%d: every item of tag_ids must be a non-empty tag id string", i)
		}
		rec.TagIDs[i] = *id
	}
	return rec, nil
}

// lineProblem words a validation error as "<pointer>: <detail>".
func lineProblem(err error) error {
	var ve *domain.ValidationError
	if errors.As(err, &ve) && len(ve.Errors) > 0 && ve.Errors[0].Pointer != "" {
		return fmt.Errorf("%s: %s", ve.Errors[0].Pointer, strings.TrimSuffix(ve.Errors[0].Detail, "."))
	}
	return err
}

// scanLines calls fn with each line of r and its 1-based number.
func scanLines(r io.Reader, fn func(line int, raw []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxImportLine)
	line := 0
	for sc.Scan() {
		line++
		if err := fn(line, sc.Bytes()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("line %d: longer than %d bytes", line+1, maxImportLine)
		}
		return err
	}
	return nil
}

// checkPersonLines is the first pass: it checks every line and returns how
// many persons the input holds, or the bad lines by number.
func checkPersonLines(r io.Reader, progress io.Writer) (int, error) {
	var (
		n   int
		bad []string
	)
	if progress != nil {
		fmt.Fprint(progress, "checking lines...\r")
	}
	err := scanLines(r, func(line int, raw []byte) error {
		if len(bytes.TrimSpace(raw)) == 0 {
			return nil
		}
		if _, err := decodePersonLine(raw); err != nil {
			bad = append(bad, fmt.Sprintf("line %d: %v", line, err))
			return nil
		}
		n++
		return nil
	})
	if err != nil {
		return 0, err
	}
	switch {
	case len(bad) == 1:
		return 0, errors.New(bad[0])
	case len(bad) > 1:
		total := len(bad)
		if total > maxReportedLines {
			bad = append(bad[:maxReportedLines], fmt.Sprintf("and %d more", total-maxReportedLines))
		}
		return 0, fmt.Errorf("%d bad lines:\n%s", total, strings.Join(bad, "\n"))
	}
	return n, nil
}

// personLines is the second pass: the lines, decoded again, one at a time.
// A line that no longer decodes (the file changed between the passes) ends
// the sequence with its error.
func personLines(r io.Reader, bar *progressbar.ProgressBar) iter.Seq2[store.PersonImport, error] {
	return func(yield func(store.PersonImport, error) bool) {
		stop := errors.New("stopped")
		err := scanLines(r, func(line int, raw []byte) error {
			if len(bytes.TrimSpace(raw)) == 0 {
				return nil
			}
			rec, err := decodePersonLine(raw)
			if err != nil {
				return fmt.Errorf("line %d changed since it was checked: %v", line, err)
			}
			rec.Line = line
			if bar != nil {
				_ = bar.Add(1)
			}
			if !yield(rec, nil) {
				return stop
			}
			return nil
		})
		if err != nil && err != stop {
			yield(store.PersonImport{}, err)
		}
	}
}
