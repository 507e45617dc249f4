package service

import (
	"errors"
	"slices"
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

func TestTagsToAttach(t *testing.T) {
	live := map[string]bool{"tag_a": true, "tag_b": true}
	for _, tc := range []struct {
		name      string
		requested []string
		want      []string
		notFound  string
	}{
		{"add person tags 1: live tags of the account are attached", []string{"tag_b", "tag_a"}, []string{"tag_b", "tag_a"}, ""},
		{"add person tags 2: a repeated id is attached once", []string{"tag_a", "tag_b", "tag_a"}, []string{"tag_a", "tag_b"}, ""},
		{"add person tags 1: an unknown, archived or foreign id is a 404 and nothing is attached", []string{"tag_a", "tag_gone"}, nil, "tag_gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TagsToAttach(tc.requested, live)
			if tc.notFound != "" {
				if !errors.Is(err, domain.ErrNotFound) || !strings.Contains(err.Error(), tc.notFound) || got != nil {
					t.Fatalf("got %v, %v; want a 404 naming %s", got, err, tc.notFound)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("attach %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
