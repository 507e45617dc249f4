package service

import (
	"reflect"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// at is t0 plus m minutes.
func at(m float64) time.Time { return t0.Add(time.Duration(m * float64(time.Minute))) }

func atPtr(m float64) *time.Time { v := at(m); return &v }

const window = 5 * time.Minute

func TestBurstAfterChange(t *testing.T) {
	created := Burst{Event: domain.EventPersonCreated, OpenedAt: at(0), LastChangeAt: at(0), DueAt: at(5)}
	closed := created // its window closed at minute 5 and no worker took it yet
	waiting := Burst{Event: domain.EventPersonCreated, OpenedAt: at(0), LastChangeAt: at(6), DueAt: at(5),
		NextOpenedAt: atPtr(6), NextDueAt: atPtr(11)}
	for _, tc := range []struct {
		name    string
		cur     *Burst
		created bool
		now     time.Time
		want    Burst
	}{
		{"6.1 rule 3: a creation opens a person.created burst held for the window", nil, true, at(0),
			Burst{Event: domain.EventPersonCreated, OpenedAt: at(0), LastChangeAt: at(0), DueAt: at(5)}},
		{"6.1 rule 4: a change with no burst open opens a person.updated burst", nil, false, at(0),
			Burst{Event: domain.EventPersonUpdated, OpenedAt: at(0), LastChangeAt: at(0), DueAt: at(5)}},
		{"6.1 rule 2: a change inside the window slides it; rule 3: the burst stays person.created", &created, false, at(4),
			Burst{Event: domain.EventPersonCreated, OpenedAt: at(0), LastChangeAt: at(4), DueAt: at(9)}},
		{"6.1 rule 2: the window slides from the latest change, not the opening one",
			&Burst{Event: domain.EventPersonUpdated, OpenedAt: at(0), LastChangeAt: at(4), DueAt: at(9)}, false, at(8),
			Burst{Event: domain.EventPersonUpdated, OpenedAt: at(0), LastChangeAt: at(8), DueAt: at(13)}},
		{"decisions 8: a change as the window closes opens the next burst behind it", &closed, false, at(5),
			Burst{Event: domain.EventPersonCreated, OpenedAt: at(0), LastChangeAt: at(5), DueAt: at(5), NextOpenedAt: atPtr(5), NextDueAt: atPtr(10)}},
		{"decisions 8: a change after the window closed leaves the closed burst as it was", &closed, false, at(7),
			Burst{Event: domain.EventPersonCreated, OpenedAt: at(0), LastChangeAt: at(7), DueAt: at(5), NextOpenedAt: atPtr(7), NextDueAt: atPtr(12)}},
		{"6.1 rule 2: a further change slides the waiting next burst, which keeps its opening", &waiting, false, at(9),
			Burst{Event: domain.EventPersonCreated, OpenedAt: at(0), LastChangeAt: at(9), DueAt: at(5), NextOpenedAt: atPtr(6), NextDueAt: atPtr(14)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := BurstAfterChange(tc.cur, tc.created, tc.now, window); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("burst %+v\nwant  %+v", got, tc.want)
			}
		})
	}
}

func TestCloseBurst(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cur     Burst
		claimed time.Time
		want    BurstClose
	}{
		{"6.1 rule 1: a burst closed as claimed is delivered with the event it opened with, and goes",
			Burst{Event: domain.EventPersonCreated, OpenedAt: at(0), LastChangeAt: at(2), DueAt: at(7)}, at(7),
			BurstClose{Deliver: true}},
		{"6.1 rule 2: a change that slid the window after the claim keeps the burst open",
			Burst{Event: domain.EventPersonCreated, OpenedAt: at(0), LastChangeAt: at(6), DueAt: at(11)}, at(7),
			BurstClose{}},
		{"decisions 8: the burst waiting behind a delivered one takes its place as person.updated",
			Burst{Event: domain.EventPersonCreated, OpenedAt: at(0), LastChangeAt: at(9), DueAt: at(5), NextOpenedAt: atPtr(6), NextDueAt: atPtr(14)}, at(5),
			BurstClose{Deliver: true, Next: &Burst{Event: domain.EventPersonUpdated, OpenedAt: at(6), LastChangeAt: at(9), DueAt: at(14)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CloseBurst(tc.cur, tc.claimed); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("close %+v, want %+v", got, tc.want)
			}
		})
	}
}
