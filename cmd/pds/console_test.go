package main

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// TestConsoleLinkSignsInOnce: pds console link prints a link that, followed
// in a browser, starts a console session of the account as a key minted
// for it, once; the key it mints is listed, named for who asked, and
// revoking it ends the session.
func TestConsoleLinkSignsInOnce(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "pds.db")
	var acc struct{ ID string }
	pdsJSON(t, &acc, "accounts", "create", "--name", "ops", "--database", db)
	var link struct {
		Link  string `json:"link"`
		KeyID string `json:"key_id"`
	}
	pdsJSON(t, &link, "console", "link", "--account", acc.ID, "--database", db, "--scopes", "persons:read")
	u, err := url.Parse(link.Link)
	if err != nil || !strings.HasPrefix(u.Path, "/console/link/") {
		t.Fatalf("link %q: %v", link.Link, err)
	}
	var keys struct {
		Keys []struct {
			ID     string   `json:"id"`
			Name   *string  `json:"name"`
			Scopes []string `json:"scopes"`
		} `json:"keys"`
	}
	pdsJSON(t, &keys, "keys", "list", "--account", acc.ID, "--database", db)
	if len(keys.Keys) != 1 || keys.Keys[0].ID != link.KeyID || keys.Keys[0].Name == nil ||
		!strings.HasPrefix(*keys.Keys[0].Name, "console link (") || strings.Join(keys.Keys[0].Scopes, ",") != "persons:read" {
		t.Fatalf("keys after the link: %+v", keys.Keys)
	}

	srv := startServer(t, "--database", db)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	follow := func() *http.Response {
		t.Helper()
		res, err := noRedirect.Get(srv.base + u.Path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	res := follow()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/console/" || len(res.Cookies()) != 1 {
		t.Fatalf("following the link: %d to %q, cookies %v", res.StatusCode, res.Header.Get("Location"), res.Cookies())
	}
	page := func() int {
		req, _ := http.NewRequest("GET", srv.base+"/console/persons", nil)
		req.AddCookie(res.Cookies()[0])
		r, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	if code := page(); code != http.StatusOK {
		t.Fatalf("the link's session: %d", code)
	}
	if again := follow(); again.StatusCode != http.StatusNotFound {
		t.Fatalf("the link followed again: %d", again.StatusCode)
	}
	if out, err := pds(t, "keys", "revoke", link.KeyID, "--database", db); err != nil {
		t.Fatalf("revoke: %v %s", err, out)
	}
	if code := page(); code != http.StatusSeeOther {
		t.Fatalf("after revoking the link's key: %d", code)
	}
}
