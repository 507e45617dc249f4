package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func isSession(c *http.Cookie) bool { return c.Name == "pds_console" && c.Value != "" }

// TestConsoleLinkSignsInOnce: pds console link prints a link whose page,
// fetched by GET or HEAD as often as a mail scanner likes, spends nothing;
// its button starts a console session of the account as a key minted for
// it, once; the key it mints is listed, named for who asked, and revoking
// it ends the session.
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
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	fetch := func(method string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, srv.base+u.Path, nil)
		res, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	// A mail scanner or a chat preview fetches the link: it spends nothing
	// and gets no session.
	for _, method := range []string{http.MethodHead, http.MethodGet, http.MethodHead, http.MethodGet} {
		if res := fetch(method); res.StatusCode != http.StatusOK || slices.ContainsFunc(res.Cookies(), isSession) {
			t.Fatalf("%s of the link: %d, cookies %v", method, res.StatusCode, res.Cookies())
		}
	}
	// The person who asked for it presses the page's button.
	req, _ := http.NewRequest(http.MethodGet, srv.base+u.Path, nil)
	shown, err := browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(shown.Body)
	shown.Body.Close()
	confirm := regexp.MustCompile(`name="confirm" value="([^"]+)"`).FindSubmatch(body)
	if confirm == nil {
		t.Fatalf("the link's page has no button's form: %s", body)
	}
	follow := func() *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.base+u.Path, strings.NewReader(url.Values{"confirm": {string(confirm[1])}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", srv.base)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		res, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	res := follow()
	i := slices.IndexFunc(res.Cookies(), isSession)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/console/" || i < 0 {
		t.Fatalf("signing in with the link: %d to %q, cookies %v", res.StatusCode, res.Header.Get("Location"), res.Cookies())
	}
	session := res.Cookies()[i]
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	page := func() int {
		req, _ := http.NewRequest("GET", srv.base+"/console/persons", nil)
		req.AddCookie(session)
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
	if again := fetch(http.MethodGet); again.StatusCode != http.StatusNotFound {
		t.Fatalf("the link fetched once used: %d", again.StatusCode)
	}
	if out, err := pds(t, "keys", "revoke", link.KeyID, "--database", db); err != nil {
		t.Fatalf("revoke: %v %s", err, out)
	}
	if code := page(); code != http.StatusSeeOther {
		t.Fatalf("after revoking the link's key: %d", code)
	}
}

// TestConsoleLinkNamesTheServer: without --public-url, the link names the
// server the last pds serve on the database started as, not a default.
func TestConsoleLinkNamesTheServer(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "pds.db")
	var acc struct{ ID string }
	pdsJSON(t, &acc, "accounts", "create", "--name", "ops", "--database", db)
	startServer(t, "--database", db, "--public-url", "https://pds.example.test:9443/")
	var link struct{ Link string }
	pdsJSON(t, &link, "console", "link", "--account", acc.ID, "--database", db)
	if !strings.HasPrefix(link.Link, "https://pds.example.test:9443/console/link/") {
		t.Fatalf("link %q, want one on the server's public URL", link.Link)
	}
	pdsJSON(t, &link, "console", "link", "--account", acc.ID, "--database", db, "--public-url", "http://127.0.0.1:1234")
	if !strings.HasPrefix(link.Link, "http://127.0.0.1:1234/console/link/") {
		t.Fatalf("link %q, want one on --public-url", link.Link)
	}
}
