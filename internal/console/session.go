package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/params"
	"github.com/pds-dev/pds/internal/problems"
	"github.com/pds-dev/pds/internal/ratelimit"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// cookieName is the session cookie: a random token, never the key.
const cookieName = "pds_console"

// newToken is 32 random bytes, URL-safe: a session's cookie, a form's
// token, a sign-in link.
func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// hashToken is what the database keeps of a token.
func hashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

func sessionToken(r *http.Request) string {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return ""
	}
	return c.Value
}

// secure says whether the cookie may travel over this connection only
// when encrypted: served over TLS here, or behind a proxy that says so.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// setSessionCookie gives the browser the session's token for as long as
// the session lasts (Max-Age: relative, so the browser's clock does not
// matter).
func setSessionCookie(w http.ResponseWriter, r *http.Request, token string, ttl time.Duration) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: token, Path: Prefix, MaxAge: int(ttl.Seconds()),
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode})
}

func clearSessionCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: Prefix, MaxAge: -1,
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode})
}

// endedReason names, for the sign-in page, why a key ended a session.
func endedReason(ue *domain.UnauthorizedError) string {
	switch {
	case strings.Contains(ue.Detail, "revoked"):
		return "revoked"
	case strings.Contains(ue.Detail, "expired"):
		return "expired"
	}
	return "invalid"
}

// endedNotices are what the sign-in page says for each reason.
var endedNotices = map[string]string{
	"revoked":   "The key this session acted as has been revoked; sign in with another.",
	"expired":   "The key this session acted as has expired; sign in with another.",
	"invalid":   "The key this session acted as is no longer valid; sign in with another.",
	"signedout": "Signed out.",
}

type signInView struct {
	Notice string
}

func (s *Server) signInPage(w http.ResponseWriter, r *http.Request) {
	q, err := params.Parse(r.URL.RawQuery)
	if err != nil {
		s.showProblem(w, r, nil, problems.For(err))
		return
	}
	s.render(w, r, nil, http.StatusOK, "signin", "Sign in", signInView{Notice: endedNotices[q.Get("ended")]})
}

// signIn checks a key by the API's rules and starts a session that acts as
// it. The key itself is dropped once checked: the session names it by its
// hash.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	addr, refused := s.throttled(w, r)
	if refused {
		return
	}
	if err := sameOrigin(r); err != nil {
		s.showProblem(w, r, nil, problems.For(err))
		return
	}
	form, err := formBody(r)
	if err != nil {
		s.showProblem(w, r, nil, problems.For(err))
		return
	}
	secret := strings.TrimSpace(form.Get("key"))
	key, err := service.Authenticate(r.Context(), s.store, secret, s.now())
	var ue *domain.UnauthorizedError
	if errors.As(err, &ue) || secret == "" {
		if s.failedAuthentication(w, r, addr) {
			return
		}
		detail := "Paste an API key (pds_…)."
		if ue != nil {
			detail = ue.Detail
		}
		p := problems.New(http.StatusUnauthorized, detail)
		p.Errors = []domain.FieldError{{Pointer: "/key", Detail: detail}}
		s.renderProblem(w, r, nil, p, "signin", "Sign in", signInView{})
		return
	}
	if err != nil {
		s.fail(w, r, nil, err)
		return
	}
	s.startSession(w, r, key.AccountID, key.Hash)
}

// linkCookie carries, from a link's page to its button's post, the
// confirmation the page's form holds too: a post from a page of another
// site, which SameSite=Strict sends without it, cannot sign a visitor in.
const linkCookie = "pds_console_link"

type linkView struct {
	AccountID string
	Key       *domain.APIKey
	ExpiresAt time.Time
	// Path is the link's own, where its button posts; Confirm the value
	// its form sends with the cookie's.
	Path, Confirm string
}

// linkPage shows whom a one-time link (pds console link) signs in as, and
// a button that does. Fetching the link spends nothing and starts nothing,
// by GET or HEAD: mail scanners and chat previews fetch the links they
// see, and the first fetch would otherwise spend it, or take the session.
func (s *Server) linkPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.DatabaseTimeout)
	defer cancel()
	r = r.WithContext(ctx)
	addr, refused := s.throttled(w, r)
	if refused {
		return
	}
	now := s.now()
	link, err := s.store.ConsoleLink(ctx, hashToken(r.PathValue("token")), now)
	if err != nil {
		if errors.Is(err, domain.ErrNotFound) && s.failedAuthentication(w, r, addr) {
			return
		}
		s.fail(w, r, nil, err)
		return
	}
	key, err := service.ActiveKey(ctx, s.store, link.KeyHash, now)
	if err != nil {
		s.fail(w, r, nil, err)
		return
	}
	path := Prefix + "/link/" + r.PathValue("token")
	confirm := newToken()
	http.SetCookie(w, &http.Cookie{Name: linkCookie, Value: confirm, Path: path, MaxAge: int(link.ExpiresAt.Sub(now).Seconds()) + 1,
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode})
	s.render(w, r, nil, http.StatusOK, "link", "Sign in with a link", linkView{AccountID: link.AccountID, Key: key,
		ExpiresAt: link.ExpiresAt, Path: path, Confirm: confirm})
}

// followLink spends a one-time link and starts a session acting as its
// key, for the post of the button on the link's own page alone: from this
// console (sameOrigin) and confirmed by that page (linkCookie).
func (s *Server) followLink(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.DatabaseTimeout)
	defer cancel()
	r = r.WithContext(ctx)
	addr, refused := s.throttled(w, r)
	if refused {
		return
	}
	if err := sameOrigin(r); err != nil {
		s.fail(w, r, nil, err)
		return
	}
	form, err := formBody(r)
	if err != nil {
		s.fail(w, r, nil, err)
		return
	}
	c, err := r.Cookie(linkCookie)
	if err != nil || form.Get("confirm") == "" || subtle.ConstantTimeCompare([]byte(form.Get("confirm")), []byte(c.Value)) != 1 {
		s.fail(w, r, nil, &domain.ForbiddenError{Detail: "Signing in with a link takes its page's button; open the link again and press Sign in."})
		return
	}
	link, err := s.store.TakeConsoleLink(ctx, hashToken(r.PathValue("token")), s.now())
	if err != nil {
		if errors.Is(err, domain.ErrNotFound) && s.failedAuthentication(w, r, addr) {
			return
		}
		s.fail(w, r, nil, err)
		return
	}
	if _, err := service.ActiveKey(ctx, s.store, link.KeyHash, s.now()); err != nil {
		s.fail(w, r, nil, err)
		return
	}
	s.startSession(w, r, link.AccountID, link.KeyHash)
}

func (s *Server) startSession(w http.ResponseWriter, r *http.Request, account string, keyHash []byte) {
	now := s.now()
	token := newToken()
	cs := domain.ConsoleSession{IDHash: hashToken(token), AccountID: account, KeyHash: keyHash, CSRF: newToken(),
		CreatedAt: now, ExpiresAt: now.Add(s.cfg.SessionTTL)}
	if err := s.store.CreateConsoleSession(r.Context(), cs); err != nil {
		s.fail(w, r, nil, err)
		return
	}
	setSessionCookie(w, r, token, s.cfg.SessionTTL)
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}

// signOut ends the session. It needs the session's form token, so that no
// other site can sign a visitor out.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	v, err := s.viewerOf(w, r)
	if err != nil {
		clearSessionCookie(w, r)
		http.Redirect(w, r, Prefix+"/sign-in", http.StatusSeeOther)
		return
	}
	if _, err := s.readForm(r, v); err != nil {
		s.fail(w, r, v, err)
		return
	}
	if err := s.store.EndConsoleSession(r.Context(), v.session.IDHash); err != nil {
		s.fail(w, r, v, err)
		return
	}
	clearSessionCookie(w, r)
	http.Redirect(w, r, Prefix+"/sign-in?ended=signedout", http.StatusSeeOther)
}

// authFace names the console in the failed-authentication metrics.
const authFace = "console"

// throttledError refuses an address that has failed to authenticate too
// often this minute, before anything of it is read.
type throttledError struct{ decision ratelimit.Decision }

func (e throttledError) Error() string { return "too many failed authentications" }

// throttled answers the API's 429 to an address that has spent its budget
// of failed authentications (serving.Settings.AuthFailures, shared with
// the API), and otherwise returns the address its failures count against.
func (s *Server) throttled(w http.ResponseWriter, r *http.Request) (addr string, refused bool) {
	addr, now := s.cfg.ClientAddress(r), s.now()
	if d := s.cfg.AuthFailures.Check(authFace, addr, now); !d.Allowed {
		s.refuseThrottled(w, r, d)
		return addr, true
	}
	return addr, false
}

func (s *Server) refuseThrottled(w http.ResponseWriter, r *http.Request, d ratelimit.Decision) {
	now := s.now()
	w.Header().Set("Retry-After", strconv.Itoa(d.ResetIn(now)))
	s.showProblem(w, r, nil, problems.New(http.StatusTooManyRequests, d.ThrottledRefusal(now)))
}

// failedAuthentication counts a key, link or session that was not one
// against the address it came from and, when others from the address
// spent its budget while this one was checked, answers the refusal the
// next attempt would get (refused).
func (s *Server) failedAuthentication(w http.ResponseWriter, r *http.Request, addr string) (refused bool) {
	if d := s.cfg.AuthFailures.Failed(authFace, addr, s.now()); !d.Allowed {
		s.refuseThrottled(w, r, d)
		return true
	}
	return false
}

// MintLink stores a one-time sign-in link that starts a session acting as
// the key whose hash is keyHash, and returns its path under the server's
// public URL. The token is in the path, shown once; the database keeps
// its hash.
func MintLink(ctx context.Context, st store.Consoles, accountID string, keyHash []byte, now time.Time, ttl time.Duration) (string, error) {
	token := newToken()
	err := st.CreateConsoleLink(ctx, domain.ConsoleLink{TokenHash: hashToken(token), AccountID: accountID, KeyHash: keyHash,
		ExpiresAt: now.Add(ttl)})
	if err != nil {
		return "", err
	}
	return Prefix + "/link/" + token, nil
}
