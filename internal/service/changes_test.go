package service

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

func TestChangeCursor(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	pos := domain.ChangePosition{Seq: 42, Xid: 7, Base: "100:105:101,103", Cut: "100:110:"}
	good := EncodeChangeCursor("acc_a", pos, now.Add(-time.Hour))
	for _, c := range []struct {
		name, account, cursor string
		want                  domain.ChangePosition
		param, expired        bool
	}{
		{name: "its own account's, within the retention", account: "acc_a", cursor: good, want: pos},
		{name: "the beginning", account: "acc_a", cursor: EncodeChangeCursor("acc_a", domain.ChangePosition{}, now), want: domain.ChangePosition{}},
		{name: "another account's is a 400 naming after", account: "acc_b", cursor: good, param: true},
		{name: "issued longer ago than the retention is a 410", account: "acc_a", cursor: EncodeChangeCursor("acc_a", pos, now.Add(-31*day)), expired: true},
		{name: "not base64", account: "acc_a", cursor: "not a cursor!", param: true},
		{name: "cut short", account: "acc_a", cursor: good[:len(good)-3], param: true},
		{name: "with something after it", account: "acc_a", cursor: good + "AA", param: true},
		{name: "empty", account: "acc_a", cursor: "", param: true},
		{name: "a snapshot that is not one", account: "acc_a", cursor: EncodeChangeCursor("acc_a", domain.ChangePosition{Base: "1:2:'; DROP"}, now), param: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodeChangeCursor(c.account, c.cursor, now, 30*day)
			var ve *domain.ValidationError
			var ce *domain.CursorExpiredError
			switch {
			case c.param:
				if !errors.As(err, &ve) || ve.Errors[0].Parameter != "after" {
					t.Fatalf("%v, want a 400 naming after", err)
				}
			case c.expired:
				if !errors.As(err, &ce) || !strings.Contains(ce.Error(), "Export again") {
					t.Fatalf("%v, want a cursor-expired error", err)
				}
			default:
				if err != nil || got != c.want {
					t.Fatalf("%+v, %v; want %+v", got, err, c.want)
				}
			}
		})
	}
}
