package console

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/params"
	"github.com/pds-dev/pds/internal/problems"
	"github.com/pds-dev/pds/internal/service"
)

// mergeRoutes are the merge of a duplicate into the person of the page:
// finding the other person, a confirmation naming what moves, and the
// merge. Each needs persons:write, the scope of POST
// /persons/{person_id}/merge.
func (s *Server) mergeRoutes() {
	s.page("GET "+Prefix+"/persons/{person_id}/merge", domain.ScopePersonsWrite, s.confirmMerge)
	s.action("POST "+Prefix+"/persons/{person_id}/merge", domain.ScopePersonsWrite, s.mergePerson)
}

// mergeBy are the ways the operator may name the person to merge: its id,
// or an identifier a lookup finds it by (GET /persons?email=…,
// ?external_id=…).
var mergeBy = []string{"id", "email", "external_id"}

// mergeView is the merge page: the survivor, the form that names the
// other person and, once it is found, what the merge moves.
type mergeView struct {
	ID string
	// Shown says whether the key may read persons (identifiers and tag
	// counts show only then, as Get Person would answer them).
	Shown       bool
	Identifiers []labelled
	By          []string
	Chosen      string
	Other       string
	// From is the person found, "" until one is.
	From string
	// Moves are the other person's identifiers and what the merge does
	// with each (service.MergeIdentifier).
	Moves []identifierMove
	// Tags counts the other's tags the survivor does not hold yet.
	Tags int
	// Counted says whether Breadcrumbs was read (breadcrumbs:read).
	Counted     bool
	Breadcrumbs int
}

// identifierMove is one identifier of the merged person and its fate.
type identifierMove struct {
	Label, Value string
	Alias        bool // an alias of the survivor, else the survivor's own (it had none)
}

// confirmMerge is the merge page. Without other it offers the form; with
// it, it finds that person (by id, or by email or external_id, which needs
// persons:read as the lookup does) and names what moves: its identifiers
// that become aliases or fill the survivor's gaps, its tags the survivor
// lacks and its breadcrumbs. A person it cannot find, or the survivor
// itself, is the API's problem beside the field.
func (s *Server) confirmMerge(w http.ResponseWriter, r *http.Request, v *viewer) error {
	ctx, acc, q := r.Context(), v.key.AccountID, values(r)
	sv, err := s.store.GetPerson(ctx, acc, r.PathValue("person_id"))
	if err != nil {
		return err
	}
	mv := mergeView{ID: sv.ID, Shown: v.Can(string(domain.ScopePersonsRead)), By: mergeBy, Chosen: "id", Other: q.Get("other"),
		Counted: v.Can(string(domain.ScopeBreadcrumbsRead))}
	if mv.Shown {
		mv.Identifiers = identifiersOf(sv)
	}
	by, err := params.Enum(q, "by", mergeBy)
	if err != nil {
		return err
	}
	if by != nil {
		mv.Chosen = *by
	}
	if !q.Has("other") {
		s.render(w, r, v, http.StatusOK, "merge", "Merge into this person", mv)
		return nil
	}
	from, err := s.findOther(r, v, mv.Chosen, q)
	if err == nil {
		err = service.CheckMerge(sv.ID, from.ID)
	}
	if err != nil {
		p := problems.For(s.store.Classify(err))
		if p == nil || (p.Status != http.StatusBadRequest && p.Status != http.StatusNotFound) {
			return err
		}
		pointAtOther(p)
		s.renderProblem(w, r, v, p, "merge", "Merge into this person", mv)
		return nil
	}
	mv.From = from.ID
	if mv.Shown {
		mv.Moves = movesOf(sv, from)
		for _, id := range from.TagIDs {
			if !slices.Contains(sv.TagIDs, id) {
				mv.Tags++
			}
		}
	}
	if mv.Counted {
		if _, mv.Breadcrumbs, err = s.store.ListBreadcrumbs(ctx, acc, domain.BreadcrumbFilter{PersonID: &from.ID}, domain.PageRequest{Page: 1, Size: 1}); err != nil {
			return err
		}
	}
	s.render(w, r, v, http.StatusOK, "merge", "Merge into this person", mv)
	return nil
}

// findOther finds the person the form names: by id as Get Person reads it,
// or by an identifier as List Persons' lookup does (the key must hold
// persons:read for that, as for the lookup).
func (s *Server) findOther(r *http.Request, v *viewer, by string, q url.Values) (*domain.Person, error) {
	other, err := params.NonEmpty(q, "other")
	if other == nil && err == nil {
		err = domain.ParamError("other", "Name the person to merge into this one: its %s.", by)
	}
	if err != nil {
		return nil, asField(err, "other")
	}
	ctx, acc := r.Context(), v.key.AccountID
	if by == "id" {
		return s.store.GetPerson(ctx, acc, *other)
	}
	if err := v.key.Require(domain.ScopePersonsRead); err != nil {
		return nil, err
	}
	lookup := service.PersonListParams{}
	if by == "email" {
		lookup.Email = service.Param[string]{Value: other}
	} else {
		lookup.ExternalID = service.Param[string]{Value: other}
	}
	sel, err := service.SelectPersons(lookup, s.now())
	if err != nil {
		return nil, asField(err, "other")
	}
	found, _, err := s.store.ListPersons(ctx, acc, sel, domain.PageRequest{Page: 1, Size: 1})
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, domain.NotFound("person", *other)
	}
	return &found[0], nil
}

// pointAtOther shows a refusal of the person named (absent, merged away,
// the survivor itself: the API's 400 or 404) beside the form's field
// other, where the body's /from would be.
func pointAtOther(p *problems.Problem) {
	if len(p.Errors) == 0 {
		p.Errors = []domain.FieldError{{Parameter: "other", Detail: p.Detail}}
	}
	for i, e := range p.Errors {
		if e.Pointer == "/from" || e.Parameter == "" {
			p.Errors[i] = domain.FieldError{Parameter: "other", Detail: e.Detail}
		}
	}
}

// mergePerson merges the person the form's from names into the page's, as
// POST /persons/{person_id}/merge does, then shows the survivor (the
// overview, to a key that may not read persons).
func (s *Server) mergePerson(w http.ResponseWriter, r *http.Request, v *viewer) error {
	form := values(r)
	from, err := params.NonEmpty(form, "from")
	if err != nil {
		return err
	}
	survivor := r.PathValue("person_id")
	in := ""
	if from != nil {
		in = *from
	}
	if err := service.CheckMerge(survivor, in); err != nil {
		return err
	}
	if _, err := s.store.MergePersons(r.Context(), v.key.AccountID, survivor, in, s.personWrite()); err != nil {
		return err
	}
	if !v.Can(string(domain.ScopePersonsRead)) {
		return s.done(w, r, Prefix+"/", "merged")
	}
	return s.done(w, r, Prefix+"/persons/"+survivor, "merged")
}

// identifiersOf are a person's identifiers that it holds, labelled.
func identifiersOf(p *domain.Person) []labelled {
	var out []labelled
	for _, id := range []labelled{{"Email", derefOr(p.Email)}, {"External id", derefOr(p.ExternalID)}, {"f_id", derefOr(p.FID)}} {
		if id.Value != "" {
			out = append(out, id)
		}
	}
	return out
}

// movesOf is what the merge does with each identifier the merged person
// holds, decided as the store decides it (service.MergeIdentifier).
func movesOf(sv, from *domain.Person) []identifierMove {
	var out []identifierMove
	for _, k := range []struct {
		label      string
		sv, merged *string
	}{{"External id", sv.ExternalID, from.ExternalID}, {"Email", sv.Email, from.Email}, {"f_id", sv.FID, from.FID}} {
		switch service.MergeIdentifier(derefOr(k.sv), derefOr(k.merged)) {
		case service.Taken:
			out = append(out, identifierMove{Label: k.label, Value: *k.merged})
		case service.Aliased:
			out = append(out, identifierMove{Label: k.label, Value: *k.merged, Alias: true})
		}
	}
	return out
}
