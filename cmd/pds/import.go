package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/store"
)

// maxImportLine bounds one JSON line, as the API bounds one body.
const maxImportLine = 1 << 20

// maxReportedLines bounds how many bad lines one failed import lists.
const maxReportedLines = 20

// importKind loads campaigns, projects or custom fields from JSON lines
// into one account. Every line is validated first and the file is written
// in one transaction: a bad line imports nothing of the file.
func (e cmdEnv) importKind(kind string) defineFunc {
	return func(fs *pflag.FlagSet) func([]string) error {
		c := commonFlagsOn(fs)
		account := fs.String("account", "", "account id (required)")
		return func(files []string) error {
			if *account == "" {
				return usageError{fmt.Errorf("import %s: --account is required; e.g. --account acc_01a209d69f8a9aba61380d0e (pds accounts list)", kind)}
			}
			in, closeIn, err := e.openInput(files[0])
			if err != nil {
				return fmt.Errorf("import %s: %w", kind, err)
			}
			defer closeIn()

			st, err := openAccountStore(e.ctx, c, "import "+kind, *account)
			if err != nil {
				return err
			}
			defer st.Close()
			var n int
			switch kind {
			case "campaigns":
				n, err = importLines(e.ctx, in, *account, decodeCampaign, st.ImportCampaigns)
			case "projects":
				n, err = importLines(e.ctx, in, *account, decodeProject, st.ImportProjects)
			case "custom-fields":
				n, err = importLines(e.ctx, in, *account, decodeCustomField, st.ImportCustomFields)
			}
			if err != nil {
				return fmt.Errorf("import %s: nothing was imported: %w", kind, err)
			}
			if c.json {
				return e.printJSON(map[string]any{"imported": n, "kind": kind, "account_id": *account})
			}
			fmt.Fprintf(e.stdout, "Imported %d %s into account %s.\n", n, kind, *account)
			return nil
		}
	}
}

func (e cmdEnv) openInput(name string) (io.Reader, func(), error) {
	if name == "-" {
		return e.stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

// importLines decodes and validates every non-blank line, then writes all
// the records at once. Errors name 1-based line numbers of the input.
func importLines[T any](ctx context.Context, in io.Reader, accountID string, decode func([]byte) (T, error),
	write func(context.Context, string, []T) error) (int, error) {
	var (
		records []T
		lineOf  []int // the line of each record
		bad     []string
	)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64*1024), maxImportLine)
	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		rec, err := decode(raw)
		if err != nil {
			bad = append(bad, fmt.Sprintf("line %d: %v", line, err))
			continue
		}
		records, lineOf = append(records, rec), append(lineOf, line)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return 0, fmt.Errorf("line %d: longer than %d bytes", line+1, maxImportLine)
		}
		return 0, err
	}
	if len(bad) == 1 {
		return 0, errors.New(bad[0])
	}
	if len(bad) > 1 {
		n := len(bad)
		if n > maxReportedLines {
			bad = append(bad[:maxReportedLines], fmt.Sprintf("and %d more", n-maxReportedLines))
		}
		return 0, fmt.Errorf("%d bad lines:\n%s", n, strings.Join(bad, "\n"))
	}
	if len(records) == 0 {
		return 0, nil
	}
	if err := write(ctx, accountID, records); err != nil {
		var ie *store.ImportError
		if errors.As(err, &ie) {
			return 0, fmt.Errorf("line %d: %v", lineOf[ie.Index], ie.Err)
		}
		return 0, err
	}
	return len(records), nil
}

var importHelp = map[string]string{
	"campaigns": `Each line is one campaign: {"name": required, "description", "kind", "state",
"is_enabled" (boolean), "project_id" (a project of the account), "date_start", "date_end"}.`,
	"projects": `Each line is one project: {"name": required, "location", "registration_url",
"site_url" (absolute http or https URLs), "date_start", "date_end"}.`,
	"custom-fields": `Each line is one custom field definition: {"collection", "data_type", "key": required,
"label", "description", "form_type" (default text), "is_read_only", "is_default" (booleans)}.
A key already held in its collection (archived fields included) is refused unless the line
gives that field's id. The API's live field limit does not apply here.`,
}

const importCommonHelp = `Every line may also give "id" (kept, so importing the line again updates that record;
an id of another account is refused) and "date_created". Times are RFC 3339. Unknown members
and bad values are reported with their line numbers, and then nothing of the file is imported.
Blank lines are skipped.`

// lineMeta is what every import line may carry besides the resource's own fields.
type lineMeta struct {
	ID          *string `json:"id"`
	DateCreated *string `json:"date_created"`
}

// apply validates the id and date_created of a line; absent, they are left
// to the store (a new id; the stored or the import time).
func (m lineMeta) apply(p *service.Problems) (id string, created domain.Time) {
	if m.ID != nil {
		service.CheckImportID(p, *m.ID)
		id = *m.ID
	}
	if t := lineTime(p, "/date_created", m.DateCreated); t != nil {
		created = *t
	}
	return id, created
}

func lineTime(p *service.Problems, pointer string, v *string) *domain.Time {
	if v == nil {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, *v)
	if err != nil {
		p.Add(pointer, "%s must be an RFC 3339 date-time such as 2026-11-21T10:15:30Z; got %q.", pointer, *v)
		return nil
	}
	dt := domain.T(t)
	return &dt
}

// decodeLine reads one JSON object strictly: unknown members and wrong types
// are errors that name the member.
func decodeLine(raw []byte, dst any) error {
	if raw[0] != '{' {
		return errors.New("a line must hold one JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil && dec.More():
		return errors.New("the line holds data after its JSON object")
	case err == nil:
		return nil
	case errors.As(err, &typ):
		return fmt.Errorf("/%s must be of JSON type %s, not %s", strings.ReplaceAll(typ.Field, ".", "/"), jsonKind(typ.Type.Kind().String()), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Errorf("the member %s is not a field of this resource", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return fmt.Errorf("not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

func jsonKind(goKind string) string {
	switch goKind {
	case "bool":
		return "boolean"
	case "string":
		return "string"
	}
	return goKind
}

func required(p *service.Problems, pointer string, v *string) string {
	if v == nil {
		p.Required(pointer)
		return ""
	}
	return *v
}

func decodeCampaign(raw []byte) (domain.Campaign, error) {
	var l struct {
		lineMeta
		Name        *string `json:"name"`
		Description *string `json:"description"`
		Kind        *string `json:"kind"`
		State       *string `json:"state"`
		IsEnabled   bool    `json:"is_enabled"`
		ProjectID   *string `json:"project_id"`
		DateStart   *string `json:"date_start"`
		DateEnd     *string `json:"date_end"`
	}
	if err := decodeLine(raw, &l); err != nil {
		return domain.Campaign{}, err
	}
	var p service.Problems
	c := domain.Campaign{
		Name: required(&p, "/name", l.Name), Description: l.Description, Kind: l.Kind, State: l.State, IsEnabled: l.IsEnabled,
		ProjectID: l.ProjectID, DateStart: lineTime(&p, "/date_start", l.DateStart), DateEnd: lineTime(&p, "/date_end", l.DateEnd),
	}
	c.ID, c.DateCreated = l.apply(&p)
	service.CheckCampaign(&p, c)
	return c, p.Err()
}

func decodeProject(raw []byte) (domain.Project, error) {
	var l struct {
		lineMeta
		Name            *string `json:"name"`
		Location        *string `json:"location"`
		RegistrationURL *string `json:"registration_url"`
		SiteURL         *string `json:"site_url"`
		DateStart       *string `json:"date_start"`
		DateEnd         *string `json:"date_end"`
	}
	if err := decodeLine(raw, &l); err != nil {
		return domain.Project{}, err
	}
	var p service.Problems
	pr := domain.Project{
		Name: required(&p, "/name", l.Name), Location: l.Location, RegistrationURL: l.RegistrationURL, SiteURL: l.SiteURL,
		DateStart: lineTime(&p, "/date_start", l.DateStart), DateEnd: lineTime(&p, "/date_end", l.DateEnd),
	}
	pr.ID, pr.DateCreated = l.apply(&p)
	service.CheckProject(&p, pr)
	return pr, p.Err()
}

func decodeCustomField(raw []byte) (domain.CustomField, error) {
	var l struct {
		lineMeta
		Collection  *string `json:"collection"`
		DataType    *string `json:"data_type"`
		Key         *string `json:"key"`
		Label       *string `json:"label"`
		Description *string `json:"description"`
		FormType    *string `json:"form_type"`
		IsDefault   bool    `json:"is_default"`
		IsReadOnly  bool    `json:"is_read_only"`
	}
	if err := decodeLine(raw, &l); err != nil {
		return domain.CustomField{}, err
	}
	var p service.Problems
	f := domain.CustomField{
		Collection: required(&p, "/collection", l.Collection), DataType: required(&p, "/data_type", l.DataType),
		Key: required(&p, "/key", l.Key), Label: l.Label, Description: l.Description, FormType: service.FieldFormType(l.FormType),
		IsDefault: l.IsDefault, IsReadOnly: l.IsReadOnly,
	}
	f.ID, f.DateCreated = l.apply(&p)
	service.CheckCustomField(&p, f)
	return f, p.Err()
}
