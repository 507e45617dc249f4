package httpapi

import (
	"net/http"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/params"
)

// catalogRoutes registers the routes of tags, custom fields, campaigns and projects.
func (s *Server) catalogRoutes() {
	s.handle("GET /tags", domain.ScopeTagsRead, s.listTags)
	s.handle("POST /tags", domain.ScopeTagsWrite, s.createTag)
	s.handle("GET /tags/{tag_id}", domain.ScopeTagsRead, s.getTag)
	s.handle("PATCH /tags/{tag_id}", domain.ScopeTagsWrite, s.updateTag)
	s.handle("DELETE /tags/{tag_id}", domain.ScopeTagsWrite, s.deleteTag)

	s.handle("GET /custom-fields", domain.ScopeCustomFieldsRead, s.listCustomFields)
	s.handle("POST /custom-fields", domain.ScopeCustomFieldsWrite, s.createCustomField)
	s.handle("GET /custom-fields/{field_id}", domain.ScopeCustomFieldsRead, s.getCustomField)
	s.handle("PATCH /custom-fields/{field_id}", domain.ScopeCustomFieldsWrite, s.updateCustomField)
	s.handle("DELETE /custom-fields/{field_id}", domain.ScopeCustomFieldsWrite, s.deleteCustomField)

	s.handle("GET /campaigns", domain.ScopeCampaignsRead, s.listCampaigns)
	s.handle("GET /campaigns/{campaign_id}", domain.ScopeCampaignsRead, s.getCampaign)
	s.handle("GET /projects", domain.ScopeProjectsRead, s.listProjects)
	s.handle("GET /projects/{project_id}", domain.ScopeProjectsRead, s.getProject)
}

// enumParam reads an optional query parameter that must be one of allowed
// (params.Enum).
func enumParam(r *http.Request, name string, allowed []string) (*string, error) {
	return params.Enum(query(r), name, allowed)
}

// listQuery reads the page and one optional enumerated filter of a list.
func listQuery(r *http.Request, filter string, allowed []string) (domain.PageRequest, *string, error) {
	p, err := parsePage(r)
	if err != nil {
		return p, nil, err
	}
	v, err := enumParam(r, filter, allowed)
	return p, v, err
}
