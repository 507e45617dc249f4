package webhook

import (
	"context"
	"slices"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
)

// Bounds of subscription fields.
const (
	maxTargetURL = 2048
	// MaxPerSecondLimit is the highest max_per_second; 0 means no bound.
	MaxPerSecondLimit = 1000
	// resolveTimeout bounds the DNS lookup that checks a target.
	resolveTimeout = 5 * time.Second
)

// CheckSubscription validates the fields a create or update of a
// subscription sets (nil: not being set): the name, the events (at least
// one, each known, none twice), the signature scheme, and the target, which
// must resolve to a public address (spec section 4, webhook rule 1) as the
// settings' guard decides. The API and the console both check here.
func (s Settings) CheckSubscription(ctx context.Context, f domain.WebhookUpdate) error {
	if f.Name != nil {
		if err := service.CheckWebhookName(*f.Name); err != nil {
			return err
		}
	}
	if f.Events != nil {
		if len(f.Events) == 0 {
			return domain.BodyError("/events", "events must list at least one of %s.", domain.Choices(domain.WebhookEvents))
		}
		for i, e := range f.Events {
			if !slices.Contains(domain.WebhookEvents, e) {
				return domain.BodyError("/events", "events[%d] is %q; the events are %s.%s", i, e, domain.Choices(domain.WebhookEvents), domain.DidYouMean(e, domain.WebhookEvents))
			}
			if slices.Contains(f.Events[:i], e) {
				return domain.BodyError("/events", "events lists %q twice.", e)
			}
		}
	}
	if f.SignatureScheme != nil && !slices.Contains(domain.SignatureSchemes, *f.SignatureScheme) {
		return domain.BodyError("/signature_scheme", "signature_scheme is %q; the schemes are %s.%s", *f.SignatureScheme,
			domain.Choices(domain.SignatureSchemes), domain.DidYouMean(*f.SignatureScheme, domain.SignatureSchemes))
	}
	if f.Headers != nil {
		if err := CheckHeaders(f.Headers); err != nil {
			return err
		}
	}
	if f.MaxPerSecond != nil && (*f.MaxPerSecond < 0 || *f.MaxPerSecond > MaxPerSecondLimit) {
		return domain.BodyError("/max_per_second", "max_per_second is %d; it is 1 to %d attempts per second, or 0 for no bound.",
			*f.MaxPerSecond, MaxPerSecondLimit)
	}
	if f.TargetURL != nil {
		if len(*f.TargetURL) > maxTargetURL {
			return domain.BodyError("/target_url", "target_url must be at most %d characters.", maxTargetURL)
		}
		ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		defer cancel()
		if err := s.Guard().CheckURL(ctx, *f.TargetURL); err != nil {
			return domain.BodyError("/target_url", "%s.", err.Error())
		}
	}
	return nil
}

// NewSubscription checks a new subscription's fields (IsActive aside: a
// new one is active) and makes it, signed by the pds scheme unless f
// chooses another, with a fresh signing secret (shown once, in the answer
// that creates it).
func (s Settings) NewSubscription(ctx context.Context, accountID string, f domain.WebhookUpdate, now time.Time) (domain.Webhook, error) {
	switch {
	case f.Name == nil:
		return domain.Webhook{}, domain.BodyError("/name", "name is required.")
	case f.TargetURL == nil:
		return domain.Webhook{}, domain.BodyError("/target_url", "target_url is required.")
	case f.Events == nil:
		return domain.Webhook{}, domain.BodyError("/events", "events is required: a list of one or more of %s.", domain.Choices(domain.WebhookEvents))
	}
	if err := s.CheckSubscription(ctx, f); err != nil {
		return domain.Webhook{}, err
	}
	scheme := domain.SchemePDS
	if f.SignatureScheme != nil {
		scheme = *f.SignatureScheme
	}
	w := domain.Webhook{
		ID: domain.NewID("wh"), AccountID: accountID, Name: *f.Name, TargetURL: *f.TargetURL,
		Events: f.Events, IsActive: true, Secret: NewSecret(), SecretVersion: 1, SignatureScheme: scheme,
		Headers: f.Headers, CreatedAt: now, UpdatedAt: now,
	}
	if f.MaxPerSecond != nil {
		w.MaxPerSecond = *f.MaxPerSecond
	}
	if f.IncludeChanges != nil {
		w.IncludeChanges = *f.IncludeChanges
	}
	return w, nil
}
