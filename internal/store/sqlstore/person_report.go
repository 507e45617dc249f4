package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// PersonRecord reads a person for an access request, in one snapshot: the
// person as Get Person reads it, then every tag link and custom value
// through their primary keys, which lead with the person (a person's links
// and values are few: the custom-field limit bounds the values).
func (s *Store) PersonRecord(ctx context.Context, accountID, personID string) (_ *store.PersonRecord, err error) {
	defer named("PersonRecord", &err)
	var rec store.PersonRecord
	err = s.safeReadTx(ctx, func(q querier) error {
		p, err := getPerson(ctx, q, accountID, personID)
		if err != nil {
			return err
		}
		rec.Person = *p
		if rec.Tags, err = queryAll(ctx, q, scanHeldTag, `SELECT t.id, t.name, t.context, t.archived_at, pt.created_at
			FROM person_tags pt CROSS JOIN tags t
			WHERE pt.person_id = $2 AND pt.account_id = $1 AND t.id = pt.tag_id AND t.account_id = $1
			ORDER BY pt.created_at, t.id`, accountID, personID); err != nil {
			return err
		}
		if rec.Values, err = queryAll(ctx, q, scanHeldValue, `SELECT f.id, f.collection, f.key, f.data_type, f.label, f.archived_at, v.value
			FROM person_field_values v CROSS JOIN custom_fields f
			WHERE v.person_id = $2 AND v.account_id = $1 AND f.id = v.field_id AND f.account_id = $1
			ORDER BY f.key, f.id`, accountID, personID); err != nil {
			return err
		}
		if rec.Aliases, err = aliasesOf(ctx, q, accountID, personID); err != nil {
			return err
		}
		rec.Burst, err = readBurst(ctx, q, accountID, personID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

func scanHeldTag(sc scanner) (store.HeldTag, error) {
	var t store.HeldTag
	var archived sql.NullInt64
	var linked int64
	err := sc.Scan(&t.ID, &t.Name, &t.Context, &archived, &linked)
	t.Archived, t.LinkedAt = archived.Valid, domain.FromMillis(linked)
	return t, err
}

func scanHeldValue(sc scanner) (store.HeldValue, error) {
	var v store.HeldValue
	var label sql.NullString
	var archived sql.NullInt64
	err := sc.Scan(&v.FieldID, &v.Collection, &v.Key, &v.DataType, &label, &archived, &v.Value)
	v.Label, v.Archived = strPtr(label), archived.Valid
	return v, err
}

// readBurst reads the person's open burst, nil when none.
func readBurst(ctx context.Context, q querier, accountID, personID string) (*store.PersonBurst, error) {
	var b store.PersonBurst
	var opened, last, due int64
	err := q.queryRow(ctx, `SELECT person_id, event, opened_at, last_change_at, due_at
		FROM bursts WHERE person_id = $2 AND account_id = $1`, accountID, personID).
		Scan(&b.PersonID, &b.Event, &opened, &last, &due)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	b.OpenedAt, b.LastChangeAt, b.DueAt = domain.FromMillis(opened), domain.FromMillis(last), domain.FromMillis(due)
	return &b, nil
}

// ReportBreadcrumbs reads one keyset page of a person's breadcrumbs through
// breadcrumbs_person (account_id, person_id, activity_at, id), in its
// order: the page starts where the last one ended, however deep, and reads
// only its own rows. The bound is written as scalars, activity_at >= the
// last one's (where the index range starts) and, at that same instant,
// only the ids past it, so that both engines seek to it.
func (s *Store) ReportBreadcrumbs(ctx context.Context, accountID, personID string, after *store.BreadcrumbKey, limit int) (_ []domain.Breadcrumb, err error) {
	defer named("ReportBreadcrumbs", &err)
	var args sqlArgs
	where := `account_id = ` + args.add(accountID) + ` AND person_id = ` + args.add(personID)
	if after != nil {
		at := args.add(after.ActivityAt.UnixMilli())
		where += ` AND activity_at >= ` + at + ` AND (activity_at > ` + at + ` OR id > ` + args.add(after.ID) + `)`
	}
	query := `SELECT ` + breadcrumbColumns + ` FROM breadcrumbs WHERE ` + where + ` ORDER BY activity_at, id LIMIT ` + args.add(limit)
	return safeValue(ctx, s, func(q querier) ([]domain.Breadcrumb, error) {
		return queryAll(ctx, q, scanBreadcrumb, query, args...)
	})
}

// ReportDeliveries reads one keyset page of the deliveries that carried a
// person, in one snapshot: the account's subscriptions (few) by id, then
// each one's deliveries of the person through deliveries_webhook_person
// (webhook_id, person_id, created_at, id) in its order, until the page is
// full, then the page's attempts by primary key.
func (s *Store) ReportDeliveries(ctx context.Context, accountID, personID string, after *store.DeliveryKey, limit int) (_ []store.ReportedDelivery, err error) {
	defer named("ReportDeliveries", &err)
	var out []store.ReportedDelivery
	err = s.safeReadTx(ctx, func(q querier) error {
		out = nil
		hooks, err := queryAll(ctx, q, scanString, `SELECT id FROM webhooks WHERE account_id = $1`, accountID)
		if err != nil {
			return err
		}
		slices.Sort(hooks)
		for _, hook := range hooks {
			if len(out) == limit {
				break
			}
			if after != nil && hook < after.WebhookID {
				continue
			}
			var args sqlArgs
			where := `d.webhook_id = ` + args.add(hook) + ` AND d.person_id = ` + args.add(personID)
			if after != nil && hook == after.WebhookID {
				at := args.add(after.CreatedAt.UnixMilli())
				where += ` AND d.created_at >= ` + at + ` AND (d.created_at > ` + at + ` OR d.id > ` + args.add(after.ID) + `)`
			}
			page, err := queryAll(ctx, q, scanReportedDelivery, `SELECT `+deliveryColumns+`, d.body FROM deliveries d WHERE `+where+
				` ORDER BY d.created_at, d.id LIMIT `+args.add(limit-len(out)), args...)
			if err != nil {
				return err
			}
			out = append(out, page...)
		}
		return attachAttempts(ctx, q, out)
	})
	return out, err
}

func scanReportedDelivery(sc scanner) (store.ReportedDelivery, error) {
	var body string
	d, err := scanDelivery(sc, &body)
	if err != nil {
		return store.ReportedDelivery{}, err
	}
	d.Body = []byte(body)
	return store.ReportedDelivery{Delivery: *d}, nil
}

// attachAttempts reads the attempts of a page of deliveries in one
// statement, through delivery_attempts' primary key.
func attachAttempts(ctx context.Context, q querier, ds []store.ReportedDelivery) error {
	if len(ds) == 0 {
		return nil
	}
	var args sqlArgs
	ids := make([]any, len(ds))
	at := make(map[string]int, len(ds))
	for i, d := range ds {
		ids[i], at[d.Delivery.ID] = d.Delivery.ID, i
	}
	rows, err := q.query(ctx, `SELECT delivery_id, attempt, attempted_at, status_code, error, duration_ms, request_headers
		FROM delivery_attempts WHERE delivery_id IN (`+args.list(ids...)+`) ORDER BY delivery_id, attempt`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		a, err := scanAttempt(leading{rows, &id})
		if err != nil {
			return err
		}
		i := at[id]
		ds[i].Attempts = append(ds[i].Attempts, a)
	}
	return rows.Err()
}

// leading scans its first column into first, the rest into what its
// caller's Scan names.
type leading struct {
	sc    scanner
	first any
}

func (l leading) Scan(dest ...any) error { return l.sc.Scan(append([]any{l.first}, dest...)...) }
