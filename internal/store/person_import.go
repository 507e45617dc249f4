package store

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// PersonImports loads persons in bulk for the administrative command line
// (pds import persons).
type PersonImports interface {
	// ImportPersons applies the lines in order, all in one transaction: each
	// line is an upsert with UpsertPerson's rules (match by external_id,
	// then email, then f_id; an identifier held by another person is a
	// *domain.ConflictError; custom field values checked against the live
	// Person fields) followed by attaching its TagIDs as AddPersonTags does
	// (live tags of the account; one that is not is a domain.NotFound). Each
	// person created or changed is stamped and recorded in the outbox as any
	// person write is, so its events fire. All or nothing: the first line
	// the store refuses ends the import with an *ImportLineError and nothing
	// is written. An error from the sequence itself ends it the same way.
	//
	// The lines are consumed as they come; a store keeps only a bounded
	// window of them in memory.
	//
	// Once the import has committed, the store brings the planner's
	// statistics of every table it wrote up to date, on an engine whose
	// planner measures the rows, so that reads plan on what the import
	// left rather than on what was there before it.
	ImportPersons(ctx context.Context, accountID string, lines iter.Seq2[PersonImport, error], w Write) (PersonImportResult, error)
}

// PersonImport is one line of a person import.
type PersonImport struct {
	// Line is the 1-based line of the input, named in errors.
	Line   int
	Person domain.PersonUpsert
	// TagIDs are attached, as Add Person Tags does; tags the person holds
	// already stay, and so do those it holds that are not listed (but
	// for a restore, below).
	TagIDs []string
	// HasTagIDs says the line listed tag_ids (perhaps none).
	HasTagIDs bool

	// ID, when set, is the person the line was exported from (GET
	// /persons/export). When a person of the account has it, the line
	// restores that person: its identifiers, names and phone as the line
	// gives them, its live custom values and live tags exactly those of
	// the line (archived ones stay), and its dates the line's, whatever
	// its identifiers match. Otherwise the line is an upsert as any, and a
	// person it creates takes this id unless a person of the database (of
	// another account) has it.
	ID string
	// DateCreated and DateLastSeen, when set, are the dates of a person
	// the line restores or creates; a person matched by its identifiers
	// keeps its own.
	DateCreated, DateLastSeen *time.Time
}

// PersonImportCounts tells what an import did to the persons of its lines:
// created, changed (updated) or matched and left as they were (unchanged).
// A person written by several lines is counted once per line.
type PersonImportCounts struct {
	Created   int `json:"created"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
}

// PersonImportResult is what an import did, and what leaving the database
// ready for reads took after it.
type PersonImportResult struct {
	PersonImportCounts
	// Analyze is how long bringing the planner's statistics up to date took,
	// after the commit (zero where the engine needed nothing).
	Analyze time.Duration
	// AnalyzeErr is why that failed. The import stands either way: the
	// statistics catch up when the engine next analyzes the tables on its
	// own (PostgreSQL's autovacuum).
	AnalyzeErr error
	// ImportedThrough, when an import that commits chunk by chunk
	// (SQLite) failed partway, is the last line of the last chunk it
	// committed: lines up to it are imported (counted above), none after
	// it. Zero when nothing was.
	ImportedThrough int
}

// ImportLineError names the input line that made an import fail.
type ImportLineError struct {
	Line int
	Err  error
}

func (e *ImportLineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *ImportLineError) Unwrap() error { return e.Err }
