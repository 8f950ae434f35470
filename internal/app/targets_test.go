package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

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

// TestRediscoveryFailureIsOneLineAnEpisode: a rediscovery that keeps
// failing is one warning and one line when it works again; failing because
// the API server does not answer is no line at all (the outage says so).
func TestRediscoveryFailureIsOneLineAnEpisode(t *testing.T) {
	var logs strings.Builder
	w, err := watcher.New(&rest.Config{Host: "http://127.0.0.1:1"}, nil, watcher.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := &targetSync{watcher: w, log: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx := context.Background()
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:1/api", Err: syscall.ECONNREFUSED}
	s.reportRediscovery(ctx, refused)
	if logs.Len() != 0 {
		t.Fatalf("the API server not answering is the outage's to say:\n%s", logs.String())
	}
	for range 5 {
		s.reportRediscovery(ctx, errors.New("access review for *.*: the server could not find the requested resource"))
	}
	s.reportRediscovery(ctx, nil)
	s.reportRediscovery(ctx, nil)
	out := logs.String()
	if strings.Count(out, "rediscovery failed") != 1 || strings.Count(out, "rediscovery works again") != 1 || strings.Count(out, "\n") != 2 {
		t.Fatalf("want one line when it failed and one when it worked again:\n%s", out)
	}
}
