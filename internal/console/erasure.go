package console

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/params"
	"github.com/pds-dev/pds/internal/problems"
	"github.com/pds-dev/pds/internal/service"
)

// erasureRoutes are the pages of personal data: erasing a person behind a
// confirmation, and the suppressions erasures leave. Each needs
// persons:erase, the scope of DELETE /persons/{person_id} and of the
// suppressions' operations.
func (s *Server) erasureRoutes() {
	s.page("GET "+Prefix+"/persons/{person_id}/erase", domain.ScopePersonsErase, s.confirmErase)
	s.action("POST "+Prefix+"/persons/{person_id}/erase", domain.ScopePersonsErase, s.erasePerson)
	s.page("GET "+Prefix+"/suppressions", domain.ScopePersonsErase, s.suppressions)
	// A search posts its identifier, behind the form token, so that it
	// stays out of the address bar, the browser's history and any log of
	// URLs: the identifier of an erased person is what suppression keeps
	// out of clear text.
	s.action("POST "+Prefix+"/suppressions", domain.ScopePersonsErase, s.searchSuppressions)
	s.action("POST "+Prefix+"/suppressions/{id}/lift", domain.ScopePersonsErase, s.liftSuppression)
}

// eraseView is what an erasure's confirmation names: the person, its
// identifiers when the key may read persons, and how much of what it holds
// goes with it.
type eraseView struct {
	ID string
	// Identifiers are shown only to a key with persons:read, as Get
	// Person would answer it; empty otherwise.
	Identifiers []labelled
	Shown       bool
	// Counted says which counts the key may see
	// (service.MaySeeErasureCounts); the others are not read.
	Counted                            service.ErasureCounts
	Tags, Values, Breadcrumbs, Pending int
}

type labelled struct{ Label, Value string }

// confirmErase names what an erasure removes before it is asked for: the
// counts of the person's tag links, custom values (those of archived tags
// and fields too, which go as well), breadcrumbs and pending deliveries,
// each to a key that may read what it counts.
// Another account's id is absent, as everywhere.
func (s *Server) confirmErase(w http.ResponseWriter, r *http.Request, v *viewer) error {
	ctx, acc := r.Context(), v.key.AccountID
	rec, err := s.store.PersonRecord(ctx, acc, r.PathValue("person_id"))
	if err != nil {
		return err
	}
	p := rec.Person
	ev := eraseView{ID: p.ID, Shown: v.Can(string(domain.ScopePersonsRead)), Counted: service.MaySeeErasureCounts(v.key)}
	if ev.Counted.Tags {
		ev.Tags = len(rec.Tags)
	}
	if ev.Counted.Values {
		ev.Values = len(rec.Values)
	}
	if ev.Shown {
		for _, id := range []labelled{{"Email", derefOr(p.Email)}, {"External id", derefOr(p.ExternalID)},
			{"f_id", derefOr(p.FID)}, {"Phone", derefOr(p.Phone)}} {
			if id.Value != "" {
				ev.Identifiers = append(ev.Identifiers, id)
			}
		}
	}
	if ev.Counted.Breadcrumbs {
		if _, ev.Breadcrumbs, err = s.store.ListBreadcrumbs(ctx, acc, domain.BreadcrumbFilter{PersonID: &p.ID}, domain.PageRequest{Page: 1, Size: 1}); err != nil {
			return err
		}
	}
	if ev.Counted.Pending {
		if ev.Pending, err = s.pendingDeliveries(r, acc, p.ID); err != nil {
			return err
		}
	}
	s.render(w, r, v, http.StatusOK, "erase", "Erase a person", ev)
	return nil
}

// pendingDeliveries counts the person's pending deliveries in every
// subscription of the account (few), each in its status index.
func (s *Server) pendingDeliveries(r *http.Request, acc, personID string) (int, error) {
	n := 0
	for page := 1; ; page++ {
		hooks, total, err := s.store.ListWebhooks(r.Context(), acc, domain.PageRequest{Page: page, Size: params.MaxPageSize})
		if err != nil {
			return 0, err
		}
		for _, h := range hooks {
			_, pending, err := s.store.ListDeliveries(r.Context(), acc, h.ID,
				domain.DeliveryFilter{Status: domain.DeliveryPending, PersonID: personID}, domain.PageRequest{Page: 1, Size: 1})
			if err != nil {
				return 0, err
			}
			n += pending
		}
		if page*params.MaxPageSize >= total {
			return n, nil
		}
	}
}

// erasePerson erases the person as DELETE /persons/{person_id} does, with
// ?suppress=true when the form's box is checked, recorded as this key's
// erasure; then the persons list says it is done (the overview, for a key
// that may not list persons).
func (s *Server) erasePerson(w http.ResponseWriter, r *http.Request, v *viewer) error {
	// The box sends true; the API's own reading of suppress refuses
	// anything but true or false.
	suppress, err := params.Bool(values(r), "suppress")
	if err != nil {
		return err
	}
	in := domain.EraseRequest{Suppress: suppress, KeyID: v.key.ID}
	if _, err := s.store.ErasePerson(r.Context(), v.key.AccountID, r.PathValue("person_id"), in, s.personWrite()); err != nil {
		return err
	}
	to, notice := Prefix+"/", "erased"
	if v.Can(string(domain.ScopePersonsRead)) {
		to = Prefix + "/persons"
	}
	if suppress {
		notice = "erased-suppressed"
	}
	return s.done(w, r, to, notice)
}

type suppressionsView struct {
	Suppressions []domain.Suppression
	Total        int
	Prev, Next   string
	// Kinds are the identifiers a search may name; Kind and Searched
	// say what the shown search was for (never the identifier itself,
	// which the page does not send back).
	Kinds    []string
	Kind     string
	Searched bool
	// KeyNames name the keys that made the suppressions shown.
	KeyNames map[string]string
}

// suppressions lists the account's suppressions, newest first, as GET
// /suppressions pages them: the keyed hash (never the identifier), its
// kind, when and by which key (by its name); each may be lifted.
func (s *Server) suppressions(w http.ResponseWriter, r *http.Request, v *viewer) error {
	q := values(r)
	pr, err := params.Page(q)
	if err != nil {
		return err
	}
	sv := suppressionsView{Kinds: domain.SuppressionKinds, Kind: domain.SuppressEmail}
	if sv.Suppressions, sv.Total, err = s.store.ListSuppressions(r.Context(), v.key.AccountID, pr); err != nil {
		return err
	}
	if sv.KeyNames, err = s.keyNames(r, v); err != nil {
		return err
	}
	sv.Prev, sv.Next = pageLinks(Prefix+"/suppressions", q, pr, sv.Total)
	s.render(w, r, v, http.StatusOK, "suppressions", "Suppressions", sv)
	return nil
}

// searchSuppressions shows the suppressions of one identifier, found as
// GET /suppressions?<kind>=<identifier> finds them (service.SuppressionLookup,
// then the store's hashed lookup): the form names the kind and the
// identifier; a refused identifier is shown beside the field.
func (s *Server) searchSuppressions(w http.ResponseWriter, r *http.Request, v *viewer) error {
	form := values(r)
	sv := suppressionsView{Kinds: domain.SuppressionKinds, Kind: form.Get("kind"), Searched: true}
	found, err := s.findSuppressions(r, v, form)
	var refused *domain.ValidationError
	if err != nil && !errors.As(err, &refused) {
		return err
	}
	sv.Suppressions, sv.Total = found, len(found)
	if sv.KeyNames, err = s.keyNames(r, v); err != nil {
		return err
	}
	if refused != nil {
		s.renderProblem(w, r, v, problems.For(refused), "suppressions", "Suppressions", sv)
		return nil
	}
	s.render(w, r, v, http.StatusOK, "suppressions", "Suppressions", sv)
	return nil
}

// findSuppressions reads the search form's kind and identifier: a 400
// (pointed at the form's field) when either is not one.
func (s *Server) findSuppressions(r *http.Request, v *viewer, form url.Values) ([]domain.Suppression, error) {
	kind, err := params.Enum(form, "kind", domain.SuppressionKinds)
	if err != nil {
		return nil, err
	}
	if kind == nil {
		return nil, domain.ParamError("kind", "Choose which identifier to look up: one of %s.", strings.Join(domain.SuppressionKinds, ", "))
	}
	identifier, err := params.NonEmpty(form, "identifier")
	if identifier == nil && err == nil {
		err = domain.ParamError("identifier", "Type the %s to look up.", *kind)
	}
	values, _, err := service.SuppressionLookup(map[string]service.Param[string]{*kind: {Value: identifier, Err: err}})
	if err != nil {
		return nil, asField(err, "identifier")
	}
	return s.store.FindSuppressions(r.Context(), v.key.AccountID, values)
}

// asField points a 400 about the lookup's parameters at one form field,
// where the console shows it.
func asField(err error, field string) error {
	var ve *domain.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	out := &domain.ValidationError{Detail: ve.Detail}
	for _, e := range ve.Errors {
		if e.Parameter != "" && e.Parameter != "kind" {
			e.Parameter = field
		}
		out.Errors = append(out.Errors, e)
	}
	return out
}

// keyNames names the account's keys, for the suppressions' "by key"
// column: a key's name, else its prefix (a key minted without a name).
func (s *Server) keyNames(r *http.Request, v *viewer) (map[string]string, error) {
	keys, err := s.store.ListKeys(r.Context(), v.key.AccountID)
	if err != nil {
		return nil, err
	}
	names := make(map[string]string, len(keys))
	for _, k := range keys {
		names[k.ID] = k.Prefix + "…" + k.LastFour
		if k.Name != nil && *k.Name != "" {
			names[k.ID] = *k.Name
		}
	}
	return names, nil
}

// liftSuppression lifts one suppression, as DELETE /suppressions/{id}
// does: writes naming that identifier are accepted again.
func (s *Server) liftSuppression(w http.ResponseWriter, r *http.Request, v *viewer) error {
	if err := s.store.DeleteSuppression(r.Context(), v.key.AccountID, r.PathValue("id")); err != nil {
		return err
	}
	return s.done(w, r, Prefix+"/suppressions", "lifted")
}
