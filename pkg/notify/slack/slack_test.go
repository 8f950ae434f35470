package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/notify/notifytest"
	"github.com/kubediff/kubediff/pkg/record"
)

const token = "xoxb-canary-token-4d5e6f"

// post is one chat.postMessage call as the server saw it.
type post struct {
	at      time.Time
	channel string
	text    string
	blocks  []map[string]any
	auth    string
}

// slackAPI speaks enough of Slack's Web API for chat.postMessage: form or
// JSON bodies, bearer auth, ok/error answers and 429 with Retry-After.
type slackAPI struct {
	mu      sync.Mutex
	posts   []post
	attempt int
	// limit answers 429 with this Retry-After on the given attempts.
	limit map[int]string
	// refuseFirst attempts are answered with refuse: an error
	// (invalid_auth) or, with a number, that HTTP status from a proxy.
	refuseFirst int
	refuse      string
	// refused are the answers to messages over Slack's limits.
	refused []string
}

// limitsExceeded answers a message over Slack's limits as Slack does
// (https://api.slack.com/reference/block-kit/blocks: 50 blocks, a
// section's text 3000 characters, a header's 150;
// https://api.slack.com/changelog/2018-04-truncating-really-long-messages:
// text over 40,000 characters is cut by Slack, refused here to be
// strict; msg_blocks_too_long for more than about 12,000 characters of
// text in all blocks, which Slack does not document but answers, as
// https://github.com/slackapi/bolt-js/issues/2509 reports), or "".
func limitsExceeded(p post) string {
	if units(p.text) > 40000 {
		return "msg_too_long"
	}
	if len(p.blocks) > 50 {
		return "invalid_blocks"
	}
	total := 0
	for _, b := range p.blocks {
		text, _ := b["text"].(map[string]any)
		s, _ := text["text"].(string)
		total += units(s)
		if b["type"] == "section" && units(s) > 3000 || b["type"] == "header" && units(s) > 150 {
			return "invalid_blocks"
		}
	}
	if total > 12000 {
		return "msg_blocks_too_long"
	}
	return ""
}

// units counts a text as Slack may: UTF-16 code units, at least its
// characters.
func units(s string) int { return len(utf16.Encode([]rune(s))) }

func (s *slackAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/chat.postMessage") {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	s.attempt++
	if s.attempt <= s.refuseFirst {
		s.mu.Unlock()
		if code, err := strconv.Atoi(s.refuse); err == nil {
			http.Error(w, "refused", code)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"ok":false,"error":%q}`, s.refuse)
		return
	}
	if after, ok := s.limit[s.attempt]; ok {
		s.posts = append(s.posts, post{at: time.Now()}) // the attempt, even if refused
		s.mu.Unlock()
		w.Header().Set("Retry-After", after)
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	s.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(body))
	p := post{at: time.Now(), channel: form.Get("channel"), text: form.Get("text"), auth: r.Header.Get("Authorization")}
	if p.auth == "" {
		p.auth = "Bearer " + form.Get("token")
	}
	_ = json.Unmarshal([]byte(form.Get("blocks")), &p.blocks)
	w.Header().Set("Content-Type", "application/json")
	if refusal := limitsExceeded(p); refusal != "" {
		s.mu.Lock()
		s.refused = append(s.refused, refusal)
		s.mu.Unlock()
		fmt.Fprintf(w, `{"ok":false,"error":%q}`, refusal)
		return
	}
	s.mu.Lock()
	s.posts = append(s.posts, p)
	s.mu.Unlock()
	if p.channel == "#missing" {
		fmt.Fprint(w, `{"ok":false,"error":"channel_not_found"}`)
		return
	}
	fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":"1700000000.000100"}`, p.channel)
}

func (s *slackAPI) delivered() []post {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []post
	for _, p := range s.posts {
		if p.channel != "" {
			out = append(out, p)
		}
	}
	return out
}

func start(t *testing.T, api *slackAPI) string {
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv.URL + "/api/"
}

func update(name string, n int) record.Change {
	c := record.Change{Type: "updated", APIVersion: "apps/v1", Kind: "Deployment", Resource: "deployments", Namespace: "prod", Name: name,
		Manager: &record.Manager{Name: "kubectl-set"}}
	for i := range n {
		field := fmt.Sprintf("spec.template.spec.containers[name=c%d].image", i)
		c.Changes = append(c.Changes, record.FieldChange{Op: "replace", Field: field, Path: "/x", From: "nginx:1.27", To: "nginx:1.28"})
	}
	return c
}

func deliver(t *testing.T, sink notify.Notifier, records []record.Change) notify.Queue {
	return notifytest.Deliver(t, sink, records, notify.Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}, nil)
}

func allText(p post) string {
	b, _ := json.Marshal(p.blocks)
	return string(b)
}

func TestMessageNamesObjectFieldAndManager(t *testing.T) {
	api := &slackAPI{}
	sink, err := New(Options{Token: token, Channel: "#changes", APIURL: start(t, api)})
	if err != nil {
		t.Fatal(err)
	}
	deliver(t, sink, []record.Change{update("web", 1)})
	posts := api.delivered()
	if len(posts) != 1 {
		t.Fatalf("%d posts", len(posts))
	}
	p := posts[0]
	if p.channel != "#changes" || p.auth != "Bearer "+token {
		t.Errorf("channel %q, auth %q", p.channel, p.auth)
	}
	if p.blocks[0]["type"] != "header" {
		t.Errorf("first block is %v, want a header", p.blocks[0]["type"])
	}
	text := allText(p)
	for _, want := range []string{"updated Deployment prod/web", "kubectl-set", "spec.template.spec.containers[name=c0].image", "nginx:1.27", "nginx:1.28"} {
		if !strings.Contains(text, want) {
			t.Errorf("message lacks %q: %s", want, text)
		}
	}
	if !strings.Contains(p.text, "updated Deployment prod/web") {
		t.Errorf("fallback text = %q", p.text)
	}
}

// A record whose user is known names the user, with the field manager
// beside it; a ServiceAccount by its namespace and name; the release
// its object belongs to follows.
func TestMessageNamesTheUser(t *testing.T) {
	api := &slackAPI{}
	sink, err := New(Options{Token: token, Channel: "#changes", APIURL: start(t, api)})
	if err != nil {
		t.Fatal(err)
	}
	byAlice, bySA := update("web", 1), update("api", 1)
	byAlice.User = &record.User{Name: "alice", Groups: []string{"dev"}}
	bySA.User = &record.User{Name: "system:serviceaccount:ci:deployer", ServiceAccount: &record.ServiceAccount{Namespace: "ci", Name: "deployer"}}
	bySA.Manager = nil
	byHelm := update("shop", 1)
	byHelm.Manager = &record.Manager{Name: "helm"}
	byHelm.Release = &record.Release{Tool: "helm", Namespace: "prod", Name: "shop", Revision: 7, Chart: "shop-1.4.2"}
	deliver(t, sink, []record.Change{byAlice, bySA, byHelm})
	text := ""
	for _, p := range api.delivered() {
		text += allText(p)
	}
	for _, want := range []string{"by *alice* (kubectl-set)", "by *ServiceAccount ci/deployer*", "by *helm* (release shop rev 7, chart shop-1.4.2)"} {
		if !strings.Contains(text, want) {
			t.Errorf("messages lack %q: %s", want, text)
		}
	}
}

// A deletion by its namespace's deletion, and a change found only on
// relisting, say so, as text output does.
func TestMessageSaysHowTheChangeWasSeen(t *testing.T) {
	api := &slackAPI{}
	sink, err := New(Options{Token: token, Channel: "#changes", APIURL: start(t, api)})
	if err != nil {
		t.Fatal(err)
	}
	withNamespace, afterGap := update("web", 1), update("api", 1)
	withNamespace.Type, withNamespace.NamespaceDeleting = record.Deleted, true
	afterGap.AfterGap = true
	deliver(t, sink, []record.Change{withNamespace, afterGap})
	text := ""
	for _, p := range api.delivered() {
		text += allText(p)
	}
	for _, want := range []string{"by *kubectl-set* (with its namespace)", "by *kubectl-set* (seen after a gap)"} {
		if !strings.Contains(text, want) {
			t.Errorf("messages lack %q: %s", want, text)
		}
	}
}

// An RBAC record says what access it gave or took away, each sentence on
// its own line before the changed fields; ten long sentences and many
// changes still fit one section.
func TestMessageSaysTheAccessGainedFirst(t *testing.T) {
	api := &slackAPI{}
	sink, err := New(Options{Token: token, Channel: "#changes", APIURL: start(t, api)})
	if err != nil {
		t.Fatal(err)
	}
	binding := record.Change{Type: "added", APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding", Resource: "clusterrolebindings", Name: "x",
		Access: []string{"alice gains cluster-admin through ClusterRoleBinding x", "group <!channel> gains cluster-admin through ClusterRoleBinding x"}}
	wide := update("wide", 200)
	for i := range 10 {
		wide.Access = append(wide.Access, fmt.Sprintf("ClusterRole wide now grants get on r%d-%s", i, strings.Repeat("x", 400)))
	}
	deliver(t, sink, []record.Change{binding})
	deliver(t, sink, []record.Change{wide})
	posts := api.delivered()
	if len(posts) != 2 {
		t.Fatalf("%d posts", len(posts))
	}
	text := allText(posts[0])
	for _, want := range []string{`\n» alice gains cluster-admin through ClusterRoleBinding x\n`, `» group \u0026lt;!channel\u0026gt; gains`} {
		if !strings.Contains(text, want) {
			t.Errorf("message lacks %q: %s", want, text)
		}
	}
	for _, b := range posts[1].blocks {
		section, _ := b["text"].(map[string]any)
		if s, _ := section["text"].(string); len(s) > maxSectionText {
			t.Errorf("a section of %d characters, more than Slack's %d", len(s), maxSectionText)
		}
	}
	if text := allText(posts[1]); !strings.Contains(text, "» ClusterRole wide now grants get on r0-") || !strings.Contains(text, "more changes") {
		t.Errorf("the wide role's message does not start with its first sentence and say what it left out: %.600s", text)
	}
}

// A record the rules named leads with its severity and rules, in the
// header a notification shows, and carries the rule's summary.
func TestMessageNamesTheRulesMatched(t *testing.T) {
	api := &slackAPI{}
	sink, err := New(Options{Token: token, Channel: "#changes", APIURL: start(t, api)})
	if err != nil {
		t.Fatal(err)
	}
	c := update("web", 1)
	c.Rules, c.Severity, c.Summary = []string{"replicas-to-zero"}, "critical", "Deployment prod/web scaled to zero"
	deliver(t, sink, []record.Change{c})
	text := ""
	for _, p := range api.delivered() {
		text += allText(p)
	}
	for _, want := range []string{"[critical: replicas-to-zero] updated Deployment", "_Deployment prod/web scaled to zero_"} {
		if !strings.Contains(text, want) {
			t.Errorf("message lacks %q: %s", want, text)
		}
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	api := &slackAPI{limit: map[int]string{1: "2"}}
	sink, _ := New(Options{Token: token, Channel: "#changes", APIURL: start(t, api)})
	deliver(t, sink, []record.Change{update("web", 1)})
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.posts) != 2 {
		t.Fatalf("%d attempts, want 2", len(api.posts))
	}
	if gap := api.posts[1].at.Sub(api.posts[0].at); gap < 2*time.Second {
		t.Fatalf("next post %s after a 429 with Retry-After: 2", gap)
	}
}

func TestBurstIsBatchedAndPostedAtMostOncePerSecond(t *testing.T) {
	api := &slackAPI{}
	sink, _ := New(Options{Token: token, Channel: "#changes", APIURL: start(t, api)})
	var records []record.Change
	for i := range 60 {
		records = append(records, update(fmt.Sprintf("app-%d", i), 1))
	}
	q := deliver(t, sink, records)
	posts := api.delivered()
	if q.Stats().Delivered != 60 {
		t.Fatalf("delivered %d of 60", q.Stats().Delivered)
	}
	if len(posts) >= 60 || len(posts) < 3 {
		t.Fatalf("%d messages for 60 records: want them batched (at most %d a message)", len(posts), maxBatch)
	}
	for i := 1; i < len(posts); i++ {
		if gap := posts[i].at.Sub(posts[i-1].at); gap < 900*time.Millisecond {
			t.Fatalf("messages %d and %d were %s apart: more than one per second", i-1, i, gap)
		}
	}
	seen := 0
	for _, p := range posts {
		if len(p.blocks) > maxBlocks {
			t.Fatalf("message has %d blocks, Slack allows %d", len(p.blocks), maxBlocks)
		}
		seen += strings.Count(allText(p), "updated Deployment prod/app-")
	}
	if seen != 60 {
		t.Fatalf("messages name %d of the 60 records", seen)
	}
}

func TestHugeChangeListIsTruncatedWithinLimits(t *testing.T) {
	blocks, _ := Blocks([]record.Change{update("big", 500)})
	for _, text := range sections(t, blocks) {
		if len(text) > maxSectionText {
			t.Fatalf("section has %d characters, Slack allows %d", len(text), maxSectionText)
		}
		if !strings.Contains(text, "more changes") {
			t.Fatalf("truncated section does not say how many changes were left out:\n%s", text)
		}
	}
}

// sections returns the texts of the section blocks.
func sections(t *testing.T, blocks any) []string {
	t.Helper()
	raw, _ := json.Marshal(blocks)
	var parsed []map[string]any
	if err := json.Unmarshal(raw, &parsed); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, b := range parsed {
		if b["type"] == "section" {
			out = append(out, b["text"].(map[string]any)["text"].(string))
		}
	}
	return out
}

func TestChangedLinesShowInACodeBlockWithinLimits(t *testing.T) {
	nginx := record.FieldChange{Op: record.OpReplace, Path: "/data/nginx.conf", Field: `data["nginx.conf"]`, From: "server {\n…", To: "server {\n…",
		Lines: &record.LineDiff{FromLines: 33, ToLines: 33, Hunks: []record.Hunk{{FromLine: 16, FromCount: 3, ToLine: 16, ToCount: 3, Lines: []string{
			"    location /app5 {", "-     proxy_pass http://app5:8080;", "+     proxy_pass http://app5:8081;", "    } # <b>```",
		}}}}}
	var many []string
	for i := range 500 {
		many = append(many, fmt.Sprintf("+ added line %d of a long rewrite", i))
	}
	big := 1 << 20
	rewrite := record.FieldChange{Op: record.OpReplace, Path: "/data/big", Field: "data.big", Truncated: true, FromBytes: &big, ToBytes: &big,
		Lines: &record.LineDiff{FromLines: 30000, ToLines: 30000, Truncated: true, Hunks: []record.Hunk{{FromLine: 1, ToLine: 1, ToCount: 500, Lines: many}}}}
	for _, tt := range []struct {
		name    string
		changes []record.FieldChange
		want    []string
	}{
		{"one config file", []record.FieldChange{nginx}, []string{
			"`data[\"nginx.conf\"]`: 33 lines → 33 lines\n```@@ -16,3 +16,3 @@\n    location /app5 {\n-     proxy_pass http://app5:8080;\n+     proxy_pass http://app5:8081;\n    } # &lt;b&gt;'''```",
		}},
		{"a rewrite, cut, then the config file and more", append([]record.FieldChange{rewrite, nginx}, update("x", 40).Changes...), []string{
			"`data.big`: 30000 lines → 30000 lines (1.0 MiB → 1.0 MiB)\n```@@ -0,0 +1,500 @@\n+ added line 0",
			"\n… more changed lines not shown```",
			"+     proxy_pass http://app5:8081;",
			"more changes",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := update("proxy", 0)
			c.Changes = tt.changes
			blocks, _ := Blocks([]record.Change{c})
			texts := sections(t, blocks)
			if len(texts) != 1 {
				t.Fatalf("%d sections", len(texts))
			}
			if len(texts[0]) > maxSectionText {
				t.Errorf("section has %d characters, Slack allows %d", len(texts[0]), maxSectionText)
			}
			if strings.Count(texts[0], "```")%2 != 0 {
				t.Errorf("a code block is not closed:\n%s", texts[0])
			}
			for _, want := range tt.want {
				if !strings.Contains(texts[0], want) {
					t.Errorf("section lacks %q:\n%s", want, texts[0])
				}
			}
		})
	}
}

// Secrets in errors and logs: pkg/notify/sinks TestNoSinkLeaksASecret.
func TestPermanentErrorIsNotRetried(t *testing.T) {
	api := &slackAPI{}
	sink, _ := New(Options{Token: token, Channel: "#missing", APIURL: start(t, api)})
	err := sink.Notify(context.Background(), update("web", 1))
	if err == nil || !strings.Contains(err.Error(), "channel_not_found") {
		t.Fatalf("err = %v", err)
	}
	if ok, _ := notify.IsTransient(err); ok {
		t.Fatalf("channel_not_found must not be retried")
	}
	down, _ := New(Options{Token: token, Channel: "#c", APIURL: "http://127.0.0.1:1/api/"})
	if ok, _ := notify.IsTransient(down.Notify(context.Background(), update("web", 1))); !ok {
		t.Fatal("a refused connection must be retried")
	}
}

// TestRefusedTokenLosesNothing: a token Slack refuses (revoked, expired,
// or a proxy answering 401 or 403) is an operator's to fix: the records
// wait and are posted once it works, with one log line when the sink
// starts failing, naming Slack's reason, and one when it heals.
func TestRefusedTokenLosesNothing(t *testing.T) {
	for _, refuse := range []string{"invalid_auth", "token_revoked", "token_expired", "not_authed", "account_inactive", "missing_scope", "401", "403"} {
		t.Run(refuse, func(t *testing.T) {
			api := &slackAPI{refuseFirst: 3, refuse: refuse}
			sink, _ := New(Options{Token: token, Channel: "#changes", APIURL: start(t, api), Interval: time.Millisecond})
			var logs strings.Builder
			q := notifytest.Deliver(t, sink, []record.Change{update("web", 1), update("api", 1)}, notify.Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}, &logs)
			if posts := api.delivered(); len(posts) == 0 || q.Stats().Delivered != 2 || q.Stats().Failed != 0 {
				t.Fatalf("%d messages posted, stats %+v: want both records delivered once the token works; logs:\n%s", len(posts), q.Stats(), logs.String())
			}
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			if len(lines) != 2 || !strings.Contains(lines[0], "sink failing") || !strings.Contains(lines[0], "credentials") ||
				!strings.Contains(lines[0], refuse) || !strings.Contains(lines[1], "sink delivering again") {
				t.Fatalf("want one line naming %s when the sink starts failing, one when it heals:\n%s", refuse, logs.String())
			}
			if strings.Contains(logs.String(), token) {
				t.Fatalf("the token is in the logs:\n%s", logs.String())
			}
		})
	}
}

// TestRolloutFoldsIntoOneLine: a person's change posts at once and in
// full; the controllers' burst under the same Deployment posts as one
// counted section once it settles (here: at Close, as at shutdown), and
// a lone owned record in full.
func TestRolloutFoldsIntoOneLine(t *testing.T) {
	api := &slackAPI{}
	sink, _ := New(Options{Token: token, Channel: "#changes", APIURL: start(t, api), Interval: time.Millisecond})
	folding := NewFolding(sink, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	owned := func(typ, kind, name, ownerKind, ownerName string) record.Change {
		return record.Change{Type: typ, APIVersion: "v1", Kind: kind, Namespace: "prod", Name: name, Owner: &record.Owner{Kind: ownerKind, Name: ownerName}}
	}
	records := []record.Change{update("web", 1), owned("added", "ReplicaSet", "web-new", "Deployment", "web"),
		owned("updated", "ReplicaSet", "web-old", "Deployment", "web")}
	for i := range 10 {
		records = append(records, owned("added", "Pod", fmt.Sprintf("web-new-%d", i), "ReplicaSet", "web-new"),
			owned("deleted", "Pod", fmt.Sprintf("web-old-%d", i), "ReplicaSet", "web-old"))
	}
	records = append(records, owned("updated", "Pod", "api-1", "ReplicaSet", "api-5d"))
	if err := folding.NotifyBatch(ctx, records); err != nil {
		t.Fatal(err)
	}
	if posts := api.delivered(); len(posts) != 1 || !strings.Contains(allText(posts[0]), "image") {
		t.Fatalf("want the Deployment's change posted at once, alone; got %d messages", len(posts))
	}
	if err := folding.Close(); err != nil {
		t.Fatal(err)
	}
	posts := api.delivered()
	if len(posts) != 2 {
		t.Fatalf("want the settled bursts in one more message, got %d messages", len(posts))
	}
	sections := 0
	for _, b := range posts[1].blocks {
		if b["type"] == "section" {
			sections++
		}
	}
	text := allText(posts[1])
	if sections != 2 || !strings.Contains(text, "owned Deployment prod/web") ||
		!strings.Contains(text, "ReplicaSet 1 added, 1 updated; Pod 10 added, 10 deleted") || !strings.Contains(text, "updated Pod prod/api-1") {
		t.Fatalf("want one folded section for the rollout and the lone Pod update in full; got %d sections: %s", sections, text)
	}
}

// TestNoAlertIsLostToSlacksLimits: a rule's summary of 12,937
// characters, a user name and rules as long, an Event message of 5,000
// escaped characters, and a burst of such records are all posted,
// within Slack's limits (the server refuses more, as Slack does), each
// saying what was cut, rather than refused and lost.
func TestNoAlertIsLostToSlacksLimits(t *testing.T) {
	long := strings.Repeat("Ab<&> ", 12937/6) + "x"
	alert := update("web", 3)
	alert.Rules, alert.Severity, alert.Summary = []string{"replicas-to-zero", strings.Repeat("r", 400)}, "critical", long
	alert.User = &record.User{Name: strings.Repeat("u", 5000)}
	event := update("web", 0)
	event.Type = record.EventRecord
	event.Event = &record.Event{Type: "Warning", Reason: "BackOff", Message: strings.Repeat("<", 5000), ReportingController: "kubelet"}
	event.Summary = long
	for _, tt := range []struct {
		name    string
		records []record.Change
	}{
		{"one record", []record.Change{alert}},
		{"one event", []record.Change{event}},
		{"a burst", []record.Change{alert, event, alert, event, alert, event, alert, event, alert, event}},
		{"a burst of long change lists", []record.Change{update("a", 200), update("b", 200), update("c", 200), update("d", 200), update("e", 200), alert}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api := &slackAPI{}
			sink, _ := New(Options{Token: token, Channel: "#changes", APIURL: start(t, api), Interval: time.Millisecond})
			var logs strings.Builder
			q := notifytest.Deliver(t, sink, tt.records, notify.Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}, &logs)
			if s := q.Stats(); s.Delivered != uint64(len(tt.records)) || s.Failed != 0 {
				t.Fatalf("stats %+v, want all %d delivered; Slack refused %v; logs:\n%s", s, len(tt.records), api.refused, logs.String())
			}
			text := ""
			for _, p := range api.delivered() {
				text += allText(p)
			}
			if !strings.Contains(text, "_Ab") || !strings.Contains(text, " (cut: ") || !strings.Contains(text, " characters more)") {
				t.Errorf("the messages do not show the summary's start and say how much was cut: %.1000s", text)
			}
		})
	}
}

// fit keeps what fits, escaped, and counts what it left out.
func TestFitCutsAndCountsWhatItLeftOut(t *testing.T) {
	for _, tt := range []struct {
		s, want string
		max     int
	}{
		{"short <b>", "short &lt;b&gt;", 100},
		{strings.Repeat("<", 100), strings.Repeat("&lt;", 1) + "… (cut: 99 characters more)", 36},
		{"héllo wörld " + strings.Repeat("x", 40), "héllo … (cut: 46 characters more)", 36},
	} {
		got := fit(tt.s, tt.max, escape, bytesLen)
		if got != tt.want || len(got) > tt.max {
			t.Errorf("fit(%q, %d) = %q (%d bytes), want %q", tt.s, tt.max, got, len(got), tt.want)
		}
	}
}
