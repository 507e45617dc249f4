package client_test

import (
	"net/url"
	"testing"

	"github.com/pds-dev/pds/pkg/client"
)

// TestRequestQueriesHoldExactlyTheParameters: the request builders start
// their query from an empty url.Values (internal/emptyquery), on the
// operation's URL resolved against the server URL, which drops the server
// URL's own query (RFC 3986 section 5.2.2): the query sent is exactly the
// parameters given, however malformed the server URL's own query.
func TestRequestQueriesHoldExactlyTheParameters(t *testing.T) {
	email := "ada+x@example.com"
	params := &client.ListPersonsParams{Email: &email, TagIds: []string{"tag_a", "tag_b"}}
	for _, server := range []string{
		"http://pds.test",
		"http://pds.test/base/?email=other%40example.com",
		"http://pds.test/?a=%zz;b&tag_ids=tag_c",
	} {
		req, err := client.NewListPersonsRequest(server, params)
		if err != nil {
			t.Fatalf("%s: %v", server, err)
		}
		got, err := url.ParseQuery(req.URL.RawQuery)
		if err != nil {
			t.Fatalf("%s: the query sent %q does not parse: %v", server, req.URL.RawQuery, err)
		}
		want := url.Values{"email": {email}, "tag_ids": {"tag_a", "tag_b"}}
		if got.Encode() != want.Encode() {
			t.Errorf("%s: query %q, want exactly %q", server, req.URL.RawQuery, want.Encode())
		}
	}
}
