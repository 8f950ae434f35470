package e2e

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kubechange "github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/state"
)

var deploymentsResource = kubechange.Resource{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
	Kind: "Deployment", Namespaced: true, Singular: "deployment", ShortNames: []string{"deploy"}}

// userChange is one kept change of shop/NAME's spec.replicas or image,
// minutesAgo, made by user with manager (user nil: no identity source
// said).
type userChange struct {
	minutesAgo int
	name       string
	field      string
	from, to   any
	manager    string
	user       *record.User
}

// stateDirWithUsers writes a state dir as kubediff's keep stage does, its
// records carrying the user an identity source named, as the join sets
// them: what `history`, the API and the page read.
func stateDirWithUsers(t *testing.T, changes []userChange) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	store, err := state.Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.SetHistory(history.Policy{Retention: 24 * time.Hour, MaxBytes: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	if err := store.KeepTypes([]kubechange.Resource{deploymentsResource}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i, uc := range changes {
		path := "/" + strings.ReplaceAll(uc.field, ".", "/")
		object := func(v any) *unstructured.Unstructured {
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}}
			u.SetNamespace("shop")
			u.SetName(uc.name)
			_ = unstructured.SetNestedField(u.Object, v, strings.Split(uc.field, ".")...)
			return u
		}
		c := record.Change{Time: record.Timestamp(now.Add(-time.Duration(uc.minutesAgo) * time.Minute)), Type: record.Updated,
			APIVersion: "apps/v1", Kind: "Deployment", Resource: "deployments", Namespace: "shop", Name: uc.name, UID: "uid-" + uc.name,
			ResourceVersion: fmt.Sprint(100 + i), Changed: uc.field,
			Changes: []record.FieldChange{{Op: record.OpReplace, Path: path, Field: uc.field, From: uc.from, To: uc.to}},
			Manager: &record.Manager{Name: uc.manager, Operation: "Update"}, User: uc.user}
		c.ID = c.StableID()
		store.Keep(journal.Entry{Change: c, Resource: deploymentsResource, Old: object(uc.from), New: object(uc.to)})
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestHistoryFiltersOnTheUser: `kubediff history --user` lists exactly
// one user's changes (a person by name, a ServiceAccount by the name the
// API server gives it), text output names who made each, and the page,
// in Chromium, shows the user on every record and filters on one.
func TestHistoryFiltersOnTheUser(t *testing.T) {
	alice := &record.User{Name: "alice", Groups: []string{"dev", "system:authenticated"}}
	deployer := &record.User{Name: "system:serviceaccount:ci:deployer", Groups: []string{"system:serviceaccounts"},
		ServiceAccount: &record.ServiceAccount{Namespace: "ci", Name: "deployer"}}
	dir := stateDirWithUsers(t, []userChange{
		{30, "web", "spec.replicas", int64(1), int64(5), "kubectl", alice},
		{25, "web", "spec.template.spec.containers", "nginx:1.27", "nginx:1.28", "kubectl-set", deployer},
		{20, "api", "spec.replicas", int64(2), int64(3), "kubectl", nil},
		{15, "web", "spec.replicas", int64(5), int64(2), "kubectl", alice},
		{10, "api", "spec.replicas", int64(3), int64(4), "kubectl", &record.User{Name: "alice-bot"}},
	})

	for _, tc := range []struct {
		user  string
		count int
		want  []string
	}{
		{"alice", 2, []string{"updated Deployment shop/web by alice (kubectl)", "spec.replicas: 1 → 5", "spec.replicas: 5 → 2"}},
		{"system:serviceaccount:ci:deployer", 1, []string{"updated Deployment shop/web by ServiceAccount ci/deployer (kubectl-set)"}},
	} {
		out, code := cliOutput(t, "history", "--state-dir", dir, "--user", tc.user, "-o", "text", "--color", "never")
		if code != 0 {
			t.Fatalf("history --user %s: exit %d\n%s", tc.user, code, out)
		}
		headers := regexp.MustCompile(`(?m)^\S+ updated `).FindAllString(out, -1)
		if len(headers) != tc.count {
			t.Errorf("history --user %s lists %d changes:\n%s", tc.user, len(headers), out)
		}
		for _, want := range tc.want {
			if !strings.Contains(out, want) {
				t.Errorf("history --user %s lacks %q:\n%s", tc.user, want, out)
			}
		}
		if strings.Contains(out, "alice-bot") || strings.Contains(out, "shop/api") {
			t.Errorf("history --user %s lists another user's or an unknown user's change:\n%s", tc.user, out)
		}
	}

	browser := newBrowser(t)
	page := startUI(t, "--state-dir", dir)
	inBrowser(t, browser, "timeline", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(".legend")))
	if text := mainText(t, browser); !strings.Contains(text, "5 changes") {
		t.Errorf("timeline without a filter:\n%s", text)
	}
	base := strings.TrimSuffix(page, regexp.MustCompile(`/open\?.*$`).FindString(page))
	inBrowser(t, browser, "filtered on alice", chromedp.Navigate(base+"/?user=alice"), chromedp.WaitVisible(chromedp.CSS(".legend")))
	text := mainText(t, browser)
	if !strings.Contains(text, "2 changes") || !strings.Contains(text, "web Deployment · shop") || strings.Contains(text, "api Deployment") {
		t.Errorf("timeline filtered on alice:\n%s", text)
	}
	if typed := browserValue(t, browser, "the user filter", chromedp.Value(chromedp.CSS(`#filters input[name="user"]`))); typed != "alice" {
		t.Errorf("the user filter shows %q, want alice", typed)
	}
	marks := browserValue(t, browser, "the marks' titles", chromedp.Evaluate[[]string](`[...document.querySelectorAll(".mark")].map((m) => m.title)`))
	if len(marks) != 2 || !strings.HasSuffix(marks[0], "by alice (kubectl)") {
		t.Errorf("marks on the filtered timeline: %q, want two by alice (kubectl)", marks)
	}
	screenshot(t, browser, "user-filter")

	inBrowser(t, browser, "object page", chromedp.Navigate(base+"/?object=deployments.apps/web&namespace=shop"), chromedp.WaitVisible(chromedp.CSS(".record")))
	text = mainText(t, browser)
	for _, want := range []string{"by alice (kubectl)", "by ServiceAccount ci/deployer (kubectl-set)"} {
		if !strings.Contains(text, want) {
			t.Errorf("object page lacks %q:\n%s", want, text)
		}
	}
	screenshot(t, browser, "user-object")
}
