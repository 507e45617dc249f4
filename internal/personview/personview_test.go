package personview_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/personview"
)

var now = time.Date(2026, 11, 21, 10, 15, 30, 123_000_000, time.UTC)

func text(s string) *string { return &s }

// render marshals v and checks it against a schema of the contract.
func render(t *testing.T, schema string, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	doc, err := apitest.Document()
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Components.Schemas[schema].Value.VisitJSON(m, openapi3.EnableJSONSchema2020()); err != nil {
		t.Fatalf("%s does not match the contract: %v\n%s", schema, err, b)
	}
	return m
}

// The profile columns no operation writes (address, companies, language...)
// are rendered as stored; the contract must accept them filled in too.
func TestExtendedOfAFullPerson(t *testing.T) {
	t.Parallel()
	lat, lng := 38.7223, -9.1393
	p := &domain.Person{
		ID: "per_1", Email: text("ada@x.test"), ExternalID: text("crm-1"), FID: text("fb-1"), FirstName: text("Ada"),
		LastName: text("Lovelace"), Phone: text("+351"), Language: text("en"), Pseudonym: text("AAL"), Occupation: text("analyst"),
		Age: text("36"), Ethnicity: text("x"), Income: text("y"), Edu: text("z"),
		Companies: json.RawMessage(`[{"name":"Analytical Engines"}]`),
		Address: domain.Address{CountryName: text("Portugal"), Locality: text("Lisbon"), Lat: &lat, Lng: &lng,
			CountryCode: text("PT"), Timezone: text("Europe/Lisbon")},
		EmailOptOut: true, UpsertResult: domain.UpsertUpdated,
		CustomFields: map[string]string{"n": "5", "ok": "true", "colors": `["a","b"]`, "born": "1815-12-10", "price": "19.90", "odd": "x"},
		TagIDs:       []string{"tag_1"}, TagNames: []string{"vip"},
		DateCreated: now.Add(-time.Hour), DateLastSeen: now,
	}
	fields := []domain.CustomField{
		{Key: "n", DataType: "int"}, {Key: "ok", DataType: "bool"}, {Key: "colors", DataType: "list"}, {Key: "born", DataType: "date"},
		{Key: "price", DataType: "money"}, {Key: "odd", DataType: "int"}, {Key: "unset_money", DataType: "money"},
		{Key: "unset_date", DataType: "date"}, {Key: "unset_str", DataType: "str"},
	}
	x := render(t, "PersonExtended", personview.Extended(p, fields, "https://pds.example/", now))

	addr := x["address"].(map[string]any)
	if len(addr) != 17 || addr["lat"] != lat || addr["locality"] != "Lisbon" || addr["premise1"] != nil {
		t.Fatalf("address %v", addr)
	}
	if x["0_person_url"] != "https://pds.example/persons/per_1" || x["name"] != "Ada Lovelace" || x["email_opt_out"] != true ||
		x["age"] != "36" || len(x["companies"].([]any)) != 1 || x["tags"].([]any)[0] != "vip" {
		t.Fatalf("extended %v", x)
	}
	if _, shown := x["f_id"]; shown {
		t.Fatal("f_id is not part of the extended view")
	}
	cd := x["custom_data"].(map[string]any)
	for k, want := range map[string]any{"n": 5.0, "ok": true, "born": "1815-12-10", "price": 19.9, "odd": "x",
		"unset_money": 0.0, "unset_date": "2026-11-21T10:15:30.123Z", "unset_str": ""} {
		if cd[k] != want {
			t.Errorf("custom_data[%s] = %#v, want %#v", k, cd[k], want)
		}
	}
	if colors := cd["colors"].([]any); len(colors) != 2 || colors[1] != "b" {
		t.Errorf("custom_data[colors] = %v", colors)
	}
	if len(cd) != len(fields) {
		t.Errorf("custom_data has %d keys, want one per live field (%d)", len(cd), len(fields))
	}
	// The raw text of a money value is kept: 19.90, not 19.9.
	b, err := json.Marshal(personview.Extended(p, fields, "https://pds.example", now))
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) || !strings.Contains(string(b), `"price":19.90`) {
		t.Errorf("money lost its digits: %s", b)
	}
}

func TestEmptyPersonViews(t *testing.T) {
	t.Parallel()
	p := &domain.Person{ID: "per_2", UpsertResult: domain.UpsertCreated, DateCreated: now, DateLastSeen: now}
	x := render(t, "PersonExtended", personview.Extended(p, nil, "https://pds.example", now))
	if x["name"] != nil || len(x["companies"].([]any)) != 0 || len(x["tags"].([]any)) != 0 || len(x["custom_data"].(map[string]any)) != 0 ||
		len(x["custom_fields"].(map[string]any)) != 0 || len(x["address"].(map[string]any)) != 17 {
		t.Fatalf("empty extended %v", x)
	}
	c := render(t, "Person", personview.Compact(p))
	if len(c) != 10 || c["email"] != nil || len(c["tag_ids"].([]any)) != 0 || c["date_created"] != "2026-11-21T10:15:30.123Z" {
		t.Fatalf("empty compact %v", c)
	}
}
