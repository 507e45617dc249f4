package outage_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/clock"
	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/outage"
)

// TestOutageLoggedOnce: however many failures an outage has, it is logged
// once as it begins and once as it ends; only work served after a quiet
// moment ends it, and only a write ends a full disk's.
func TestOutageLoggedOnce(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	clk := clock.NewFake(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	l := outage.New(slog.New(slog.NewJSONHandler(&buf, nil)), clk)
	unreachable := &domain.UnavailableError{Cause: domain.CauseUnreachable, Err: errors.New("connection refused")}
	full := &domain.UnavailableError{Cause: domain.CauseDiskFull, Err: errors.New("database or disk is full")}

	l.Served(true) // nothing under way: nothing to log
	for range 100 {
		l.Failed(unreachable)
		l.Failed(full)
		clk.Advance(10 * time.Millisecond)
	}
	l.Served(true) // too soon after the last failure
	clk.Advance(time.Second)
	l.Served(false) // a read ends the unreachable database's outage, not the full disk's
	l.Served(false)
	l.Served(true)
	l.Served(true)

	type line struct {
		Msg, Level, Cause string
		Failures          int
		FailingMS         int64 `json:"failing_ms"`
	}
	var got []line
	for raw := range strings.Lines(buf.String()) {
		var l line
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	want := []line{
		{Msg: "database outage began", Level: "ERROR", Cause: "database_unreachable"},
		{Msg: "database outage began", Level: "ERROR", Cause: "disk_full"},
		{Msg: "database outage ended", Level: "WARN", Cause: "database_unreachable", Failures: 100, FailingMS: 990},
		{Msg: "database outage ended", Level: "WARN", Cause: "disk_full", Failures: 100, FailingMS: 990},
	}
	if len(got) != len(want) {
		t.Fatalf("logged %d lines, want %d:\n%s", len(got), len(want), buf.String())
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestNilLogRecordsNothing: a server built without a Log works.
func TestNilLogRecordsNothing(t *testing.T) {
	var l *outage.Log
	l.Failed(&domain.UnavailableError{Cause: domain.CauseTimeout, Err: errors.New("deadline")})
	l.Served(true)
}
