package httpapi

import (
	"net/http"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/params"
	"github.com/pds-dev/pds/internal/service"
)

// erasureRoutes registers erasure and suppressions, all under
// persons:erase: lifting a suppression lets an erased person's identifiers
// back in, and a suppression's hash is worth guarding as the erasure is.
func (s *Server) erasureRoutes() {
	s.handle("DELETE /persons/{person_id}", domain.ScopePersonsErase, s.erasePerson)
	s.handle("GET /suppressions", domain.ScopePersonsErase, s.listSuppressions)
	s.handle("DELETE /suppressions/{suppression_id}", domain.ScopePersonsErase, s.deleteSuppression)
}

// erasePerson erases a person, with suppress=true suppressing its
// identifiers: 204.
func (s *Server) erasePerson(w http.ResponseWriter, r *http.Request) error {
	suppress, err := params.Bool(query(r), "suppress")
	if err != nil {
		return err
	}
	in := domain.EraseRequest{Suppress: suppress}
	if p := principalOf(r.Context()); p != nil && p.key != nil {
		in.KeyID = p.key.ID
	}
	if _, err := s.store.ErasePerson(r.Context(), accountID(r), r.PathValue("person_id"), in, s.personWrite(r)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// suppressionView is a suppression as the API shows it.
type suppressionView struct {
	ID      string      `json:"id"`
	Kind    string      `json:"kind"`
	Hash    string      `json:"hash"`
	Created domain.Time `json:"created"`
	KeyID   string      `json:"key_id"`
}

// listSuppressions pages the account's suppressions or, given one
// identifier (email, external_id, f_id or phone), the suppressions that
// refuse it: hashed under the account's secret as a write's would be, so
// that the identifier itself is neither stored nor logged (the request
// log names the route, never the query).
func (s *Server) listSuppressions(w http.ResponseWriter, r *http.Request) error {
	p, err := parsePage(r)
	if err != nil {
		return err
	}
	given := map[string]service.Param[string]{}
	for _, kind := range domain.SuppressionKinds {
		given[kind] = param(nonEmptyParam(r, kind))
	}
	values, lookup, err := service.SuppressionLookup(given)
	if err != nil {
		return err
	}
	var items []domain.Suppression
	var total int
	if lookup {
		found, err := s.store.FindSuppressions(r.Context(), accountID(r), values)
		if err != nil {
			return err
		}
		// At most one per form of the identifier: paged here.
		total = len(found)
		start := min(p.Offset(), total) // Offset saturates for a huge page
		items = found[start:min(start+p.Size, total)]
	} else if items, total, err = s.store.ListSuppressions(r.Context(), accountID(r), p); err != nil {
		return err
	}
	views := make([]suppressionView, len(items))
	for i, x := range items {
		views[i] = suppressionView{ID: x.ID, Kind: x.Kind, Hash: x.Hash, Created: domain.T(x.CreatedAt), KeyID: x.KeyID}
	}
	return writeJSON(w, http.StatusOK, page(views, p, total))
}

func (s *Server) deleteSuppression(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.DeleteSuppression(r.Context(), accountID(r), r.PathValue("suppression_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
