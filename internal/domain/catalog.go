package domain

import "time"

// Id prefixes of the catalogue's resources (domain.NewID).
const (
	TagIDPrefix         = "tag"
	CustomFieldIDPrefix = "cf"
	CampaignIDPrefix    = "cmp"
	ProjectIDPrefix     = "prj"
)

// DefaultFormType is a custom field's form_type when none is given.
const DefaultFormType = "text"

// Tag contexts (spec section 2.3).
var TagContexts = []string{"event", "account", "person_segment", "partner", "breadcrumb", "person"}

// Custom field enumerations (spec section 2.6).
var (
	CustomFieldCollections = []string{"Person", "Breadcrumb", "Partner"}
	CustomFieldDataTypes   = []string{"str", "int", "float", "bool", "list", "date", "money", "unicode"}
	CustomFieldFormTypes   = []string{"text", "number", "textarea", "email", "url", "image"}
)

// Tag labels persons and other records. Archived tags are invisible to the
// API but kept, with every link to them.
type Tag struct {
	ID          string     `json:"id"`
	AccountID   string     `json:"-"`
	Name        string     `json:"name"`
	Context     string     `json:"context"`
	DateCreated Time       `json:"date_created"`
	ArchivedAt  *time.Time `json:"-"`
}

// CustomField defines an account-specific attribute of a collection.
type CustomField struct {
	ID          string     `json:"id"`
	AccountID   string     `json:"-"`
	Collection  string     `json:"collection"`
	DataType    string     `json:"data_type"`
	Key         string     `json:"key"`
	Label       *string    `json:"label"`
	Description *string    `json:"description"`
	FormType    string     `json:"form_type"`
	IsDefault   bool       `json:"is_default"`
	IsReadOnly  bool       `json:"is_read_only"`
	DateCreated Time       `json:"date_created"`
	ArchivedAt  *time.Time `json:"-"`
}

// CustomFieldPatch changes display attributes only.
type CustomFieldPatch struct {
	Label       Opt[string] `json:"label"`
	Description Opt[string] `json:"description"`
	FormType    Opt[string] `json:"form_type"`
}

// TagPatch renames or moves a tag.
type TagPatch struct {
	Name    Opt[string] `json:"name"`
	Context Opt[string] `json:"context"`
}

// Campaign is read-only through the API; it is imported.
type Campaign struct {
	ID          string  `json:"id"`
	AccountID   string  `json:"-"`
	Name        string  `json:"name"`
	Description *string `json:"description"`
	Kind        *string `json:"kind"`
	State       *string `json:"state"`
	IsEnabled   bool    `json:"is_enabled"`
	ProjectID   *string `json:"project_id"`
	DateCreated Time    `json:"date_created"`
	DateStart   *Time   `json:"date_start"`
	DateEnd     *Time   `json:"date_end"`
}

// Project is read-only through the API; it is imported.
type Project struct {
	ID              string  `json:"id"`
	AccountID       string  `json:"-"`
	Name            string  `json:"name"`
	Location        *string `json:"location"`
	RegistrationURL *string `json:"registration_url"`
	SiteURL         *string `json:"site_url"`
	DateCreated     Time    `json:"date_created"`
	DateStart       *Time   `json:"date_start"`
	DateEnd         *Time   `json:"date_end"`
}
