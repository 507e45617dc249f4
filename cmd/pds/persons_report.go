package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/personview"
	"github.com/pds-dev/pds/internal/store"
)

// Pages of an access report: what it holds in memory at once, whatever
// the person's history.
const (
	reportCrumbPage    = 1000
	reportDeliveryPage = 100
)

// personsCmd is pds persons report: everything held about one person, as
// one JSON document, for an access request (GDPR article 15 and its kin).
func (e cmdEnv) personsReport(fs *pflag.FlagSet) func([]string) error {
	c := commonFlagsOn(fs)
	replicaFlagOn(fs, c)
	account := fs.String("account", "", "account id (required)")
	person := fs.String("person", "", "person id (required)")
	publicURL := fs.String("public-url", "", "the server's base URL, for the person's 0_person_url (default: the one the last pds serve to start on this database uses)")
	return func([]string) error {
		switch {
		case *account == "":
			return usageError{errors.New("persons report: --account is required; e.g. --account acc_01a209d69f8a9aba61380d0e (pds accounts list)")}
		case *person == "":
			return usageError{errors.New("persons report: --person is required; e.g. --person per_01a209d6a0b1c2d3e4f5a6b7")}
		}
		st, err := openAccountStore(e.ctx, c, "persons report", *account)
		if err != nil {
			return err
		}
		defer st.Close()
		base, err := servedURL(e.ctx, st, *publicURL)
		if err != nil {
			return err
		}
		// Its reads change nothing: a replica caught up with now may serve them.
		err = writePersonReport(store.MayReadReplica(e.ctx), st, e.stdout, *account, *person, base, time.Now().UTC())
		if errors.Is(err, domain.ErrNotFound) {
			return noPersonError{*account, *person}
		}
		return err
	}
}

// noPersonError names a person the account does not hold.
type noPersonError struct{ account, person string }

func (e noPersonError) Error() string {
	return fmt.Sprintf("persons report: account %s holds no person %q (absent, erased, or another account's)", e.account, e.person)
}

func (e noPersonError) Is(target error) bool { return target == domain.ErrNotFound }

// writePersonReport writes the report as it reads it: the person's record
// first (nothing is written when the person is absent), then its
// breadcrumbs and deliveries a keyset page at a time, each page encoded
// and written before the next is read. A failure after the first byte
// leaves the document cut short, and the command fails.
func writePersonReport(ctx context.Context, st store.Store, out io.Writer, accountID, personID, publicURL string, now time.Time) error {
	rec, err := st.PersonRecord(ctx, accountID, personID)
	if err != nil {
		return err
	}
	fields, err := st.ListPersonFields(ctx, accountID)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(out, 64<<10)
	doc := reportDoc{w: w}
	doc.raw("{\n")
	doc.member("account_id", accountID)
	doc.member("person_id", personID)
	doc.member("generated_at", domain.T(now))
	doc.member("person", personview.Extended(&rec.Person, fields, publicURL, now))
	doc.member("f_id", rec.Person.FID)
	doc.member("tags", reportTags(rec.Tags))
	doc.member("custom_values", reportValues(rec.Values))
	doc.member("open_burst", reportBurst(rec.Burst))
	// Identifiers of persons merged into this one (never null: a reader
	// tells "none" from "not reported").
	aliases := rec.Aliases
	if aliases == nil {
		aliases = []domain.PersonAlias{}
	}
	doc.member("aliases", aliases)

	doc.openArray("breadcrumbs")
	var crumb *store.BreadcrumbKey
	for doc.err == nil {
		page, err := st.ReportBreadcrumbs(ctx, accountID, personID, crumb, reportCrumbPage)
		if err != nil {
			return err
		}
		for _, b := range page {
			doc.item(reportCrumb(b))
		}
		if len(page) < reportCrumbPage {
			break
		}
		last := page[len(page)-1]
		crumb = &store.BreadcrumbKey{ActivityAt: last.ActivityAt, ID: last.ID}
	}
	doc.closeArray(",\n")

	doc.openArray("deliveries")
	var delivery *store.DeliveryKey
	for doc.err == nil {
		page, err := st.ReportDeliveries(ctx, accountID, personID, delivery, reportDeliveryPage)
		if err != nil {
			return err
		}
		for _, d := range page {
			doc.item(reportDelivery(d))
		}
		if len(page) < reportDeliveryPage {
			break
		}
		last := page[len(page)-1].Delivery
		delivery = &store.DeliveryKey{WebhookID: last.WebhookID, CreatedAt: last.CreatedAt, ID: last.ID}
	}
	doc.closeArray("\n}\n")
	if doc.err != nil {
		return doc.err
	}
	return w.Flush()
}

// reportDoc writes a JSON object member by member, and an array member
// item by item, indented as printJSON indents; the first error sticks.
type reportDoc struct {
	w     *bufio.Writer
	err   error
	items int
}

func (d *reportDoc) raw(s string) {
	if d.err == nil {
		_, d.err = d.w.WriteString(s)
	}
}

func (d *reportDoc) value(v any, prefix string) {
	if d.err != nil {
		return
	}
	b, err := json.MarshalIndent(v, prefix, "  ")
	if err != nil {
		d.err = err
		return
	}
	_, d.err = d.w.Write(b)
}

func (d *reportDoc) member(name string, v any) {
	d.raw("  " + quote(name) + ": ")
	d.value(v, "  ")
	d.raw(",\n")
}

func (d *reportDoc) openArray(name string) {
	d.raw("  " + quote(name) + ": [")
	d.items = 0
}

func (d *reportDoc) item(v any) {
	if d.items > 0 {
		d.raw(",")
	}
	d.items++
	d.raw("\n    ")
	d.value(v, "    ")
}

func (d *reportDoc) closeArray(after string) {
	if d.items > 0 {
		d.raw("\n  ")
	}
	d.raw("]" + after)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

type reportedTag struct {
	ID       string      `json:"id"`
	Name     string      `json:"name"`
	Context  string      `json:"context"`
	Archived bool        `json:"archived"`
	LinkedAt domain.Time `json:"linked_at"`
}

func reportTags(ts []store.HeldTag) []reportedTag {
	out := make([]reportedTag, len(ts))
	for i, t := range ts {
		out[i] = reportedTag{t.ID, t.Name, t.Context, t.Archived, domain.T(t.LinkedAt)}
	}
	return out
}

type reportedValue struct {
	FieldID    string  `json:"field_id"`
	Collection string  `json:"collection"`
	Key        string  `json:"key"`
	Label      *string `json:"label"`
	DataType   string  `json:"data_type"`
	Archived   bool    `json:"archived"`
	Value      string  `json:"value"`
}

func reportValues(vs []store.HeldValue) []reportedValue {
	out := make([]reportedValue, len(vs))
	for i, v := range vs {
		out[i] = reportedValue{v.FieldID, v.Collection, v.Key, v.Label, v.DataType, v.Archived, v.Value}
	}
	return out
}

type reportedBurst struct {
	Event        string      `json:"event"`
	OpenedAt     domain.Time `json:"opened_at"`
	LastChangeAt domain.Time `json:"last_change_at"`
	DueAt        domain.Time `json:"due_at"`
}

func reportBurst(b *store.PersonBurst) *reportedBurst {
	if b == nil {
		return nil
	}
	return &reportedBurst{b.Event, domain.T(b.OpenedAt), domain.T(b.LastChangeAt), domain.T(b.DueAt)}
}

// reportedCrumb is a breadcrumb with every column stored, the identifiers
// it carried included.
type reportedCrumb struct {
	ID         string       `json:"id"`
	Flavor     string       `json:"flavor"`
	CampaignID *string      `json:"campaign_id"`
	ProjectID  *string      `json:"project_id"`
	Email      *string      `json:"email"`
	ExternalID *string      `json:"external_id"`
	FID        *string      `json:"f_id"`
	OccurredAt *domain.Time `json:"occurred_at"`
	ActivityAt domain.Time  `json:"activity_at"`
	CreatedAt  domain.Time  `json:"created_at"`
}

func reportCrumb(b domain.Breadcrumb) reportedCrumb {
	return reportedCrumb{b.ID, b.Flavor, b.CampaignID, b.ProjectID, b.Email, b.ExternalID, b.FID,
		domain.TP(b.OccurredAt), domain.T(b.ActivityAt), domain.T(b.CreatedAt)}
}

// reportedDelivery is a stored delivery as the delivery log keeps it:
// its body as sent and each attempt's request headers.
type reportedDelivery struct {
	ID             string            `json:"id"`
	WebhookID      string            `json:"webhook_id"`
	Event          string            `json:"event"`
	Status         string            `json:"status"`
	Attempts       int               `json:"attempts"`
	LastStatusCode *int              `json:"last_status_code"`
	LastError      *string           `json:"last_error"`
	NextAttemptAt  *domain.Time      `json:"next_attempt_at"`
	Created        domain.Time       `json:"created"`
	Body           any               `json:"body"`
	AttemptLog     []reportedAttempt `json:"attempt_log"`
}

type reportedAttempt struct {
	Attempt        int               `json:"attempt"`
	AttemptedAt    domain.Time       `json:"attempted_at"`
	StatusCode     *int              `json:"status_code"`
	Error          *string           `json:"error"`
	DurationMS     int64             `json:"duration_ms"`
	RequestHeaders map[string]string `json:"request_headers"`
}

func reportDelivery(r store.ReportedDelivery) reportedDelivery {
	d := r.Delivery
	// A body is JSON as sent; anything else stored there is shown as text.
	var body any = string(d.Body)
	if json.Valid(d.Body) {
		body = json.RawMessage(d.Body)
	}
	out := reportedDelivery{ID: d.ID, WebhookID: d.WebhookID, Event: d.Event, Status: d.Status, Attempts: d.Attempts,
		LastStatusCode: d.LastStatusCode, LastError: d.LastError, NextAttemptAt: domain.TP(d.NextAttemptAt),
		Created: domain.T(d.CreatedAt), Body: body, AttemptLog: make([]reportedAttempt, len(r.Attempts))}
	for i, a := range r.Attempts {
		headers := a.RequestHeaders
		if headers == nil {
			headers = map[string]string{}
		}
		out.AttemptLog[i] = reportedAttempt{a.Attempt, domain.T(a.AttemptedAt), a.StatusCode, a.Error, a.DurationMS, headers}
	}
	return out
}
