package app

import (
	"log/slog"
	"os"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/discovery"
)

func TestAPIServerWarningsAreLoggedOnce(t *testing.T) {
	var logs strings.Builder
	w := &warningLogger{log: slog.New(slog.NewTextHandler(&logs, nil)), seen: map[string]bool{}}
	for range 3 {
		w.HandleWarningHeader(299, "", "v1 Endpoints is deprecated in v1.33+")
	}
	w.HandleWarningHeader(299, "", "another warning")
	if n := strings.Count(logs.String(), "Endpoints is deprecated"); n != 1 {
		t.Fatalf("warning logged %d times, want once:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), "level=WARN msg=\"API server says") {
		t.Errorf("a deprecation is logged as a warning:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "another warning") {
		t.Fatalf("a different warning was swallowed:\n%s", logs.String())
	}
}

// A deprecated type whose replacement is watched too is nothing to tell
// at INFO: the user already sees the replacement's changes.
func TestDeprecationIsQuietWhenTheReplacementIsWatched(t *testing.T) {
	const warning = "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
	endpointSlices := discovery.Target{Resource: discovery.Resource{
		GVR: schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}, Kind: "EndpointSlice"}}
	configMaps := discovery.Target{Resource: discovery.Resource{
		GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap"}}
	for _, tt := range []struct {
		name    string
		watched []discovery.Target
		atInfo  bool
	}{
		{"replacement watched", []discovery.Target{configMaps, endpointSlices}, false},
		{"replacement not watched", []discovery.Target{configMaps}, true},
	} {
		var logs strings.Builder
		w := &warningLogger{log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), seen: map[string]bool{}}
		w.watching(tt.watched)
		w.HandleWarningHeader(299, "", warning)
		if got := strings.Contains(logs.String(), "level=INFO"); got != tt.atInfo || !strings.Contains(logs.String(), "Endpoints is deprecated") {
			t.Errorf("%s: logged at INFO: %v, want %v (at debug otherwise):\n%s", tt.name, got, tt.atInfo, logs.String())
		}
	}
}

func TestColorFollowsFlagTerminalAndNoColor(t *testing.T) {
	var buf strings.Builder
	if UseColor("auto", &buf) {
		t.Error("auto coloured a writer that is not a terminal")
	}
	if !UseColor("always", &buf) || UseColor("never", &buf) {
		t.Error("always/never not obeyed")
	}
	t.Setenv("NO_COLOR", "1")
	if UseColor("auto", os.Stdout) {
		t.Error("auto coloured despite NO_COLOR")
	}
}

func TestRediscoveryKeepsWatchesOfUnavailableGroups(t *testing.T) {
	metrics := discovery.Target{Resource: discovery.Resource{GVR: schema.GroupVersionResource{Group: "metrics.k8s.io", Version: "v1beta1", Resource: "pods"}}}
	gone := discovery.Target{Resource: discovery.Resource{GVR: schema.GroupVersionResource{Group: "old.example.com", Version: "v1", Resource: "things"}}}
	cms := discovery.Target{Resource: discovery.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}}}
	plan := discovery.Plan{Targets: []discovery.Target{cms}, Unavailable: []schema.GroupVersion{{Group: "metrics.k8s.io", Version: "v1beta1"}}}
	got := keepUnavailable(plan, []discovery.Target{cms, metrics, gone})
	var keys []string
	for _, t := range got {
		keys = append(keys, t.Key())
	}
	if want := []string{cms.Key(), metrics.Key()}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("targets = %v, want %v (a removed group stops, an unavailable one stays)", keys, want)
	}
}
