package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/notify/notifytest"
	"github.com/kubediff/kubediff/pkg/record"
)

func change(obj, i int) record.Change {
	c := record.Change{Type: "updated", APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "ns",
		Name: fmt.Sprintf("cm-%d", obj), UID: fmt.Sprintf("uid-%d", obj), ResourceVersion: fmt.Sprint(i),
		Changed: "data.k", Changes: []record.FieldChange{{Op: "replace", Path: "/data/k", Field: "data.k", From: i - 1, To: i}}}
	c.ID = c.StableID()
	return c
}

// receiver is a webhook endpoint on 127.0.0.1 whose behaviour a test sets.
type receiver struct {
	mu       sync.Mutex
	got      []record.Change
	headers  []http.Header
	bodies   [][]byte
	attempts []time.Time
	respond  func(attempt int, w http.ResponseWriter, r *http.Request) bool // false: the request failed
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.attempts = append(rc.attempts, time.Now())
	n := len(rc.attempts)
	respond := rc.respond
	rc.mu.Unlock()
	if respond != nil && !respond(n, w, r) {
		return
	}
	var c record.Change
	if err := json.Unmarshal(body, &c); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	rc.got = append(rc.got, c)
	rc.headers = append(rc.headers, r.Header.Clone())
	rc.bodies = append(rc.bodies, body)
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) snapshot() ([]record.Change, []time.Time) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]record.Change(nil), rc.got...), append([]time.Time(nil), rc.attempts...)
}

func serve(t *testing.T, rc *receiver) *httptest.Server {
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return srv
}

var fast = notify.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond, Jitter: 0.2}

func run(t *testing.T, sink notify.Notifier, records []record.Change, logs io.Writer) notify.Queue {
	return notifytest.Deliver(t, sink, records, fast, logs)
}

// The foundation of "never lose a change": a receiver that fails for a
// while gets every record, each object's records in order.
func TestReceiverFailingThenRecoveringGetsEverythingInOrder(t *testing.T) {
	start := time.Now()
	rc := &receiver{respond: func(_ int, w http.ResponseWriter, _ *http.Request) bool {
		if time.Since(start) < 500*time.Millisecond {
			http.Error(w, "warming up", http.StatusInternalServerError)
			return false
		}
		return true
	}}
	srv := serve(t, rc)
	sink, err := New(Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	var records []record.Change
	for i := 1; i <= 3; i++ {
		for obj := range 10 {
			records = append(records, change(obj, i))
		}
	}
	q := run(t, sink, records, io.Discard)
	got, attempts := rc.snapshot()
	if len(got) != 30 {
		t.Fatalf("received %d of 30 records", len(got))
	}
	last := map[string]int{}
	for _, c := range got {
		rv := 0
		fmt.Sscan(c.ResourceVersion, &rv)
		if rv <= last[c.Name] {
			t.Fatalf("%s: update %d arrived after %d", c.Name, rv, last[c.Name])
		}
		last[c.Name] = rv
	}
	if len(attempts) <= 30 || q.Stats().Retries == 0 {
		t.Fatalf("%d attempts, %d retries: the failures were not exercised", len(attempts), q.Stats().Retries)
	}
}

func TestHangingReceiverTimesOutAndIsRetried(t *testing.T) {
	release := make(chan struct{})
	rc := &receiver{respond: func(attempt int, _ http.ResponseWriter, r *http.Request) bool {
		if attempt == 1 {
			select { // hang until the client gives up
			case <-r.Context().Done():
			case <-release:
			}
			return false
		}
		return true
	}}
	srv := serve(t, rc)
	defer close(release)
	sink, err := New(Options{URL: srv.URL, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	q := run(t, sink, []record.Change{change(1, 1)}, &logs)
	got, attempts := rc.snapshot()
	if len(got) != 1 || len(attempts) != 2 || q.Stats().Delivered != 1 {
		t.Fatalf("got %d records in %d attempts, stats %+v", len(got), len(attempts), q.Stats())
	}
	if !strings.Contains(logs.String(), "retrying") {
		t.Fatalf("the timeout was not logged:\n%s", logs.String())
	}
}

func TestTooManyRequestsWaitsForRetryAfter(t *testing.T) {
	rc := &receiver{respond: func(attempt int, w http.ResponseWriter, _ *http.Request) bool {
		if attempt == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return false
		}
		return true
	}}
	srv := serve(t, rc)
	sink, _ := New(Options{URL: srv.URL})
	run(t, sink, []record.Change{change(1, 1)}, io.Discard)
	_, attempts := rc.snapshot()
	if len(attempts) != 2 {
		t.Fatalf("%d attempts, want 2", len(attempts))
	}
	if gap := attempts[1].Sub(attempts[0]); gap < time.Second {
		t.Fatalf("retried %s after a 429 with Retry-After: 1", gap)
	}
}

func TestClientErrorIsNotRetriedAndItsReasonLogged(t *testing.T) {
	rc := &receiver{respond: func(_ int, w http.ResponseWriter, _ *http.Request) bool {
		http.Error(w, "schema mismatch: unknown field changes", http.StatusUnprocessableEntity)
		return false
	}}
	srv := serve(t, rc)
	sink, _ := New(Options{URL: srv.URL})
	var logs strings.Builder
	q := run(t, sink, []record.Change{change(1, 1)}, &logs)
	if _, attempts := rc.snapshot(); len(attempts) != 1 || q.Stats().Failed != 1 {
		t.Fatalf("%d attempts, stats %+v; want 1 attempt and 1 failure", len(attempts), q.Stats())
	}
	for _, want := range []string{"422", "schema mismatch", "name=cm-1"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

func TestBodyHeadersAndSignature(t *testing.T) {
	rc := &receiver{}
	srv := serve(t, rc)
	secret := []byte("hmac-secret-1f2e")
	sink, _ := New(Options{URL: srv.URL + "/hook", Headers: map[string]string{"X-Team": "platform"}, Secret: secret})
	c := change(3, 7)
	run(t, sink, []record.Change{c}, io.Discard)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bodies) != 1 {
		t.Fatalf("%d requests", len(rc.bodies))
	}
	h, body := rc.headers[0], rc.bodies[0]
	want, _ := json.Marshal(c)
	if string(body) != string(want) {
		t.Errorf("body = %s\nwant the record as stdout prints it: %s", body, want)
	}
	if h.Get("Content-Type") != "application/json" || h.Get("X-Team") != "platform" {
		t.Errorf("headers = %v", h)
	}
	if h.Get("Idempotency-Key") != "uid-3/7/updated" {
		t.Errorf("Idempotency-Key = %q, want the record's id uid-3/7/updated", h.Get("Idempotency-Key"))
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	if got, want := h.Get(SignatureHeader), "sha256="+hex.EncodeToString(mac.Sum(nil)); got != want {
		t.Errorf("signature = %q, want %q", got, want)
	}
}

func TestCloudEventsEnvelope(t *testing.T) {
	rc := &receiver{}
	srv := serve(t, rc)
	sink, _ := New(Options{URL: srv.URL, Format: FormatCloudEvents})
	run(t, sink, []record.Change{change(2, 5)}, io.Discard)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var ev map[string]any
	if err := json.Unmarshal(rc.bodies[0], &ev); err != nil {
		t.Fatal(err)
	}
	if rc.headers[0].Get("Content-Type") != "application/cloudevents+json" {
		t.Errorf("content type = %q", rc.headers[0].Get("Content-Type"))
	}
	for _, k := range []string{"specversion", "id", "source", "type", "subject", "time", "data"} {
		if ev[k] == nil || ev[k] == "" {
			t.Errorf("envelope lacks %s: %s", k, rc.bodies[0])
		}
	}
	if ev["specversion"] != "1.0" || ev["type"] != "io.kubediff.object.updated" || ev["subject"] != "ConfigMap/ns/cm-2" || ev["id"] != "uid-2/5/updated" {
		t.Errorf("envelope = %s", rc.bodies[0])
	}
}

// Secrets in errors and logs: pkg/notify/sinks TestNoSinkLeaksASecret.

func TestNewRejectsBadOptions(t *testing.T) {
	for _, opts := range []Options{{URL: "ftp://x"}, {URL: "not a url"}, {URL: "http://x", Format: "xml"}} {
		if _, err := New(opts); err == nil {
			t.Errorf("%+v accepted", opts)
		}
	}
	_, err := New(Options{URL: "://user:pw-secret@x"})
	if err == nil || strings.Contains(err.Error(), "pw-secret") {
		t.Errorf("bad URL error = %v (must not quote the URL)", err)
	}
}
