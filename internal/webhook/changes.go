package webhook

import (
	"context"
	"encoding/json"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
)

// A subscription with include_changes gets the members a burst changed
// (service.ChangedMembers): its end is the person as rendered for its
// body, its start what the person's previous closed burst rendered, kept
// in delivered_states once that burst's transaction committed, for every
// account with such a subscription. Kept after the commit rather than in
// it, a state whose write fails (a crash in between) leaves the older one,
// so the next burst lists more members than it changed, never fewer.

// tracked reads the compared members out of a rendered extended view.
func tracked(data json.RawMessage) domain.TrackedMembers {
	var m domain.TrackedMembers
	_ = json.Unmarshal(data, &m) // a view that is not one compares as empty
	return m
}

// changes is the changes member of b's body: for person.updated what the
// burst changed, for every other event none.
func (r rendered) changes(b domain.Burst, data json.RawMessage) []string {
	if b.Event != domain.EventPersonUpdated {
		return []string{}
	}
	var start *domain.TrackedMembers
	if s, ok := r.starts[b.PersonID]; ok {
		start = &s
	}
	return service.ChangedMembers(start, tracked(data))
}

// keepStates keeps, for the accounts that include changes, the persons of
// the bursts that closed as rendered: the start of their next bursts. A
// failure is logged; the next burst then compares with an older start.
func (w *Worker) keepStates(ctx context.Context, r rendered, bursts []domain.Burst, closed []bool) {
	byAccount := map[string]map[string]domain.TrackedMembers{}
	for i, b := range bursts {
		data, ok := r.data[b.PersonID]
		if i >= len(closed) || !closed[i] || !r.keep[b.AccountID] || !ok {
			continue
		}
		if byAccount[b.AccountID] == nil {
			byAccount[b.AccountID] = map[string]domain.TrackedMembers{}
		}
		byAccount[b.AccountID][b.PersonID] = tracked(data)
	}
	for acc, states := range byAccount {
		if err := w.jobs.KeepDeliveredStates(ctx, acc, states); err != nil {
			w.failed("webhook bursts: keeping the states changes compares with", err, "account_id", acc, "persons", len(states))
		}
	}
}
