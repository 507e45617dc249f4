package service

import (
	"testing"

	"github.com/pds-dev/pds/internal/domain"
)

func TestWhatAKeySees(t *testing.T) {
	key := func(scopes ...domain.Scope) *domain.APIKey { return &domain.APIKey{Scopes: scopes} }
	for _, tc := range []struct {
		name                   string
		key                    *domain.APIKey
		body, tagNames, labels bool
	}{
		{"every scope sees all", key(domain.AllScopes...), true, true, true},
		{"webhooks:read alone reads the log, not the person a body holds", key(domain.ScopeWebhooksRead), false, false, false},
		{"persons:read alone reads no delivery", key(domain.ScopePersonsRead), false, false, false},
		{"webhooks:read with persons:read reads the body", key(domain.ScopeWebhooksRead, domain.ScopePersonsRead), true, false, false},
		{"webhooks:write does not read the log", key(domain.ScopeWebhooksWrite, domain.ScopePersonsRead), false, false, false},
		{"tags:read reads tags' names", key(domain.ScopePersonsRead, domain.ScopeTagsRead), false, true, false},
		{"tags:write does not", key(domain.ScopePersonsRead, domain.ScopeTagsWrite), false, false, false},
		{"custom_fields:read reads labels", key(domain.ScopePersonsRead, domain.ScopeCustomFieldsRead), false, false, true},
		{"custom_fields:write does not", key(domain.ScopePersonsRead, domain.ScopeCustomFieldsWrite), false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SeesDeliveryBody(tc.key); got != tc.body {
				t.Errorf("SeesDeliveryBody = %v", got)
			}
			if got := SeesTagNames(tc.key); got != tc.tagNames {
				t.Errorf("SeesTagNames = %v", got)
			}
			if got := SeesFieldLabels(tc.key); got != tc.labels {
				t.Errorf("SeesFieldLabels = %v", got)
			}
		})
	}
}
