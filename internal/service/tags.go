package service

import (
	"fmt"
	"slices"

	"github.com/pds-dev/pds/internal/domain"
)

// CreateTagOnto decides a Create Tag whose (name, context) the stored tag
// holder already holds (spec, Create Tag rules 2 and 3): an archived holder
// is revived and returned, a live one is a 409 naming it.
func CreateTagOnto(holder domain.Tag) (revive bool, err error) {
	if holder.ArchivedAt != nil {
		return true, nil
	}
	return false, tagConflict(holder, false)
}

// RenameTagOnto decides an Update Tag to a (name, context) that holder
// already holds: a 409 whether holder is live or archived (decisions.md
// section 5), since an archived tag keeps its pair for its revival.
func RenameTagOnto(holder domain.Tag) error {
	return tagConflict(holder, holder.ArchivedAt != nil)
}

func tagConflict(holder domain.Tag, archived bool) *domain.ConflictError {
	if archived {
		return &domain.ConflictError{ExistingID: holder.ID, Detail: fmt.Sprintf(
			"The archived tag %s holds the name %q in context %q; create that tag (POST /tags) to revive it, or choose another name.",
			holder.ID, holder.Name, holder.Context)}
	}
	return &domain.ConflictError{ExistingID: holder.ID, Detail: fmt.Sprintf(
		"The tag %s already has the name %q in context %q.", holder.ID, holder.Name, holder.Context)}
}

// TagsToAttach decides Add Person Tags over the requested ids and those of
// them the store found live in the account (spec, Add Person Tags rules 1
// and 2): every id must be live, else the first that is not is a 404 and
// nothing is attached; an id repeated is attached once.
func TagsToAttach(requested []string, live map[string]bool) ([]string, error) {
	out := make([]string, 0, len(requested))
	for _, id := range requested {
		if !live[id] {
			return nil, domain.NotFound("tag", id)
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}
