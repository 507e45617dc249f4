package service

import (
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

func TestTagCollisions(t *testing.T) {
	archivedAt := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	live := domain.Tag{ID: "tag_live", Name: "vip", Context: "person"}
	archived := domain.Tag{ID: "tag_old", Name: "vip", Context: "person", ArchivedAt: &archivedAt}
	for _, tc := range []struct {
		name       string
		decide     func(domain.Tag) (bool, error)
		holder     domain.Tag
		wantRevive bool
		conflict   string // a word the 409's detail must hold, "" for none
	}{
		{"create tag 2: a duplicate of a live tag is a 409 naming it", CreateTagOnto, live, false, "already has"},
		{"create tag 3 and section 3: a collision with an archived tag revives it", CreateTagOnto, archived, true, ""},
		{"decisions 5: renaming onto a live tag's pair is a 409 naming it", renameOnto, live, false, "already has"},
		{"decisions 5: renaming onto an archived tag's pair is a 409 that says how to revive it", renameOnto, archived, false, "revive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			revive, err := tc.decide(tc.holder)
			if revive != tc.wantRevive {
				t.Fatalf("revive %v, want %v", revive, tc.wantRevive)
			}
			if tc.conflict == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			wantConflict(t, err, tc.holder.ID)
			if !strings.Contains(err.Error(), tc.conflict) {
				t.Fatalf("409 detail %q does not say %q", err, tc.conflict)
			}
		})
	}
}

func renameOnto(holder domain.Tag) (bool, error) { return false, RenameTagOnto(holder) }
