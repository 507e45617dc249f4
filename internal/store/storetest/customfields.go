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

func newField(account, collection, key string, created time.Time) domain.CustomField {
	return domain.CustomField{ID: domain.NewID(domain.CustomFieldIDPrefix), AccountID: account, Collection: collection,
		DataType: "str", Key: key, FormType: domain.DefaultFormType, DateCreated: domain.T(created)}
}

func createField(t *testing.T, st store.Store, f domain.CustomField) domain.CustomField {
	t.Helper()
	got, err := st.CreateCustomField(context.Background(), f, 100)
	if err != nil {
		t.Fatalf("create field %q: %v", f.Key, err)
	}
	return got
}

func fieldIDs(fields []domain.CustomField) []string {
	ids := make([]string, len(fields))
	for i, f := range fields {
		ids[i] = f.ID
	}
	return ids
}

func wantLimit(t *testing.T, err error, limit, current int) {
	t.Helper()
	var le *domain.LimitError
	if !errors.As(err, &le) || le.Limit != limit || le.Current != current {
		t.Fatalf("got %v, want the limit %d reached at %d", err, limit, current)
	}
}

func wantImportError(t *testing.T, err error, index int) {
	t.Helper()
	var ie *store.ImportError
	if !errors.As(err, &ie) || ie.Index != index {
		t.Fatalf("got %v, want an import error at record %d", err, index)
	}
}

func testCustomFields(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	ptr := func(s string) *string { return &s }
	set := func(s string) domain.Opt[string] { return domain.Opt[string]{Set: true, Value: s} }
	null := domain.Opt[string]{Set: true, Null: true}
	firstPage := domain.PageRequest{Page: 1, Size: 100}

	t.Run("create, get, list in order, collection filter", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		a := NewAccount(t, st)
		f := newField(a, "Person", "shoe_size", Epoch)
		f.DataType, f.Label, f.Description, f.FormType = "int", ptr("Shoe size"), ptr("EU sizes"), "number"
		createField(t, st, f)
		crumb := createField(t, st, newField(a, "Breadcrumb", "shoe_size", Epoch.Add(time.Second)))
		partner := createField(t, st, newField(a, "Partner", "region", Epoch.Add(2*time.Second)))

		got, err := st.GetCustomField(ctx, a, f.ID)
		if err != nil || got.Key != "shoe_size" || got.Collection != "Person" || got.DataType != "int" || *got.Label != "Shoe size" ||
			*got.Description != "EU sizes" || got.FormType != "number" || got.IsDefault || got.IsReadOnly || !got.DateCreated.Equal(Epoch) {
			t.Fatalf("get field: %+v, %v", got, err)
		}
		list, total, err := st.ListCustomFields(ctx, a, nil, firstPage)
		if err != nil || total != 3 || !equalIDs(fieldIDs(list), []string{f.ID, crumb.ID, partner.ID}) {
			t.Fatalf("list: %v total %d err %v", fieldIDs(list), total, err)
		}
		only, total, err := st.ListCustomFields(ctx, a, ptr("Breadcrumb"), domain.PageRequest{Page: 1, Size: 1})
		if err != nil || total != 1 || !equalIDs(fieldIDs(only), []string{crumb.ID}) {
			t.Fatalf("collection filter: %v total %d err %v", fieldIDs(only), total, err)
		}
		past, total, err := st.ListCustomFields(ctx, a, nil, domain.PageRequest{Page: 3, Size: 2})
		if err != nil || total != 3 || len(past) != 0 {
			t.Fatalf("past the end: %d items total %d err %v", len(past), total, err)
		}
	})

	t.Run("a key stays reserved in its collection, archived too", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		a := NewAccount(t, st)
		held := createField(t, st, newField(a, "Person", "tier", Epoch))
		_, err := st.CreateCustomField(ctx, newField(a, "Person", "tier", Epoch), 100)
		wantConflict(t, err, held.ID)
		if err := st.ArchiveCustomField(ctx, a, held.ID, Epoch); err != nil {
			t.Fatal(err)
		}
		_, err = st.CreateCustomField(ctx, newField(a, "Person", "tier", Epoch), 100)
		wantConflict(t, err, held.ID)
		createField(t, st, newField(a, "Partner", "tier", Epoch))
	})

	t.Run("the limit counts live fields", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		a := NewAccount(t, st)
		one, err := st.CreateCustomField(ctx, newField(a, "Person", "one", Epoch), 2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateCustomField(ctx, newField(a, "Person", "two", Epoch), 2); err != nil {
			t.Fatal(err)
		}
		_, err = st.CreateCustomField(ctx, newField(a, "Person", "three", Epoch), 2)
		wantLimit(t, err, 2, 2)
		if err := st.ArchiveCustomField(ctx, a, one.ID, Epoch); err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateCustomField(ctx, newField(a, "Person", "three", Epoch), 2); err != nil {
			t.Fatalf("an archived field still counts: %v", err)
		}
		other := NewAccount(t, st)
		if _, err := st.CreateCustomField(ctx, newField(other, "Person", "one", Epoch), 2); err != nil {
			t.Fatalf("another account's fields count: %v", err)
		}
	})

	t.Run("concurrent creations never pass the limit", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		a := NewAccount(t, st)
		const n, limit = 10, 3
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = st.CreateCustomField(ctx, newField(a, "Person", domain.RandomHex(4), Epoch), limit)
			}()
		}
		wg.Wait()
		made := 0
		for _, err := range errs {
			if err == nil {
				made++
			} else {
				wantLimit(t, err, limit, limit)
			}
		}
		if made != limit {
			t.Fatalf("%d fields made under a limit of %d", made, limit)
		}
	})

	t.Run("update changes display attributes; null clears or restores the default", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		a := NewAccount(t, st)
		f := createField(t, st, newField(a, "Person", "tier", Epoch))
		got, err := st.UpdateCustomField(ctx, a, f.ID, domain.CustomFieldPatch{Label: set("Tier"), Description: set("Loyalty"), FormType: set("textarea")})
		if err != nil || *got.Label != "Tier" || *got.Description != "Loyalty" || got.FormType != "textarea" || got.Key != "tier" {
			t.Fatalf("update: %+v, %v", got, err)
		}
		got, err = st.UpdateCustomField(ctx, a, f.ID, domain.CustomFieldPatch{Description: null})
		if err != nil || *got.Label != "Tier" || got.Description != nil || got.FormType != "textarea" {
			t.Fatalf("clear description: %+v, %v", got, err)
		}
		got, err = st.UpdateCustomField(ctx, a, f.ID, domain.CustomFieldPatch{Label: null, FormType: null})
		if err != nil || got.Label != nil || got.FormType != domain.DefaultFormType {
			t.Fatalf("null label and form_type: %+v, %v", got, err)
		}
		read, err := st.GetCustomField(ctx, a, f.ID)
		if err != nil {
			t.Fatal(err)
		}
		if read.Label != nil || read.Description != nil || read.FormType != "text" {
			t.Fatalf("stored after updates: %+v", read)
		}
	})

	t.Run("read-only fields refuse update and archive", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		a := NewAccount(t, st)
		f := newField(a, "Person", "crm_score", Epoch)
		f.IsReadOnly, f.IsDefault = true, true
		if err := st.ImportCustomFields(ctx, a, []domain.CustomField{f}); err != nil {
			t.Fatal(err)
		}
		var fe *domain.ForbiddenError
		if _, err := st.UpdateCustomField(ctx, a, f.ID, domain.CustomFieldPatch{Label: set("x")}); !errors.As(err, &fe) {
			t.Fatalf("update read-only: %v", err)
		}
		if err := st.ArchiveCustomField(ctx, a, f.ID, Epoch); !errors.As(err, &fe) {
			t.Fatalf("archive read-only: %v", err)
		}
		got, err := st.GetCustomField(ctx, a, f.ID)
		if err != nil || !got.IsReadOnly || !got.IsDefault || got.Label != nil {
			t.Fatalf("read-only field after refusals: %+v, %v", got, err)
		}
	})

	t.Run("archive hides", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		a := NewAccount(t, st)
		f := createField(t, st, newField(a, "Person", "tier", Epoch))
		if err := st.ArchiveCustomField(ctx, a, f.ID, Epoch); err != nil {
			t.Fatal(err)
		}
		_, err := st.GetCustomField(ctx, a, f.ID)
		wantNotFound(t, "get archived", err)
		_, err = st.UpdateCustomField(ctx, a, f.ID, domain.CustomFieldPatch{Label: set("x")})
		wantNotFound(t, "update archived", err)
		wantNotFound(t, "archive twice", st.ArchiveCustomField(ctx, a, f.ID, Epoch))
		if list, total, err := st.ListCustomFields(ctx, a, nil, firstPage); err != nil || total != 0 || len(list) != 0 {
			t.Fatalf("list holds an archived field: %v, err %v", fieldIDs(list), err)
		}
	})

	t.Run("import upserts by id, all or none", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		a := NewAccount(t, st)
		b := NewAccount(t, st)
		keep := newField(a, "Person", "crm_id", Epoch)
		fresh := newField(a, "Person", "crm_segment", time.Time{})
		fresh.ID = ""
		if err := st.ImportCustomFields(ctx, a, []domain.CustomField{keep, fresh}); err != nil {
			t.Fatal(err)
		}
		list, total, err := st.ListCustomFields(ctx, a, nil, firstPage)
		if err != nil {
			t.Fatal(err)
		}
		byKey := map[string]domain.CustomField{}
		for _, f := range list {
			byKey[f.Key] = f
		}
		made := byKey["crm_segment"]
		if total != 2 || byKey["crm_id"].ID != keep.ID || made.ID == "" || made.DateCreated.IsZero() {
			t.Fatalf("after import: %+v", list)
		}
		// Importing the same id again updates it and keeps its date_created
		// when the record gives none.
		again := keep
		again.Label, again.IsReadOnly, again.DateCreated = ptr("CRM id"), true, domain.Time{}
		if err := st.ImportCustomFields(ctx, a, []domain.CustomField{again}); err != nil {
			t.Fatal(err)
		}
		got, err := st.GetCustomField(ctx, a, keep.ID)
		if err != nil {
			t.Fatal(err)
		}
		if *got.Label != "CRM id" || !got.IsReadOnly || !got.DateCreated.Equal(Epoch) {
			t.Fatalf("re-import: %+v", got)
		}

		// A taken key or another account's id fails the whole import.
		clash := newField(a, "Person", "crm_id", Epoch)
		fine := newField(a, "Person", "fine", Epoch)
		wantImportError(t, st.ImportCustomFields(ctx, a, []domain.CustomField{fine, clash}), 1)
		foreign := newField(b, "Person", "theirs", Epoch)
		if err := st.ImportCustomFields(ctx, b, []domain.CustomField{foreign}); err != nil {
			t.Fatal(err)
		}
		stolen := foreign
		stolen.AccountID, stolen.Key = a, "mine"
		wantImportError(t, st.ImportCustomFields(ctx, a, []domain.CustomField{fine, stolen}), 1)
		if _, total, err := st.ListCustomFields(ctx, a, nil, firstPage); err != nil || total != 2 {
			t.Fatalf("a failed import left %d fields, want 2, err %v", total, err)
		}
		theirs, err := st.GetCustomField(ctx, b, foreign.ID)
		if err != nil || theirs.Key != "theirs" {
			t.Fatalf("another account's field changed: %+v, %v", theirs, err)
		}
	})

	t.Run("a second account sees none of it", func(t *testing.T) {
		t.Parallel()
		st := newStore(t)
		a := NewAccount(t, st)
		b := NewAccount(t, st)
		f := createField(t, st, newField(a, "Person", "tier", Epoch))
		_, err := st.GetCustomField(ctx, b, f.ID)
		wantNotFound(t, "foreign get", err)
		_, err = st.UpdateCustomField(ctx, b, f.ID, domain.CustomFieldPatch{Label: set("x")})
		wantNotFound(t, "foreign update", err)
		wantNotFound(t, "foreign archive", st.ArchiveCustomField(ctx, b, f.ID, Epoch))
		if list, total, err := st.ListCustomFields(ctx, b, nil, firstPage); err != nil || total != 0 || len(list) != 0 {
			t.Fatalf("foreign list: %v total %d err %v", fieldIDs(list), total, err)
		}
		createField(t, st, newField(b, "Person", "tier", Epoch))
	})
}
