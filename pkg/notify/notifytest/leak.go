package notifytest

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/record"
)

// AssertNoSecretLeak checks a sink the way Alertmanager checks its
// notifiers: cfg holds the secrets (tokens, HMAC keys, URL credentials)
// and points at a receiver that fails; validating, building, delivering
// and retrying for a while must not show any of them in an error or a log
// line.
func AssertNoSecretLeak(t *testing.T, cfg notify.SinkConfig, secrets ...string) {
	t.Helper()
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var errs []error
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	sink, err := cfg.Build(log)
	if err != nil {
		errs = append(errs, err)
	}
	if sink != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := sink.Notify(ctx, canaryRecord); err != nil {
			errs = append(errs, err)
		}
		cancel()
		ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
		q := notify.NewQueue("leak-test", sink, notify.QueueOptions{Size: 1, Log: log,
			Backoff: notify.Backoff{Initial: 10 * time.Millisecond, Max: 40 * time.Millisecond}})
		q.Enqueue(canaryRecord)
		q.Close()
		q.Run(ctx)
		cancel()
	}
	if len(errs) == 0 && logs.Len() == 0 {
		t.Fatal("nothing failed, so nothing was checked: point the sink at a failing receiver")
	}
	for _, secret := range secrets {
		for _, err := range errs {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("secret %q shown in an error: %v", secret, err)
			}
		}
		if strings.Contains(logs.String(), secret) {
			t.Errorf("secret %q shown in the logs:\n%s", secret, logs.String())
		}
	}
}

var canaryRecord = record.Change{Type: record.Updated, APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps",
	Namespace: "ns", Name: "cm", UID: "u-1", ResourceVersion: "7", Changed: "data.k",
	Changes: []record.FieldChange{{Op: record.OpReplace, Path: "/data/k", Field: "data.k", From: "a", To: "b"}}}
