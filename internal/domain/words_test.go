package domain

import "testing"

func TestChoices(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"pds"}, `"pds"`},
		{[]string{"pds", "standard-webhooks"}, `"pds" or "standard-webhooks"`},
		{WebhookEvents, `"person.created", "person.updated", "person.deleted", "person.merged" or "webhook.disabled"`},
	} {
		if got := Choices(c.in); got != c.want {
			t.Errorf("Choices(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestDidYouMean(t *testing.T) {
	for _, c := range []struct {
		value string
		want  string
	}{
		{"email_veiw", ` Did you mean "email_view"?`},        // two letters swapped
		{"Email_View", ` Did you mean "email_view"?`},        // letter case
		{"page_vew", ` Did you mean "page_view"?`},           // one letter missing
		{"person.create", ` Did you mean "person.created"?`}, // an event
		{"nothing_like_it", ""},
		{"", ""},
		{"email_view", ""}, // already right: nothing to suggest
	} {
		options := append(append([]string{}, BreadcrumbFlavors...), WebhookEvents...)
		if got := DidYouMean(c.value, options); got != c.want {
			t.Errorf("DidYouMean(%q) = %q, want %q", c.value, got, c.want)
		}
	}
}
