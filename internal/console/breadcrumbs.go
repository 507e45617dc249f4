package console

import (
	"net/http"
	"net/url"
	"regexp"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/params"
)

// The account's breadcrumbs, newest activity first, with List Breadcrumbs'
// filters: flavor, person, campaign, project and a span of activity time.
func (s *Server) breadcrumbRoutes() {
	s.page("GET "+Prefix+"/breadcrumbs", domain.ScopeBreadcrumbsRead, s.breadcrumbs)
}

type breadcrumbsView struct {
	Breadcrumbs []domain.Breadcrumb
	Total       int
	Page        domain.PageRequest
	Prev, Next  string
	Flavors     []string
	// The filter as the form shows it.
	Flavor, PersonID, CampaignID, ProjectID, Since, Until string
}

// localMinute is what a datetime-local field sends: a minute, no zone.
var localMinute = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$`)

func (s *Server) breadcrumbs(w http.ResponseWriter, r *http.Request, v *viewer) error {
	q := values(r)
	bv := breadcrumbsView{Flavors: domain.BreadcrumbFlavors}
	pr, err := params.Page(q)
	if err != nil {
		return err
	}
	// The API's parameters, as List Breadcrumbs reads them: an empty field
	// is no filter, and a time the form's field sends is UTC.
	api := url.Values{}
	for _, name := range []string{"flavor", "person_id", "campaign_id", "project_id", "since", "until"} {
		val := q.Get(name)
		if val == "" {
			continue
		}
		if (name == "since" || name == "until") && localMinute.MatchString(val) {
			val += ":00Z"
		}
		api.Set(name, val)
	}
	var f domain.BreadcrumbFilter
	if f.Flavor, err = params.Enum(api, "flavor", domain.BreadcrumbFlavors); err != nil {
		return err
	}
	for name, dst := range map[string]**string{"person_id": &f.PersonID, "campaign_id": &f.CampaignID, "project_id": &f.ProjectID} {
		if *dst, err = params.NonEmpty(api, name); err != nil {
			return err
		}
	}
	if f.Since, f.Until, err = params.TimeRange(api); err != nil {
		return err
	}
	bv.Flavor, bv.PersonID, bv.CampaignID, bv.ProjectID = q.Get("flavor"), q.Get("person_id"), q.Get("campaign_id"), q.Get("project_id")
	bv.Since, bv.Until = q.Get("since"), q.Get("until")
	if bv.Breadcrumbs, bv.Total, err = s.store.ListBreadcrumbs(r.Context(), v.key.AccountID, f, pr); err != nil {
		return err
	}
	bv.Page = pr
	bv.Prev, bv.Next = pageLinks(Prefix+"/breadcrumbs", q, pr, bv.Total)
	s.render(w, r, v, http.StatusOK, "breadcrumbs", "Breadcrumbs", bv)
	return nil
}
