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
	// resolveTimeout bounds the DNS lookup that checks a target.
	resolveTimeout = 5 * time.Second
)

// CheckSubscription validates the fields a create or update of a
// subscription sets (nil: not being set): the name, the events (at least
// one, each known, none twice), and the target, which must resolve to a
// public address (spec section 4, webhook rule 1) as the settings' guard
// decides. The API and the console both check here.
func (s Settings) CheckSubscription(ctx context.Context, name, targetURL *string, events []string) error {
	if name != nil {
		if err := service.CheckWebhookName(*name); err != nil {
			return err
		}
	}
	if events != nil {
		if len(events) == 0 {
			return domain.BodyError("/events", "events must list at least one of person.created and person.updated.")
		}
		for i, e := range events {
			if !slices.Contains(domain.WebhookEvents, e) {
				return domain.BodyError("/events", "events[%d] is %q; the events are person.created and person.updated.", i, e)
			}
			if slices.Contains(events[:i], e) {
				return domain.BodyError("/events", "events lists %q twice.", e)
			}
		}
	}
	if targetURL != nil {
		if len(*targetURL) > maxTargetURL {
			return domain.BodyError("/target_url", "target_url must be at most %d characters.", maxTargetURL)
		}
		ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		defer cancel()
		if err := s.Guard().CheckURL(ctx, *targetURL); err != nil {
			return domain.BodyError("/target_url", "%s.", err.Error())
		}
	}
	return nil
}

// NewSubscription checks a new subscription's fields and makes it, active,
// with a fresh signing secret (shown once, in the answer that creates it).
func (s Settings) NewSubscription(ctx context.Context, accountID string, name, targetURL *string, events []string, now time.Time) (domain.Webhook, error) {
	switch {
	case name == nil:
		return domain.Webhook{}, domain.BodyError("/name", "name is required.")
	case targetURL == nil:
		return domain.Webhook{}, domain.BodyError("/target_url", "target_url is required.")
	case events == nil:
		return domain.Webhook{}, domain.BodyError("/events", "events is required: a list of person.created and/or person.updated.")
	}
	if err := s.CheckSubscription(ctx, name, targetURL, events); err != nil {
		return domain.Webhook{}, err
	}
	return domain.Webhook{
		ID: domain.NewID("wh"), AccountID: accountID, Name: *name, TargetURL: *targetURL,
		Events: events, IsActive: true, Secret: NewSecret(), SecretVersion: 1,
		CreatedAt: now, UpdatedAt: now,
	}, nil
}
