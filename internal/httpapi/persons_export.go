package httpapi

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/personview"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
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

// exportPersons streams every person of the account the filters select, in
// id order, one compact person per line (application/x-ndjson), a chunk at
// a time from the store, so memory stays flat whatever the account holds:
// the chunk being sent and the next one, read meanwhile (readChunks). Every
// chunk is read from one snapshot, taken before the first row, whose
// position in the change feed the Pds-Changes-Cursor header carries:
// following the feed from it gives every change committed after the
// snapshot and none before. An error before the first line is a problem
// document; after it, the connection is cut without the end of the chunked
// body, so no client takes a broken export for a whole one (it resumes with
// after=<the last id it got>).
func (s *Server) exportPersons(w http.ResponseWriter, r *http.Request) error {
	sel, err := exportSelection(r)
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(r.Context())
	defer stop() // the reader and the snapshot end with the handler, however it ends
	exp, pos, err := s.openExport(ctx, accountID(r))
	if err != nil {
		return err
	}
	defer exp.Close()
	chunks := s.readChunks(ctx, exp, sel)
	first := <-chunks
	if first.err != nil {
		return first.err
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pds-Changes-Cursor", service.EncodeChangeCursor(accountID(r), pos, s.now()))
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	out := bufio.NewWriterSize(w, 64<<10)
	for c, ok := first, true; ok; c, ok = <-chunks {
		if c.err != nil {
			s.abortExport(ctx, r, c.err)
		}
		_ = rc.SetWriteDeadline(time.Now().Add(exportWriteWait))
		for i := range c.persons {
			// Each line is made in the buffer's free space, so that it is
			// copied only when the buffer is full.
			if _, err := out.Write(personview.AppendExportLine(out.AvailableBuffer(), &c.persons[i])); err != nil {
				s.abortExport(ctx, r, err)
			}
		}
		if err := out.Flush(); err != nil {
			s.abortExport(ctx, r, err)
		}
		if err := rc.Flush(); err != nil {
			s.abortExport(ctx, r, err)
		}
	}
	return nil
}

// exportRead is one chunk of an export, or the error that ended it.
type exportRead struct {
	persons []domain.Person
	err     error
}

// readChunks reads the export's chunks one ahead of the writer, so that
// the database works while the last chunk is sent. The channel closes
// after the last chunk or an error, or when ctx ends.
func (s *Server) readChunks(ctx context.Context, exp store.PersonExport, sel domain.PersonExport) <-chan exportRead {
	chunks := make(chan exportRead, 1)
	go func() {
		defer close(chunks)
		for {
			persons, err := s.readChunk(ctx, exp, sel)
			select {
			case chunks <- exportRead{persons, err}:
			case <-ctx.Done():
				return
			}
			if err != nil || len(persons) < exportChunk {
				return
			}
			sel.After = persons[len(persons)-1].ID
		}
	}()
	return chunks
}

// readChunk reads one chunk under the database deadline: the export as a
// whole runs as long as the account is large, each of its reads does not.
func (s *Server) readChunk(ctx context.Context, exp store.PersonExport, sel domain.PersonExport) ([]domain.Person, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DatabaseTimeout)
	defer cancel()
	return exp.Read(ctx, sel, exportChunk)
}

// openExport begins the export's snapshot, which ctx holds for the whole
// export, and reads its position in the change feed: both under the
// database deadline, a frozen database giving a 503 in time.
func (s *Server) openExport(ctx context.Context, acc string) (store.PersonExport, domain.ChangePosition, error) {
	var pos domain.ChangePosition
	begun := make(chan struct{})
	// The transaction lives on ctx, past the deadline; only its beginning
	// is bounded by it.
	txCtx, abandon := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-begun:
		case <-time.After(s.cfg.DatabaseTimeout):
			abandon(context.DeadlineExceeded)
		}
	}()
	exp, err := s.store.OpenExport(txCtx, acc)
	close(begun)
	if err == nil && context.Cause(txCtx) == context.DeadlineExceeded {
		// The deadline passed as the transaction began: it is gone.
		exp.Close()
		err = context.DeadlineExceeded
	}
	if err != nil {
		abandon(nil)
		if context.Cause(txCtx) == context.DeadlineExceeded {
			err = context.DeadlineExceeded
		}
		return nil, pos, err
	}
	bounded, cancel := context.WithTimeout(ctx, s.cfg.DatabaseTimeout)
	defer cancel()
	if pos, err = exp.Position(bounded); err != nil {
		exp.Close()
		return nil, pos, err
	}
	return exp, pos, nil
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
