package console

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/params"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

func (s *Server) personRoutes() {
	s.page("GET "+Prefix+"/persons", domain.ScopePersonsRead, s.persons)
	s.page("GET "+Prefix+"/persons/{person_id}", domain.ScopePersonsRead, s.person)
	s.action("POST "+Prefix+"/persons/{person_id}", domain.ScopePersonsWrite, s.updatePerson)
	s.action("POST "+Prefix+"/persons/{person_id}/tags", domain.ScopePersonsWrite, s.attachTags)
	s.action("POST "+Prefix+"/persons/{person_id}/tags/{tag_id}/remove", domain.ScopePersonsWrite, s.detachTag)
}

// seenWithin are the windows the persons list offers, as List Persons'
// updated_since measured back from now (at most 30 days, spec rule 2).
var seenWithin = []window{
	{"1h", "the last hour", time.Hour}, {"24h", "the last 24 hours", 24 * time.Hour},
	{"168h", "the last 7 days", 7 * 24 * time.Hour}, {"720h", "the last 30 days", 30 * 24 * time.Hour},
}

type window struct {
	Value, Label string
	span         time.Duration
}

type personsView struct {
	Seen, Email, ExternalID string
	TagIDs                  []string
	Lookup                  bool
	Persons                 []domain.Person
	Total                   int
	Page                    domain.PageRequest
	Tags                    []domain.Tag // for the filter, when the key reads tags
	Windows                 []window
	Prev, Next              string // links to the neighbouring pages
}

// persons lists persons in List Persons' two modes: the window of persons
// seen since a time (with a tag filter), newest first, or a lookup by email
// or external_id. It reads its parameters and selects exactly as the API does
// (params, service.SelectPersons), so its totals and pages are the API's.
func (s *Server) persons(w http.ResponseWriter, r *http.Request, v *viewer) error {
	q := values(r)
	// The form sends its fields left empty; an empty one is not given.
	for _, name := range []string{"email", "external_id"} {
		if q.Has(name) && q.Get(name) == "" {
			q.Del(name)
		}
	}
	now := s.now()
	pv := personsView{Seen: q.Get("seen"), Windows: seenWithin}
	pr, err := params.Page(q)
	if err != nil {
		return err
	}
	pv.Page = pr
	email, emailErr := params.NonEmpty(q, "email")
	ext, extErr := params.NonEmpty(q, "external_id")
	tagIDs, tagErr := params.TagIDs(q)
	var since *time.Time
	if email == nil && ext == nil {
		if pv.Seen == "" {
			pv.Seen = "720h"
		}
		i := slices.IndexFunc(seenWithin, func(o window) bool { return o.Value == pv.Seen })
		if i < 0 {
			return domain.ParamError("seen", "seen must be one of 1h, 24h, 168h or 720h; got %q.", pv.Seen)
		}
		t := now.Add(-seenWithin[i].span)
		since = &t
	}
	sel, err := service.SelectPersons(service.PersonListParams{
		UpdatedSince: service.Param[time.Time]{Value: since},
		ExternalID:   service.Param[string]{Value: ext, Err: extErr},
		Email:        service.Param[string]{Value: email, Err: emailErr},
		TagIDs:       service.Param[[]string]{Value: &tagIDs, Err: tagErr},
	}, now)
	if err != nil {
		return err
	}
	// Newest first: a person looks here for who was active lately, and
	// with many persons the API's ascending order put them on the last
	// page.
	sel.NewestFirst = true
	pv.Lookup = sel.Mode != domain.PersonWindow
	pv.Email, pv.ExternalID, pv.TagIDs = derefOr(email), derefOr(ext), tagIDs
	ctx := r.Context()
	if pv.Persons, pv.Total, err = s.store.ListPersons(ctx, v.key.AccountID, sel, pr); err != nil {
		return err
	}
	if v.Can(string(domain.ScopeTagsRead)) {
		ctx := r.Context()
		ctxTag := "person"
		if pv.Tags, _, err = s.store.ListTags(ctx, v.key.AccountID, &ctxTag, domain.PageRequest{Page: 1, Size: params.MaxPageSize}); err != nil {
			return err
		}
	}
	pv.Prev, pv.Next = pageLinks(Prefix+"/persons", q, pr, pv.Total)
	s.render(w, r, v, http.StatusOK, "persons", "Persons", pv)
	return nil
}

func derefOr(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// pageLinks are the links to the page before and after pr, "" where there
// is none, keeping the other parameters.
func pageLinks(base string, q url.Values, pr domain.PageRequest, total int) (prev, next string) {
	link := func(page int) string {
		c := url.Values{}
		for k, vs := range q {
			if k != "page" {
				c[k] = vs
			}
		}
		c.Set("page", strconv.Itoa(page))
		return base + "?" + c.Encode()
	}
	if pr.Page > 1 {
		prev = link(pr.Page - 1)
	}
	if pr.Page*pr.Size < total {
		next = link(pr.Page + 1)
	}
	return prev, next
}

type personView struct {
	Person *domain.Person
	// Fields are the account's live Person fields, for the values and the
	// form, to a key that may read their definitions; to any other, only
	// the keys of the values the person holds, as Get Person answers them
	// (service.SeesFieldDefinitions).
	Fields      []domain.CustomField
	Values      map[string]string // the form's values: the person's, or those just refused
	Tags        []domain.Tag      // live tags it may attach
	Breadcrumbs []domain.Breadcrumb
	CrumbTotal  int
	CrumbPage   domain.PageRequest
	Prev, Next  string
}

// person shows one person of the account (another account's id is the
// same 404 as an absent one): attributes, tags, custom field values, the
// breadcrumb timeline newest first, and the edit form.
func (s *Server) person(w http.ResponseWriter, r *http.Request, v *viewer) error {
	pv, err := s.personPage(r, v, nil)
	if err != nil {
		return err
	}
	s.render(w, r, v, http.StatusOK, "person", personTitle(pv.Person), pv)
	return nil
}

func (s *Server) personPage(r *http.Request, v *viewer, form url.Values) (personView, error) {
	ctx, acc := r.Context(), v.key.AccountID
	var pv personView
	p, err := s.store.GetPerson(ctx, acc, r.PathValue("person_id"))
	if err != nil {
		return pv, err
	}
	pv.Person = p
	if v.SeesFieldDefinitions() {
		if pv.Fields, err = s.store.ListPersonFields(ctx, acc); err != nil {
			return pv, err
		}
	} else {
		for _, k := range slices.Sorted(maps.Keys(p.CustomFields)) {
			pv.Fields = append(pv.Fields, domain.CustomField{Key: k})
		}
	}
	pv.Values = formValues(p, pv.Fields, form)
	if v.Can(string(domain.ScopeTagsRead)) {
		ctxTag := "person"
		all, _, err := s.store.ListTags(ctx, acc, &ctxTag, domain.PageRequest{Page: 1, Size: params.MaxPageSize})
		if err != nil {
			return pv, err
		}
		pv.Tags = slices.DeleteFunc(all, func(t domain.Tag) bool { return slices.Contains(p.TagIDs, t.ID) })
	}
	if v.Can(string(domain.ScopeBreadcrumbsRead)) {
		q := values(r)
		pq := url.Values{}
		if q.Has("crumbs") {
			pq["page"] = q["crumbs"]
		}
		pr, err := params.Page(pq)
		if err != nil {
			return pv, domain.ParamError("crumbs", "crumbs must be a page number of at least 1.")
		}
		pr.Size = 10
		pv.CrumbPage = pr
		if pv.Breadcrumbs, pv.CrumbTotal, err = s.store.ListBreadcrumbs(ctx, acc, domain.BreadcrumbFilter{PersonID: &p.ID}, pr); err != nil {
			return pv, err
		}
		prev, next := pageLinks(Prefix+"/persons/"+p.ID, url.Values{}, pr, pv.CrumbTotal)
		pv.Prev, pv.Next = strings.Replace(prev, "page=", "crumbs=", 1), strings.Replace(next, "page=", "crumbs=", 1)
	}
	return pv, nil
}

func personTitle(p *domain.Person) string {
	for _, s := range []*string{p.Email, p.ExternalID} {
		if s != nil {
			return *s
		}
	}
	return p.ID
}

// formValues are the edit form's values: what was just sent (and refused),
// else what the person holds.
func formValues(p *domain.Person, fields []domain.CustomField, form url.Values) map[string]string {
	out := map[string]string{}
	if form != nil {
		for k := range form {
			out[k] = form.Get(k)
		}
		return out
	}
	for name, val := range map[string]*string{"email": p.Email, "first_name": p.FirstName, "last_name": p.LastName, "phone": p.Phone} {
		out[name] = derefOr(val)
	}
	for _, f := range fields {
		if val, ok := p.CustomFields[f.Key]; ok {
			if f.DataType == "list" {
				val = listLines(val)
			}
			out["custom_fields."+f.Key] = val
		}
	}
	return out
}

// listLines shows a list value (stored as a JSON array) one item a line.
func listLines(stored string) string {
	var items []string
	if json.Unmarshal([]byte(stored), &items) != nil {
		return stored
	}
	return strings.Join(items, "\n")
}

// updatePerson applies the edit form as Update Person applies its body:
// an empty field clears its value, a custom field takes its value as text
// (a list one item a line), and the same validation and store call decide.
// A refusal draws the form again with each error beside its field.
func (s *Server) updatePerson(w http.ResponseWriter, r *http.Request, v *viewer) error {
	form := values(r)
	ctx, acc := r.Context(), v.key.AccountID
	// Values are edited by their fields' types, which only a key that may
	// read the definitions is shown; any other edits attributes alone.
	var fields []domain.CustomField
	if v.SeesFieldDefinitions() {
		var err error
		if fields, err = s.store.ListPersonFields(ctx, acc); err != nil {
			return err
		}
	}
	in := domain.PersonUpdate{}
	for name, opt := range map[string]*domain.Opt[string]{"email": &in.Email, "first_name": &in.FirstName, "last_name": &in.LastName, "phone": &in.Phone} {
		if form.Has(name) {
			*opt = textOpt(form.Get(name))
		}
	}
	values := map[string]json.RawMessage{}
	for _, f := range fields {
		name := "custom_fields." + f.Key
		if !form.Has(name) || f.IsReadOnly {
			continue
		}
		values[f.Key] = fieldValue(f, form.Get(name))
	}
	if len(values) > 0 {
		in.CustomFields = domain.Opt[map[string]json.RawMessage]{Set: true, Value: values}
	}
	checked := in.AsUpsert()
	err := checked.Normalize()
	in.Email, in.Phone = checked.Email, checked.Phone
	if err == nil {
		_, err = s.store.UpdatePerson(ctx, acc, r.PathValue("person_id"), in, s.personWrite())
	}
	return s.after(w, r, v, err, Prefix+"/persons/"+r.PathValue("person_id"), "saved", func() (string, string, any, error) {
		pv, err := s.personPage(r, v, form)
		if err != nil {
			return "", "", nil, err
		}
		return "person", personTitle(pv.Person), pv, nil
	})
}

// textOpt is a form field as an update field: empty clears it.
func textOpt(v string) domain.Opt[string] {
	if v == "" {
		return domain.Opt[string]{Set: true, Null: true}
	}
	return domain.Opt[string]{Set: true, Value: v}
}

// fieldValue is a custom field's form text as Update Person's value: null
// (removed) when empty, a list one item a line, any other type as text,
// which every data_type accepts and checks.
func fieldValue(f domain.CustomField, text string) json.RawMessage {
	if strings.TrimSpace(text) == "" {
		return json.RawMessage("null")
	}
	if f.DataType == "list" {
		items := []string{}
		for line := range strings.Lines(text) {
			if line = strings.TrimSpace(line); line != "" {
				items = append(items, line)
			}
		}
		b, _ := json.Marshal(items)
		return b
	}
	b, _ := json.Marshal(text)
	return b
}

// attachTags attaches the tags chosen, as Add Person Tags does.
func (s *Server) attachTags(w http.ResponseWriter, r *http.Request, v *viewer) error {
	ids := values(r)["tag_ids"]
	if err := domain.CheckTagIDs(ids); err != nil {
		return err
	}
	id := r.PathValue("person_id")
	if _, err := s.store.AddPersonTags(r.Context(), v.key.AccountID, id, ids, s.personWrite()); err != nil {
		return err
	}
	return s.done(w, r, Prefix+"/persons/"+id, "tagged")
}

// detachTag detaches one tag, as Remove Person Tag does.
func (s *Server) detachTag(w http.ResponseWriter, r *http.Request, v *viewer) error {
	id := r.PathValue("person_id")
	if err := s.store.RemovePersonTag(r.Context(), v.key.AccountID, id, r.PathValue("tag_id"), s.personWrite()); err != nil {
		return err
	}
	return s.done(w, r, Prefix+"/persons/"+id, "untagged")
}

// personWrite stamps a person write as the API stamps it.
func (s *Server) personWrite() store.Write {
	return store.Write{Now: s.now(), Window: s.cfg.WebhookWindow}
}
