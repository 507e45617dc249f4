package service

import (
	"fmt"

	"github.com/pds-dev/pds/internal/domain"
)

// FieldFormType is the form_type a field gets from a given one: the value,
// or the default, text, when it is absent or null (spec, Create Custom
// Field rule 4; a null form_type on Update Custom Field restores it).
func FieldFormType(v *string) string {
	if v == nil {
		return domain.DefaultFormType
	}
	return *v
}

// FieldKeyCollision decides a Create Custom Field (or an imported field)
// whose (collection, key) another stored field, holder, already holds
// (spec, Create Custom Field rule 2): a 409 naming holder, live or archived,
// since an archived field keeps its key reserved (decisions.md section 5).
func FieldKeyCollision(holder domain.CustomField) error {
	if holder.ArchivedAt != nil {
		return &domain.ConflictError{ExistingID: holder.ID, Detail: fmt.Sprintf(
			"The archived custom field %s keeps the key %q in collection %s reserved; choose another key.",
			holder.ID, holder.Key, holder.Collection)}
	}
	return &domain.ConflictError{ExistingID: holder.ID, Detail: fmt.Sprintf(
		"The custom field %s already uses the key %q in collection %s.", holder.ID, holder.Key, holder.Collection)}
}

// CheckFieldLimit decides whether an account that holds live live custom
// fields may create another under the account-wide limit (spec, Create
// Custom Field rule 3): only live fields count (decisions.md section 5), and
// reaching the limit is a 422 that says both numbers.
func CheckFieldLimit(live, limit int) error {
	if live < limit {
		return nil
	}
	return &domain.LimitError{Limit: limit, Current: live, Detail: fmt.Sprintf(
		"This account holds %d live custom fields and the limit is %d; archive a field before creating another.", live, limit)}
}

// PatchField applies a validated Update Custom Field request to f: absent
// members leave their value, a null label or description clears it, and a
// null form_type restores the default, text.
func PatchField(f domain.CustomField, patch domain.CustomFieldPatch) domain.CustomField {
	if patch.Label.Set {
		f.Label = patch.Label.Ptr()
	}
	if patch.Description.Set {
		f.Description = patch.Description.Ptr()
	}
	if patch.FormType.Set {
		f.FormType = FieldFormType(patch.FormType.Ptr())
	}
	return f
}
