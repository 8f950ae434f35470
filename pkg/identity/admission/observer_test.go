package admission

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/identity/callerauth"
	"github.com/kubediff/kubediff/pkg/identity/identitytest"
	"github.com/kubediff/kubediff/pkg/record"
)

// review is an AdmissionReview as the API server posts it.
func review(request string) string {
	return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":` + request + `}`
}

// testToken is the token the tests' observers take.
const testToken = "s3cret-token"

// newHandler is a Handler that takes testToken.
func newHandler(t *testing.T, notes identity.Noter, log *slog.Logger) *Handler {
	t.Helper()
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	auth, err := callerauth.Load(callerauth.Files{TokenFile: file}, &tls.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return NewHandler(notes, auth, log)
}

// post sends body to h as the API server would (with the token) and
// returns the response.
func post(t *testing.T, h http.Handler, body string) *httptest.ResponseRecorder {
	t.Helper()
	return postTo(t, h, Path, "Bearer "+testToken, body)
}

// postTo sends body to h at path with an Authorization header.
func postTo(t *testing.T, h http.Handler, path, authorization, body string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	h.ServeHTTP(rec, req)
	return rec
}

// allowed checks the response allows the request uid names.
func allowed(t *testing.T, rec *httptest.ResponseRecorder, uid string) {
	t.Helper()
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("status %d, body %q: %v", rec.Code, rec.Body.String(), err)
	}
	if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" || out.Response == nil || !out.Response.Allowed || string(out.Response.UID) != uid {
		t.Fatalf("want an AdmissionReview allowing %s, got %s", uid, rec.Body.String())
	}
}

const alice = `"userInfo":{"username":"alice","groups":["dev","system:authenticated"]}`

// Each operation is noted with the keys the join needs: a create with
// the new object's uid and name (a generated name included), an update
// or delete with the old object's uid and version, the scale subresource
// with its parent's; what is not a write (CONNECT, a dry run) is allowed
// and not noted.
func TestObserverNotesWhoWroteWhat(t *testing.T) {
	deployments := `"resource":{"group":"apps","version":"v1","resource":"deployments"}`
	for _, tc := range []struct {
		name, request string
		want          *identity.Write
	}{
		{"create with a generated name", `{"uid":"r1","operation":"CREATE",` + deployments + `,"namespace":"shop",` + alice + `,
			"object":{"metadata":{"generateName":"web-","name":"web-x7k2p","uid":"u1"}}}`,
			&identity.Write{ID: "r1", Verb: "create", Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web-x7k2p", UID: "u1"}},
		{"update", `{"uid":"r2","operation":"UPDATE",` + deployments + `,"namespace":"shop","name":"web",` + alice + `,
			"object":{"metadata":{"uid":"u1","resourceVersion":"41"}},"oldObject":{"metadata":{"uid":"u1","resourceVersion":"41"}}}`,
			&identity.Write{ID: "r2", Verb: "update", Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web", UID: "u1", PreviousResourceVersion: "41"}},
		{"scale", `{"uid":"r3","operation":"UPDATE",` + deployments + `,"subResource":"scale","namespace":"shop","name":"web",` + alice + `,
			"object":{"kind":"Scale","metadata":{"uid":"u1","resourceVersion":"42"},"spec":{"replicas":5}},"oldObject":{"kind":"Scale","metadata":{"uid":"u1","resourceVersion":"42"},"spec":{"replicas":2}}}`,
			&identity.Write{ID: "r3", Verb: "update", Group: "apps", Resource: "deployments", Subresource: "scale", Namespace: "shop", Name: "web", UID: "u1", PreviousResourceVersion: "42"}},
		{"delete", `{"uid":"r4","operation":"DELETE",` + deployments + `,"namespace":"shop","name":"web",` + alice + `,
			"oldObject":{"metadata":{"uid":"u1","resourceVersion":"43"}}}`,
			&identity.Write{ID: "r4", Verb: "delete", Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web", UID: "u1", PreviousResourceVersion: "43"}},
		{"an eviction names its pod, not its own uid", `{"uid":"r5","operation":"CREATE","resource":{"version":"v1","resource":"pods"},"subResource":"eviction","namespace":"shop","name":"web-1",` + alice + `,
			"object":{"kind":"Eviction","metadata":{"name":"web-1","uid":"not-the-pod"}}}`,
			&identity.Write{ID: "r5", Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: "shop", Name: "web-1"}},
		{"connect", `{"uid":"r6","operation":"CONNECT","resource":{"version":"v1","resource":"pods"},"subResource":"exec","namespace":"shop","name":"web-1",` + alice + `}`, nil},
		{"dry run", `{"uid":"r7","operation":"UPDATE",` + deployments + `,"subResource":"scale","namespace":"shop","name":"web","dryRun":true,` + alice + `,
			"oldObject":{"metadata":{"uid":"u1","resourceVersion":"44"}}}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			notes := &identitytest.Recorder{}
			h := newHandler(t, notes, slog.New(slog.DiscardHandler))
			var uid struct {
				UID string `json:"uid"`
			}
			if err := json.Unmarshal([]byte(tc.request), &uid); err != nil {
				t.Fatal(err)
			}
			allowed(t, post(t, h, review(tc.request)), uid.UID)
			got := notes.All()
			if tc.want == nil {
				if len(got) != 0 {
					t.Fatalf("noted %+v, want nothing", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("noted %d writes, want 1: %+v", len(got), got)
			}
			w := got[0]
			if w.Source != "admission" || w.Time.IsZero() || w.User.Name != "alice" || len(w.User.Groups) != 2 || w.ResourceVersion != "" {
				t.Errorf("source, time, user or resourceVersion wrong: %+v", w)
			}
			w.Source, w.Time, w.User = "", tc.want.Time, record.User{}
			if !reflect.DeepEqual(w, *tc.want) {
				t.Errorf("noted\n%+v\nwant\n%+v", w, *tc.want)
			}
		})
	}
}

// A ServiceAccount is named as one.
func TestObserverNamesServiceAccounts(t *testing.T) {
	notes := &identitytest.Recorder{}
	h := newHandler(t, notes, slog.New(slog.DiscardHandler))
	allowed(t, post(t, h, review(`{"uid":"r1","operation":"DELETE","resource":{"version":"v1","resource":"configmaps"},"namespace":"ci","name":"c",
		"userInfo":{"username":"system:serviceaccount:ci:deployer","groups":["system:serviceaccounts"]},"oldObject":{"metadata":{"uid":"u","resourceVersion":"7"}}}`)), "r1")
	got := notes.All()
	if len(got) != 1 || got[0].User.ServiceAccount == nil || *got[0].User.ServiceAccount != (record.ServiceAccount{Namespace: "ci", Name: "deployer"}) {
		t.Fatalf("want the ServiceAccount ci/deployer, got %+v", got)
	}
}

// A Secret's data reaches neither the notes nor the log, nor does it when
// the body around it is broken.
func TestObserverKeepsNothingOfASecret(t *testing.T) {
	const value = "aHVudGVyMi1zM2NyM3Q=" // base64 of the password
	var logs bytes.Buffer
	notes := &identitytest.Recorder{}
	h := newHandler(t, notes, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	secret := func(rv string) string {
		return `{"kind":"Secret","metadata":{"name":"db","uid":"s1","resourceVersion":"` + rv + `"},"data":{"password":"` + value + `"}}`
	}
	allowed(t, post(t, h, review(`{"uid":"r1","operation":"UPDATE","resource":{"version":"v1","resource":"secrets"},"namespace":"shop","name":"db",`+alice+`,
		"object":`+secret("9")+`,"oldObject":`+secret("9")+`}`)), "r1")
	for _, broken := range []string{
		review(`{"uid":"r2","operation":"UPDATE","object":{"data":{"password":` + value + `}}}`), // not JSON near the value
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"r3","object":{"data":{"password":"` + value + `"}},"name":5}}`,
	} {
		if rec := post(t, h, broken); rec.Code != http.StatusBadRequest || strings.Contains(rec.Body.String(), value) {
			t.Errorf("broken body: status %d, body %q", rec.Code, rec.Body.String())
		}
	}
	if got := fmt.Sprintf("%#v", notes.All()) + logs.String(); strings.Contains(got, value) || strings.Contains(got, "hunter2") {
		t.Fatalf("the Secret's value leaked:\n%s", got)
	}
	if len(notes.All()) != 1 {
		t.Fatalf("want the write noted once, got %+v", notes.All())
	}
}

// What is not an AdmissionReview is refused (the API server then lets the
// write through, failurePolicy Ignore) and logged once until reviews
// come again; a body over the bound is refused unread.
func TestObserverRefusesWhatIsNotAReview(t *testing.T) {
	var logs bytes.Buffer
	notes := &identitytest.Recorder{}
	h := newHandler(t, notes, slog.New(slog.NewTextHandler(&logs, nil)))
	good := review(`{"uid":"ok","operation":"DELETE","resource":{"version":"v1","resource":"configmaps"},"name":"c",` + alice + `}`)
	allowed(t, post(t, h, good), "ok")
	for _, tc := range []struct {
		body string
		code int
	}{
		{"{", http.StatusBadRequest},
		{`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x"}}`, http.StatusBadRequest},
		{`{"apiVersion":"ECHOED-VERSION","kind":"ECHOED-KIND","request":{"uid":"x"}}`, http.StatusBadRequest},
		{`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, http.StatusBadRequest},
		{review(`{"uid":"big","object":{"data":"` + strings.Repeat("x", MaxReviewBytes) + `"}}`), http.StatusRequestEntityTooLarge},
	} {
		if rec := post(t, h, tc.body); rec.Code != tc.code {
			t.Errorf("%.60s…: status %d, want %d", tc.body, rec.Code, tc.code)
		}
	}
	allowed(t, post(t, h, good), "ok")
	for line, want := range map[string]int{"the API server's reviews arrive": 1, "level=WARN": 1, "read again": 1, "ECHOED": 0} {
		if got := strings.Count(logs.String(), line); got != want {
			t.Errorf("%q logged %d times, want %d:\n%s", line, got, want, logs.String())
		}
	}
	if rec := httptest.NewRecorder(); true {
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, Path, nil))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("GET: status %d", rec.Code)
		}
	}
}

// Only the API server is believed: a post without the token (as a bearer
// token or the path's last segment) or a verified client certificate is
// refused before its body is read and names no one, and a run of them is
// one log line. A review of a write the API server never sends to
// webhooks (a webhook registration's) is allowed and not noted: it can
// only be made up.
func TestObserverBelievesOnlyTheAPIServer(t *testing.T) {
	var logs bytes.Buffer
	notes := &identitytest.Recorder{}
	h := newHandler(t, notes, slog.New(slog.NewTextHandler(&logs, nil)))
	forged := review(`{"uid":"f1","operation":"DELETE","resource":{"version":"v1","resource":"configmaps"},"namespace":"a","name":"c",` + alice + `,"oldObject":{"metadata":{"uid":"u","resourceVersion":"3"}}}`)
	for _, tc := range []struct{ path, authorization string }{
		{Path, ""},
		{Path, "Bearer wrong"},
		{Path, "Basic " + testToken},
		{Path + "/wrong", ""},
		{Path + "/", "Bearer "},
		{Path + "/" + testToken + "x", ""},
	} {
		if rec := postTo(t, h, tc.path, tc.authorization, forged); rec.Code != http.StatusUnauthorized {
			t.Errorf("%s with %q: status %d, want 401", tc.path, tc.authorization, rec.Code)
		}
	}
	if got := notes.All(); len(got) != 0 {
		t.Fatalf("unauthenticated posts noted %+v", got)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !strings.Contains(logs.String(), "not the API server") {
		t.Errorf("six strangers' posts logged %d warnings, want 1:\n%s", n, logs.String())
	}
	allowed(t, postTo(t, h, Path+"/"+testToken, "", forged), "f1")
	allowed(t, post(t, h, forged), "f1")
	if got := notes.All(); len(got) != 2 {
		t.Fatalf("the token in the path and as a bearer token: %d notes, want 2", len(got))
	}
	for _, resource := range []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations", "validatingadmissionpolicies",
		"validatingadmissionpolicybindings", "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"} {
		never := review(`{"uid":"w","operation":"UPDATE","resource":{"group":"admissionregistration.k8s.io","version":"v1","resource":"` + resource + `"},"name":"x",` + alice + `,"oldObject":{"metadata":{"uid":"u2","resourceVersion":"7"}}}`)
		allowed(t, post(t, h, never), "w")
	}
	if got := notes.All(); len(got) != 2 {
		t.Errorf("reviews of webhook and policy registrations were noted: %+v", got[2:])
	}
}
