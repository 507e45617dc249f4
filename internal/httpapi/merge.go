package httpapi

import (
	"net/http"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
)

// mergePersons merges the person the body's from names into the one the
// path names (POST /persons/{person_id}/merge): 200 with the survivor.
func (s *Server) mergePersons(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		// A pointer tells null, or a missing member, from a string.
		From *string `json:"from"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	survivorID, from := r.PathValue("person_id"), ""
	if body.From != nil {
		from = *body.From
	}
	if err := service.CheckMerge(survivorID, from); err != nil {
		return err
	}
	p, err := s.store.MergePersons(r.Context(), accountID(r), survivorID, from, s.personWrite(r))
	if err != nil {
		return err
	}
	return writeCompact(w, http.StatusOK, p)
}

// listPersonAliases lists the identifiers of persons merged into the one
// the path names that keep finding it (GET /persons/{person_id}/aliases),
// oldest merge first.
func (s *Server) listPersonAliases(w http.ResponseWriter, r *http.Request) error {
	p, err := parsePage(r)
	if err != nil {
		return err
	}
	items, total, err := s.store.PersonAliases(r.Context(), accountID(r), r.PathValue("person_id"), p)
	if err != nil {
		return err
	}
	if items == nil {
		items = []domain.PersonAlias{}
	}
	return writeJSON(w, http.StatusOK, page(items, p, total))
}
