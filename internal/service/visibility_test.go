package service

import (
	"errors"
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

func TestWhoMayDirectDeliveries(t *testing.T) {
	key := func(scopes ...domain.Scope) *domain.APIKey { return &domain.APIKey{Scopes: scopes} }
	personEvents := []string{domain.EventPersonCreated, domain.EventPersonUpdated}
	for _, tc := range []struct {
		name    string
		key     *domain.APIKey
		events  []string
		missing domain.Scope // "" when allowed
	}{
		{"every scope", key(domain.AllScopes...), domain.WebhookEvents, ""},
		{"webhooks:write alone, person events", key(domain.ScopeWebhooksWrite), personEvents, domain.ScopePersonsRead},
		{"webhooks:write alone, person.updated", key(domain.ScopeWebhooksWrite), []string{domain.EventPersonUpdated}, domain.ScopePersonsRead},
		{"without tags:read the tag names", key(domain.ScopeWebhooksWrite, domain.ScopePersonsRead), personEvents, domain.ScopeTagsRead},
		{"without custom_fields:read the values", key(domain.ScopeWebhooksWrite, domain.ScopePersonsRead, domain.ScopeTagsRead),
			[]string{domain.EventPersonCreated}, domain.ScopeCustomFieldsRead},
		{"what the bodies reveal", key(domain.ScopeWebhooksWrite, domain.ScopePersonsRead, domain.ScopeTagsRead, domain.ScopeCustomFieldsRead),
			personEvents, ""},
		{"person.deleted carries no person", key(domain.ScopeWebhooksWrite), []string{domain.EventPersonDeleted}, ""},
		{"no events", key(domain.ScopeWebhooksWrite), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := MayDirectDeliveries(tc.key, tc.events)
			var se *domain.ScopeError
			switch {
			case tc.missing == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.missing != "" && (!errors.As(err, &se) || se.Scope != tc.missing):
				t.Fatalf("%v, want the missing %s", err, tc.missing)
			}
		})
	}
}

func TestWhichErasureCountsAKeySees(t *testing.T) {
	key := func(scopes ...domain.Scope) *domain.APIKey { return &domain.APIKey{Scopes: scopes} }
	for _, tc := range []struct {
		name string
		key  *domain.APIKey
		want ErasureCounts
	}{
		{"persons:erase alone sees no count", key(domain.ScopePersonsErase), ErasureCounts{}},
		{"persons:read: the person's links and values", key(domain.ScopePersonsErase, domain.ScopePersonsRead), ErasureCounts{Tags: true, Values: true}},
		{"breadcrumbs:read: its breadcrumbs", key(domain.ScopePersonsErase, domain.ScopeBreadcrumbsRead), ErasureCounts{Breadcrumbs: true}},
		{"webhooks:read: its pending deliveries", key(domain.ScopePersonsErase, domain.ScopeWebhooksRead), ErasureCounts{Pending: true}},
		{"every scope", key(domain.AllScopes...), ErasureCounts{true, true, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MaySeeErasureCounts(tc.key); got != tc.want {
				t.Fatalf("%+v, want %+v", got, tc.want)
			}
		})
	}
	if SeesFieldDefinitions(key(domain.ScopePersonsRead, domain.ScopePersonsWrite)) || !SeesFieldDefinitions(key(domain.ScopeCustomFieldsRead)) {
		t.Fatal("field definitions are custom_fields:read's")
	}
}

func TestWhoMayChangeASubscription(t *testing.T) {
	writeOnly := &domain.APIKey{Scopes: []domain.Scope{domain.ScopeWebhooksWrite}}
	hook := &domain.Webhook{Events: []string{domain.EventPersonUpdated}}
	target, name, active := "https://elsewhere.example/hook", "renamed", true
	for _, tc := range []struct {
		name    string
		u       domain.WebhookUpdate
		refused bool
	}{
		{"a new name", domain.WebhookUpdate{Name: &name}, false},
		{"reactivation", domain.WebhookUpdate{IsActive: &active}, false},
		{"a new target for the events it hears", domain.WebhookUpdate{TargetURL: &target}, true},
		{"events that carry persons", domain.WebhookUpdate{Events: []string{domain.EventPersonCreated}}, true},
		{"a new target for person.deleted alone", domain.WebhookUpdate{TargetURL: &target, Events: []string{domain.EventPersonDeleted}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := MayChangeSubscription(writeOnly, hook, tc.u); (err != nil) != tc.refused {
				t.Fatalf("refused: %v, want %v", err, tc.refused)
			}
		})
	}
}
