package webhook

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Chat presets: format values that post a readable message to a chat
// service's incoming webhook, rather than the record itself.
const (
	FormatTeams      = "teams"
	FormatDiscord    = "discord"
	FormatMattermost = "mattermost"
	FormatGoogleChat = "googlechat"
)

// Formats lists every format value, for validation and messages.
var Formats = []string{FormatRecord, FormatCloudEvents, FormatTemplate, FormatTeams, FormatDiscord, FormatMattermost, FormatGoogleChat}

//go:embed presets/*.tmpl
var presetFiles embed.FS

// preset is a shipped template and what its service allows.
type preset struct {
	service string
	tmpl    *template.Template
	// limit is the most a message may measure, as measure counts it.
	limit   int
	measure func(body []byte) (int, error)
	// maxBatch is how many records one message may take: few enough that
	// their titles fit the limit even without their changes.
	maxBatch int
	// interval is the least time between two messages, under the
	// service's rate limit, so that a burst waits here rather than in
	// 429 answers.
	interval time.Duration
	// contentType is the body's media type; a JSON one is checked.
	contentType string
}

// presetSpecs are the services' limits: Teams ~28 KB a message
// (https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/connectors-using),
// Discord 2000 characters of content and 5 requests per 2 s a webhook,
// Mattermost 16383 characters (it splits longer posts), Google Chat 4096
// characters of text, well under its 32,000 bytes a message
// (https://developers.google.com/workspace/chat/create-messages), and 1
// message a second a space. A message over them is refused, and the
// refusal is final: render keeps every message within them, and
// recordSection cuts each part of a record to its share (chat.go).
var presetSpecs = map[string]struct {
	service, file string
	escape        escaper
	limit         int
	measure       func([]byte) (int, error)
	maxBatch      int
	interval      time.Duration
}{
	FormatTeams:      {"Microsoft Teams", "teams.tmpl", adaptiveCard, 28000, bodyBytes, 20, time.Second},
	FormatDiscord:    {"Discord", "discord.tmpl", markdown, 2000, textLength("content"), 5, 500 * time.Millisecond},
	FormatMattermost: {"Mattermost", "mattermost.tmpl", markdown, 16383, textLength("text"), 25, 100 * time.Millisecond},
	FormatGoogleChat: {"Google Chat", "googlechat.tmpl", googleChat, 4096, textLength("text"), 10, time.Second},
}

// newPreset parses format's template, or returns nil for a format that
// is not a chat preset.
func newPreset(format string) (*preset, error) {
	spec, ok := presetSpecs[format]
	if !ok {
		return nil, nil
	}
	t := template.New(spec.file).Option("missingkey=error")
	t.Funcs(templateFuncs(t, spec.escape))
	if _, err := t.ParseFS(presetFiles, "presets/"+spec.file, "presets/markdown.tmpl"); err != nil {
		return nil, fmt.Errorf("format %s: %w", format, err)
	}
	return &preset{service: spec.service, tmpl: t, limit: spec.limit, measure: spec.measure,
		maxBatch: spec.maxBatch, interval: spec.interval, contentType: "application/json"}, nil
}

// jsonString is s as a JSON string literal, so that a template writes
// what the cluster wrote into JSON safely.
func jsonString(s string) (string, error) {
	b, err := json.Marshal(s)
	return string(b), err
}

// execute renders v, checking that the template made one JSON value, and
// compacts it.
func (p *preset) execute(v View) ([]byte, error) {
	v.Service, v.Limit = p.service, p.limit
	var out bytes.Buffer
	if err := p.tmpl.Execute(&out, v); err != nil {
		return nil, fmt.Errorf("render %s message: %w", p.service, err)
	}
	if !strings.Contains(p.contentType, "json") {
		return out.Bytes(), nil
	}
	var body bytes.Buffer
	if err := json.Compact(&body, out.Bytes()); err != nil {
		return nil, fmt.Errorf("render %s message: the template made no valid JSON: %w", p.service, err)
	}
	return body.Bytes(), nil
}

// render lays sections out as messages within the service's limit: one,
// with as many change lines as fit (the message says how many were left
// out), or several when even the titles alone would not fit one.
func (p *preset) render(secs []Section) ([][]byte, error) {
	body, ok, err := p.fit(secs)
	switch {
	case err != nil:
		return nil, err
	case ok:
		return [][]byte{body}, nil
	case len(secs) == 1:
		return nil, fmt.Errorf("a %s message about %s does not fit the limit of %d even without its changes", p.service, secs[0].Title, p.limit)
	}
	half := len(secs) / 2
	first, err := p.render(secs[:half])
	if err != nil {
		return nil, err
	}
	rest, err := p.render(secs[half:])
	return append(first, rest...), err
}

// fit renders secs with as many of their change lines, in order, as fit
// the limit; ok is false when even none fit.
func (p *preset) fit(secs []Section) (body []byte, ok bool, err error) {
	try := func(n int) ([]byte, bool, error) {
		kept, omitted := keep(secs, n)
		body, err := p.execute(View{Sections: kept, Omitted: omitted})
		if err != nil {
			return nil, false, err
		}
		size, err := p.measure(body)
		return body, size <= p.limit, err
	}
	total, bound := lineBound(secs, p.limit)
	hi := bound + 1 // the fewest lines known not to fit
	if bound == total {
		if body, ok, err := try(total); err != nil || ok {
			return body, ok, err
		}
		hi = total
	}
	lo := -1 // the most lines known to fit (-1: none yet)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		b, fits, err := try(mid)
		if err != nil {
			return nil, false, err
		}
		if fits {
			lo, body = mid, b
		} else {
			hi = mid
		}
	}
	return body, lo >= 0, nil
}

// lineBound counts secs' lines (sentences of access and change lines, as
// keep counts them), and how many of them, in order,
// are no longer in all than limit: no message holds more, escaping only
// lengthens them. Searching below it renders a record of thousands of
// changes a few times at the service's size, not at its own.
func lineBound(secs []Section, limit int) (total, bound int) {
	size := 0
	for _, s := range secs {
		for _, lines := range [][]string{s.Access, s.Lines} {
			for _, line := range lines {
				total++
				if size += utf8.RuneCountInString(line); size <= limit {
					bound++
				}
			}
		}
	}
	return total, bound
}

// bodyBytes measures a message by its encoded size (Teams).
func bodyBytes(body []byte) (int, error) { return len(body), nil }

// textLength measures a message by the length of its text field in
// UTF-16 code units, which is at least its count of characters however
// a service counts them.
func textLength(field string) func([]byte) (int, error) {
	return func(body []byte) (int, error) {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			return 0, err
		}
		s, _ := m[field].(string)
		return len(utf16.Encode([]rune(s))), nil
	}
}
