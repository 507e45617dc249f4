package service

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pds-dev/pds/internal/domain"
)

// Bounds of the catalogue's strings (spec sections 2.3, 2.6 and 8), counted
// in characters (runes), not bytes.
const (
	MaxTagNameLength  = 64
	MaxFieldKeyLength = 255
	// MaxImportIDLength bounds an id given in an import line.
	MaxImportIDLength = 255
	// MaxNameLength keeps a campaign or project name to something a person
	// can read; the spec sets no bound.
	MaxNameLength = 1000
	// MaxWebhookNameLength bounds a subscription's name.
	MaxWebhookNameLength = 255
)

// Problems collects every invalid member of one input, so that a client
// learns all of them from one 400.
type Problems struct{ errs []domain.FieldError }

// Add records that the member at pointer is invalid. Only the first problem
// of a member is kept: "required" says enough about an absent one.
func (p *Problems) Add(pointer, format string, args ...any) {
	for _, e := range p.errs {
		if e.Pointer == pointer {
			return
		}
	}
	p.errs = append(p.errs, domain.FieldError{Pointer: pointer, Detail: fmt.Sprintf(format, args...)})
}

// Err is nil when nothing was added, else a *domain.ValidationError
// (domain.Invalid: each sentence once).
func (p *Problems) Err() error {
	if len(p.errs) == 0 {
		return nil
	}
	return domain.Invalid(p.errs...)
}

// Required records a missing member.
func (p *Problems) Required(pointer string) {
	p.Add(pointer, "%s is required.", pointer)
}

// OneOf checks an enumerated member.
func (p *Problems) OneOf(pointer, value string, allowed []string) {
	if !slices.Contains(allowed, value) {
		p.Add(pointer, "%s", EnumDetail(pointer, value, allowed))
	}
}

// Length checks that a member holds min to max characters, none of them NUL.
func (p *Problems) Length(pointer, value string, min, max int) {
	if n := utf8.RuneCountInString(value); n < min || n > max {
		p.Add(pointer, "%s must be %d to %d characters long; it has %d.", pointer, min, max, n)
	}
	p.Text(pointer, &value)
}

// Name checks a name or key: Length's bounds, and at least one character
// that is not white space, since a name of spaces alone shows as empty
// wherever it is listed.
func (p *Problems) Name(pointer, value string, max int) {
	p.Length(pointer, value, 1, max)
	if value != "" && strings.TrimSpace(value) == "" {
		p.Add(pointer, "%s must hold a character other than white space.", pointer)
	}
}

// CheckWebhookName validates a subscription's name.
func CheckWebhookName(name string) error {
	var p Problems
	p.Name("/name", name, MaxWebhookNameLength)
	return p.Err()
}

// Text checks an optional free-text member: PostgreSQL cannot store a NUL
// character, and no name or label needs one.
func (p *Problems) Text(pointer string, value *string) {
	if value != nil && strings.ContainsRune(*value, 0) {
		p.Add(pointer, "%s must not contain the NUL character (\\u0000).", pointer)
	}
}

// EnumDetail says that a member or query parameter is outside its
// enumeration: a near miss is named, and a long enumeration (the 68
// flavors) is left to the contract rather than listed.
func EnumDetail(name, value string, allowed []string) string {
	if len(allowed) > maxListedChoices {
		return fmt.Sprintf("%s %q is not one of the %d values of %s (the contract, GET /openapi.json, lists them).%s",
			name, value, len(allowed), name, domain.DidYouMean(value, allowed))
	}
	return fmt.Sprintf("%s must be %s; got %q.%s", name, domain.Choices(allowed), value, domain.DidYouMean(value, allowed))
}

// maxListedChoices bounds the values a message lists.
const maxListedChoices = 12

// NewTag validates a Create Tag request and builds the tag.
func NewTag(accountID string, name, tagContext *string, now time.Time) (domain.Tag, error) {
	var p Problems
	if name == nil {
		p.Required("/name")
	} else {
		p.Name("/name", *name, MaxTagNameLength)
	}
	if tagContext == nil {
		p.Required("/context")
	} else {
		p.OneOf("/context", *tagContext, domain.TagContexts)
	}
	if err := p.Err(); err != nil {
		return domain.Tag{}, err
	}
	return domain.Tag{
		ID: domain.NewID(domain.TagIDPrefix), AccountID: accountID, Name: *name, Context: *tagContext, DateCreated: domain.T(now),
	}, nil
}

// CheckTagPatch validates an Update Tag request. Null members leave their
// value as it is (a tag always has a name and a context).
func CheckTagPatch(patch domain.TagPatch) error {
	var p Problems
	if v := patch.Name.Ptr(); v != nil {
		p.Name("/name", *v, MaxTagNameLength)
	}
	if v := patch.Context.Ptr(); v != nil {
		p.OneOf("/context", *v, domain.TagContexts)
	}
	return p.Err()
}

// CheckCustomField validates a field definition, whoever makes it: the API
// or the import command.
func CheckCustomField(p *Problems, f domain.CustomField) {
	p.OneOf("/collection", f.Collection, domain.CustomFieldCollections)
	p.OneOf("/data_type", f.DataType, domain.CustomFieldDataTypes)
	p.Name("/key", f.Key, MaxFieldKeyLength)
	p.OneOf("/form_type", f.FormType, domain.CustomFieldFormTypes)
	p.Text("/label", f.Label)
	p.Text("/description", f.Description)
}

// FieldCreate is a Create Custom Field request: the members of the spec's
// create row, each nil when absent.
type FieldCreate struct {
	Collection, DataType, Key, Label, Description, FormType *string
}

// NewCustomField validates a Create Custom Field request and builds the
// field; form_type defaults to text (also when null, FieldFormType). Fields
// made this way are never read-only nor default: only the import command
// sets those.
func NewCustomField(accountID string, in FieldCreate, now time.Time) (domain.CustomField, error) {
	var p Problems
	f := domain.CustomField{
		ID: domain.NewID(domain.CustomFieldIDPrefix), AccountID: accountID, Label: in.Label, Description: in.Description,
		FormType: FieldFormType(in.FormType), DateCreated: domain.T(now),
	}
	for _, m := range []struct {
		pointer string
		in      *string
		out     *string
	}{{"/collection", in.Collection, &f.Collection}, {"/data_type", in.DataType, &f.DataType}, {"/key", in.Key, &f.Key}} {
		if m.in == nil {
			p.Required(m.pointer)
			continue
		}
		*m.out = *m.in
	}
	CheckCustomField(&p, f)
	return f, p.Err()
}

// CheckFieldPatch validates an Update Custom Field request; PatchField
// applies it.
func CheckFieldPatch(patch domain.CustomFieldPatch) error {
	var p Problems
	if v := patch.FormType.Ptr(); v != nil {
		p.OneOf("/form_type", *v, domain.CustomFieldFormTypes)
	}
	p.Text("/label", patch.Label.Ptr())
	p.Text("/description", patch.Description.Ptr())
	return p.Err()
}

// CheckImportID validates an id given in an import line: it becomes part of
// URLs, so it holds only unreserved URL characters.
func CheckImportID(p *Problems, id string) {
	if id == "" || utf8.RuneCountInString(id) > MaxImportIDLength ||
		strings.IndexFunc(id, func(r rune) bool { return !isUnreserved(r) }) >= 0 {
		p.Add("/id", "/id must be 1 to %d characters of A-Z, a-z, 0-9, '-', '.', '_' and '~'; got %q.", MaxImportIDLength, id)
	}
}

func isUnreserved(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~", r)
}

// CheckCampaign validates an imported campaign.
func CheckCampaign(p *Problems, c domain.Campaign) {
	p.Name("/name", c.Name, MaxNameLength)
	p.Text("/description", c.Description)
	p.Text("/kind", c.Kind)
	p.Text("/state", c.State)
	p.Text("/project_id", c.ProjectID)
	if c.ProjectID != nil && *c.ProjectID == "" {
		p.Add("/project_id", "/project_id must name a project of the account, or be null.")
	}
	checkSpan(p, c.DateStart, c.DateEnd)
}

// CheckProject validates an imported project.
func CheckProject(p *Problems, pr domain.Project) {
	p.Name("/name", pr.Name, MaxNameLength)
	p.Text("/location", pr.Location)
	checkURL(p, "/registration_url", pr.RegistrationURL)
	checkURL(p, "/site_url", pr.SiteURL)
	checkSpan(p, pr.DateStart, pr.DateEnd)
}

func checkURL(p *Problems, pointer string, v *string) {
	if v == nil {
		return
	}
	u, err := url.Parse(*v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.Add(pointer, "%s must be an absolute http or https URL; got %q.", pointer, *v)
	}
}

func checkSpan(p *Problems, start, end *domain.Time) {
	if start != nil && end != nil && end.Before(start.Time) {
		p.Add("/date_end", "/date_end must not be before /date_start.")
	}
}
