package httpapi

import (
	"net/http"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
)

func (s *Server) listCustomFields(w http.ResponseWriter, r *http.Request) error {
	p, collection, err := listQuery(r, "collection", domain.CustomFieldCollections)
	if err != nil {
		return err
	}
	items, total, err := s.store.ListCustomFields(r.Context(), accountID(r), collection, p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, page(items, p, total))
}

func (s *Server) createCustomField(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Collection  *string `json:"collection"`
		DataType    *string `json:"data_type"`
		Key         *string `json:"key"`
		Label       *string `json:"label"`
		Description *string `json:"description"`
		FormType    *string `json:"form_type"`
		// Named so that sending them gets a 400 that says why.
		IsReadOnly domain.Opt[any] `json:"is_read_only"`
		IsDefault  domain.Opt[any] `json:"is_default"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	var p service.Problems
	for _, m := range []struct {
		pointer string
		set     bool
	}{{"/is_read_only", body.IsReadOnly.Set}, {"/is_default", body.IsDefault.Set}} {
		if m.set {
			p.Add(m.pointer, "%s is set only by the administrative command line (pds import custom-fields).", m.pointer)
		}
	}
	if err := p.Err(); err != nil {
		return err
	}
	f, err := service.NewCustomField(accountID(r), service.FieldCreate{
		Collection: body.Collection, DataType: body.DataType, Key: body.Key,
		Label: body.Label, Description: body.Description, FormType: body.FormType,
	}, s.now())
	if err != nil {
		return err
	}
	f, err = s.store.CreateCustomField(r.Context(), f, s.cfg.CustomFieldLimit)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, f)
}

func (s *Server) getCustomField(w http.ResponseWriter, r *http.Request) error {
	f, err := s.store.GetCustomField(r.Context(), accountID(r), r.PathValue("field_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, f)
}

func (s *Server) updateCustomField(w http.ResponseWriter, r *http.Request) error {
	var patch domain.CustomFieldPatch
	if err := decodeJSON(r, &patch); err != nil {
		return err
	}
	if err := service.CheckFieldPatch(patch); err != nil {
		return err
	}
	f, err := s.store.UpdateCustomField(r.Context(), accountID(r), r.PathValue("field_id"), patch)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, f)
}

// deleteCustomField archives the field; its stored values and key stay.
func (s *Server) deleteCustomField(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.ArchiveCustomField(r.Context(), accountID(r), r.PathValue("field_id"), s.now()); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
