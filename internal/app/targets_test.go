package app

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/watcher"
)

func TestSyncProgressSaysWhatIsLeft(t *testing.T) {
	p := watcher.Progress{Watches: 40, Synced: 38, Objects: 100000}
	if got := fmt.Sprint(syncProgress(p, 10*time.Second)); got != "[synced 38 of 40 objects 100000]" {
		t.Errorf("without a count: %s", got)
	}
	p.Expected = 300000
	if got := fmt.Sprint(syncProgress(p, 10*time.Second)); got != "[synced 38 of 40 objects 100000 expected 300000 remaining 20s]" {
		t.Errorf("with a count: %s", got)
	}
}

// TestUnavailableGroupIsOneLineAnEpisode: an aggregated API that stays
// down is said once, not at every rediscovery, and its return once.
func TestUnavailableGroupIsOneLineAnEpisode(t *testing.T) {
	var logs strings.Builder
	s := &targetSync{log: slog.New(slog.NewTextHandler(&logs, nil))}
	metricsGV := schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}
	for range 5 {
		s.reportUnavailable([]schema.GroupVersion{metricsGV})
	}
	s.reportUnavailable(nil)
	s.reportUnavailable(nil)
	out := logs.String()
	if strings.Count(out, "API groups unavailable") != 1 || strings.Count(out, "no longer unavailable") != 1 || !strings.Contains(out, "metrics.k8s.io/v1beta1") {
		t.Fatalf("want one line when it went and one when it came back:\n%s", out)
	}
}
