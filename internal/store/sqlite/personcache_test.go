package sqlite_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// TestPersonCacheSeesEveryCommit: while other requests keep the person
// cache busy and full, every change to a person, made by this process or
// by another one on the same file, through the person itself or through a
// tag it holds, shows on the very next Get Person.
func TestPersonCacheSeesEveryCommit(t *testing.T) {
	ctx := context.Background()
	server, other, acc := twoProcesses(t)
	now := acc.CreatedAt
	w := store.Write{Now: now, Window: time.Second}
	text := func(v string) domain.Opt[string] { return domain.Opt[string]{Set: true, Value: v} }
	upsert := func(ext string) *domain.Person {
		t.Helper()
		p, _, err := server.UpsertPerson(ctx, acc.ID, domain.PersonUpsert{ExternalID: text(ext)}, w)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	name, tagContext := "t0", "person"
	tag, err := service.NewTag(acc.ID, &name, &tagContext, now)
	if err != nil {
		t.Fatal(err)
	}
	if tag, _, err = other.CreateTag(ctx, tag); err != nil {
		t.Fatal(err)
	}

	busy := upsert("busy")
	target := upsert("target")
	if _, err := server.AddPersonTags(ctx, acc.ID, target.ID, []string{tag.ID}, w); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := server.GetPerson(ctx, acc.ID, busy.ID); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	writers := map[string]store.Store{"this process": server, "another process": other}
	for i := range 60 {
		for who, st := range writers {
			// Fill the cache, then change the person behind it.
			if _, err := server.GetPerson(ctx, acc.ID, target.ID); err != nil {
				t.Fatal(err)
			}
			first := fmt.Sprintf("first %d %s", i, who)
			if _, err := st.UpdatePerson(ctx, acc.ID, target.ID, domain.PersonUpdate{FirstName: text(first)}, w); err != nil {
				t.Fatal(err)
			}
			got, err := server.GetPerson(ctx, acc.ID, target.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.FirstName == nil || *got.FirstName != first {
				t.Fatalf("round %d: after a change by %s, Get Person served first_name %v, want %q", i, who, got.FirstName, first)
			}

			renamed := fmt.Sprintf("t%d %s", i, who)
			if _, err := st.UpdateTag(ctx, acc.ID, tag.ID, domain.TagPatch{Name: text(renamed)}); err != nil {
				t.Fatal(err)
			}
			if got, err = server.GetPerson(ctx, acc.ID, target.ID); err != nil {
				t.Fatal(err)
			}
			if len(got.TagNames) != 1 || got.TagNames[0] != renamed {
				t.Fatalf("round %d: after %s renamed its tag, Get Person served tags %v, want [%s]", i, who, got.TagNames, renamed)
			}
		}
	}
}
