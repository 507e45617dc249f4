package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/personview"
	"github.com/pds-dev/pds/internal/service"
)

// changesPoll is how often a read that waits asks the store again: a
// change any instance commits is answered within it (and its read).
const changesPoll = 250 * time.Millisecond

// changeItem is one entry of a page of the feed: a person, or a tombstone.
type changeItem struct {
	Cursor  string                    `json:"cursor"`
	Person  *personview.CompactPerson `json:"person,omitempty"`
	Deleted *deletedView              `json:"deleted,omitempty"`
}

// deletedView is a tombstone: the person's id and when, never an
// identifier or an attribute.
type deletedView struct {
	ID          string      `json:"id"`
	DateDeleted domain.Time `json:"date_deleted"`
	MergedInto  *string     `json:"merged_into,omitempty"`
}

type changesPage struct {
	Items   []changeItem `json:"items"`
	Next    string       `json:"next"`
	HasMore bool         `json:"has_more"`
}

// listChanges reads the change feed after a cursor (GET /persons/changes),
// waiting up to wait seconds for a change when there is none yet.
func (s *Server) listChanges(w http.ResponseWriter, r *http.Request) error {
	q := query(r)
	acc := accountID(r)
	var pos domain.ChangePosition
	if q.Has("after") {
		var err error
		if pos, err = service.DecodeChangeCursor(acc, q.Get("after"), s.now(), s.cfg.ChangeRetention); err != nil {
			return err
		}
	}
	size, err := boundedParam(q.Get("size"), q.Has("size"), "size", 1, domain.MaxChangesSize, domain.DefaultChangesSize)
	if err != nil {
		return err
	}
	waitSeconds, err := boundedParam(q.Get("wait"), q.Has("wait"), "wait", 0, int(domain.MaxChangesWait/time.Second), 0)
	if err != nil {
		return err
	}
	var deadline time.Time
	if waitSeconds > 0 {
		release, ok := s.changeWaiters.enter(principalOf(r.Context()).key.ID)
		if !ok {
			w.Header().Set("Retry-After", "1")
			return &statusError{http.StatusTooManyRequests, "This key has " + strconv.Itoa(domain.MaxChangesWaiters) +
				" reads of the change feed waiting already; wait for one to answer, or read without wait."}
		}
		defer release()
		deadline = time.Now().Add(time.Duration(waitSeconds) * time.Second)
	}
	for {
		entries, next, err := s.readChanges(r.Context(), acc, pos, size)
		if err != nil {
			return err
		}
		if len(entries) > 0 || !time.Now().Before(deadline) {
			return writeJSON(w, http.StatusOK, s.changesPage(acc, entries, next, size))
		}
		pos = next
		select {
		case <-r.Context().Done():
			return r.Context().Err()
		case <-time.After(min(changesPoll, time.Until(deadline))):
		}
	}
}

// readChanges reads one page under the database deadline: a read that
// waits runs longer, each of its reads does not.
func (s *Server) readChanges(ctx context.Context, acc string, pos domain.ChangePosition, size int) ([]domain.PersonChange, domain.ChangePosition, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DatabaseTimeout)
	defer cancel()
	return s.store.PersonChanges(ctx, acc, pos, size)
}

func (s *Server) changesPage(acc string, entries []domain.PersonChange, next domain.ChangePosition, size int) changesPage {
	now := s.now()
	out := changesPage{Items: make([]changeItem, len(entries)), Next: service.EncodeChangeCursor(acc, next, now),
		HasMore: len(entries) == size}
	for i, e := range entries {
		item := changeItem{Cursor: service.EncodeChangeCursor(acc, e.Position, now)}
		if e.Deleted != nil {
			item.Deleted = &deletedView{ID: e.PersonID, DateDeleted: domain.T(e.Deleted.At), MergedInto: e.Deleted.MergedInto}
		} else {
			p := personview.Compact(e.Person)
			item.Person = &p
		}
		out.Items[i] = item
	}
	return out
}

// boundedParam reads an optional integer parameter from lo to hi.
func boundedParam(v string, given bool, name string, lo, hi, def int) (int, error) {
	if !given {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, domain.ParamError(name, "%s must be an integer from %d to %d; got %q.", name, lo, hi, v)
	}
	return n, nil
}

// waiters bounds the reads of the feed that wait at once, per key, on this
// instance.
type waiters struct {
	mu  sync.Mutex
	n   map[string]int
	max int
}

// enter takes a place for key, and says whether there was one.
func (ws *waiters) enter(key string) (release func(), ok bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.n == nil {
		ws.n = map[string]int{}
	}
	if ws.n[key] >= ws.max {
		return nil, false
	}
	ws.n[key]++
	return func() {
		ws.mu.Lock()
		defer ws.mu.Unlock()
		if ws.n[key]--; ws.n[key] == 0 {
			delete(ws.n, key)
		}
	}, true
}
