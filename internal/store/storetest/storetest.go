// Package storetest is the one conformance suite every storage engine runs.
// Each concern adds its cases from its own file with register, so the suite
// grows without a central list to edit.
package storetest

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// NewStore opens an empty store of the engine under test.
type NewStore func(t testing.TB) store.Store

type suite struct {
	name string
	fn   func(t *testing.T, newStore NewStore)
}

var suites []suite

// register adds a group of cases; call it from init.
func register(name string, fn func(t *testing.T, newStore NewStore)) {
	suites = append(suites, suite{name, fn})
}

// Run runs every registered case against the engine. The groups run in
// parallel: each opens stores of its own through newStore (a fresh SQLite
// file or PostgreSQL schema) and makes its own accounts, and no case touches
// package-level state. Cases inside a group that each open their own store
// run in parallel too; cases sharing their group's store run in order.
func Run(t *testing.T, newStore NewStore) {
	sorted := append([]suite(nil), suites...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	for _, s := range sorted {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			s.fn(t, newStore)
		})
	}
}

// Epoch is a fixed instant the cases build times from.
var Epoch = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// NewAccount creates an account of its own for one case.
func NewAccount(t testing.TB, st store.Store) string {
	t.Helper()
	id := domain.NewID("acc")
	if err := st.CreateAccount(context.Background(), domain.Account{ID: id, Name: "test " + id, CreatedAt: Epoch}); err != nil {
		t.Fatalf("create account: %v", err)
	}
	return id
}
