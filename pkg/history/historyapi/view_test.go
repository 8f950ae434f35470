package historyapi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/blame"
	"github.com/kubediff/kubediff/pkg/history/restore"
)

// statesAt is a Source holding one object's state at two moments.
type statesAt map[time.Time]string

func (s statesAt) Records(context.Context, history.Query) (history.Page, error) {
	return history.Page{}, nil
}

func (s statesAt) At(_ context.Context, _ change.ObjectID, t time.Time) ([]byte, error) {
	return []byte(s[t]), nil
}

func (s statesAt) Resolve(context.Context, string) ([]change.Resource, error) { return nil, nil }

// The two-moment diff reads as watch does: a scale from 2 to 5 shows as
// that, not led by managedFields reshuffling and resourceVersion; asked
// for everything, they are there.
func TestTwoMomentDiffHidesWhatWatchHides(t *testing.T) {
	from, to := time.Unix(100, 0), time.Unix(200, 0)
	src := statesAt{
		from: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop","resourceVersion":"41","generation":3,
			"managedFields":[{"manager":"kubectl","operation":"Update","time":"2026-11-23T13:00:00Z"},{"manager":"kube-controller-manager","operation":"Update","subresource":"status"}]},
			"spec":{"replicas":2},"status":{"conditions":[{"type":"Available","status":"True","lastUpdateTime":"2026-11-23T13:00:00Z"}]}}`,
		to: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop","resourceVersion":"57","generation":4,
			"managedFields":[{"manager":"kube-controller-manager","operation":"Update","subresource":"status"},{"manager":"kubectl","operation":"Update","time":"2026-11-23T14:00:00Z"}]},
			"spec":{"replicas":5},"status":{"conditions":[{"type":"Available","status":"True","lastUpdateTime":"2026-11-23T14:00:00Z"}]}}`,
	}
	id := change.NewObjectID("apps", "deployments", "shop", "web")
	shown, err := UnifiedDiff(context.Background(), src, id, "deploy/web", from, to, WatchView())
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	for _, line := range strings.Split(shown, "\n") {
		if (strings.HasPrefix(line, "-") || strings.HasPrefix(line, "+")) && !strings.HasPrefix(line, "---") && !strings.HasPrefix(line, "+++") {
			changed = append(changed, strings.Join(strings.Fields(line), " "))
		}
	}
	if strings.Join(changed, "|") != "- replicas: 2|+ replicas: 5" {
		t.Errorf("changed lines = %q, want the scale alone:\n%s", changed, shown)
	}
	everything, err := UnifiedDiff(context.Background(), src, id, "deploy/web", from, to, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"+  resourceVersion: \"57\"", "managedFields", "lastUpdateTime"} {
		if !strings.Contains(everything, want) {
			t.Errorf("asked for everything, the diff lacks %q:\n%s", want, everything)
		}
	}
}

func (statesAt) Blame(context.Context, change.ObjectID, time.Time, bool) (blame.Blame, error) {
	return blame.Blame{}, history.ErrNotFound
}

func (statesAt) Restore(context.Context, change.ObjectID, time.Time) (restore.Manifest, error) {
	return restore.Manifest{}, history.ErrNotFound
}
