package console

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/params"
	"github.com/pds-dev/pds/internal/service"
)

func (s *Server) catalogRoutes() {
	s.page("GET "+Prefix+"/tags", domain.ScopeTagsRead, s.tags)
	s.action("POST "+Prefix+"/tags", domain.ScopeTagsWrite, s.createTag)
	s.action("POST "+Prefix+"/tags/{tag_id}", domain.ScopeTagsWrite, s.updateTag)
	s.action("POST "+Prefix+"/tags/{tag_id}/archive", domain.ScopeTagsWrite, s.archiveTag)

	s.page("GET "+Prefix+"/custom-fields", domain.ScopeCustomFieldsRead, s.fields)
	s.action("POST "+Prefix+"/custom-fields", domain.ScopeCustomFieldsWrite, s.createField)
	s.action("POST "+Prefix+"/custom-fields/{field_id}", domain.ScopeCustomFieldsWrite, s.updateField)
	s.action("POST "+Prefix+"/custom-fields/{field_id}/archive", domain.ScopeCustomFieldsWrite, s.archiveField)

	s.page("GET "+Prefix+"/campaigns", domain.ScopeCampaignsRead, s.campaigns)
	s.page("GET "+Prefix+"/projects", domain.ScopeProjectsRead, s.projects)
}

// listView is a page of a catalogue list with its filter.
type listView[T any] struct {
	Items      []T
	Total      int
	Page       domain.PageRequest
	Prev, Next string
	Filter     string   // the filter's value ("" for all)
	Choices    []string // the filter's values
	// Path is the list's page; FilterName and FilterLabel name its filter.
	Path, FilterName, FilterLabel string
	// Form holds what a refused form sent, to show it again.
	Form url.Values
	// Holders counts each tag's persons, by tag id, for a key that may
	// read persons (nil for any other).
	Holders map[string]int
}

// filterParam reads an optional enumerated filter as the API reads it;
// the form's "all" sends it empty, which is no filter.
func filterParam(q url.Values, name string, allowed []string) (*string, error) {
	if q.Get(name) == "" {
		return nil, nil
	}
	v, err := params.NonEmpty(q, name)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(allowed, *v) {
		return nil, domain.ParamError(name, "%s must be one of %v; got %q.", name, allowed, *v)
	}
	return v, nil
}

func (s *Server) tags(w http.ResponseWriter, r *http.Request, v *viewer) error {
	lv, err := s.tagList(r, v)
	if err != nil {
		return err
	}
	s.render(w, r, v, http.StatusOK, "tags", "Tags", lv)
	return nil
}

func (s *Server) tagList(r *http.Request, v *viewer) (listView[domain.Tag], error) {
	q := values(r)
	lv := listView[domain.Tag]{Choices: domain.TagContexts, Path: Prefix + "/tags", FilterName: "context", FilterLabel: "Context"}
	if r.Method == http.MethodPost {
		q, lv.Form = url.Values{}, values(r)
	}
	pr, err := params.Page(q)
	if err != nil {
		return lv, err
	}
	filter, err := filterParam(q, "context", domain.TagContexts)
	if err != nil {
		return lv, err
	}
	lv.Page, lv.Filter = pr, derefOr(filter)
	if lv.Items, lv.Total, err = s.store.ListTags(r.Context(), v.key.AccountID, filter, pr); err != nil {
		return lv, err
	}
	// Who holds a tag is the persons' to tell (List Persons by tag_ids
	// takes persons:read): counted from the tags' bitmaps, a few hundred
	// short rows a tag at a million persons.
	if v.Can(string(domain.ScopePersonsRead)) && len(lv.Items) > 0 {
		ids := make([]string, len(lv.Items))
		for i, t := range lv.Items {
			ids[i] = t.ID
		}
		if lv.Holders, err = s.store.TagHolderCounts(r.Context(), v.key.AccountID, ids); err != nil {
			return lv, err
		}
	}
	lv.Prev, lv.Next = pageLinks(lv.Path, q, pr, lv.Total)
	return lv, nil
}

// createTag creates a tag as Create Tag does (reviving an archived one).
func (s *Server) createTag(w http.ResponseWriter, r *http.Request, v *viewer) error {
	form := values(r)
	name, tagContext := form.Get("name"), form.Get("context")
	tag, err := service.NewTag(v.key.AccountID, &name, &tagContext, s.now())
	if err == nil {
		_, _, err = s.store.CreateTag(r.Context(), tag)
	}
	return s.afterTagAction(w, r, v, err, "created")
}

// updateTag renames or moves a tag as Update Tag does.
func (s *Server) updateTag(w http.ResponseWriter, r *http.Request, v *viewer) error {
	form := values(r)
	patch := domain.TagPatch{Name: textOpt(form.Get("name")), Context: textOpt(form.Get("context"))}
	err := service.CheckTagPatch(patch)
	if err == nil {
		_, err = s.store.UpdateTag(r.Context(), v.key.AccountID, r.PathValue("tag_id"), patch)
	}
	return s.afterTagAction(w, r, v, err, "saved")
}

// archiveTag archives a tag as Delete Tag does; its links stay.
func (s *Server) archiveTag(w http.ResponseWriter, r *http.Request, v *viewer) error {
	err := s.store.ArchiveTag(r.Context(), v.key.AccountID, r.PathValue("tag_id"), s.now())
	return s.afterTagAction(w, r, v, err, "archived")
}

func (s *Server) afterTagAction(w http.ResponseWriter, r *http.Request, v *viewer, err error, notice string) error {
	return s.after(w, r, v, err, Prefix+"/tags", notice, func() (string, string, any, error) {
		lv, err := s.tagList(r, v)
		return "tags", "Tags", lv, err
	})
}

func (s *Server) fields(w http.ResponseWriter, r *http.Request, v *viewer) error {
	lv, err := s.fieldList(r, v)
	if err != nil {
		return err
	}
	s.render(w, r, v, http.StatusOK, "fields", "Custom fields", lv)
	return nil
}

func (s *Server) fieldList(r *http.Request, v *viewer) (listView[domain.CustomField], error) {
	q := values(r)
	lv := listView[domain.CustomField]{Choices: domain.CustomFieldCollections, Path: Prefix + "/custom-fields",
		FilterName: "collection", FilterLabel: "Collection"}
	if r.Method == http.MethodPost {
		q, lv.Form = url.Values{}, values(r)
	}
	pr, err := params.Page(q)
	if err != nil {
		return lv, err
	}
	filter, err := filterParam(q, "collection", domain.CustomFieldCollections)
	if err != nil {
		return lv, err
	}
	lv.Page, lv.Filter = pr, derefOr(filter)
	if lv.Items, lv.Total, err = s.store.ListCustomFields(r.Context(), v.key.AccountID, filter, pr); err != nil {
		return lv, err
	}
	lv.Prev, lv.Next = pageLinks(lv.Path, q, pr, lv.Total)
	return lv, nil
}

// createField creates a custom field as Create Custom Field does, within
// the account's limit.
func (s *Server) createField(w http.ResponseWriter, r *http.Request, v *viewer) error {
	form := values(r)
	in := service.FieldCreate{Collection: optional(form, "collection"), DataType: optional(form, "data_type"),
		Key: optional(form, "key"), Label: optional(form, "label"), Description: optional(form, "description"),
		FormType: optional(form, "form_type")}
	f, err := service.NewCustomField(v.key.AccountID, in, s.now())
	if err == nil {
		_, err = s.store.CreateCustomField(r.Context(), f, s.cfg.CustomFieldLimit)
	}
	return s.afterFieldAction(w, r, v, err, "created")
}

// optional is a form field as a create member: empty is absent.
func optional(form url.Values, name string) *string {
	if v := form.Get(name); v != "" {
		return &v
	}
	return nil
}

// updateField changes a field's display attributes as Update Custom Field
// does (a read-only field is refused there).
func (s *Server) updateField(w http.ResponseWriter, r *http.Request, v *viewer) error {
	form := values(r)
	patch := domain.CustomFieldPatch{Label: textOpt(form.Get("label")), Description: textOpt(form.Get("description")),
		FormType: textOpt(form.Get("form_type"))}
	err := service.CheckFieldPatch(patch)
	if err == nil {
		_, err = s.store.UpdateCustomField(r.Context(), v.key.AccountID, r.PathValue("field_id"), patch)
	}
	return s.afterFieldAction(w, r, v, err, "saved")
}

// archiveField archives a field as Delete Custom Field does.
func (s *Server) archiveField(w http.ResponseWriter, r *http.Request, v *viewer) error {
	err := s.store.ArchiveCustomField(r.Context(), v.key.AccountID, r.PathValue("field_id"), s.now())
	return s.afterFieldAction(w, r, v, err, "archived")
}

func (s *Server) afterFieldAction(w http.ResponseWriter, r *http.Request, v *viewer, err error, notice string) error {
	return s.after(w, r, v, err, Prefix+"/custom-fields", notice, func() (string, string, any, error) {
		lv, err := s.fieldList(r, v)
		return "fields", "Custom fields", lv, err
	})
}

func (s *Server) campaigns(w http.ResponseWriter, r *http.Request, v *viewer) error {
	q := values(r)
	pr, err := params.Page(q)
	if err != nil {
		return err
	}
	lv := listView[domain.Campaign]{Page: pr}
	if lv.Items, lv.Total, err = s.store.ListCampaigns(r.Context(), v.key.AccountID, pr); err != nil {
		return err
	}
	lv.Prev, lv.Next = pageLinks(Prefix+"/campaigns", q, pr, lv.Total)
	s.render(w, r, v, http.StatusOK, "campaigns", "Campaigns", lv)
	return nil
}

func (s *Server) projects(w http.ResponseWriter, r *http.Request, v *viewer) error {
	q := values(r)
	pr, err := params.Page(q)
	if err != nil {
		return err
	}
	lv := listView[domain.Project]{Page: pr}
	if lv.Items, lv.Total, err = s.store.ListProjects(r.Context(), v.key.AccountID, pr); err != nil {
		return err
	}
	lv.Prev, lv.Next = pageLinks(Prefix+"/projects", q, pr, lv.Total)
	s.render(w, r, v, http.StatusOK, "projects", "Projects", lv)
	return nil
}
