package console

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
)

// The keys page manages the account's API keys, as pds keys does on the
// server's machine: the spec has keys minted in the application, and
// keys:write is the scope that may (it covers the list: a key's name,
// scopes and last use are of use only to one who manages keys).
func (s *Server) keyRoutes() {
	s.page("GET "+Prefix+"/keys", domain.ScopeKeysWrite, s.keys)
	s.action("POST "+Prefix+"/keys", domain.ScopeKeysWrite, s.mintKey)
	s.action("POST "+Prefix+"/keys/{key_id}/revoke", domain.ScopeKeysWrite, s.revokeKey)
}

// keyLifetimes are the expiries the mint form offers ("" never expires).
var keyLifetimes = []window{
	{"", "never", 0}, {"24h", "in a day", 24 * time.Hour}, {"168h", "in 7 days", 7 * 24 * time.Hour},
	{"720h", "in 30 days", 30 * 24 * time.Hour}, {"2160h", "in 90 days", 90 * 24 * time.Hour},
	{"8760h", "in a year", 365 * 24 * time.Hour},
}

type keyView struct {
	domain.APIKey
	// State is active, expired or revoked; Own says the session acts as it.
	State string
	Own   bool
}

type keysView struct {
	Keys      []keyView
	Scopes    []domain.Scope
	Lifetimes []window
	Form      url.Values
}

func (s *Server) keys(w http.ResponseWriter, r *http.Request, v *viewer) error {
	kv, err := s.keyList(r, v)
	if err != nil {
		return err
	}
	s.render(w, r, v, http.StatusOK, "keys", "API keys", kv)
	return nil
}

// keyList is the account's keys, the newest first, as pds keys list
// shows them.
func (s *Server) keyList(r *http.Request, v *viewer) (keysView, error) {
	kv := keysView{Scopes: domain.AllScopes, Lifetimes: keyLifetimes}
	if r.Method == http.MethodPost {
		kv.Form = values(r)
	}
	keys, err := s.store.ListKeys(r.Context(), v.key.AccountID)
	if err != nil {
		return kv, err
	}
	now := s.now()
	for _, k := range slices.Backward(keys) {
		state := "active"
		switch {
		case k.RevokedAt != nil:
			state = "revoked"
		case !k.Usable(now):
			state = "expired"
		}
		kv.Keys = append(kv.Keys, keyView{APIKey: k, State: state, Own: k.ID == v.key.ID})
	}
	return kv, nil
}

type keySecretView struct {
	Key    domain.APIKey
	Secret string
}

// mintKey makes a key of the account with the scopes and expiry chosen,
// and shows it, once: only its hash is stored.
func (s *Server) mintKey(w http.ResponseWriter, r *http.Request, v *viewer) error {
	form := values(r)
	req, err := keyRequest(v.key.AccountID, form)
	var k domain.APIKey
	var secret string
	if err == nil {
		k, secret, err = service.NewKey(req, s.now())
	}
	if err == nil {
		err = s.store.CreateKey(r.Context(), k)
	}
	if err != nil {
		return s.after(w, r, v, err, "", "", func() (string, string, any, error) {
			kv, err := s.keyList(r, v)
			return "keys", "API keys", kv, err
		})
	}
	s.render(w, r, v, http.StatusCreated, "keysecret", "New key: "+keyName(k), keySecretView{Key: k, Secret: secret})
	return nil
}

// keyRequest reads the mint form: a name (optional), at least one known
// scope, and one of the offered expiries.
func keyRequest(account string, form url.Values) (service.KeyRequest, error) {
	req := service.KeyRequest{AccountID: account}
	if name := strings.TrimSpace(form.Get("name")); name != "" {
		if len(name) > 255 {
			return req, domain.BodyError("/name", "name must be at most 255 characters.")
		}
		req.Name = &name
	}
	for _, sc := range form["scopes"] {
		if !slices.Contains(domain.AllScopes, domain.Scope(sc)) {
			return req, domain.BodyError("/scopes", "%q is not a scope.", sc)
		}
		if !slices.Contains(req.Scopes, domain.Scope(sc)) {
			req.Scopes = append(req.Scopes, domain.Scope(sc))
		}
	}
	if len(req.Scopes) == 0 {
		return req, domain.BodyError("/scopes", "Choose at least one scope.")
	}
	i := slices.IndexFunc(keyLifetimes, func(o window) bool { return o.Value == form.Get("expires_in") })
	if i < 0 {
		return req, domain.BodyError("/expires_in", "expires_in must be one of the offered lifetimes; got %q.", form.Get("expires_in"))
	}
	req.ExpiresIn = keyLifetimes[i].span
	return req, nil
}

func keyName(k domain.APIKey) string {
	if k.Name != nil {
		return *k.Name
	}
	return k.Prefix
}

// revokeKey revokes a key of the account, as pds keys revoke does: at
// once, on every instance. Revoking the session's own key ends the
// session on its next page.
func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request, v *viewer) error {
	if _, err := s.store.RevokeAccountKey(r.Context(), v.key.AccountID, r.PathValue("key_id"), s.now()); err != nil {
		return err
	}
	return s.done(w, r, Prefix+"/keys", "revoked")
}
