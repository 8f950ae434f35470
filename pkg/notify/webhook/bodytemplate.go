package webhook

import (
	"fmt"
	"strings"
	"text/template"
	"time"
)

// FormatTemplate posts a body the sink's own Go template lays out (the
// body key): a chat tool or service no preset covers, without a package
// per product.
const FormatTemplate = "template"

// Template defaults: a body at most 64 KiB (what most webhooks take),
// up to 10 waiting records in one body, no pacing.
const (
	defaultTemplateBytes = 64 << 10
	templateBatch        = 10
)

// BodyTemplate is a user's template and what it posts.
type BodyTemplate struct {
	// Text is the template: Go's text/template over a View (Sections,
	// each with Title, Detail, Access, Lines and the Record itself), with the
	// helpers json (a JSON string literal), markdown and code (escaped
	// for Markdown text and code spans), lines and include.
	Text string
	// ContentType is the body's media type; a JSON one is checked to be
	// valid JSON once rendered.
	ContentType string
	// MaxBytes bounds a body: change lines are left out (Omitted says how
	// many) until it fits.
	MaxBytes int
}

// newTemplatePreset parses a user's body template.
func newTemplatePreset(b BodyTemplate) (*preset, error) {
	if b.ContentType == "" {
		b.ContentType = "application/json"
	}
	if b.MaxBytes <= 0 {
		b.MaxBytes = defaultTemplateBytes
	}
	t := template.New("body").Option("missingkey=error")
	t.Funcs(templateFuncs(t, markdown))
	if _, err := t.Parse(b.Text); err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	return &preset{service: "this webhook", tmpl: t, limit: b.MaxBytes, measure: bodyBytes,
		maxBatch: templateBatch, interval: time.Nanosecond, contentType: b.ContentType}, nil
}

// templateFuncs are the helpers a template may call.
func templateFuncs(t *template.Template, e escaper) template.FuncMap {
	return template.FuncMap{
		"esc":      e.text,
		"code":     e.code,
		"markdown": markdown.text,
		"json":     jsonString,
		// lines splits a change's line from its hunks.
		"lines": func(s string) []string { return strings.Split(s, "\n") },
		// include renders a named template to a string, to be encoded.
		"include": func(name string, data any) (string, error) {
			var b strings.Builder
			err := t.ExecuteTemplate(&b, name, data)
			return b.String(), err
		},
	}
}
