package httpapi

import "github.com/pds-dev/pds/internal/domain"

// personRoutes registers the routes of persons and breadcrumbs.
func (s *Server) personRoutes() {
	s.handle("GET /persons", domain.ScopePersonsRead, s.listPersons)
	s.handle("POST /persons", domain.ScopePersonsWrite, s.upsertPerson)
	s.handle("POST /persons/batch", domain.ScopePersonsWrite, s.upsertPersons)
	s.handleStream("GET /persons/export", domain.ScopePersonsRead, s.exportPersons)
	s.handleStream("GET /persons/changes", domain.ScopePersonsRead, s.listChanges)
	s.handle("GET /persons/{person_id}", domain.ScopePersonsRead, s.getPerson)
	s.handle("PATCH /persons/{person_id}", domain.ScopePersonsWrite, s.updatePerson)
	s.handle("POST /persons/{person_id}/tags", domain.ScopePersonsWrite, s.addPersonTags)
	s.handle("DELETE /persons/{person_id}/tags/{tag_id}", domain.ScopePersonsWrite, s.removePersonTag)
	s.handle("POST /persons/{person_id}/merge", domain.ScopePersonsWrite, s.mergePersons)
	s.handle("GET /persons/{person_id}/aliases", domain.ScopePersonsRead, s.listPersonAliases)

	s.handle("GET /breadcrumbs", domain.ScopeBreadcrumbsRead, s.listBreadcrumbs)
	s.handle("POST /breadcrumbs", domain.ScopeBreadcrumbsWrite, s.appendBreadcrumb)
}
