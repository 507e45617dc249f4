package httpapi

import (
	"net/http"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
)

func (s *Server) listTags(w http.ResponseWriter, r *http.Request) error {
	p, tagContext, err := listQuery(r, "context", domain.TagContexts)
	if err != nil {
		return err
	}
	items, total, err := s.store.ListTags(r.Context(), accountID(r), tagContext, p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, page(items, p, total))
}

// createTag answers 201 for a new tag and 200 when it revived an archived one.
func (s *Server) createTag(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Name    *string `json:"name"`
		Context *string `json:"context"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	tag, err := service.NewTag(accountID(r), body.Name, body.Context, s.now())
	if err != nil {
		return err
	}
	tag, revived, err := s.store.CreateTag(r.Context(), tag)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if revived {
		status = http.StatusOK
	}
	return writeJSON(w, status, tag)
}

func (s *Server) getTag(w http.ResponseWriter, r *http.Request) error {
	tag, err := s.store.GetTag(r.Context(), accountID(r), r.PathValue("tag_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, tag)
}

func (s *Server) updateTag(w http.ResponseWriter, r *http.Request) error {
	var patch domain.TagPatch
	if err := decodeJSON(r, &patch); err != nil {
		return err
	}
	if err := service.CheckTagPatch(patch); err != nil {
		return err
	}
	tag, err := s.store.UpdateTag(r.Context(), accountID(r), r.PathValue("tag_id"), patch)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, tag)
}

// deleteTag archives the tag; its links to persons stay.
func (s *Server) deleteTag(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.ArchiveTag(r.Context(), accountID(r), r.PathValue("tag_id"), s.now()); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
