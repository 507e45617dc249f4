package httpapi

import (
	"net/http"
)

// Campaigns and projects are read only through the API; pds import fills them.

func (s *Server) listCampaigns(w http.ResponseWriter, r *http.Request) error {
	p, err := parsePage(r)
	if err != nil {
		return err
	}
	items, total, err := s.store.ListCampaigns(r.Context(), accountID(r), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, page(items, p, total))
}

func (s *Server) getCampaign(w http.ResponseWriter, r *http.Request) error {
	c, err := s.store.GetCampaign(r.Context(), accountID(r), r.PathValue("campaign_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, c)
}

func (s *Server) listProjects(w http.ResponseWriter, r *http.Request) error {
	p, err := parsePage(r)
	if err != nil {
		return err
	}
	items, total, err := s.store.ListProjects(r.Context(), accountID(r), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, page(items, p, total))
}

func (s *Server) getProject(w http.ResponseWriter, r *http.Request) error {
	pr, err := s.store.GetProject(r.Context(), accountID(r), r.PathValue("project_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, pr)
}
