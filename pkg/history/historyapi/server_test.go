package historyapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
)

var (
	t0         = time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)
	configMaps = change.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true, Singular: "configmap", ShortNames: []string{"cm"}}
)

// authorizer is the API server as the history API sees it: tokens name
// users, and users may list ConfigMaps in the namespaces granted to them,
// to their groups, or to an extra value they carry ("ns").
type authorizer struct {
	mu      sync.Mutex
	users   map[string]authnv1.UserInfo // by token
	grants  map[string][]string         // user or group → namespaces
	reviews []authzv1.SubjectAccessReviewSpec
	during  func() // runs within each review
}

func (a *authorizer) clientset() *fake.Clientset {
	kube := fake.NewClientset()
	kube.PrependReactor("create", "tokenreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		review := action.(k8stesting.CreateAction).GetObject().(*authnv1.TokenReview)
		a.mu.Lock()
		defer a.mu.Unlock()
		user, ok := a.users[review.Spec.Token]
		review.Status = authnv1.TokenReviewStatus{Authenticated: ok, User: user}
		return true, review, nil
	})
	kube.PrependReactor("create", "subjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		review := action.(k8stesting.CreateAction).GetObject().(*authzv1.SubjectAccessReview)
		if a.during != nil {
			a.during()
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		a.reviews = append(a.reviews, review.Spec)
		ns := review.Spec.ResourceAttributes.Namespace
		subjects := append([]string{review.Spec.User}, review.Spec.Groups...)
		subjects = append(subjects, review.Spec.Extra["ns"]...)
		for _, s := range subjects {
			for _, granted := range a.grants[s] {
				review.Status.Allowed = review.Status.Allowed || granted == ns || granted == "*"
			}
		}
		return true, review, nil
	})
	return kube
}

func (a *authorizer) reviewCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.reviews)
}

// apiServer serves a history holding entries to the users of authz.
func apiServer(t *testing.T, authz *authorizer, entries ...journal.Entry) (string, *bolt.DB, *Access) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "h.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	policy := history.Policy{Retention: 365 * 24 * time.Hour, MaxBytes: 1 << 40}
	if err := db.Update(func(tx *bolt.Tx) error { return history.Write(tx, entries, policy, t0) }); err != nil {
		t.Fatal(err)
	}
	access := NewAccess(authz.clientset(), slog.New(slog.DiscardHandler))
	mux := http.NewServeMux()
	NewHandler(history.NewReader(db, nil), access).Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL, db, access
}

// entry is a ConfigMap's change from old to new data ("" for none) at
// t0+minute.
func entry(ns, name string, minute int, old, new map[string]any) journal.Entry {
	c := record.Change{Time: record.Timestamp(t0.Add(time.Duration(minute) * time.Minute)), APIVersion: "v1", Kind: "ConfigMap",
		Resource: "configmaps", Namespace: ns, Name: name, UID: "uid-" + ns + name, ResourceVersion: fmt.Sprint(minute), Type: record.Updated}
	e := journal.Entry{Resource: configMaps}
	object := func(data map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": data}}
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	if old == nil {
		c.Type = record.Added
	} else {
		e.Old = object(old)
	}
	if new != nil {
		e.New = object(new)
	}
	c.ID = c.StableID()
	e.Change = c
	return e
}

// get asks the API as token's user and returns the status and body.
func get(t *testing.T, rawURL, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, rawURL, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	client := &http.Client{Timeout: 60 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %.200s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// changesIn are the records of a page the API answered with body.
func changesIn(t *testing.T, body string) []record.Change {
	t.Helper()
	var page struct {
		Records []record.Change `json:"records"`
	}
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatalf("%v: %.300s", err, body)
	}
	return page.Records
}

func namespacesOf(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	for _, c := range changesIn(t, body) {
		out = append(out, c.Namespace)
	}
	return out
}

func viewerOf(namespace string) *authorizer {
	return &authorizer{
		users:  map[string]authnv1.UserInfo{"viewer-token": {Username: "viewer", UID: "u1"}},
		grants: map[string][]string{"viewer": {namespace}},
	}
}

// Bad input is the caller's mistake, said in a 400, never a 500 and never
// an answer wider than asked: a page token that is not one, a namespace
// no object can be in (which cost an access review and a cache entry
// each), more parameters than Go's url package reads (past 10,000 it
// reads none: the answer was every namespace's records).
func TestBadQueriesAre400(t *testing.T) {
	authz := viewerOf("mine")
	base, _, _ := apiServer(t, authz, entry("mine", "a", 1, nil, map[string]any{"k": "1"}), entry("theirs", "b", 2, nil, map[string]any{"k": "2"}))
	manyParams := "namespace=theirs" + strings.Repeat("&select=configmaps", 10000)
	for _, tc := range []struct{ name, query string }{
		{"garbage page token", "after=garbage"},
		{"long namespace", "namespace=" + strings.Repeat("n", 100000)},
		{"namespace with a slash", "namespace=a/b"},
		{"10,001 parameters", manyParams},
		{"a long name", "select=configmaps/" + strings.Repeat("x", 300)},
		{"a long user", "user=" + strings.Repeat("u", 2000)},
		{"a user with a control character", "user=alice%0A"},
		{"a rule that is no glob", "rule=rbac-%5B"},
		{"a long rule", "rule=" + strings.Repeat("r", 300)},
		{"an unknown severity", "severity=high"},
		{"a release that is no name", "release=Web%20App"},
		{"a release in two namespaces", "release=a/b/c"},
		{"a drift that is no switch", "drift=yes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := authz.reviewCount()
			code, body := get(t, base+RecordsPath+"?"+tc.query, "viewer-token")
			if code != http.StatusBadRequest || !strings.Contains(body, `"BadRequest"`) {
				t.Errorf("%d %.300s; want 400", code, body)
			}
			if n := authz.reviewCount() - before; n != 0 {
				t.Errorf("%d access reviews asked for a bad query", n)
			}
		})
	}
	for _, path := range []string{ObjectPath, DiffPath} {
		code, body := get(t, base+path+"?object=configmaps/a&at=2026-11-23T14:00:00Z&from=2026-11-23T14:00:00Z&namespace="+strings.Repeat("n", 5000), "viewer-token")
		if code != http.StatusBadRequest {
			t.Errorf("%s with a long namespace: %d %.200s; want 400", path, code, body)
		}
	}
	// The viewer's own namespace still answers.
	if code, body := get(t, base+RecordsPath+"?namespace=mine", "viewer-token"); code != 200 || fmt.Sprint(namespacesOf(t, body)) != "[mine]" {
		t.Errorf("the viewer's namespace: %d %s", code, body)
	}
}

// user= keeps one user's records, by the exact name the API server gave,
// as far as the caller may see them; the command line's client sends it.
func TestRecordsOfOneUser(t *testing.T) {
	authz := viewerOf("mine")
	byUser := func(e journal.Entry, name string) journal.Entry {
		e.Change.User = &record.User{Name: name}
		return e
	}
	base, _, _ := apiServer(t, authz,
		byUser(entry("mine", "a", 1, nil, map[string]any{"k": "1"}), "alice"),
		byUser(entry("mine", "b", 2, nil, map[string]any{"k": "2"}), "bob"),
		entry("mine", "c", 3, nil, map[string]any{"k": "3"}),
		byUser(entry("theirs", "d", 4, nil, map[string]any{"k": "4"}), "alice"),
		byUser(entry("mine", "e", 5, nil, map[string]any{"k": "5"}), "alice"))
	names := func(body string) string {
		t.Helper()
		var out []string
		for _, c := range changesIn(t, body) {
			out = append(out, c.Name)
		}
		return fmt.Sprint(out)
	}
	for query, want := range map[string]string{"user=alice": "[a e]", "user=bob": "[b]", "user=al": "[]", "": "[a b c e]"} {
		code, body := get(t, base+RecordsPath+"?namespace=mine&"+query, "viewer-token")
		if code != http.StatusOK || names(body) != want {
			t.Errorf("%s: %d %s, want %s", query, code, names(body), want)
		}
	}
	remote, err := NewRemote(base, &rest.Config{BearerToken: "viewer-token"})
	if err != nil {
		t.Fatal(err)
	}
	page, err := remote.Records(context.Background(), history.Query{Namespace: "mine", User: "alice"})
	if err != nil || len(page.Records) != 2 {
		t.Errorf("the client's query for alice: %d records, %v; want 2", len(page.Records), err)
	}
}

// rule= and severity= keep the records the rules named, as far as the
// caller may see them; the command line's client sends them.
func TestRecordsOfARule(t *testing.T) {
	authz := viewerOf("mine")
	judged := func(e journal.Entry, severity string, rules ...string) journal.Entry {
		e.Change.Rules, e.Change.Severity = rules, severity
		return e
	}
	base, _, _ := apiServer(t, authz,
		judged(entry("mine", "a", 1, nil, map[string]any{"k": "1"}), "warning", "image-changed"),
		entry("mine", "b", 2, nil, map[string]any{"k": "2"}),
		judged(entry("theirs", "c", 3, nil, map[string]any{"k": "3"}), "critical", "image-changed"),
		judged(entry("mine", "d", 4, nil, map[string]any{"k": "4"}), "critical", "rbac-admin"))
	for query, want := range map[string]string{"rule=image-changed": "[a]", "rule=rbac-*": "[d]", "severity=warning": "[a d]", "severity=critical": "[d]", "": "[a b d]"} {
		code, body := get(t, base+RecordsPath+"?namespace=mine&"+query, "viewer-token")
		var page struct {
			Records []record.Change `json:"records"`
		}
		_ = json.Unmarshal([]byte(body), &page)
		var names []string
		for _, c := range page.Records {
			names = append(names, c.Name)
		}
		if code != http.StatusOK || fmt.Sprint(names) != want {
			t.Errorf("%s: %d %v, want %s", query, code, names, want)
		}
	}
	remote, err := NewRemote(base, &rest.Config{BearerToken: "viewer-token"})
	if err != nil {
		t.Fatal(err)
	}
	page, err := remote.Records(context.Background(), history.Query{Namespace: "mine", Rule: "image-*", Severity: "warning"})
	if err != nil || len(page.Records) != 1 {
		t.Errorf("the client's query for image-*: %d records, %v; want 1", len(page.Records), err)
	}
}

// release= keeps the records of the objects one release applied, by
// its name or namespace/name, as far as the caller may see them; the
// command line's client sends it.
func TestRecordsOfARelease(t *testing.T) {
	authz := viewerOf("mine")
	of := func(e journal.Entry, name string) journal.Entry {
		e.Change.Release = &record.Release{Tool: record.ToolHelm, Namespace: "mine", Name: name, Revision: 2}
		return e
	}
	base, _, _ := apiServer(t, authz,
		of(entry("mine", "a", 1, nil, map[string]any{"k": "1"}), "web"),
		entry("mine", "b", 2, nil, map[string]any{"k": "2"}),
		of(entry("theirs", "c", 3, nil, map[string]any{"k": "3"}), "web"),
		of(entry("mine", "d", 4, nil, map[string]any{"k": "4"}), "api"))
	for query, want := range map[string]string{"release=web": "[a]", "release=mine/web": "[a]", "release=api": "[d]", "release=theirs/web": "[]", "": "[a b d]"} {
		code, body := get(t, base+RecordsPath+"?"+query, "viewer-token")
		var names []string
		for _, c := range changesIn(t, body) {
			names = append(names, c.Name)
		}
		if code != http.StatusOK || fmt.Sprint(names) != want {
			t.Errorf("%s: %d %v, want %s", query, code, names, want)
		}
	}
	remote, err := NewRemote(base, &rest.Config{BearerToken: "viewer-token"})
	if err != nil {
		t.Fatal(err)
	}
	page, err := remote.Records(context.Background(), history.Query{Namespace: "mine", Release: "web"})
	if err != nil || len(page.Records) != 1 {
		t.Errorf("the client's query for release web: %d records, %v; want 1", len(page.Records), err)
	}
}

// drift=true keeps the records made outside their GitOps owner and
// those that put them back, as far as the caller may see them; the
// command line's client sends it.
func TestRecordsOfDrift(t *testing.T) {
	authz := viewerOf("mine")
	via := func(e journal.Entry, via, reverts string) journal.Entry {
		e.Change.GitOps = &record.GitOps{Via: via, Tool: record.ToolFlux, Kind: "Kustomization", Namespace: "flux-system", Name: "apps", Reverts: reverts}
		return e
	}
	base, _, _ := apiServer(t, authz,
		via(entry("mine", "a", 1, nil, map[string]any{"k": "1"}), record.ViaSync, ""),
		via(entry("mine", "b", 2, nil, map[string]any{"k": "2"}), record.ViaOutside, ""),
		via(entry("theirs", "c", 3, nil, map[string]any{"k": "3"}), record.ViaOutside, ""),
		via(entry("mine", "d", 4, nil, map[string]any{"k": "4"}), record.ViaSync, "b-id"),
		entry("mine", "e", 5, nil, map[string]any{"k": "5"}))
	for query, want := range map[string]string{"drift=true": "[b d]", "drift=false": "[a b d e]", "": "[a b d e]"} {
		code, body := get(t, base+RecordsPath+"?"+query, "viewer-token")
		var names []string
		for _, c := range changesIn(t, body) {
			names = append(names, c.Name)
		}
		if code != http.StatusOK || fmt.Sprint(names) != want {
			t.Errorf("%s: %d %v, want %s", query, code, names, want)
		}
	}
	remote, err := NewRemote(base, &rest.Config{BearerToken: "viewer-token"})
	if err != nil {
		t.Fatal(err)
	}
	page, err := remote.Records(context.Background(), history.Query{Namespace: "mine", Drift: true})
	if err != nil || len(page.Records) != 2 {
		t.Errorf("the client's drift query: %d records, %v; want 2", len(page.Records), err)
	}
}

// However many distinct questions callers ask, the decision cache holds
// at most maxCached answers.
func TestDecisionCacheIsBounded(t *testing.T) {
	authz := viewerOf("mine")
	access := NewAccess(authz.clientset(), slog.New(slog.DiscardHandler))
	user := &authnv1.UserInfo{Username: "viewer"}
	for i := range maxCached + 2000 {
		if _, err := access.MayList(context.Background(), user, "", "configmaps", fmt.Sprintf("ns-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	access.mu.Lock()
	n := len(access.decisions)
	access.mu.Unlock()
	if n > maxCached {
		t.Errorf("%d decisions cached, want at most %d", n, maxCached)
	}
}

// A decision is the whole identity's: a group named "g1,g2" is not the
// groups g1 and g2, and a uid or extra value (which the review sends)
// makes another identity.
func TestDecisionsAreOneIdentitys(t *testing.T) {
	authz := &authorizer{grants: map[string][]string{"g1": {"one"}, "g2": {"two"}, "pod-a": {"three"}}}
	access := NewAccess(authz.clientset(), slog.New(slog.DiscardHandler))
	ctx := context.Background()
	mayList := func(user *authnv1.UserInfo, ns string) bool {
		t.Helper()
		ok, err := access.MayList(ctx, user, "", "configmaps", ns)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !mayList(&authnv1.UserInfo{Username: "alice", Groups: []string{"g1", "g2"}}, "one") {
		t.Fatal("a member of g1 may not list namespace one")
	}
	if mayList(&authnv1.UserInfo{Username: "alice", Groups: []string{"g1,g2"}}, "one") {
		t.Error(`a member of the one group "g1,g2" was let in as a member of g1`)
	}
	withPod := &authnv1.UserInfo{Username: "bob", UID: "1", Extra: map[string]authnv1.ExtraValue{"ns": {"pod-a"}}}
	if !mayList(withPod, "three") {
		t.Fatal("the extra value's grant was not asked about")
	}
	if mayList(&authnv1.UserInfo{Username: "bob", UID: "1"}, "three") {
		t.Error("the same name without the extra value was let in")
	}
	authz.mu.Lock()
	defer authz.mu.Unlock()
	last := authz.reviews[len(authz.reviews)-1]
	if last.UID != "1" || last.User != "bob" {
		t.Errorf("the review did not send the uid: %+v", last)
	}
}

// Access is decided before the history is read: no review runs while a
// read transaction is open (one held up the state's flush for as long as
// the API server took), and a query of many records asks once per type
// and namespace.
func TestAccessIsDecidedBeforeTheRead(t *testing.T) {
	authz := viewerOf("mine")
	var entries []journal.Entry
	for i := range 200 {
		entries = append(entries, entry([]string{"mine", "theirs", "third"}[i%3], fmt.Sprint("cm-", i), i, nil, map[string]any{"k": "v"}))
	}
	base, db, _ := apiServer(t, authz, entries...)
	var openDuringReview int
	var mu sync.Mutex
	authz.during = func() {
		mu.Lock()
		defer mu.Unlock()
		openDuringReview = max(openDuringReview, db.Stats().OpenTxN)
	}
	code, body := get(t, base+RecordsPath+"?limit=5000", "viewer-token")
	if code != 200 || len(namespacesOf(t, body)) != 67 {
		t.Fatalf("%d, %d records; want the 67 of namespace mine", code, len(namespacesOf(t, body)))
	}
	if openDuringReview > 0 {
		t.Errorf("an access review ran with %d read transactions open", openDuringReview)
	}
	// One type over every namespace, then each of its three namespaces.
	if n := authz.reviewCount(); n != 4 {
		t.Errorf("%d access reviews for one type in 3 namespaces, want 4", n)
	}
}

// The two-moment diff is bounded: a ConfigMap value of 60,000 lines,
// rewritten, is refused at once with 413 naming the bound (difflib took
// minutes, on after the client left); one within the bounds answers.
func TestDiffIsBounded(t *testing.T) {
	lines := func(n int, word string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "%s %d\n", word, i)
		}
		return b.String()
	}
	big := map[string]any{"v": lines(60000, "old")}
	bigger := map[string]any{"v": lines(60000, "new")}
	authz := viewerOf("mine")
	base, _, _ := apiServer(t, authz,
		entry("mine", "huge", 1, nil, big), entry("mine", "huge", 2, big, bigger),
		entry("mine", "small", 1, nil, map[string]any{"level": "one"}), entry("mine", "small", 2, map[string]any{"level": "one"}, map[string]any{"level": "two"}))
	at := func(minute float64) string {
		return url.QueryEscape(t0.Add(time.Duration(minute * float64(time.Minute))).Format(time.RFC3339Nano))
	}
	start := time.Now()
	code, body := get(t, base+DiffPath+"?object=configmaps/huge&namespace=mine&from="+at(1.5)+"&to="+at(2.5), "viewer-token")
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "10000") {
		t.Errorf("a rewritten 60,000-line value: %d %.300s; want 413 naming the bound", code, body)
	}
	t.Logf("answered in %s", time.Since(start))
	code, body = get(t, base+DiffPath+"?object=configmaps/small&namespace=mine&from="+at(1.5)+"&to="+at(2.5), "viewer-token")
	if code != 200 || !strings.Contains(body, "-  level: one\n+  level: two\n") {
		t.Errorf("a small diff: %d %s", code, body)
	}
	// Added whole: nothing to search, so no line bound.
	code, body = get(t, base+DiffPath+"?object=configmaps/huge&namespace=mine&from="+at(0.5)+"&to="+at(1.5), "viewer-token")
	if code != 200 || strings.Count(body, "\n+") < 60000 {
		t.Errorf("a 60,000-line object added: %d, %d lines", code, strings.Count(body, "\n"))
	}
}

// A diff ends when its request's context does (the client left).
func TestDiffEndsWithItsContext(t *testing.T) {
	var a, b []string
	for i := range MaxDiffLines {
		a = append(a, fmt.Sprintf("a %d\n", i))
		b = append(b, fmt.Sprintf("b %d\n", i%97))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	src := fakeSource{states: map[time.Time]string{t0: strings.Join(a, ""), t0.Add(time.Minute): strings.Join(b, "")}}
	if _, err := UnifiedDiff(ctx, src, "/configmaps/mine/x", "x", t0, t0.Add(time.Minute), nil); err == nil {
		t.Error("a diff whose request had ended was computed")
	}
}
