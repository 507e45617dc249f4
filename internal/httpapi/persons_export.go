package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/personview"
)

const (
	// exportChunk is how many persons one read of an export takes: the
	// export holds one chunk in memory at a time, whatever the account.
	exportChunk = 1000
	// exportWriteWait is how long a client may take to receive one chunk.
	// It replaces the server's WriteTimeout, which bounds a whole response
	// and would cut a long export that is going fine.
	exportWriteWait = time.Minute
)

// exportParams are the only query parameters of Export Persons: a filter
// misspelt must not silently export everyone.
var exportParams = map[string]bool{"updated_since": true, "tag_ids": true, "after": true}

// exportPersons streams every person of the account the filters select, in
// id order, one compact person per line (application/x-ndjson), a chunk at
// a time from the store, so memory stays flat whatever the account holds.
// Each chunk is read when the one before it is sent, so a person changed
// meanwhile may appear in its newer state. An error before the first line
// is a problem document; after it, the connection is cut without the end
// of the chunked body, so no client takes a broken export for a whole one
// (it resumes with after=<the last id it got>).
func (s *Server) exportPersons(w http.ResponseWriter, r *http.Request) error {
	sel, err := exportSelection(r)
	if err != nil {
		return err
	}
	ctx, acc := r.Context(), accountID(r)
	chunk, err := s.store.ExportPersons(ctx, acc, sel, exportChunk)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	out := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(out) // one line per value
	for {
		_ = rc.SetWriteDeadline(time.Now().Add(exportWriteWait))
		for i := range chunk {
			if err := enc.Encode(personview.Compact(&chunk[i])); err != nil {
				s.abortExport(ctx, r, err)
			}
		}
		if err := out.Flush(); err != nil {
			s.abortExport(ctx, r, err)
		}
		if err := rc.Flush(); err != nil {
			s.abortExport(ctx, r, err)
		}
		if len(chunk) < exportChunk {
			return nil
		}
		sel.After = chunk[len(chunk)-1].ID
		if chunk, err = s.store.ExportPersons(ctx, acc, sel, exportChunk); err != nil {
			s.abortExport(ctx, r, err)
		}
	}
}

// abortExport ends an export whose status is sent: net/http cuts the
// connection. A client that went away is no failure of the server.
func (s *Server) abortExport(ctx context.Context, r *http.Request, err error) {
	if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
		s.log.LogAttrs(ctx, slog.LevelError, "export cut short",
			slog.String("request_id", requestID(ctx)), slog.String("error", err.Error()))
	}
	panic(http.ErrAbortHandler)
}

// exportSelection reads the parameters of Export Persons.
func exportSelection(r *http.Request) (domain.PersonExport, error) {
	var sel domain.PersonExport
	for name := range query(r) {
		if !exportParams[name] {
			return sel, domain.ParamError(printable(name), "%s is not a parameter of Export Persons; it takes updated_since, tag_ids and after.", printable(name))
		}
	}
	since, err := parseTimeParam(r, "updated_since")
	if err != nil {
		return sel, err
	}
	after, err := nonEmptyParam(r, "after")
	if err != nil {
		return sel, err
	}
	tagIDs, err := tagIDsParam(r)
	if err != nil {
		return sel, err
	}
	sel.UpdatedSince, sel.TagIDs = since, tagIDs
	if after != nil {
		sel.After = *after
	}
	return sel, nil
}
