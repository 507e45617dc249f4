package httpapi

import (
	"net/http"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/params"
	"github.com/pds-dev/pds/internal/personview"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// personWrite stamps a person write with the request time and the webhook
// coalescing window, which the store's outbox needs, and passes on what
// the key's read said of the account's suppressions: none, and the write
// need not read the account's suppression secret ahead of its
// transaction (which checks the identifiers whatever the key said).
func (s *Server) personWrite(r *http.Request) store.Write {
	w := store.Write{Now: s.now(), Window: s.cfg.WebhookWindow}
	if p := principalOf(r.Context()); p != nil && p.key != nil {
		w.NoSuppressions = !p.key.AccountSuppresses
	}
	return w
}

// writeCompact writes the compact view of p: the bytes writeJSON writes
// for personview.Compact(p), appended without reflection (the person
// routes' every answer; TestAppendCompactLineMatchesEncoder holds them
// equal).
func writeCompact(w http.ResponseWriter, status int, p *domain.Person) error {
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(status)
	_, err := w.Write(personview.AppendCompactLine(make([]byte, 0, 512), p))
	return err
}

// upsertPerson matches or creates a person: 201 when created, 200 when matched.
func (s *Server) upsertPerson(w http.ResponseWriter, r *http.Request) error {
	var in domain.PersonUpsert
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	if err := in.Normalize(); err != nil {
		return err
	}
	p, created, err := s.store.UpsertPerson(r.Context(), accountID(r), in, s.personWrite(r))
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return writeCompact(w, status, p)
}

// updatePerson patches a person. external_id and f_id are stable keys that
// only an upsert sets, so they are refused here by name, even as null.
func (s *Server) updatePerson(w http.ResponseWriter, r *http.Request) error {
	var body domain.PersonUpsert
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"external_id", body.ExternalID.Set}, {"f_id", body.FID.Set}} {
		if f.set {
			return domain.BodyError("/"+f.name, "%s cannot be changed by Update Person; it is set by Upsert Person (POST /persons).", f.name)
		}
	}
	if err := body.Normalize(); err != nil {
		return err
	}
	in := domain.PersonUpdate{Email: body.Email, FirstName: body.FirstName, LastName: body.LastName, Phone: body.Phone,
		CustomFields: body.CustomFields}
	p, err := s.store.UpdatePerson(r.Context(), accountID(r), r.PathValue("person_id"), in, s.personWrite(r))
	if err != nil {
		return err
	}
	return writeCompact(w, http.StatusOK, p)
}

// getPerson returns the compact person, or the extended view with extended=true.
func (s *Server) getPerson(w http.ResponseWriter, r *http.Request) error {
	extended, err := params.Bool(query(r), "extended")
	if err != nil {
		return err
	}
	ctx, acc := r.Context(), accountID(r)
	p, err := s.store.GetPerson(ctx, acc, r.PathValue("person_id"))
	if err != nil {
		return err
	}
	if !extended {
		return writeCompact(w, http.StatusOK, p)
	}
	fields, err := s.store.ListPersonFields(ctx, acc)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, personview.Extended(p, fields, s.cfg.PublicURL, s.now()))
}

// listPersons serves the window mode (updated_since) and the lookup mode
// (external_id, else email), as service.SelectPersons decides from the
// parameters.
func (s *Server) listPersons(w http.ResponseWriter, r *http.Request) error {
	pr, err := parsePage(r)
	if err != nil {
		return err
	}
	tagIDs, tagIDsErr := tagIDsParam(r)
	sel, err := service.SelectPersons(service.PersonListParams{
		UpdatedSince: param(parseTimeParam(r, "updated_since")),
		ExternalID:   param(nonEmptyParam(r, "external_id")),
		Email:        param(nonEmptyParam(r, "email")),
		TagIDs:       service.Param[[]string]{Value: &tagIDs, Err: tagIDsErr},
	}, s.now())
	if err != nil {
		return err
	}
	persons, total, err := s.store.ListPersons(r.Context(), accountID(r), sel, pr)
	if err != nil {
		return err
	}
	items := make([]personview.CompactPerson, len(persons))
	for i := range persons {
		items[i] = personview.Compact(&persons[i])
	}
	return writeJSON(w, http.StatusOK, page(items, pr, total))
}

// param carries a parsed query parameter, or its parse error, to the rules
// that decide whether it matters.
func param[T any](v *T, err error) service.Param[T] { return service.Param[T]{Value: v, Err: err} }

// nonEmptyParam reads an optional query parameter that, when given, must
// not be empty (params.NonEmpty).
func nonEmptyParam(r *http.Request, name string) (*string, error) {
	return params.NonEmpty(query(r), name)
}

// tagIDsParam reads tag_ids (params.TagIDs).
func tagIDsParam(r *http.Request) ([]string, error) { return params.TagIDs(query(r)) }

// addPersonTags attaches live tags to a person and returns the person.
func (s *Server) addPersonTags(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		// Pointers tell a null item, which would decode as "", from a string.
		TagIDs []*string `json:"tag_ids"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	ids := make([]string, len(body.TagIDs))
	for i, id := range body.TagIDs {
		if id != nil {
			ids[i] = *id // a null item stays "", which the check refuses
		}
	}
	if err := domain.CheckTagIDs(ids); err != nil {
		return err
	}
	p, err := s.store.AddPersonTags(r.Context(), accountID(r), r.PathValue("person_id"), ids, s.personWrite(r))
	if err != nil {
		return err
	}
	return writeCompact(w, http.StatusOK, p)
}

// removePersonTag detaches a tag: 204 whether or not the person held it.
func (s *Server) removePersonTag(w http.ResponseWriter, r *http.Request) error {
	err := s.store.RemovePersonTag(r.Context(), accountID(r), r.PathValue("person_id"), r.PathValue("tag_id"), s.personWrite(r))
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
