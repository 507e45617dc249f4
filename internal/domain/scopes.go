package domain

import (
	"fmt"
	"slices"
	"strings"
)

// Scope is a permission of the form resource:action.
type Scope string

// The scopes in use (spec section 5).
const (
	ScopePersonsRead       Scope = "persons:read"
	ScopePersonsWrite      Scope = "persons:write"
	ScopeTagsRead          Scope = "tags:read"
	ScopeTagsWrite         Scope = "tags:write"
	ScopeCampaignsRead     Scope = "campaigns:read"
	ScopeProjectsRead      Scope = "projects:read"
	ScopeBreadcrumbsRead   Scope = "breadcrumbs:read"
	ScopeBreadcrumbsWrite  Scope = "breadcrumbs:write"
	ScopeCustomFieldsRead  Scope = "custom_fields:read"
	ScopeCustomFieldsWrite Scope = "custom_fields:write"
	ScopeWebhooksRead      Scope = "webhooks:read"
	ScopeWebhooksWrite     Scope = "webhooks:write"
	// ScopeKeysWrite manages the account's API keys in the console: lists
	// them, mints and revokes them. It covers the list too, since a list of
	// keys is of use only to one who manages them; a key holding it may
	// mint a key of any scope, so it is as strong as every scope.
	ScopeKeysWrite Scope = "keys:write"
)

// AllScopes lists every scope in a stable order.
var AllScopes = []Scope{
	ScopePersonsRead, ScopePersonsWrite, ScopeTagsRead, ScopeTagsWrite,
	ScopeCampaignsRead, ScopeProjectsRead, ScopeBreadcrumbsRead, ScopeBreadcrumbsWrite,
	ScopeCustomFieldsRead, ScopeCustomFieldsWrite, ScopeWebhooksRead, ScopeWebhooksWrite,
	ScopePersonsErase, ScopeKeysWrite,
}

// ParseScopes reads a comma-separated scope list; "all" stands for every scope.
func ParseScopes(s string) ([]Scope, error) {
	if strings.TrimSpace(s) == "all" {
		return slices.Clone(AllScopes), nil
	}
	var out []Scope
	for _, part := range strings.Split(s, ",") {
		sc := Scope(strings.TrimSpace(part))
		if sc == "" {
			continue
		}
		if !slices.Contains(AllScopes, sc) {
			return nil, fmt.Errorf("unknown scope %q (known: %s, or all)", sc, joinScopes(AllScopes))
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("at least one scope is required")
	}
	return out, nil
}

func joinScopes(s []Scope) string {
	parts := make([]string, len(s))
	for i, sc := range s {
		parts[i] = string(sc)
	}
	return strings.Join(parts, ",")
}
