package service

import "github.com/pds-dev/pds/internal/domain"

// What a key may see of what it reads is decided here, once, for both
// faces: a page of the console shows exactly what the API answers the same
// key, so a value that one operation carries but another scope guards is
// shown only to a key that holds that scope too.

// SeesDeliveryBody says whether a key may read a webhook delivery's body
// as sent: the person's extended view (email, names, phone, address,
// custom fields, tags), which Get Person answers only with persons:read.
// The delivery log itself needs webhooks:read.
func SeesDeliveryBody(k *domain.APIKey) bool {
	return k.HasScope(domain.ScopeWebhooksRead) && k.HasScope(domain.ScopePersonsRead)
}

// SeesTagNames says whether a key may read tags' names where a person
// shows its tags: List Tags and Get Tag need tags:read, and Get Person
// answers tag_ids alone.
func SeesTagNames(k *domain.APIKey) bool { return k.HasScope(domain.ScopeTagsRead) }

// SeesFieldLabels says whether a key may read custom fields' labels where
// a person shows its values: the definitions need custom_fields:read, and
// Get Person answers values by key alone.
func SeesFieldLabels(k *domain.APIKey) bool { return k.HasScope(domain.ScopeCustomFieldsRead) }

// A delivery's body shows what its event carries: a person.created or
// person.updated body is the person's extended view (its attributes and
// identifiers, which Get Person answers only with persons:read; the names
// of its tags, tags:read; its custom values and, in custom_data, the key
// of every Person field, custom_fields:read); a person.deleted body only
// the erased person's id and the time. A key that chooses where
// deliveries go (creates a subscription, changes its target or its
// events) or has them sent again could read through a receiver of its
// own whatever they carry, so it needs every scope their bodies reveal:
// the rule is that, not a body cut down to the key (a body is rendered
// once, for every subscription that hears of the change).

// BodyScopes are the scopes whose reads a delivery body of event shows.
func BodyScopes(event string) []domain.Scope {
	switch event {
	case domain.EventPersonCreated, domain.EventPersonUpdated:
		return []domain.Scope{domain.ScopePersonsRead, domain.ScopeTagsRead, domain.ScopeCustomFieldsRead}
	case domain.EventWebhookDisabled:
		// Another subscription's name, target and last error.
		return []domain.Scope{domain.ScopeWebhooksRead}
	}
	return nil
}

// MayDirectDeliveries is nil when k may send deliveries of these events to
// a receiver of its choosing, or have them sent again; otherwise it is
// the *domain.ScopeError of the first scope their bodies reveal that k
// lacks.
func MayDirectDeliveries(k *domain.APIKey, events []string) error {
	for _, event := range events {
		for _, sc := range BodyScopes(event) {
			if err := k.Require(sc); err != nil {
				return err
			}
		}
	}
	return nil
}

// MayChangeSubscription is nil unless u changes where hook's deliveries
// go, or which events it hears, for a key that may not read what they
// would carry (MayDirectDeliveries). A change of name, scheme or state
// sends nothing new anywhere.
func MayChangeSubscription(k *domain.APIKey, hook *domain.Webhook, u domain.WebhookUpdate) error {
	if u.TargetURL == nil && u.Events == nil {
		return nil
	}
	events := hook.Events
	if u.Events != nil {
		events = u.Events
	}
	return MayDirectDeliveries(k, events)
}

// MayRedeliver is nil when k may have a delivery of event sent again: the
// scopes its body reveals. (Its answer is the delivery as the log shows
// it, which needs webhooks:read as well; the caller asks that first, so
// that a key without it learns nothing of the delivery.)
func MayRedeliver(k *domain.APIKey, event string) error {
	return MayDirectDeliveries(k, []string{event})
}

// MayRedeliverFailed is nil when k may have every failed delivery of a
// subscription sent again: the answer counts them, a read of the log
// (webhooks:read), and they may be of any event the subscription ever
// listed, so the scopes of every body that carries a person.
func MayRedeliverFailed(k *domain.APIKey) error {
	if err := k.Require(domain.ScopeWebhooksRead); err != nil {
		return err
	}
	return MayDirectDeliveries(k, domain.WebhookEvents)
}

// MaySeeErasureCounts says which counts of what goes an erasure's
// confirmation may show k: each is a read of the operation that would
// answer it, and persons:erase alone answers none. Tag links and custom
// values are the person's (Get Person, persons:read), breadcrumbs the
// breadcrumb list's (breadcrumbs:read), pending deliveries the delivery
// log's (webhooks:read).
func MaySeeErasureCounts(k *domain.APIKey) ErasureCounts {
	persons := k.HasScope(domain.ScopePersonsRead)
	return ErasureCounts{Tags: persons, Values: persons, Breadcrumbs: k.HasScope(domain.ScopeBreadcrumbsRead),
		Pending: k.HasScope(domain.ScopeWebhooksRead)}
}

// ErasureCounts names the counts of an erasure's confirmation.
type ErasureCounts struct{ Tags, Values, Breadcrumbs, Pending bool }

// SeesFieldDefinitions says whether a key may see the account's custom
// field definitions where a person is edited: the keys of fields the
// person holds no value for, their types and read-only marks, which List
// Custom Fields answers only with custom_fields:read. Without it a
// person's values show by key, as Get Person answers them, and are not
// offered for editing (a value is edited by its field's type).
func SeesFieldDefinitions(k *domain.APIKey) bool { return k.HasScope(domain.ScopeCustomFieldsRead) }
