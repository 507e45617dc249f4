package api

import (
	"bytes"
	"encoding/json"
	"html/template"
	"sort"
	"strings"
	"sync"
)

// The reference page is rendered on the server from the same document, so it
// needs no script from elsewhere and cannot disagree with the contract.

type docOperation struct {
	Method, Path, Summary, Description, Scope string
	Parameters                                []docParam
	Body                                      string
	// BodyExample is the request body's example, indented JSON.
	BodyExample string
	Responses   []docResponse
}

type docParam struct{ Name, In, Description, Type string }

type docResponse struct{ Status, Description, ContentType, Example string }

type docSchema struct {
	Name string
	JSON string
}

type docPage struct {
	Title, Version, Description string
	Groups                      []docGroup
	Schemas                     []docSchema
}

type docGroup struct {
	Name       string
	Operations []docOperation
}

// inlineCode escapes text for HTML and shows `quoted` spans as code, the one
// piece of Markdown the document's descriptions use throughout.
func inlineCode(s string) template.HTML {
	parts := strings.Split(template.HTMLEscapeString(s), "`")
	var b strings.Builder
	for i, p := range parts {
		if i%2 == 1 && i < len(parts)-1 {
			b.WriteString("<code>" + p + "</code>")
			continue
		}
		if i%2 == 1 {
			b.WriteString("`")
		}
		b.WriteString(p)
	}
	return template.HTML(b.String())
}

var docsTemplate = template.Must(template.New("docs").Funcs(template.FuncMap{
	"lower": strings.ToLower,
	"md":    inlineCode,
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} {{.Version}}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
h2{border-bottom:1px solid #ddd;padding-bottom:.3rem;margin-top:2.5rem}
.op{border:1px solid #e3e3e3;border-radius:6px;padding:.6rem 1rem;margin:1rem 0}
.m{font:bold 13px monospace;padding:.1rem .4rem;border-radius:3px;color:#fff;background:#555}
.get{background:#2b6cb0}.post{background:#2f855a}.patch{background:#b7791f}.delete{background:#c53030}
code,pre{font-family:ui-monospace,monospace;font-size:13px}pre{background:#f6f6f6;padding:.6rem;overflow:auto}
table{border-collapse:collapse}td,th{border:1px solid #e3e3e3;padding:.2rem .5rem;text-align:left;vertical-align:top}
.desc{white-space:pre-wrap}
</style></head><body>
<h1>{{.Title}} <small>{{.Version}}</small></h1>
<p>The machine-readable contract is <a href="/openapi.json">/openapi.json</a>.</p>
<div class="desc">{{md .Description}}</div>
{{range .Groups}}<h2>{{.Name}}</h2>
{{range .Operations}}<div class="op" id="{{lower .Method}}-{{.Path}}">
<p><span class="m {{lower .Method}}">{{.Method}}</span> <code>{{.Path}}</code> — {{.Summary}}{{if .Scope}} <small>(scope <code>{{.Scope}}</code>)</small>{{end}}</p>
{{if .Description}}<div class="desc">{{md .Description}}</div>{{end}}
{{if .Parameters}}<table><tr><th>Parameter</th><th>In</th><th>Type</th><th>Meaning</th></tr>
{{range .Parameters}}<tr><td><code>{{.Name}}</code></td><td>{{.In}}</td><td>{{.Type}}</td><td>{{md .Description}}</td></tr>{{end}}</table>{{end}}
{{if .Body}}<p>Body: <code>{{.Body}}</code></p>{{end}}
{{if .BodyExample}}<p>Example request body:</p><pre>{{.BodyExample}}</pre>{{end}}
<table><tr><th>Status</th><th>Meaning</th></tr>{{range .Responses}}<tr><td>{{.Status}}</td><td>{{md .Description}}{{if .Example}}<br>Example (<code>{{.ContentType}}</code>):<pre>{{.Example}}</pre>{{end}}</td></tr>{{end}}</table>
</div>{{end}}{{end}}
<h2>Schemas</h2>
{{range .Schemas}}<h3 id="schema-{{.Name}}">{{.Name}}</h3><pre>{{.JSON}}</pre>{{end}}
</body></html>
`))

var docsHTML = sync.OnceValue(func() []byte {
	var doc struct {
		Info struct {
			Title, Version, Description string
		}
		Paths      map[string]map[string]json.RawMessage
		Components struct {
			Schemas    map[string]json.RawMessage
			Parameters map[string]rawParam
			Responses  map[string]struct{ Description string }
		}
	}
	if err := json.Unmarshal(JSON(), &doc); err != nil {
		panic("api: " + err.Error())
	}
	groups := map[string][]docOperation{}
	for path, item := range doc.Paths {
		for method, raw := range item {
			var op struct {
				Summary, Description string
				Tags                 []string
				XScope               string `json:"x-scope"`
				Parameters           []rawParam
				RequestBody          struct {
					Content map[string]struct {
						Schema struct {
							Ref string `json:"$ref"`
						}
						Example json.RawMessage
					}
				}
				Responses map[string]struct {
					Ref         string `json:"$ref"`
					Description string
					Content     map[string]struct{ Example json.RawMessage }
				}
			}
			if json.Unmarshal(raw, &op) != nil || op.Summary == "" {
				continue // "parameters" and other non-operation members
			}
			o := docOperation{Method: strings.ToUpper(method), Path: path, Summary: op.Summary, Description: op.Description, Scope: op.XScope}
			for _, p := range op.Parameters {
				if p.Ref != "" {
					p = doc.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
				}
				o.Parameters = append(o.Parameters, docParam{Name: p.Name, In: p.In, Description: p.Description, Type: p.Schema.Type()})
			}
			if c, ok := op.RequestBody.Content["application/json"]; ok {
				o.Body = strings.TrimPrefix(c.Schema.Ref, "#/components/schemas/")
				o.BodyExample = indented(c.Example)
			}
			for status, r := range op.Responses {
				d := r.Description
				if r.Ref != "" {
					d = doc.Components.Responses[strings.TrimPrefix(r.Ref, "#/components/responses/")].Description
				}
				resp := docResponse{Status: status, Description: d}
				for ct, c := range r.Content {
					if ex := indented(c.Example); ex != "" {
						resp.ContentType, resp.Example = ct, ex
					}
				}
				o.Responses = append(o.Responses, resp)
			}
			sort.Slice(o.Responses, func(i, j int) bool { return o.Responses[i].Status < o.Responses[j].Status })
			tag := "other"
			if len(op.Tags) > 0 {
				tag = op.Tags[0]
			}
			groups[tag] = append(groups[tag], o)
		}
	}
	page := docPage{Title: doc.Info.Title, Version: doc.Info.Version, Description: doc.Info.Description}
	for name, ops := range groups {
		sort.Slice(ops, func(i, j int) bool {
			if ops[i].Path != ops[j].Path {
				return ops[i].Path < ops[j].Path
			}
			return ops[i].Method < ops[j].Method
		})
		page.Groups = append(page.Groups, docGroup{Name: name, Operations: ops})
	}
	sort.Slice(page.Groups, func(i, j int) bool { return page.Groups[i].Name < page.Groups[j].Name })
	for name, raw := range doc.Components.Schemas {
		var pretty bytes.Buffer
		_ = json.Indent(&pretty, raw, "", "  ")
		page.Schemas = append(page.Schemas, docSchema{Name: name, JSON: pretty.String()})
	}
	sort.Slice(page.Schemas, func(i, j int) bool { return page.Schemas[i].Name < page.Schemas[j].Name })
	var out bytes.Buffer
	if err := docsTemplate.Execute(&out, page); err != nil {
		panic("api: " + err.Error())
	}
	return out.Bytes()
})

// indented renders an example for the page; "" when there is none.
func indented(example json.RawMessage) string {
	if len(example) == 0 {
		return ""
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, example, "", "  ") != nil {
		return ""
	}
	return pretty.String()
}

type rawParam struct {
	Ref         string `json:"$ref"`
	Name, In    string
	Description string
	Schema      rawSchema
}

type rawSchema struct {
	Ref   string          `json:"$ref"`
	Type_ json.RawMessage `json:"type"`
	Items *rawSchema
}

// Type renders a schema's type for a person: "string", "array of string".
func (s rawSchema) Type() string {
	if s.Ref != "" {
		return strings.TrimPrefix(s.Ref, "#/components/schemas/")
	}
	var one string
	if json.Unmarshal(s.Type_, &one) == nil {
		if one == "array" && s.Items != nil {
			return "array of " + s.Items.Type()
		}
		return one
	}
	var many []string
	_ = json.Unmarshal(s.Type_, &many)
	return strings.Join(many, " or ")
}

// DocsHTML is the reference page, rendered once.
func DocsHTML() []byte { return docsHTML() }
