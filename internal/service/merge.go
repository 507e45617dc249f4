package service

import "github.com/pds-dev/pds/internal/domain"

// CheckMerge refuses a merge of a person into itself: the body's from
// must name another person than the path.
func CheckMerge(survivorID, fromID string) error {
	switch {
	case fromID == "":
		return domain.Invalid(domain.FieldError{Pointer: "/from", Detail: "from is required: the id of the person to merge into this one."})
	case fromID == survivorID:
		return domain.Invalid(domain.FieldError{Pointer: "/from", Detail: "from names the person of the path; a person cannot be merged into itself."})
	}
	return nil
}

// IdentifierFate is what a merge does with one identifier of the merged
// person.
type IdentifierFate int

const (
	// Dropped: the merged person holds none of that kind.
	Dropped IdentifierFate = iota
	// Taken: the survivor holds none of that kind and takes it as its own.
	Taken
	// Aliased: the survivor keeps its own; the merged person's becomes an
	// alias of the survivor, which keeps finding it.
	Aliased
)

// MergeIdentifier decides one kind of identifier (external_id, email or
// f_id) of a merge: the survivor keeps its own, takes one it lacks, and
// the merged person's others become aliases. "" is none.
func MergeIdentifier(survivor, merged string) IdentifierFate {
	switch {
	case merged == "":
		return Dropped
	case survivor == "":
		return Taken
	}
	return Aliased
}

// FillNull is a merge's rule for an attribute or a custom value: the
// survivor's non-null value wins, its null is filled from the merged
// person's. It reports whether the survivor's value changes.
func FillNull(survivor, merged *string) (*string, bool) {
	if survivor != nil || merged == nil {
		return survivor, false
	}
	return merged, true
}
