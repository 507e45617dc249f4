package httpapi

import (
	"net/http"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
)

// breadcrumbView is a breadcrumb on the wire: the fields of spec section 2.7
// plus occurred_at, the activity time the breadcrumb carried.
type breadcrumbView struct {
	ID         string       `json:"id"`
	Flavor     string       `json:"flavor"`
	CampaignID *string      `json:"campaign_id"`
	ProjectID  *string      `json:"project_id"`
	PersonID   string       `json:"person_id"`
	Email      *string      `json:"email"`
	OccurredAt *domain.Time `json:"occurred_at"`
	CreatedAt  domain.Time  `json:"created_at"`
}

func viewBreadcrumb(b domain.Breadcrumb) breadcrumbView {
	return breadcrumbView{
		ID: b.ID, Flavor: b.Flavor, CampaignID: b.CampaignID, ProjectID: b.ProjectID, PersonID: b.PersonID,
		Email: b.Email, OccurredAt: domain.TP(b.OccurredAt), CreatedAt: domain.T(b.CreatedAt),
	}
}

// appendBreadcrumb records an activity: 201 for a new record, 200 when an
// Idempotency-Key replays (and overwrites) an earlier one.
func (s *Server) appendBreadcrumb(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Flavor     *string `json:"flavor"`
		CampaignID *string `json:"campaign_id"`
		ProjectID  *string `json:"project_id"`
		PersonID   *string `json:"person_id"`
		Email      *string `json:"email"`
		ExternalID *string `json:"external_id"`
		FID        *string `json:"f_id"`
		OccurredAt *string `json:"occurred_at"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	in := domain.BreadcrumbInput{
		CampaignID: body.CampaignID, ProjectID: body.ProjectID, PersonID: body.PersonID,
		Email: body.Email, ExternalID: body.ExternalID, FID: body.FID,
	}
	switch {
	case body.Flavor == nil:
		return domain.BodyError("/flavor", "flavor is required.")
	case !domain.IsBreadcrumbFlavor(*body.Flavor):
		return domain.BodyError("/flavor", "%s", service.EnumDetail("flavor", *body.Flavor, domain.BreadcrumbFlavors))
	}
	in.Flavor = *body.Flavor
	if err := service.CheckBreadcrumbRefs(&in); err != nil {
		return err
	}
	if body.OccurredAt != nil {
		t, err := bodyTime("occurred_at", *body.OccurredAt)
		if err != nil {
			return err
		}
		in.OccurredAt = &t
	}
	key, err := idempotencyKey(r)
	if err != nil {
		return err
	}
	acc := accountID(r)
	if key != "" {
		in.ID = domain.BreadcrumbID(acc, key)
	}
	b, replayed, err := s.store.AppendBreadcrumb(r.Context(), acc, in, s.personWrite(r))
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if replayed {
		status = http.StatusOK
	}
	return writeJSON(w, status, viewBreadcrumb(b))
}

// idempotencyKey reads the optional Idempotency-Key header: 1 to 255
// printable ASCII characters, given once.
func idempotencyKey(r *http.Request) (string, error) {
	values := r.Header.Values("Idempotency-Key")
	switch {
	case len(values) == 0:
		return "", nil
	case len(values) > 1:
		return "", domain.ParamError("Idempotency-Key", "Send the Idempotency-Key header once.")
	}
	key := values[0]
	if key == "" || len(key) > domain.MaxIdempotencyKey {
		return "", domain.ParamError("Idempotency-Key", "Idempotency-Key must be 1 to %d printable characters.", domain.MaxIdempotencyKey)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return "", domain.ParamError("Idempotency-Key", "Idempotency-Key must hold printable ASCII characters only.")
		}
	}
	return key, nil
}

// listBreadcrumbs returns breadcrumbs, newest activity first.
func (s *Server) listBreadcrumbs(w http.ResponseWriter, r *http.Request) error {
	pr, err := parsePage(r)
	if err != nil {
		return err
	}
	var f domain.BreadcrumbFilter
	if f.Flavor, err = enumParam(r, "flavor", domain.BreadcrumbFlavors); err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		dst  **string
	}{{"person_id", &f.PersonID}, {"campaign_id", &f.CampaignID}, {"project_id", &f.ProjectID}} {
		if *p.dst, err = nonEmptyParam(r, p.name); err != nil {
			return err
		}
	}
	if f.Since, f.Until, err = parseTimeRange(r); err != nil {
		return err
	}
	list, total, err := s.store.ListBreadcrumbs(r.Context(), accountID(r), f, pr)
	if err != nil {
		return err
	}
	items := make([]breadcrumbView, len(list))
	for i, b := range list {
		items[i] = viewBreadcrumb(b)
	}
	return writeJSON(w, http.StatusOK, page(items, pr, total))
}
