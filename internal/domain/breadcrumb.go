package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"time"
)

// BreadcrumbIDPrefix starts every breadcrumb id, random or derived.
const BreadcrumbIDPrefix = "bc"

// BreadcrumbFlavors is every accepted flavor (spec section 2.7), in the
// order the spec lists them.
var BreadcrumbFlavors = []string{
	"ad_click", "ad_view", "blocked", "bot_partner_message_link_click",
	"bot_partner_message_unsubscribe", "bot_partner_message_view", "bot_mailer_tracked_email_click",
	"bot_mailer_tracked_email_open", "bot_mailer_tracked_email_unsubscribe", "contact_list_import",
	"conversation_response", "convert", "created_by_import", "custom", "dashboard_create",
	"dashboard_import", "dashboard_link_click", "dashboard_send_complete", "dashboard_send_request",
	"dashboard_submit", "dashboard_view", "deduplicated", "donation", "email_bot_detection_click",
	"email_link_click", "email_preferences_resubscribe", "email_preferences_update",
	"email_not_sent_via_opt_out", "email_send", "email_view", "form_submission", "form_view",
	"membership_create", "membership_update", "page_link_click", "page_view",
	"partner_message_complaint", "partner_message_delivered", "partner_message_hardbounce",
	"partner_message_link_click", "partner_message_rendering_failure", "partner_message_send",
	"partner_message_softbounce", "partner_message_suppression", "partner_message_unsubscribe",
	"partner_message_view", "mailer_tracked_email_click", "mailer_tracked_email_complaint",
	"mailer_tracked_email_delivered", "mailer_tracked_email_hardbounce", "mailer_tracked_email_open",
	"mailer_tracked_email_rendering_failure", "mailer_tracked_email_send",
	"mailer_tracked_email_softbounce", "mailer_tracked_email_suppression",
	"mailer_tracked_email_unsubscribe", "crm_constituent_created", "crm_constituent_updated",
	"crm_constituent_summary", "crm_gift_added", "report_link_click", "report_view",
	"shared_email_preferences_update", "update", "user_create", "user_update", "updated_by_import",
	"automation_import", "automation_update",
}

// IsBreadcrumbFlavor tells whether f is in the enumeration.
func IsBreadcrumbFlavor(f string) bool { return slices.Contains(BreadcrumbFlavors, f) }

// Breadcrumb is an append-only activity record of a person.
type Breadcrumb struct {
	ID         string
	AccountID  string
	Flavor     string
	PersonID   string
	CampaignID *string
	ProjectID  *string
	// Email, ExternalID and FID are the identifiers the breadcrumb carried.
	Email      *string
	ExternalID *string
	FID        *string
	OccurredAt *time.Time
	// ActivityAt orders breadcrumbs: OccurredAt, else CreatedAt.
	ActivityAt time.Time
	CreatedAt  time.Time
}

// BreadcrumbInput is a breadcrumb to append. ID is set when the request
// carried an Idempotency-Key (see BreadcrumbID); otherwise the store makes one.
type BreadcrumbInput struct {
	ID         string
	Flavor     string
	PersonID   *string
	CampaignID *string
	ProjectID  *string
	Email      *string
	ExternalID *string
	FID        *string
	OccurredAt *time.Time
}

// NormalizeIdentifiers puts the breadcrumb's identifiers in their normal
// form (NormalIdentifier), as new strings (what the caller's pointers
// point at is left as it is), or refuses one as a 400 pointing at it.
func (in *BreadcrumbInput) NormalizeIdentifiers() error {
	for _, id := range []struct {
		kind string
		v    **string
	}{{KindExternalID, &in.ExternalID}, {KindEmail, &in.Email}, {KindFID, &in.FID}} {
		if *id.v == nil {
			continue
		}
		o := Opt[string]{Set: true, Value: **id.v}
		if err := NormalizeIdentifier(id.kind, &o); err != nil {
			return err
		}
		*id.v = &o.Value
	}
	return nil
}

// Identifiers are the identifiers the breadcrumb carries.
func (in BreadcrumbInput) Identifiers() Identifiers {
	return Identifiers{ExternalID: in.ExternalID, Email: in.Email, FID: in.FID}
}

// BreadcrumbFilter narrows List Breadcrumbs; every set member must hold.
type BreadcrumbFilter struct {
	Flavor     *string
	PersonID   *string
	CampaignID *string
	ProjectID  *string
	// Since and Until bound the activity time, both inclusive.
	Since *time.Time
	Until *time.Time
}

// MaxIdempotencyKey is the longest Idempotency-Key accepted.
const MaxIdempotencyKey = 255

// BreadcrumbID derives the id of the breadcrumb an Idempotency-Key names: the
// same account and key always give the same id, so a re-delivery lands on the
// same record; another account's identical key gives another id.
func BreadcrumbID(accountID, key string) string {
	sum := sha256.Sum256([]byte(accountID + "\x00" + key))
	return BreadcrumbIDPrefix + "_" + hex.EncodeToString(sum[:12])
}
