package console

import (
	"context"
	"crypto/subtle"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/params"
	"github.com/pds-dev/pds/internal/problems"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// viewer is who a page is for: a session and the API key it acts as, read
// afresh for every page.
type viewer struct {
	session *domain.ConsoleSession
	key     *domain.APIKey
}

// Can says whether the key grants scope: a page offers only what its key
// may do.
func (v *viewer) Can(scope string) bool { return v != nil && v.key.HasScope(domain.Scope(scope)) }

// SeesDeliveryBody, SeesTagNames and SeesFieldLabels say what a page may
// show of what it reads, by the rules the API follows (internal/service):
// a page shows exactly what the API answers the same key.
func (v *viewer) SeesDeliveryBody() bool { return v != nil && service.SeesDeliveryBody(v.key) }

// SeesTagNames: see SeesDeliveryBody.
func (v *viewer) SeesTagNames() bool { return v != nil && service.SeesTagNames(v.key) }

// SeesFieldLabels: see SeesDeliveryBody.
func (v *viewer) SeesFieldLabels() bool { return v != nil && service.SeesFieldLabels(v.key) }

// SeesFieldDefinitions: see SeesDeliveryBody.
func (v *viewer) SeesFieldDefinitions() bool { return v != nil && service.SeesFieldDefinitions(v.key) }

// Directs says whether the key may send deliveries of these events where
// it chooses, or have them sent again (service.MayDirectDeliveries): a
// page offers the forms that do only then.
func (v *viewer) Directs(events []string) bool {
	return v != nil && service.MayDirectDeliveries(v.key, events) == nil
}

// DirectsEvent is Directs for one event.
func (v *viewer) DirectsEvent(event string) bool { return v.Directs([]string{event}) }

// AccountID is the account every page shows.
func (v *viewer) AccountID() string { return v.key.AccountID }

// handler is a page or an action: it writes its answer or returns an
// error, which becomes the API's problem on an error page.
type handler func(w http.ResponseWriter, r *http.Request, v *viewer) error

// maxForm bounds a form's body, as the API bounds a JSON body.
const maxForm = 1 << 20

// page registers a page (GET) that needs a session and, when scope is set,
// that scope: the scope of the API operation that reads what it shows.
func (s *Server) page(pattern string, scope domain.Scope, h handler) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, scope, false, h) })
}

// action registers a form post that changes something: a session, the
// scope of the API operation it performs, and a form that carries the
// session's token and comes from a console page.
func (s *Server) action(pattern string, scope domain.Scope, h handler) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, scope, true, h) })
}

type valuesKey struct{}

// values is the parsed query string of a page or form of an action.
func values(r *http.Request) url.Values {
	q, _ := r.Context().Value(valuesKey{}).(url.Values)
	return q
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, scope domain.Scope, isAction bool, h handler) {
	ctx := r.Context()
	if !isAction && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		// A page that changes nothing may be read from a replica, caught
		// up with its arrival (store.MayReadReplica).
		ctx = store.MayReadReplica(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DatabaseTimeout)
	defer cancel()
	r = r.WithContext(ctx)
	v, err := s.viewerOf(w, r)
	if err != nil {
		var ue *domain.UnauthorizedError
		var te throttledError
		if errors.As(err, &te) {
			s.refuseThrottled(w, r, te.decision)
			return
		}
		if errors.As(err, &ue) || errors.Is(err, domain.ErrNotFound) {
			s.toSignIn(w, r, err)
			return
		}
		s.fail(w, r, nil, err)
		return
	}
	d, err := s.limiter.Allow(ctx, v.key.ID, v.key.LimitOr(s.cfg.RateLimit), s.now())
	if err != nil {
		s.fail(w, r, v, err)
		return
	}
	if !d.Allowed {
		w.Header().Set("Retry-After", strconv.Itoa(d.ResetIn(s.now())))
		s.showProblem(w, r, v, problems.New(http.StatusTooManyRequests, d.Refusal(s.now())))
		return
	}
	var in url.Values
	if isAction {
		in, err = s.readForm(r, v)
	} else {
		in, err = params.Parse(r.URL.RawQuery)
	}
	if err != nil {
		s.fail(w, r, v, err)
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), valuesKey{}, in))
	if scope != "" {
		if err := v.key.Require(scope); err != nil {
			s.fail(w, r, v, err)
			return
		}
	}
	if err := h(w, r, v); err != nil {
		s.fail(w, r, v, err)
	}
}

// viewerOf finds the request's session and the key it acts as, checked by
// the API's rules (service.ActiveKey): a key revoked or expired since the
// sign-in ends the session here. A cookie that names no session is a
// failed authentication (a guess, or a session ended meanwhile, whose
// cookie is dropped so that it fails once); an address that has failed too
// often is refused before its cookie is looked up (throttledError).
func (s *Server) viewerOf(w http.ResponseWriter, r *http.Request) (*viewer, error) {
	token := sessionToken(r)
	if token == "" {
		return nil, domain.ErrNotFound
	}
	addr, now := s.cfg.ClientAddress(r), s.now()
	if d := s.cfg.AuthFailures.Check(authFace, addr, now); !d.Allowed {
		return nil, throttledError{d}
	}
	cs, err := s.store.ConsoleSession(r.Context(), hashToken(token), now)
	if errors.Is(err, domain.ErrNotFound) {
		clearSessionCookie(w, r)
		if d := s.cfg.AuthFailures.Failed(authFace, addr, now); !d.Allowed {
			return nil, throttledError{d}
		}
	}
	if err != nil {
		return nil, err
	}
	key, err := service.ActiveKey(r.Context(), s.store, cs.KeyHash, s.now())
	var ue *domain.UnauthorizedError
	if errors.As(err, &ue) {
		_ = s.store.EndConsoleSession(r.Context(), cs.IDHash)
		clearSessionCookie(w, r)
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	return &viewer{session: cs, key: key}, nil
}

// readForm reads an action's form strictly, as the API reads a body: URL
// encoded, at most 1 MiB, every value text an engine can hold, and it must
// come from a console page of this server, with the session's token. A
// form posted from another site is refused even with the session's
// cookie (which SameSite=Strict withholds from it anyway).
func (s *Server) readForm(r *http.Request, v *viewer) (url.Values, error) {
	if err := sameOrigin(r); err != nil {
		return nil, err
	}
	form, err := formBody(r)
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare([]byte(form.Get("csrf")), []byte(v.session.CSRF)) != 1 {
		return nil, &domain.ForbiddenError{Detail: "This form is stale or was not made by this console; reload the page and send it again."}
	}
	delete(form, "csrf")
	return form, nil
}

// formBody reads a form's body strictly, as the API reads a JSON body: URL
// encoded, at most 1 MiB, every name and value text an engine can hold.
func formBody(r *http.Request) (url.Values, error) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		return nil, &domain.ValidationError{Detail: "A console form is sent as application/x-www-form-urlencoded."}
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxForm))
	if err != nil {
		return nil, &domain.ValidationError{Detail: "The form is larger than 1 MiB."}
	}
	form, err := params.Parse(string(body))
	if err != nil {
		return nil, err
	}
	for name, vs := range form {
		for _, val := range vs {
			if !params.Storable(name) || !params.Storable(val) {
				return nil, domain.BodyError("/"+params.Printable(name), "%s must be UTF-8 text without NUL characters.", params.Printable(name))
			}
		}
	}
	return form, nil
}

// sameOrigin refuses a form a browser says came from another site: by
// Sec-Fetch-Site where the browser sends it, else by Origin.
func sameOrigin(r *http.Request) error {
	refused := &domain.ForbiddenError{Detail: "The form was sent from another site; it is refused."}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return refused
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return refused
		}
	}
	return nil
}

// fail shows err: the API's problem for a refusal (with Retry-After for a
// database that cannot serve), a bare 500 for a defect, logged with the
// request id.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, v *viewer, err error) {
	if errors.Is(r.Context().Err(), context.Canceled) {
		return // nobody reads the answer
	}
	err = s.store.Classify(err)
	var ue *domain.UnavailableError
	if errors.As(err, &ue) {
		s.cfg.Outages.Failed(ue)
	}
	p := problems.For(err)
	if p == nil {
		s.log.ErrorContext(r.Context(), "console page failed", "request_id", w.Header().Get("X-Request-Id"), "error", err.Error())
		p = problems.New(http.StatusInternalServerError, "The server could not complete the request. Quote the request id when reporting it.")
	}
	if p.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	s.showProblem(w, r, v, p)
}

// toSignIn sends a visitor without a valid session to the sign-in page,
// saying why when a key ended it.
func (s *Server) toSignIn(w http.ResponseWriter, r *http.Request, err error) {
	to := Prefix + "/sign-in"
	var ue *domain.UnauthorizedError
	if errors.As(err, &ue) {
		to += "?ended=" + url.QueryEscape(endedReason(ue))
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// after ends an action: back to the page to (done) when err is nil; when
// the API would have refused it for its input (400, 403, 409, 422), the
// page drawn again (redraw) with the problem beside the form; anything
// else (an absent id, a database that cannot serve, a defect) as fail
// shows it.
func (s *Server) after(w http.ResponseWriter, r *http.Request, v *viewer, err error, to, notice string,
	redraw func() (page, title string, data any, err error)) error {
	if err == nil {
		return s.done(w, r, to, notice)
	}
	p := problems.For(s.store.Classify(err))
	if p == nil || p.Status == http.StatusNotFound || p.Status >= 500 {
		return err
	}
	page, title, data, rerr := redraw()
	if rerr != nil {
		return rerr
	}
	s.renderProblem(w, r, v, p, page, title, data)
	return nil
}
