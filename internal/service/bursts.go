package service

import (
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// Burst is a person's outbox row: the open burst of changes and, once its
// window has closed but before a worker has turned it into deliveries, the
// next burst waiting behind it (NextOpenedAt and NextDueAt set).
type Burst struct {
	Event        string
	OpenedAt     time.Time
	LastChangeAt time.Time
	DueAt        time.Time
	NextOpenedAt *time.Time
	NextDueAt    *time.Time
}

// waiting tells whether a next burst waits behind this one.
func (b Burst) waiting() bool { return b.NextDueAt != nil }

// BurstAfterChange decides how a change to a person at now enters its
// outbox row cur (nil when the person has none), spec section 6.1:
//
//   - no burst: the change opens one, whose event is person.created when the
//     change created the person, else person.updated;
//   - an open burst (due after now): the change slides its window to close
//     a window after now; the event stays the one it opened with;
//   - a closed burst not yet delivered: it is left as it closed, and the
//     change opens, or slides, the next burst waiting behind it.
func BurstAfterChange(cur *Burst, created bool, now time.Time, window time.Duration) Burst {
	due := now.Add(window)
	if cur == nil {
		event := domain.EventPersonUpdated
		if created {
			event = domain.EventPersonCreated
		}
		return Burst{Event: event, OpenedAt: now, LastChangeAt: now, DueAt: due}
	}
	next := *cur
	next.LastChangeAt = now
	if cur.DueAt.After(now) {
		next.DueAt = due
		return next
	}
	// Copies, so that now and due stay on the stack on the common paths.
	nextOpened, nextDue := now, due
	if next.NextOpenedAt == nil {
		next.NextOpenedAt = &nextOpened
	}
	next.NextDueAt = &nextDue
	return next
}

// BurstClose is what closing a claimed burst does.
type BurstClose struct {
	// Deliver: the burst closed as claimed, so its event is delivered.
	// Otherwise a change slid it after the claim and it is handed back.
	Deliver bool
	// Next is the burst that takes the row's place once delivered; nil
	// when the row goes.
	Next *Burst
}

// CloseBurst decides the close of the burst cur that a worker claimed when
// it was due at claimedDue. A change since then that slid the window keeps
// the burst open. Otherwise it is delivered, and a burst waiting behind it
// becomes the open one: it began after the window closed, with a change to
// an existing person, so it is person.updated (spec section 6.1 rules 3
// and 4, decisions.md section 8).
func CloseBurst(cur Burst, claimedDue time.Time) BurstClose {
	if !cur.DueAt.Equal(claimedDue) {
		return BurstClose{}
	}
	if !cur.waiting() {
		return BurstClose{Deliver: true}
	}
	return BurstClose{Deliver: true, Next: &Burst{
		Event: domain.EventPersonUpdated, OpenedAt: *cur.NextOpenedAt, LastChangeAt: cur.LastChangeAt, DueAt: *cur.NextDueAt,
	}}
}
