package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

func newTag(account, name, tagContext string, created time.Time) domain.Tag {
	return domain.Tag{ID: domain.NewID(domain.TagIDPrefix), AccountID: account, Name: name, Context: tagContext, DateCreated: domain.T(created)}
}

func createTag(t *testing.T, st store.Store, tag domain.Tag) domain.Tag {
	t.Helper()
	got, revived, err := st.CreateTag(context.Background(), tag)
	if err != nil || revived {
		t.Fatalf("create tag %q: revived=%v err=%v", tag.Name, revived, err)
	}
	return got
}

// wantConflict fails unless err is a conflict naming existingID.
func wantConflict(t *testing.T, err error, existingID string) {
	t.Helper()
	var ce *domain.ConflictError
	if !errors.As(err, &ce) || ce.ExistingID != existingID {
		t.Fatalf("got %v, want a conflict naming %s", err, existingID)
	}
}

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("%s: got %v, want not found", what, err)
	}
}

func tagIDs(tags []domain.Tag) []string {
	ids := make([]string, len(tags))
	for i, tg := range tags {
		ids[i] = tg.ID
	}
	return ids
}

func equalIDs(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func testTags(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	ptr := func(s string) *string { return &s }
	set := func(s string) domain.Opt[string] { return domain.Opt[string]{Set: true, Value: s} }
	null := domain.Opt[string]{Set: true, Null: true}

	t.Run("create, get, list in order with totals", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		a := NewAccount(t, st)
		// Two tags share a creation time: the id breaks the tie.
		first := newTag(a, "vip", "person", Epoch.Add(time.Second))
		eventTie := newTag(a, "tie a", "event", Epoch.Add(2*time.Second))
		tieA, tieB := eventTie, newTag(a, "tie b", "person", Epoch.Add(2*time.Second))
		if tieA.ID > tieB.ID {
			tieA, tieB = tieB, tieA
		}
		last := newTag(a, "vip", "event", Epoch.Add(3*time.Second))
		for _, tg := range []domain.Tag{last, tieB, first, tieA} {
			createTag(t, st, tg)
		}
		got, err := st.GetTag(ctx, a, first.ID)
		if err != nil || got.Name != "vip" || got.Context != "person" || !got.DateCreated.Equal(first.DateCreated.Time) || got.ArchivedAt != nil {
			t.Fatalf("get tag: %+v, %v", got, err)
		}
		all, total, err := st.ListTags(ctx, a, nil, domain.PageRequest{Page: 1, Size: 10})
		if err != nil || total != 4 || !equalIDs(tagIDs(all), []string{first.ID, tieA.ID, tieB.ID, last.ID}) {
			t.Fatalf("list: %v total %d err %v", tagIDs(all), total, err)
		}
		second, total, err := st.ListTags(ctx, a, nil, domain.PageRequest{Page: 2, Size: 3})
		if err != nil || total != 4 || !equalIDs(tagIDs(second), []string{last.ID}) {
			t.Fatalf("page 2 of 3: %v total %d err %v", tagIDs(second), total, err)
		}
		past, total, err := st.ListTags(ctx, a, nil, domain.PageRequest{Page: 5, Size: 3})
		if err != nil || total != 4 || len(past) != 0 {
			t.Fatalf("past the end: %d items total %d err %v", len(past), total, err)
		}
		events, total, err := st.ListTags(ctx, a, ptr("event"), domain.PageRequest{Page: 1, Size: 10})
		if err != nil || total != 2 || !equalIDs(tagIDs(events), []string{eventTie.ID, last.ID}) {
			t.Fatalf("context filter: %v total %d err %v", tagIDs(events), total, err)
		}
	})

	t.Run("live duplicate is a conflict; another context is not", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		a := NewAccount(t, st)
		held := createTag(t, st, newTag(a, "vip", "person", Epoch))
		_, _, err := st.CreateTag(ctx, newTag(a, "vip", "person", Epoch.Add(time.Minute)))
		wantConflict(t, err, held.ID)
		createTag(t, st, newTag(a, "vip", "event", Epoch))
		createTag(t, st, newTag(a, "VIP", "person", Epoch))
	})

	t.Run("archive hides; creating the pair again revives the same tag", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		a := NewAccount(t, st)
		tag := createTag(t, st, newTag(a, "vip", "person", Epoch))
		if err := st.ArchiveTag(ctx, a, tag.ID, Epoch.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		_, err := st.GetTag(ctx, a, tag.ID)
		wantNotFound(t, "get archived", err)
		wantNotFound(t, "archive twice", st.ArchiveTag(ctx, a, tag.ID, Epoch.Add(time.Hour)))
		_, err = st.UpdateTag(ctx, a, tag.ID, domain.TagPatch{Name: set("other")})
		wantNotFound(t, "update archived", err)
		if list, total, err := st.ListTags(ctx, a, nil, domain.PageRequest{Page: 1, Size: 10}); err != nil || total != 0 || len(list) != 0 {
			t.Fatalf("list holds an archived tag: %v total %d, err %v", tagIDs(list), total, err)
		}

		again := newTag(a, "vip", "person", Epoch.Add(2*time.Hour))
		got, revived, err := st.CreateTag(ctx, again)
		if err != nil || !revived || got.ID != tag.ID || !got.DateCreated.Equal(Epoch) || got.ArchivedAt != nil {
			t.Fatalf("revive: %+v revived=%v err=%v", got, revived, err)
		}
		if _, err := st.GetTag(ctx, a, tag.ID); err != nil {
			t.Fatalf("revived tag unreadable: %v", err)
		}
		_, _, err = st.CreateTag(ctx, newTag(a, "vip", "person", Epoch.Add(3*time.Hour)))
		wantConflict(t, err, tag.ID)
	})

	t.Run("update renames and moves; onto a held pair is a conflict", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		a := NewAccount(t, st)
		tag := createTag(t, st, newTag(a, "vip", "person", Epoch))
		live := createTag(t, st, newTag(a, "gold", "person", Epoch))
		archived := createTag(t, st, newTag(a, "old", "event", Epoch))
		if err := st.ArchiveTag(ctx, a, archived.ID, Epoch); err != nil {
			t.Fatal(err)
		}

		got, err := st.UpdateTag(ctx, a, tag.ID, domain.TagPatch{Name: set("platinum")})
		if err != nil || got.Name != "platinum" || got.Context != "person" || got.ID != tag.ID {
			t.Fatalf("rename: %+v, %v", got, err)
		}
		got, err = st.UpdateTag(ctx, a, tag.ID, domain.TagPatch{Context: set("event"), Name: null})
		if err != nil || got.Name != "platinum" || got.Context != "event" {
			t.Fatalf("move with a null name: %+v, %v", got, err)
		}
		got, err = st.UpdateTag(ctx, a, tag.ID, domain.TagPatch{Name: set("platinum")})
		if err != nil || got.Name != "platinum" || got.Context != "event" {
			t.Fatalf("update onto its own pair: %+v, %v", got, err)
		}
		_, err = st.UpdateTag(ctx, a, tag.ID, domain.TagPatch{Name: set("gold"), Context: set("person")})
		wantConflict(t, err, live.ID)
		_, err = st.UpdateTag(ctx, a, tag.ID, domain.TagPatch{Name: set("old")})
		wantConflict(t, err, archived.ID)
		read, err := st.GetTag(ctx, a, tag.ID)
		if err != nil {
			t.Fatal(err)
		}
		if read.Name != "platinum" || read.Context != "event" {
			t.Fatalf("a refused update changed the tag: %+v", read)
		}
		_, err = st.UpdateTag(ctx, a, "tag_missing", domain.TagPatch{Name: set("x")})
		wantNotFound(t, "update missing", err)
	})

	t.Run("a second account sees none of it", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		a := NewAccount(t, st)
		b := NewAccount(t, st)
		tag := createTag(t, st, newTag(a, "vip", "person", Epoch))
		_, err := st.GetTag(ctx, b, tag.ID)
		wantNotFound(t, "foreign get", err)
		_, err = st.UpdateTag(ctx, b, tag.ID, domain.TagPatch{Name: set("mine")})
		wantNotFound(t, "foreign update", err)
		wantNotFound(t, "foreign archive", st.ArchiveTag(ctx, b, tag.ID, Epoch))
		if list, total, err := st.ListTags(ctx, b, nil, domain.PageRequest{Page: 1, Size: 10}); err != nil || total != 0 || len(list) != 0 {
			t.Fatalf("foreign list: %v total %d err %v", tagIDs(list), total, err)
		}
		own := createTag(t, st, newTag(b, "vip", "person", Epoch))
		if own.ID == tag.ID {
			t.Fatal("the second account's tag revived the first's")
		}
		if got, err := st.GetTag(ctx, a, tag.ID); err != nil || got == nil || got.Name != "vip" {
			t.Fatalf("the first account's tag changed: %+v, err %v", got, err)
		}
	})

	t.Run("concurrent creations of one pair make one tag", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		a := NewAccount(t, st)
		const n = 8
		ids := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, _, err := st.CreateTag(ctx, newTag(a, "race", "person", Epoch))
				ids[i], errs[i] = got.ID, err
			}()
		}
		wg.Wait()
		made := ""
		for i := range n {
			if errs[i] == nil {
				if made != "" {
					t.Fatalf("two tags made for one pair: %s and %s", made, ids[i])
				}
				made = ids[i]
			}
		}
		if made == "" {
			t.Fatalf("no creation succeeded: %v", errs)
		}
		for i := range n {
			if errs[i] != nil {
				wantConflict(t, errs[i], made)
			}
		}
	})
}
