package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/params"
	"github.com/pds-dev/pds/internal/problems"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed assets
var assetFiles embed.FS

// csp keeps every page to its own stylesheet: no script runs (none is
// needed), nothing loads from elsewhere, no form posts elsewhere, and no
// other site may frame a page.
const csp = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

func secureHeaders(h http.Header) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// Nothing of a console URL leaves the console; same-origin rather than
	// no-referrer, under which a browser sends Origin: null with a form,
	// which sameOrigin could not tell from another site's.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// view is what every page's template gets.
type view struct {
	Title string
	V     *viewer
	// CSRF is the session's token, for every form.
	CSRF string
	// Problem is the API's problem for what was just refused, and
	// FieldErrors its errors by form field (a pointer's first segment).
	Problem     *problems.Problem
	FieldErrors map[string]string
	// Notice says what the last action did.
	Notice string
	Data   any
	// Stylesheet and Icon are the assets' versioned paths.
	Stylesheet, Icon string
}

// FieldError is the problem's error for one form field, "" when none.
func (v view) FieldError(name string) string { return v.FieldErrors[name] }

type pages map[string]*template.Template

// stamp shows a time to the second, in UTC; "—" for none.
func stamp(t any) string {
	switch t := t.(type) {
	case time.Time:
		return t.UTC().Format("2006-01-02 15:04:05Z")
	case domain.Time:
		return stamp(t.Time)
	case *time.Time:
		if t != nil {
			return stamp(*t)
		}
	case *domain.Time:
		if t != nil {
			return stamp(t.Time)
		}
	}
	return "—"
}

// fieldView is one labelled text field of a form, with the problem's
// error for it.
type fieldView struct {
	// ID is the element's id: "f-" and the name where that is safe, else
	// made by the caller (a custom field's key may hold any character).
	ID, Name, Label, Value, Error string
	// Kind is "" for a line, "list" for one item a line.
	Kind string
}

var funcs = template.FuncMap{
	"when":    stamp,
	"rfc3339": func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
	"deref": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
	"join": strings.Join,
	// count says n things in words: "1 delivery", "2 deliveries".
	"count": func(n int, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return strconv.Itoa(n) + " " + many
	},
	"hasTag": func(ids []string, id string) bool { return slices.Contains(ids, id) },
	"hasKey": func(m map[string]string, k string) bool { _, ok := m[k]; return ok },
	// personFields are the attributes Update Person writes, by form name.
	"personFields": func() map[string]string {
		return map[string]string{"email": "Email", "first_name": "First name", "last_name": "Last name", "phone": "Phone"}
	},
	"dataTypes": func() []string { return domain.CustomFieldDataTypes },
	"formTypes": func() []string { return domain.CustomFieldFormTypes },
	"field": func(v view, id, name, label, value, kind string) fieldView {
		if id == "" {
			id = "f-" + name
		}
		return fieldView{ID: id, Name: name, Label: label, Value: value, Error: v.FieldErrors[name], Kind: kind}
	},
	// fieldName is how a page names a custom field: by its label for a key
	// that may read the definitions, else by its key, as Get Person does.
	"fieldName": func(v view, f domain.CustomField) string {
		if v.V.SeesFieldLabels() && f.Label != nil && *f.Label != "" {
			return *f.Label
		}
		return f.Key
	},
	// tagNames are how a page names a person's tags: by name for a key that
	// may read tags, else by id, as Get Person does.
	"tagNames": func(v view, p domain.Person) []string {
		if v.V.SeesTagNames() {
			return p.TagNames
		}
		return p.TagIDs
	},
	// deliveryPerson is how a delivery names its person: by id, with its
	// email beside it for a key that may read persons (emails holds them
	// only then), linked to the person's page.
	"deliveryPerson": func(v view, id string, emails map[string]string) deliveryPersonView {
		return deliveryPersonView{ID: id, Email: emails[id], Linked: v.V.Can(string(domain.ScopePersonsRead))}
	},
	"schemes": func(v view, chosen string) schemesView {
		return schemesView{Schemes: domain.SignatureSchemes, Chosen: chosen, Error: v.FieldErrors["signature_scheme"]}
	},
}

// deliveryPersonView is a delivery's person in a log.
type deliveryPersonView struct {
	ID, Email string
	Linked    bool
}

// schemesView is a subscription form's choice of signature scheme.
type schemesView struct {
	Schemes       []string
	Chosen, Error string
}

// mustParsePages parses each page with the layout it fills.
func mustParsePages() pages {
	out := pages{}
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		panic(err)
	}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" {
			continue
		}
		out[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", n))
	}
	return out
}

// render writes a page in the layout, with status.
func (s *Server) render(w http.ResponseWriter, r *http.Request, v *viewer, status int, page, title string, data any) {
	s.write(w, status, page, s.viewFor(r, v, title, data))
}

func (s *Server) viewFor(r *http.Request, v *viewer, title string, data any) view {
	vw := view{Title: title, V: v, Data: data, Stylesheet: stylesheetPath(), Icon: iconPath(), Notice: notices[values(r).Get("done")]}
	if v != nil {
		vw.CSRF = v.session.CSRF
	}
	return vw
}

// notices say what an action did, on the page it leads back to (a fixed
// sentence per action: nothing a link's author writes is shown).
var notices = map[string]string{
	"saved":             "Saved.",
	"tagged":            "Tag attached.",
	"untagged":          "Tag detached.",
	"created":           "Created.",
	"archived":          "Archived.",
	"deleted":           "Deleted.",
	"redelivered":       "Redelivery queued: it is attempted at once.",
	"requeued":          "Every failed delivery since then is queued again, attempted at once.",
	"merged":            "Merged: the other person is part of this one now, and its identifiers find this one.",
	"erased":            "Erased: the person and everything held for it are gone.",
	"erased-suppressed": "Erased, and its identifiers are suppressed: an upsert, breadcrumb or import that names one is refused.",
	"lifted":            "Suppression lifted: writes that name that identifier are accepted again.",
	"revoked":           "Revoked: requests with that key are refused from now on, on every instance.",
}

// done ends an action that changed something: back to a page (303, so a
// reload does not send the form again), saying what was done.
func (s *Server) done(w http.ResponseWriter, r *http.Request, to, notice string) error {
	sep := "?"
	if strings.Contains(to, "?") {
		sep = "&"
	}
	http.Redirect(w, r, to+sep+"done="+notice, http.StatusSeeOther)
	return nil
}

func (s *Server) write(w http.ResponseWriter, status int, page string, vw view) {
	var buf bytes.Buffer
	if err := s.pages[page].ExecuteTemplate(&buf, "layout", vw); err != nil {
		s.log.Error("console template", "page", page, "error", err.Error())
		http.Error(w, "The page could not be drawn.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// renderProblem draws a form's page again with the problem that refused
// it, each field's error beside the field.
func (s *Server) renderProblem(w http.ResponseWriter, r *http.Request, v *viewer, p *problems.Problem, page, title string, data any) {
	vw := s.viewFor(r, v, title, data)
	vw.Problem, vw.FieldErrors = p, fieldErrors(p)
	s.write(w, p.Status, page, vw)
}

// fieldErrors indexes a problem's errors by form field: the first segment
// of a body pointer ("/custom_fields/plan" is field custom_fields.plan), or
// a query parameter.
func fieldErrors(p *problems.Problem) map[string]string {
	out := map[string]string{}
	for _, e := range p.Errors {
		name := e.Parameter
		if e.Pointer != "" {
			name = strings.ReplaceAll(strings.TrimPrefix(e.Pointer, "/"), "/", ".")
		}
		if _, dup := out[name]; !dup {
			out[name] = e.Detail
		}
	}
	return out
}

// showProblem draws the error page of a problem.
func (s *Server) showProblem(w http.ResponseWriter, r *http.Request, v *viewer, p *problems.Problem) {
	p.RequestID = w.Header().Get("X-Request-Id")
	s.renderProblem(w, r, v, p, "problem", p.Title, nil)
}

// notFound answers a console path that names no page, as an absent id.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.showProblem(w, r, nil, problems.For(domain.ErrNotFound))
}

// assetVersion is the hash of the assets, in their paths: a new binary's
// assets have new paths, so the old ones may be cached for a year.
var assetVersion = func() string {
	h := sha256.New()
	for _, name := range []string{"console.css", "favicon.svg"} {
		b, err := assetFiles.ReadFile("assets/" + name)
		if err != nil {
			panic(err)
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)[:6])
}()

func stylesheetPath() string { return Prefix + "/assets/console.css?v=" + assetVersion }
func iconPath() string       { return Prefix + "/assets/favicon.svg?v=" + assetVersion }

// assetTypes are the assets served, by extension.
var assetTypes = map[string]string{".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}

// asset serves the embedded stylesheet and icon.
func (s *Server) asset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	b, err := assetFiles.ReadFile("assets/" + name)
	ct, known := assetTypes[path.Ext(name)]
	if err != nil || !known {
		s.notFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ct)
	if q, err := params.Parse(r.URL.RawQuery); err == nil && q.Get("v") == assetVersion {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "public, max-age=300")
	}
	_, _ = w.Write(b)
}
