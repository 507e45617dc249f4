package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// personWindow is the coalescing window the person cases write with.
const personWindow = 5 * time.Minute

// personCase is one account of one store, with a clock the case moves, and
// the fixtures the person and breadcrumb cases share.
type personCase struct {
	t   *testing.T
	st  store.Store
	acc string
	clk *time.Time // shared by every view of the case (in, other)
}

func newPersonCase(t *testing.T, st store.Store) *personCase {
	now := Epoch
	return &personCase{t: t, st: st, acc: NewAccount(t, st), clk: &now}
}

// in is the case seen from a subtest, so that its failures stop the subtest.
func (c *personCase) in(t *testing.T) *personCase {
	return &personCase{t: t, st: c.st, acc: c.acc, clk: c.clk}
}

// other is a second account on the same store and clock.
func (c *personCase) other() *personCase {
	return &personCase{t: c.t, st: c.st, acc: NewAccount(c.t, c.st), clk: c.clk}
}

func (c *personCase) now() time.Time          { return *c.clk }
func (c *personCase) setNow(t time.Time)      { *c.clk = t }
func (c *personCase) advance(d time.Duration) { c.setNow(c.now().Add(d)) }

func (c *personCase) write() store.Write { return store.Write{Now: c.now(), Window: personWindow} }

func (c *personCase) tag(name string) string {
	c.t.Helper()
	tag, _, err := c.st.CreateTag(context.Background(), domain.Tag{
		AccountID: c.acc, Name: name, Context: "person", DateCreated: domain.T(c.now())})
	if err != nil {
		c.t.Fatalf("create tag %s: %v", name, err)
	}
	return tag.ID
}

func (c *personCase) field(collection, key, dataType string) domain.CustomField {
	c.t.Helper()
	f, err := c.st.CreateCustomField(context.Background(), domain.CustomField{
		AccountID: c.acc, Collection: collection, DataType: dataType, Key: key, FormType: "text",
		DateCreated: domain.T(c.now())}, 100)
	if err != nil {
		c.t.Fatalf("create custom field %s: %v", key, err)
	}
	return f
}

func (c *personCase) upsert(in domain.PersonUpsert) (*domain.Person, bool) {
	c.t.Helper()
	p, created, err := c.st.UpsertPerson(context.Background(), c.acc, in, c.write())
	if err != nil {
		c.t.Fatalf("upsert %+v: %v", in, err)
	}
	return p, created
}

func (c *personCase) get(id string) *domain.Person {
	c.t.Helper()
	p, err := c.st.GetPerson(context.Background(), c.acc, id)
	if err != nil {
		c.t.Fatalf("get person %s: %v", id, err)
	}
	return p
}

// burst reads the person's open burst; nil when there is none.
func (c *personCase) burst(personID string) *store.PersonBurst {
	c.t.Helper()
	b, err := c.st.PendingBurst(context.Background(), c.acc, personID)
	if errors.Is(err, domain.ErrNotFound) {
		return nil
	}
	if err != nil {
		c.t.Fatalf("pending burst of %s: %v", personID, err)
	}
	return b
}

// wantBurst checks the open burst of a person.
func (c *personCase) wantBurst(personID, event string, opened, last time.Time) {
	c.t.Helper()
	b := c.burst(personID)
	if b == nil {
		c.t.Fatalf("no burst for %s, want %s opened %v", personID, event, opened)
	}
	if b.Event != event || !b.OpenedAt.Equal(opened) || !b.LastChangeAt.Equal(last) || !b.DueAt.Equal(last.Add(personWindow)) {
		c.t.Fatalf("burst of %s: %+v; want %s opened %v, last change %v, due %v", personID, b, event, opened, last, last.Add(personWindow))
	}
}

// setText is a supplied value; nullText a supplied null.
func setText(v string) domain.Opt[string] { return domain.Opt[string]{Set: true, Value: v} }
func nullText() domain.Opt[string]        { return domain.Opt[string]{Set: true, Null: true} }

// fieldValues builds custom_fields from Go values (nil is a JSON null).
func fieldValues(kv map[string]any) domain.Opt[map[string]json.RawMessage] {
	out := map[string]json.RawMessage{}
	for k, v := range kv {
		b, _ := json.Marshal(v)
		out[k] = b
	}
	return domain.Opt[map[string]json.RawMessage]{Set: true, Value: out}
}

// textOf reads an optional string for messages and comparisons.
func textOf(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func isErr[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}
