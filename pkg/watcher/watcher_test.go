package watcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubediff/kubediff/pkg/discovery"
)

var configMaps = discovery.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}

func cm(name, rv, value string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"k": value}}}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetResourceVersion(rv)
	return u
}

// event is what the tests compare: the type and the value of data.k in
// the old and new object.
type event struct {
	Type     EventType
	Old, New string
	Unknown  bool
}

func summary(ev Event) event {
	value := func(u *unstructured.Unstructured) string {
		if u == nil {
			return ""
		}
		v, _, _ := unstructured.NestedString(u.Object, "data", "k")
		return u.GetName() + "=" + v
	}
	return event{Type: ev.Type, Old: value(ev.Old), New: value(ev.New), Unknown: ev.FinalStateUnknown}
}

// testWatcher returns a Watcher whose transform upper-cases data.k, and
// the events it emits.
func testWatcher() (*Watcher, *[]event) {
	var got []event
	return &Watcher{handler: func(ev Event) { got = append(got, summary(ev)) }, opts: Options{
		Logger: slog.New(slog.DiscardHandler),
		Transform: func(discovery.Resource) cache.TransformFunc {
			return func(obj any) (any, error) {
				u := obj.(*unstructured.Unstructured)
				v, _, _ := unstructured.NestedString(u.Object, "data", "k")
				return u, unstructured.SetNestedField(u.Object, strings.ToUpper(v), "data", "k")
			}
		},
	}}, &got
}

// newTestStore returns a store as Watcher.start builds it.
func newTestStore(t *testing.T) (*store, *[]event) {
	t.Helper()
	w, got := testWatcher()
	return &store{toCache: cacheForm(w.cacheTransform(configMaps)), emit: w.emitter(configMaps), objects: map[string]*compactObject{}}, got
}

// fromWatch is an object as the watch decoder hands it over.
func fromWatch(t *testing.T, s *store, u *unstructured.Unstructured, modified bool) *compactObject {
	t.Helper()
	c, err := s.toCache(u)
	if err != nil {
		t.Fatal(err)
	}
	if modified {
		c.decoded = u.Object
	}
	return c
}

func TestStoreReportsChangesAfterTheInitialList(t *testing.T) {
	s, got := newTestStore(t)
	// The initial list (here from a plain list, so unstructured) is not news.
	if err := s.Replace([]any{cm("a", "1", "one"), cm("b", "1", "bee")}, "1"); err != nil {
		t.Fatal(err)
	}
	if !s.HasSynced() || s.Len() != 2 || len(*got) != 0 {
		t.Fatalf("after the initial list: synced %v, %d objects, events %+v", s.HasSynced(), s.Len(), *got)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Update(fromWatch(t, s, cm("a", "2", "two"), true)))
	must(s.Update(fromWatch(t, s, cm("a", "2", "two"), true))) // the same state again
	must(s.Add(fromWatch(t, s, cm("c", "3", "sea"), false)))
	must(s.Delete(fromWatch(t, s, cm("b", "4", "final"), false)))
	want := []event{
		{Type: Updated, Old: "a=ONE", New: "a=TWO"},
		{Type: Added, New: "c=SEA"},
		{Type: Deleted, Old: "b=FINAL"},
	}
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("events = %+v\nwant %+v", *got, want)
	}
	for key, c := range s.objects {
		if c.decoded != nil {
			t.Errorf("%s: the cache kept the decoded form beside the compact one", key)
		}
	}
}

func TestStoreRelistReportsWhatChangedDuringAGap(t *testing.T) {
	s, got := newTestStore(t)
	if err := s.Replace([]any{cm("a", "1", "one"), cm("b", "1", "bee"), cm("same", "1", "x")}, "1"); err != nil {
		t.Fatal(err)
	}
	// The watch broke; listing again finds a changed, b gone, c new.
	if err := s.Replace([]any{cm("a", "5", "five"), cm("c", "6", "sea"), cm("same", "1", "x")}, "6"); err != nil {
		t.Fatal(err)
	}
	want := map[event]bool{
		{Type: Updated, Old: "a=ONE", New: "a=FIVE"}: true,
		{Type: Added, New: "c=SEA"}:                  true,
		{Type: Deleted, Old: "b=BEE", Unknown: true}: true,
	}
	if len(*got) != len(want) {
		t.Fatalf("events = %+v, want %v", *got, want)
	}
	for _, ev := range *got {
		if !want[ev] {
			t.Errorf("unexpected event %+v", ev)
		}
	}
}

func TestCachedObjectsAreCompact(t *testing.T) {
	s, _ := newTestStore(t)
	c := fromWatch(t, s, cm("a", "5", "one"), false)
	if c.Name != "a" || c.Namespace != "ns" || c.ResourceVersion != "5" || !bytes.Contains(c.raw, []byte(`"k":"ONE"`)) {
		t.Fatalf("cache form = %+v raw %s", c, c.raw)
	}
	u, err := expand(c)
	if err != nil || u.GetName() != "a" || u.Object["data"].(map[string]any)["k"] != "ONE" {
		t.Fatalf("expand = %v, %v", u, err)
	}
}

// decoderFor decodes stream, which arrives in reads of at most chunk
// bytes.
func decoderFor(t *testing.T, stream string, chunk int) (*eventDecoder, *[]error) {
	t.Helper()
	w, _ := testWatcher()
	var logged []error
	return &eventDecoder{
		body:    io.NopCloser(&chunkReader{r: strings.NewReader(stream), max: chunk}),
		toCache: w.cacheTransform(configMaps),
		logErr:  func(err error) { logged = append(logged, err) },
		// A broken connection is not logged here but ends the watch
		// quietly and asks for a probe.
		connectionLost: func() { logged = append(logged, errors.New("probe asked")) },
	}, &logged
}

func TestDecoderReadsARecordedWatchStream(t *testing.T) {
	line, err := os.ReadFile("testdata/configmap-event.json")
	if err != nil {
		t.Fatal(err)
	}
	bookmark := `{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"300","annotations":{"k8s.io/initial-events-end":"true"}}}}` + "\n"
	expired := `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (200)","reason":"Expired","code":410}}` + "\n"
	// Reads smaller than the event make the decoder assemble the line
	// from the wake read's bytes and the reads after.
	for _, size := range []int{64 << 10, 64} {
		d, logged := decoderFor(t, string(line)+"\n"+bookmark+expired, size)

		typ, obj, err := d.Decode()
		c, ok := obj.(*compactObject)
		if err != nil || typ != watch.Modified || !ok {
			t.Fatalf("reads of %d bytes: first event = %v %T %v", size, typ, obj, err)
		}
		if c.Name != "cm-1" || c.Namespace != "w1" || c.ResourceVersion == "" || c.decoded == nil {
			t.Fatalf("reads of %d bytes: object %+v, decoded kept: %v", size, c, c.decoded != nil)
		}
		if got := c.decoded["data"].(map[string]any)["k"]; got != "U1" { // upper-cased by the transform
			t.Errorf("reads of %d bytes: data.k = %v", size, got)
		}

		typ, obj, err = d.Decode()
		if err != nil {
			t.Fatal(err)
		}
		// As the reflector reads it.
		bm, err := meta.Accessor(obj)
		if err != nil || typ != watch.Bookmark || bm.GetResourceVersion() != "300" ||
			bm.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
			t.Fatalf("reads of %d bytes: bookmark = %v %+v %v", size, typ, obj, err)
		}

		typ, obj, err = d.Decode()
		if err != nil || typ != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(obj)) {
			t.Fatalf("reads of %d bytes: error event = %v %+v %v", size, typ, obj, err)
		}
		if _, _, err = d.Decode(); err != io.EOF {
			t.Fatalf("reads of %d bytes: at the end: %v, want EOF", size, err)
		}
		if len(*logged) != 0 {
			t.Errorf("reads of %d bytes: logged %v; an expired version is routine", size, *logged)
		}
	}
}

func TestDecoderRejectsBrokenStreams(t *testing.T) {
	tests := []struct {
		name, stream string
		want         error
		logged       bool
	}{
		{"cut off mid-event", `{"type":"MODIFIED","object":{"kind":"Conf`, io.EOF, true},
		{"not JSON", "<html>proxy error</html>\n", nil, true},
		{"unknown type", `{"type":"SURPRISE","object":{}}` + "\n", nil, true},
		{"no object", `{"type":"MODIFIED"}` + "\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, logged := decoderFor(t, tt.stream, 4096)
			_, _, err := d.Decode()
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if (len(*logged) > 0) != tt.logged {
				t.Errorf("logged %v, want logged: %v", *logged, tt.logged)
			}
		})
	}
}

func BenchmarkWatchEventToCache(b *testing.B) {
	line, err := os.ReadFile("testdata/configmap-event.json")
	if err != nil {
		b.Fatal(err)
	}
	w, _ := testWatcher()
	d := &eventDecoder{body: io.NopCloser(&repeatReader{data: line}), toCache: w.cacheTransform(configMaps), logErr: func(error) {}}
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := d.Decode(); err != nil {
			b.Fatal(err)
		}
	}
}

// chunkReader reads r at most max bytes at a time, as a network does.
type chunkReader struct {
	r   io.Reader
	max int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	return c.r.Read(p[:min(len(p), c.max)])
}

// repeatReader reads data over and over.
type repeatReader struct {
	data []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := copy(p, r.data[r.off:])
	r.off = (r.off + n) % len(r.data)
	return n, nil
}

// records collects log records at every level.
type records struct {
	mu  sync.Mutex
	got []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, rec)
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

func (r *records) levels() []slog.Level {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []slog.Level
	for _, rec := range r.got {
		out = append(out, rec.Level)
	}
	return out
}

func (r *records) messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.got {
		if rec.Level >= slog.LevelInfo {
			out = append(out, rec.Message)
		}
	}
	return out
}

// attrs returns the attributes of the last record whose message starts
// with prefix, as text.
func (r *records) attrs(prefix string) map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{}
	for _, rec := range r.got {
		if strings.HasPrefix(rec.Message, prefix) {
			clear(out)
			rec.Attrs(func(a slog.Attr) bool {
				out[a.Key] = a.Value.String()
				return true
			})
		}
	}
	return out
}

func TestWatchErrorsAreWarnedOncePerReason(t *testing.T) {
	logs := &records{}
	w := &Watcher{opts: Options{Logger: slog.New(logs)}}
	logErr := w.watchErrorLogger(context.Background(), discovery.Target{Resource: configMaps, Namespace: "ns"}, newTargetHealth())
	gr := schema.GroupResource{Resource: "configmaps"}
	logErr(apierrors.NewForbidden(gr, "", errors.New(`cannot list resource "configmaps"`)))
	logErr(apierrors.NewForbidden(gr, "", errors.New(`cannot watch resource "configmaps"`)))
	logErr(apierrors.NewNotFound(gr, ""))
	var warnings, debug int
	for _, rec := range logs.got {
		switch rec.Level {
		case slog.LevelWarn:
			warnings++
		case slog.LevelDebug:
			debug++
		}
	}
	if warnings != 1 || debug != 2 {
		t.Fatalf("%d warnings and %d debug lines, want 1 warning (forbidden) and 2 debug (forbidden again, not found)", warnings, debug)
	}

	// A server that went away is not this target's trouble: the outage is
	// logged once for all of them (health.go), each retry at debug level.
	logs.got = nil
	for i := range 5 {
		logErr(&url.Error{Op: "Get", URL: fmt.Sprintf("https://127.0.0.1:6443/api/v1/configmaps?timeoutSeconds=%d&watch=true", 300+i),
			Err: errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")})
	}
	if levels := logs.levels(); !reflect.DeepEqual(levels, []slog.Level{slog.LevelDebug, slog.LevelDebug, slog.LevelDebug, slog.LevelDebug, slog.LevelDebug}) {
		t.Fatalf("5 retries of a refused connection logged %v; want debug lines only", levels)
	}

	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	logs.got = nil
	w.watchErrorLogger(stopped, discovery.Target{Resource: configMaps}, newTargetHealth())(errors.New("connection reset"))
	if len(logs.got) != 0 {
		t.Fatalf("logged %d lines while stopping", len(logs.got))
	}
}

func TestReflectorRetryErrorsGoToDebug(t *testing.T) {
	logs := &records{}
	logger := slog.New(reflectorLogHandler{logs})
	logger.Error("Failed to watch", "err", "forbidden")
	logger.Info("Warning: watch ended with error", "err", errors.New("http2: client connection lost"))
	logger.Info("Warning: watch ended with error", "err", errors.New("an error on the server"))
	logger.Error("Unexpected error when reading response body", "err", errors.New("http2: client connection lost"))
	logger.Error("Unhandled Error", "err", fmt.Errorf("list: %w", context.Canceled)) // a clean stop
	// A streamed list waiting out an outage, every 10 s.
	logger.Info("Warning: event bookmark expired", "err", errors.New("awaiting required bookmark event for initial events stream, no events received for 10.007411899s"))
	// A watch the server closed at once, as it went down.
	logger.Info("Warning: watch ended with error", "err", errors.New("very short watch: reflector.go:343: Unexpected watch close - watch lasted less than a second and no items received"))
	want := []slog.Level{slog.LevelDebug, slog.LevelDebug, slog.LevelInfo, slog.LevelDebug, slog.LevelDebug, slog.LevelDebug, slog.LevelDebug}
	if got := logs.levels(); !reflect.DeepEqual(got, want) {
		t.Fatalf("levels = %v, want %v", got, want)
	}
}

// TestWatchStartRetriesDroppedConnections: a watch whose connection drops
// before the response is tried again from the same resourceVersion rather
// than making the reflector list everything again.
func TestWatchStartRetriesDroppedConnections(t *testing.T) {
	line, err := os.ReadFile("testdata/configmap-event.json")
	if err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	var rvs sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			return // the server answers: only watch requests fail
		}
		rvs.Store(r.URL.Query().Get("resourceVersion"), true)
		if attempts.Add(1) <= 2 {
			conn, _, _ := rw.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		rw.Write(line)
		rw.Write([]byte("\n"))
	}))
	defer srv.Close()
	w, _ := testWatcher()
	wc := rest.Config{Host: srv.URL}
	watcher, err := New(&wc, nil, w.opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go watcher.health.run(ctx)
	lw := &listWatch{target: discovery.Target{Resource: configMaps, Namespace: "w1"}, rest: watcher.rest, toCache: w.cacheTransform(configMaps),
		logErr: func(err error) { t.Errorf("logged %v", err) }, health: watcher.health}
	wi, err := lw.watch(ctx, metav1.ListOptions{ResourceVersion: "206"})
	if err != nil {
		t.Fatal(err)
	}
	defer wi.Stop()
	select {
	case ev := <-wi.ResultChan():
		if c, ok := ev.Object.(*compactObject); ev.Type != watch.Modified || !ok || c.Name != "cm-1" {
			t.Fatalf("event = %v %T", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no event")
	}
	n := 0
	rvs.Range(func(rv, _ any) bool { n++; return rv == "206" })
	if attempts.Load() != 3 || n != 1 {
		t.Fatalf("%d attempts with %d distinct resourceVersions, want 3 from 206", attempts.Load(), n)
	}
}

// TestDecoderTakesHugeObjects: an event far larger than the read buffer
// decodes whole, and its buffer is not kept afterwards.
func TestDecoderTakesHugeObjects(t *testing.T) {
	big := strings.Repeat("x", 3<<20)
	event := `{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big","namespace":"ns","resourceVersion":"9"},"data":{"k":"` + big + `"}}}` + "\n"
	d, logged := decoderFor(t, event+event, 32<<10)
	for range 2 {
		typ, obj, err := d.Decode()
		if err != nil || typ != watch.Modified {
			t.Fatalf("decode = %v, %v", typ, err)
		}
		if got := obj.(*compactObject).decoded["data"].(map[string]any)["k"].(string); len(got) != len(big) {
			t.Fatalf("value of %d bytes, want %d", len(got), len(big))
		}
		if cap(d.long) > maxKeptLine {
			t.Fatalf("kept a %d-byte buffer", cap(d.long))
		}
	}
	if len(*logged) != 0 {
		t.Errorf("logged %v", *logged)
	}
}

// TestDecoderDropsOtherNamespaces: a cluster-wide watch filtered to some
// namespaces passes their objects and turns the rest into bookmarks, so
// that nothing of them is cached yet the watch resumes after them.
func TestDecoderDropsOtherNamespaces(t *testing.T) {
	event := func(typ, ns, rv string) string {
		return `{"type":"` + typ + `","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c","namespace":"` + ns +
			`","resourceVersion":"` + rv + `"},"data":{"k":"v"}}}` + "\n"
	}
	stream := event("ADDED", "team-a", "10") + event("MODIFIED", "other", "11") + event("DELETED", "team-x", "12") + event("MODIFIED", "team-b", "13")
	d, _ := decoderFor(t, stream, 64<<10)
	d.keep = discovery.NamespaceFilter("team-*,!team-x").Matcher()
	var got []string
	for {
		typ, obj, err := d.Decode()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		c := obj.(*compactObject)
		got = append(got, fmt.Sprintf("%s %s@%s", typ, c.Namespace, c.ResourceVersion))
	}
	want := []string{"ADDED team-a@10", "BOOKMARK @11", "BOOKMARK @12", "MODIFIED team-b@13"}
	if !slices.Equal(got, want) {
		t.Fatalf("events:\n got %q\nwant %q", got, want)
	}
}
