package client_test

import (
	"net/url"
	"testing"

	"github.com/pds-dev/pds/pkg/client"
)

// TestRequestQueriesHoldExactlyTheParameters: the generated request
// builders call url.URL.Query, which drops what it cannot parse, on the
// operation's URL resolved against the server URL. Resolving a path drops
// the base's query (RFC 3986 section 5.2.2), so that call only ever sees an
// empty query and no filter can vanish: the query sent is exactly the
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
