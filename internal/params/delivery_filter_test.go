package params_test

import (
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/params"
)

func TestDeliveryFilter(t *testing.T) {
	since := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	until := since.Add(time.Hour)
	for _, tc := range []struct {
		query string
		want  domain.DeliveryFilter
		bad   string // the parameter a refusal names; "" when accepted
	}{
		{query: "", want: domain.DeliveryFilter{}},
		{query: "status=failed&event=person.created&person_id=per_1",
			want: domain.DeliveryFilter{Status: "failed", Event: "person.created", PersonID: "per_1"}},
		{query: "since=2026-11-21T11:00:00%2B01:00&until=2026-11-21T11:00:00Z", want: domain.DeliveryFilter{Since: &since, Until: &until}},
		{query: "since=2026-11-21T10:00:00Z&until=2026-11-21T10:00:00Z", want: domain.DeliveryFilter{Since: &since, Until: &since}},
		{query: "status=done", bad: "status"},
		{query: "status=", bad: "status"},
		{query: "event=person.archived", bad: "event"},
		{query: "person_id=", bad: "person_id"},
		{query: "since=today", bad: "since"},
		{query: "until=2026-11-21", bad: "until"},
		{query: "since=2026-11-21T11:00:00Z&until=2026-11-21T10:00:00Z", bad: "since"},
	} {
		q, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		got, err := params.DeliveryFilter(q)
		var ve *domain.ValidationError
		switch {
		case tc.bad != "" && (!errors.As(err, &ve) || len(ve.Errors) != 1 || ve.Errors[0].Parameter != tc.bad):
			t.Errorf("%q: %v, want a refusal naming %s", tc.query, err, tc.bad)
		case tc.bad == "" && (err != nil || got.Status != tc.want.Status || got.Event != tc.want.Event ||
			got.PersonID != tc.want.PersonID || !sameTime(got.Since, tc.want.Since) || !sameTime(got.Until, tc.want.Until)):
			t.Errorf("%q: %+v, %v; want %+v", tc.query, got, err, tc.want)
		}
	}
}

func sameTime(a, b *time.Time) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Equal(*b))
}
