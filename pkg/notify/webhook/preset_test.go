package webhook

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf16"

	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/notify/notifytest"
	"github.com/kubediff/kubediff/pkg/record"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

var at = record.Timestamp(time.Date(2026, 11, 22, 10, 4, 5, 123e6, time.UTC))

// chatRecords are a plain update, one whose cluster-written strings try
// every service's markup, a line diff, and an addition.
func chatRecords() []record.Change {
	hostile := "*bold* _it_ ~st~ `tick` <users/all> <@123> @everyone @channel [x](http://e.x) {{DATE(2017-02-14T06:08:39Z, SHORT)}} :smile: # h\x1b[31mred\r\u202eevil"
	cs := []record.Change{
		{Time: at, Type: "updated", APIVersion: "apps/v1", Kind: "Deployment", Resource: "deployments", Namespace: "prod", Name: "web", UID: "9a1b-2", ResourceVersion: "102",
			Manager: &record.Manager{Name: "kubectl-edit"},
			User:    &record.User{Name: "alice", Groups: []string{"dev", "system:authenticated"}},
			Changes: []record.FieldChange{
				{Op: "replace", Path: "/spec/replicas", Field: "spec.replicas", From: 1, To: 3},
				{Op: "replace", Path: "/spec/template/spec/containers/0/image", Field: "spec.template.spec.containers[0].image", From: "nginx:1.27", To: "nginx:1.28"},
				{Op: "remove", Path: "/spec/paused", Field: "spec.paused", From: false},
			}},
		{Time: at, Type: "updated", APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "prod", Name: "x_*y*_", UID: "5f0c-9", ResourceVersion: "103",
			Manager: &record.Manager{Name: "*evil* @here " + hostile},
			User:    &record.User{Name: "system:serviceaccount:prod:x", ServiceAccount: &record.ServiceAccount{Namespace: "prod", Name: "_x_ @channel <@123> \x1b[31m"}},
			Changes: []record.FieldChange{{Op: "replace", Path: "/data/k", Field: `data["` + hostile + `"]`, From: "plain", To: hostile}}},
		{Time: at, Type: "updated", APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "prod", Name: "proxy", UID: "5f0c-4", ResourceVersion: "105",
			Changes: []record.FieldChange{{Op: "replace", Path: "/data/nginx.conf", Field: `data["nginx.conf"]`, Lines: &record.LineDiff{
				FromLines: 33, ToLines: 33, Hunks: []record.Hunk{{FromLine: 16, FromCount: 3, ToLine: 16, ToCount: 3,
					Lines: []string{"  location /app5 {", "-   proxy_pass http://app5:8080; # ```", "+   proxy_pass http://app5:8081; # *x*", "  }"}}}}}}},
		{Time: at, Type: "added", APIVersion: "v1", Kind: "Secret", Resource: "secrets", Namespace: "prod", Name: "db",
			UID: "7c1d-1", ResourceVersion: "106", Changes: []record.FieldChange{{Op: "add", Path: "/data/password", Field: "data.password", To: "(redacted, 12 bytes)"}}},
		// A binding's sentences of access, one naming a user whose
		// name tries the services' markup.
		{Time: at, Type: "updated", APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding", Resource: "clusterrolebindings", Name: "ops",
			UID: "b-7", ResourceVersion: "107",
			Access: []string{"alice gains cluster-admin through ClusterRoleBinding ops", hostile + " gains cluster-admin through ClusterRoleBinding ops"},
			Changes: []record.FieldChange{
				{Op: "add", Path: "/subjects/1", Field: "subjects[1]", To: map[string]any{"kind": "User", "name": "alice"}},
				{Op: "add", Path: "/subjects/2", Field: "subjects[2]", To: map[string]any{"kind": "User", "name": hostile}},
			}},
	}
	for i := range cs {
		cs[i].ID = cs[i].StableID()
	}
	return cs
}

// hugeRecord changes 2000 fields, each to a 100 KB value.
func hugeRecord() record.Change {
	c := record.Change{Time: at, Type: "updated", APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "prod", Name: "huge", UID: "huge-1", ResourceVersion: "200"}
	big := strings.Repeat("x", 100<<10)
	for i := range 2000 {
		f := fmt.Sprintf("data.k%04d", i)
		c.Changes = append(c.Changes, record.FieldChange{Op: "replace", Path: "/" + f, Field: f, From: big, To: big + "y"})
	}
	c.ID = c.StableID()
	return c
}

// service is a local stand-in for a chat service's incoming webhook: it
// checks each request as the service would, and answers as it does.
type service struct {
	name, format string
	// check returns the message's texts, or why the service would refuse it.
	check func(body []byte) ([]string, error)

	mu       sync.Mutex
	texts    [][]string // per accepted message
	attempts []time.Time
}

func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.attempts = append(s.attempts, time.Now())
	n := len(s.attempts)
	s.mu.Unlock()
	texts, err := s.check(body)
	if err == nil && r.Header.Get("Content-Type") != "application/json" {
		err = fmt.Errorf("content type %q", r.Header.Get("Content-Type"))
	}
	if err != nil {
		http.Error(w, s.name+" refuses: "+err.Error(), http.StatusBadRequest)
		return
	}
	if !answer(s.format, n, w) {
		return
	}
	s.mu.Lock()
	s.texts = append(s.texts, texts)
	s.mu.Unlock()
}

func (s *service) snapshot() ([][]string, []time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]string(nil), s.texts...), append([]time.Time(nil), s.attempts...)
}

// units counts a text as the services do at most: UTF-16 code units.
func units(s string) int { return len(utf16.Encode([]rune(s))) }

// textField checks a {"<field>": "<text>"} message of at most limit
// characters.
func textField(body []byte, field string, limit int) (map[string]any, string, error) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, "", fmt.Errorf("not JSON: %w", err)
	}
	text, ok := m[field].(string)
	switch {
	case !ok || text == "":
		return nil, "", fmt.Errorf("%s: missing or empty", field)
	case units(text) > limit:
		return nil, "", fmt.Errorf("%s: %d characters, more than %d", field, units(text), limit)
	}
	return m, text, nil
}

func teamsCheck(body []byte) ([]string, error) {
	if len(body) > 28<<10 {
		return nil, fmt.Errorf("message of %d bytes: more than 28 KB", len(body))
	}
	var msg struct {
		Type        string `json:"type"`
		Attachments []struct {
			ContentType string `json:"contentType"`
			Content     struct {
				Schema  string `json:"$schema"`
				Type    string `json:"type"`
				Version string `json:"version"`
				Body    []struct {
					Type string  `json:"type"`
					Text *string `json:"text"`
				} `json:"body"`
			} `json:"content"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		return nil, err
	}
	if msg.Type != "message" || len(msg.Attachments) != 1 || msg.Attachments[0].ContentType != "application/vnd.microsoft.card.adaptive" {
		return nil, fmt.Errorf("not a message with one Adaptive Card: %.200s", body)
	}
	card := msg.Attachments[0].Content
	if card.Type != "AdaptiveCard" || card.Version != "1.4" || card.Schema != "http://adaptivecards.io/schemas/adaptive-card.json" || len(card.Body) == 0 {
		return nil, fmt.Errorf("card type %q version %q schema %q, %d elements", card.Type, card.Version, card.Schema, len(card.Body))
	}
	var texts []string
	for _, el := range card.Body {
		if el.Type != "TextBlock" || el.Text == nil || *el.Text == "" {
			return nil, fmt.Errorf("element %q without text", el.Type)
		}
		texts = append(texts, *el.Text)
	}
	return texts, nil
}

// services are the four presets' receivers.
func services() map[string]*service {
	return map[string]*service{
		FormatTeams: {name: "Teams", format: FormatTeams, check: teamsCheck},
		FormatDiscord: {name: "Discord", format: FormatDiscord, check: func(body []byte) ([]string, error) {
			m, text, err := textField(body, "content", 2000)
			if err == nil && fmt.Sprint(m["allowed_mentions"]) != "map[parse:[]]" {
				err = fmt.Errorf("allowed_mentions = %v: the message may ping", m["allowed_mentions"])
			}
			return []string{text}, err
		}},
		FormatMattermost: {name: "Mattermost", format: FormatMattermost, check: func(body []byte) ([]string, error) {
			_, text, err := textField(body, "text", 16383)
			return []string{text}, err
		}},
		FormatGoogleChat: {name: "Google Chat", format: FormatGoogleChat, check: func(body []byte) ([]string, error) {
			_, text, err := textField(body, "text", 4096)
			return []string{text}, err
		}},
	}
}

// answers are each service's answer to an accepted message: Teams
// Workflows 202, Discord 204 (after one 429 with Retry-After), Mattermost
// 200 "ok", Google Chat 200 with the message as JSON.
func answer(format string, attempt int, w http.ResponseWriter) bool {
	switch format {
	case FormatTeams:
		w.WriteHeader(http.StatusAccepted)
	case FormatDiscord:
		if attempt == 1 {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"message": "You are being rate limited.", "retry_after": 0.8, "global": false}`)
			return false
		}
		w.WriteHeader(http.StatusNoContent)
	case FormatMattermost:
		io.WriteString(w, "ok")
	case FormatGoogleChat:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"name": "spaces/AAAA/messages/m1", "text": "…"}`)
	}
	return true
}

// assertClean fails if a text holds a control character (but a line
// break) or markup the cluster wrote that the service would obey.
func assertClean(t *testing.T, format, text string) {
	t.Helper()
	for _, r := range text {
		if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)) {
			t.Errorf("%s: raw control character %U in %.300q", format, r, text)
		}
	}
	// Markdown and Google Chat show the cluster's strings in code, where
	// only Google Chat's <…> would be read.
	live, prose := []string{"<users/all>"}, text
	switch format {
	case FormatTeams:
		live = []string{"{{", "<at>"} // a card's functions and mentions
	case FormatDiscord, FormatMattermost:
		prose = outsideCode(t, format, text)
		live = []string{"@everyone", "@channel", "@here", "<@123>"}
	case FormatGoogleChat:
		prose = outsideCode(t, format, text)
	}
	for _, s := range live {
		if strings.Contains(prose, s) {
			t.Errorf("%s: the cluster's %q reached the message live: %.300q", format, s, text)
		}
	}
	for _, s := range []string{"*bold*", "_it_", "~st~", "[x](", "`tick`"} {
		if strings.Contains(prose, s) {
			t.Errorf("%s: the cluster's %q reached the message as markup: %.300q", format, s, prose)
		}
	}
	for _, line := range strings.Split(prose, "\n") {
		if strings.HasPrefix(strings.TrimLeft(line, " \u00a0"), "#") {
			t.Errorf("%s: a line of the cluster's reads as a heading: %.300q", format, line)
		}
	}
}

// outsideCode is text without its code blocks and inline code, failing
// if a backtick is left unpaired (the cluster's ending a span early).
func outsideCode(t *testing.T, format, text string) string {
	t.Helper()
	var out strings.Builder
	for i, block := range strings.Split(text, "```") {
		if i%2 == 1 {
			continue
		}
		for _, line := range strings.Split(block, "\n") {
			spans := strings.Split(strings.ReplaceAll(line, "\\`", ""), "`")
			if len(spans)%2 == 0 {
				t.Errorf("%s: unpaired backtick in %.300q", format, line)
			}
			for j := 0; j < len(spans); j += 2 {
				out.WriteString(spans[j])
			}
			out.WriteString("\n")
		}
	}
	return out.String()
}

func TestPresetPayloadsMatchGoldenFiles(t *testing.T) {
	var secs []Section
	for _, c := range chatRecords() {
		secs = append(secs, recordSection(c))
	}
	for _, format := range []string{FormatTeams, FormatDiscord, FormatMattermost, FormatGoogleChat} {
		t.Run(format, func(t *testing.T) {
			p, err := newPreset(format)
			if err != nil {
				t.Fatal(err)
			}
			bodies, err := p.render(secs)
			if err != nil || len(bodies) != 1 {
				t.Fatalf("%d messages, %v; want one", len(bodies), err)
			}
			var got bytes.Buffer
			if err := json.Indent(&got, bodies[0], "", "  "); err != nil {
				t.Fatal(err)
			}
			got.WriteString("\n")
			notifytest.Golden(t, format+".json", got.Bytes(), *update)
		})
	}
}

// Each preset's messages are accepted by a receiver checking the
// service's rules, a record with huge values included, records waiting
// together go as one message, and Discord's 429 is waited out as told.
func TestPresetsAreAcceptedByTheirServices(t *testing.T) {
	for format, svc := range services() {
		t.Run(format, func(t *testing.T) {
			sink := chatSinkTo(t, svc, format)
			records := append(chatRecords(), hugeRecord())
			var logs strings.Builder
			q := notifytest.Deliver(t, sink, records, fast, &logs)
			if s := q.Stats(); s.Delivered != uint64(len(records)) || s.Failed != 0 {
				t.Fatalf("stats %+v, want all %d delivered; logs:\n%s", s, len(records), logs.String())
			}
			messages, attempts := svc.snapshot()
			if len(messages) == 0 || len(messages) >= len(records) {
				t.Errorf("%d messages for %d waiting records: want them batched", len(messages), len(records))
			}
			all := ""
			for _, texts := range messages {
				for _, text := range texts {
					assertClean(t, format, text)
					all += text + "\n"
				}
			}
			if !strings.Contains(all, "more changes not shown") || !strings.Contains(all, "huge") {
				t.Errorf("the huge record's message does not say it was cut:\n%.3000s", all)
			}
			if format == FormatDiscord && attempts[1].Sub(attempts[0]) < time.Second {
				t.Errorf("retried %s after a 429 with Retry-After: 1", attempts[1].Sub(attempts[0]))
			}
		})
	}
}

func TestRetryAfterFromHeaderOrDiscordBody(t *testing.T) {
	for _, tc := range []struct {
		header, body string
		want         time.Duration
	}{
		{"2", "", 2 * time.Second},
		{"0.25", "", 250 * time.Millisecond},
		{"", `{"retry_after": 0.5, "global": false}`, 500 * time.Millisecond},
		{"NaN", "", 0},
		{"", "busy", 0},
	} {
		resp := &http.Response{StatusCode: http.StatusTooManyRequests, Status: "429 Too Many Requests", Header: http.Header{}}
		if tc.header != "" {
			resp.Header.Set("Retry-After", tc.header)
		}
		_, wait := notify.IsTransient(classify(resp, "http://x", []byte(tc.body)))
		if wait != tc.want {
			t.Errorf("Retry-After %q, body %q: waits %s, want %s", tc.header, tc.body, wait, tc.want)
		}
	}
}

func TestConfigAcceptsPresetsAndBuildsBatchingSinks(t *testing.T) {
	for _, format := range Formats {
		c := &Config{URL: "https://chat.example/hook", Format: format}
		if format == FormatTemplate {
			c.Body = `{"text": {{json (index .Sections 0).Title}}}`
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("format %s: %v", format, err)
		}
		n, err := c.Build(slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		_, batches := n.(notify.BatchNotifier)
		if chat := format != FormatRecord && format != FormatCloudEvents; batches != chat {
			t.Errorf("format %s: batching %v, want %v", format, batches, chat)
		}
	}
	if err := (&Config{URL: "https://x", Format: "slack"}).Validate(); err == nil || !strings.Contains(err.Error(), "googlechat") {
		t.Errorf("format slack: %v, want an error listing the formats", err)
	}
}

// A role's sentences of access may pass a service's limit on their own
// (ten of 300 characters for Discord's 2000): the message keeps the first,
// most dangerous ones, and says how many it left out.
func TestPresetsKeepTheFirstSentencesOfAccessThatFit(t *testing.T) {
	c := record.Change{Time: at, Type: "added", APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Resource: "clusterroles", Name: "wide", UID: "w-1", ResourceVersion: "9"}
	for i := range 10 {
		c.Access = append(c.Access, fmt.Sprintf("ClusterRole wide now grants get on r%d-%s in every namespace", i, strings.Repeat("x", 250)))
	}
	c.Access = append(c.Access, "and 7 more")
	p, err := newPreset(FormatDiscord)
	if err != nil {
		t.Fatal(err)
	}
	bodies, err := p.render([]Section{recordSection(c)})
	if err != nil || len(bodies) != 1 {
		t.Fatalf("%d messages, %v; want one", len(bodies), err)
	}
	_, text, err := textField(bodies[0], "content", 2000)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "get on r0") || strings.Contains(text, "and 7 more") || !strings.Contains(text, "more changes not shown") {
		t.Errorf("the message does not keep the first sentences and say the rest were left out:\n%s", text)
	}
}

// A deletion by its namespace's deletion says so in a chat message's
// detail, as text output does.
func TestChatSectionSaysADeletionWentWithItsNamespace(t *testing.T) {
	c := record.Change{Time: at, Type: record.Deleted, APIVersion: "v1", Kind: "Secret", Resource: "secrets", Namespace: "shop", Name: "db",
		Manager: &record.Manager{Name: "kubectl"}, NamespaceDeleting: true}
	if got, want := recordSection(c).Detail, "v1 by kubectl (with its namespace)"; got != want {
		t.Errorf("detail %q, want %q", got, want)
	}
}

// TestPresetsPostAlertsOverTheirLimitsCut: a rule's summary of 12,937
// characters of markup, a user name and rules as long, and an Event's
// message of 5,000, alone and in a burst, are accepted by each
// service's receiver (which refuses what the service refuses), and the
// message says what was cut.
func TestPresetsPostAlertsOverTheirLimitsCut(t *testing.T) {
	long := strings.Repeat("*b* <x> `c` {{ ", 12937/15) + "xx"
	alert := chatRecords()[0]
	alert.Rules, alert.Severity, alert.Summary = []string{"replicas-to-zero", strings.Repeat("r", 400)}, "critical", long
	alert.User = &record.User{Name: strings.Repeat("u_", 2500)}
	event := chatRecords()[0]
	event.Type, event.Changes, event.Summary = record.EventRecord, nil, long
	event.Event = &record.Event{Type: "Warning", Reason: "BackOff", Message: strings.Repeat("<*>", 1700), ReportingController: "kubelet"}
	records := []record.Change{alert, event}
	for range 4 {
		records = append(records, alert, event)
	}
	for format, svc := range services() {
		t.Run(format, func(t *testing.T) {
			sink := chatSinkTo(t, svc, format)
			var logs strings.Builder
			q := notifytest.Deliver(t, sink, records, fast, &logs)
			if s := q.Stats(); s.Delivered != uint64(len(records)) || s.Failed != 0 {
				t.Fatalf("stats %+v, want all %d delivered; logs:\n%s", s, len(records), logs.String())
			}
			messages, _ := svc.snapshot()
			all := ""
			for _, texts := range messages {
				all += strings.Join(texts, "\n")
			}
			// Teams escapes the note's parentheses.
			if !strings.Contains(all, "cut: ") || !strings.Contains(all, " characters more") || !strings.Contains(all, "*b*") && !strings.Contains(all, `\*b\*`) {
				t.Errorf("the messages do not say what was cut:\n%.3000s", all)
			}
		})
	}
}

// chatSinkTo is a chat sink of format posting to svc, served on loopback
// until the test ends.
func chatSinkTo(t *testing.T, svc http.Handler, format string) *Chat {
	t.Helper()
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	sink, err := NewChat(Options{URL: srv.URL + "/hook", Format: format})
	if err != nil {
		t.Fatal(err)
	}
	return sink
}
