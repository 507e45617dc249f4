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
