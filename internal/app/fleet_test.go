package app

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestTextLinesNameTheirCluster: with several clusters, each line of a
// text record starts with its cluster, and a record is one write.
func TestTextLinesNameTheirCluster(t *testing.T) {
	var out strings.Builder
	shared := &lockedWriter{w: &out}
	prod := &prefixWriter{prefix: []byte("[prod] "), w: shared}
	if _, err := io.WriteString(prod, "12:00 updated ConfigMap shop/settings\n  ~ data.v: 1 → 2\n"); err != nil {
		t.Fatal(err)
	}
	want := "[prod] 12:00 updated ConfigMap shop/settings\n[prod]   ~ data.v: 1 → 2\n"
	if out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}

// TestFleetServesEachClusterAndNamesTheUnready: /readyz names the
// clusters not ready; other paths go to the cluster ?cluster= names, the
// first by default, and an unknown one is a 404 naming the clusters.
func TestFleetServesEachClusterAndNamesTheUnready(t *testing.T) {
	f := &fleetHTTP{order: []string{"dev", "prod"}, ready: map[string]func() error{}, muxes: map[string]*http.ServeMux{}}
	for _, name := range f.order {
		stop, _ := f.serveFor(name)(func() error {
			if name == "prod" {
				return errors.New("the API server does not answer")
			}
			return nil
		}, func(mux *http.ServeMux) {
			mux.HandleFunc("/api/v1/types", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, name) })
		})
		defer stop()
	}
	if err := f.readiness(); err == nil || err.Error() != "cluster prod: the API server does not answer" {
		t.Errorf("readiness = %v", err)
	}
	mux := http.NewServeMux()
	f.routes(mux)
	for query, want := range map[string]string{"": "dev", "?cluster=prod": "prod", "?cluster=qa": "not watched here"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/types"+query, nil))
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("GET /api/v1/types%s = %d %q, want %q", query, rec.Code, rec.Body.String(), want)
		}
	}
}

// TestContextNamesMakeDirectoryNames: each context's state lives in a
// directory of its own under STATE_DIR/clusters: two names never share
// one (not even on a file system that ignores case), none escapes
// clusters/ or hides, and simple names keep the directories they had.
func TestContextNamesMakeDirectoryNames(t *testing.T) {
	for name, want := range map[string]string{
		"dev": "dev", "kind-kind": "kind-kind", "gke_proj_zone_c1": "gke_proj_zone_c1", "minikube.local": "minikube.local",
		"arn:aws:eks:eu-west-1:123:cluster/prod": "arn%3Aaws%3Aeks%3Aeu-west-1%3A123%3Acluster%2Fprod",
	} {
		if got := dirName(name); got != want {
			t.Errorf("dirName(%q) = %q, want %q", name, got, want)
		}
	}
	names := []string{"x/y", "x_y", "x%2Fy", "x%2fy", "..", ".", ".hidden", "%2E.", "Prod", "prod", "PROD", "a b", "a%20b", "ü", "../etc", "x\\y", "x:y"}
	dirs := map[string]string{} // lowercased (a case-blind file system), to the name
	root := filepath.Join("state", "clusters")
	for _, name := range names {
		dir := ClusterStateDir("state", name)
		if filepath.Dir(dir) != root || strings.HasPrefix(filepath.Base(dir), ".") {
			t.Errorf("context %q: directory %q is not a visible entry of %s", name, dir, root)
		}
		key := strings.ToLower(filepath.Base(dir))
		if other, ok := dirs[key]; ok {
			t.Errorf("contexts %q and %q share the directory %q", other, name, dir)
		}
		dirs[key] = name
	}
}

// TestATokenGoesOnlyToTheClusterItNames: a bearer token does not say
// which cluster issued it, so a request that carries one names its
// cluster, and only that cluster's handlers (which review the token)
// see it. A kubediff of several clusters refuses a token naming none;
// one of a single cluster refuses a request naming another cluster.
func TestATokenGoesOnlyToTheClusterItNames(t *testing.T) {
	var reached []string
	handler := func(name string) func(*http.ServeMux) {
		return func(mux *http.ServeMux) {
			mux.HandleFunc("/api/v1/types", func(w http.ResponseWriter, _ *http.Request) { reached = append(reached, name) })
		}
	}
	f := &fleetHTTP{order: []string{"dev", "prod"}, ready: map[string]func() error{}, muxes: map[string]*http.ServeMux{}}
	for _, name := range f.order {
		stop, _ := f.serveFor(name)(func() error { return nil }, handler(name))
		defer stop()
	}
	fleet := http.NewServeMux()
	f.routes(fleet)
	single := http.NewServeMux()
	onlyCluster("dev", handler("single dev"))(single)
	for _, c := range []struct {
		mux         *http.ServeMux
		query       string
		token       bool
		code        int
		reached, in string
	}{
		{fleet, "", true, http.StatusBadRequest, "", "name the one your token is for with ?cluster=NAME"},
		{fleet, "?cluster=prod", true, http.StatusOK, "prod", ""},
		{fleet, "", false, http.StatusOK, "dev", ""}, // the page, a first 401
		{single, "?cluster=prod", true, http.StatusNotFound, "", `cluster \"prod\": not watched here (this kubediff watches dev alone`},
		{single, "?cluster=dev", true, http.StatusOK, "single dev", ""},
		{single, "", true, http.StatusOK, "single dev", ""},
	} {
		reached = nil
		req := httptest.NewRequest(http.MethodGet, "/api/v1/types"+c.query, nil)
		if c.token {
			req.Header.Set("Authorization", "Bearer secret")
		}
		rec := httptest.NewRecorder()
		c.mux.ServeHTTP(rec, req)
		if rec.Code != c.code || strings.Join(reached, ",") != c.reached || !strings.Contains(rec.Body.String(), c.in) {
			t.Errorf("GET %s (token %v): %d %q reaching [%s], want %d %q reaching [%s]", c.query, c.token, rec.Code, rec.Body.String(), strings.Join(reached, ","), c.code, c.in, c.reached)
		}
	}
}
