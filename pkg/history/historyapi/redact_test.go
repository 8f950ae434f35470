package historyapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
)

// A Secret's state kept before a redaction rule existed (here: a tool's
// gzip copy of the object in an annotation, kept in the clear by an
// older kubediff) is answered through the current rules: the history
// shows nothing they hide, whenever it was kept.
func TestKeptStatesAnswerThroughTheCurrentRedaction(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "h.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const copyOfValues = "H4sIAAAAAAAA/old-kubediff-kept-this-1f2e"
	secret := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "db", "namespace": "shop", "uid": "s-1",
			"annotations": map[string]any{"objectset.rio.cattle.io/applied": copyOfValues, "kubernetes.io/service-account.name": "builder"}},
		"data": map[string]any{"password": "*** redacted 01234567 ***"}}}
	at := time.Now().Add(-time.Minute)
	entry := journal.Entry{Change: record.Change{Time: record.Timestamp(at), Type: record.Added, APIVersion: "v1", Kind: "Secret",
		Resource: "secrets", Namespace: "shop", Name: "db", UID: "s-1"}, New: secret,
		Resource: change.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret", Namespaced: true}}
	if err := db.Update(func(tx *bolt.Tx) error {
		return history.Write(tx, []journal.Entry{entry}, history.Policy{Retention: time.Hour, MaxBytes: 1 << 20}, at.Add(-time.Second))
	}); err != nil {
		t.Fatal(err)
	}
	reader := history.NewReader(db, nil)
	id := change.NewObjectID("", "secrets", "shop", "db")
	for _, way := range []struct {
		name string
		at   func() ([]byte, error)
	}{
		{"a state dir (Local)", func() ([]byte, error) { return Local{Reader: reader}.At(context.Background(), id, time.Now()) }},
		{"MCP and restore (UserSource)", func() ([]byte, error) { return UserSource{Reader: reader}.At(context.Background(), id, time.Now()) }},
		{"the HTTP API's object", func() ([]byte, error) { return objectOverHTTP(NewHandler(reader, nil), "shop", "secrets/db") }},
	} {
		t.Run(way.name, func(t *testing.T) {
			raw, err := way.at()
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(raw), copyOfValues) || !strings.Contains(string(raw), "builder") {
				t.Errorf("kept Secret answered as %s: want the copy redacted, the service account's name shown", raw)
			}
		})
	}
}

// objectOverHTTP asks h's object endpoint for the object's state now.
func objectOverHTTP(h *Handler, namespace, object string) ([]byte, error) {
	mux := http.NewServeMux()
	h.Register(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, ObjectPath+"?namespace="+namespace+"&object="+object+
		"&at="+url.QueryEscape(time.Now().Format(time.RFC3339Nano)), nil))
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("%s: %d %s", ObjectPath, rec.Code, rec.Body)
	}
	return rec.Body.Bytes(), nil
}
