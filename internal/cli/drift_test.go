package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/state"
)

// driftStep is one write of a ConfigMap Helm release shop/web applied,
// minutes ago: by the release (sync) or outside it, with the fields it
// changed (field=value: declared "1" before, the value now).
type driftStep struct {
	ns, name string
	minutes  float64
	via      string
	reverts  int // the step (1-based) whose drift it puts back, 0: none
	fields   []string
}

// stateDirWithDrift keeps steps as records in a new state dir.
func stateDirWithDrift(t *testing.T, steps []driftStep) string {
	t.Helper()
	dir := t.TempDir()
	store, err := state.Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.SetHistory(history.Policy{Retention: time.Hour, MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	cms := discovery.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true, ShortNames: []string{"cm"}}
	if err := store.KeepTypes([]discovery.Resource{cms}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Millisecond)
	ids := make([]string, len(steps))
	for i, s := range steps {
		c := record.Change{Time: record.Timestamp(now.Add(-time.Duration(s.minutes * float64(time.Minute)))), Type: record.Updated,
			APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: s.ns, Name: s.name, UID: "u-" + s.ns + "-" + s.name,
			ResourceVersion: strings.Repeat("1", i+1), Manager: &record.Manager{Name: map[string]string{record.ViaSync: "helm", record.ViaOutside: "kubectl-edit"}[s.via]},
			GitOps: &record.GitOps{Via: s.via, Tool: record.ToolHelm, Namespace: "shop", Name: "web"}}
		if s.reverts > 0 {
			c.GitOps.Reverts, c.GitOps.DriftSeconds = ids[s.reverts-1], 120
		}
		data := map[string]any{}
		for _, f := range s.fields {
			k, v, _ := strings.Cut(f, "=")
			c.Changes = append(c.Changes, record.FieldChange{Op: record.OpReplace, Path: "/data/" + k, Field: "data." + k, From: "1", To: v})
			if s.via == record.ViaOutside {
				c.GitOps.DeclaredFrom = record.DeclaredFromSync
				c.GitOps.Drift = append(c.GitOps.Drift, record.DriftedField{Path: "/data/" + k, Field: "data." + k, Declared: "1", Before: "1", Now: v})
			}
			data[k] = v
		}
		c.ID = c.StableID()
		ids[i] = c.ID
		cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": s.name, "namespace": s.ns, "uid": c.UID, "resourceVersion": c.ResourceVersion}, "data": data}}
		store.Keep(journal.Entry{Change: c, Resource: cms, New: cm})
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// kubediff drift lists, per owner, the objects still drifted with each
// field's declared value and value now: an outside change never put
// back; of one whose owner put back one field of two (a write naming no
// record), the other field; not one its owner put back, unless --since
// asks what came back; not one outside -n.
func TestDriftListsWhatIsStillDrifted(t *testing.T) {
	dir := stateDirWithDrift(t, []driftStep{
		{"shop", "a", 10, record.ViaSync, 0, []string{"k=1"}},
		{"shop", "a", 8, record.ViaOutside, 0, []string{"k=2"}},
		{"shop", "b", 7, record.ViaOutside, 0, []string{"x=2", "y=3"}},
		{"shop", "b", 6, record.ViaSync, 0, []string{"x=1"}},
		{"shop", "c", 5, record.ViaOutside, 0, []string{"k=9"}},
		{"other", "d", 5, record.ViaOutside, 0, []string{"k=7"}},
		{"shop", "c", 3, record.ViaSync, 5, []string{"k=1"}},
	})
	run := func(args ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), append(args, "--state-dir", dir), &stdout, &stderr)
		return stdout.String(), stderr.String(), code
	}
	out, stderr, code := run("drift", "-n", "shop", "-o", "json")
	var groups []driftGroup
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var g driftGroup
		if err := json.Unmarshal([]byte(line), &g); err != nil {
			t.Fatalf("exit %d, line %q: %v\n%s", code, line, err, stderr)
		}
		groups = append(groups, g)
	}
	if len(groups) != 1 || groups[0].Owner.Owner() != "Helm release shop/web" || len(groups[0].PutBack) != 0 {
		t.Fatalf("drift -n shop: %s, want one owner, Helm release shop/web, nothing put back", out)
	}
	var got []string
	for _, d := range groups[0].Drifted {
		for _, f := range d.Fields {
			got = append(got, d.Object.Name+" "+fieldText(f, ", now "))
		}
	}
	if want := `a data.k: declared "1", now "2"; b data.y: declared "1", now "3"`; strings.Join(got, "; ") != want {
		t.Errorf("drifted: %q, want %q", strings.Join(got, "; "), want)
	}

	out, _, code = run("drift", "-n", "shop", "--since", "1h", "-o", "text")
	for _, want := range []string{"Helm release shop/web\n", "  ConfigMap shop/a, drifted since ", " by kubectl-edit (record ",
		"    ≠ data.k: declared \"1\", now \"2\"\n", "  ConfigMap shop/c, drifted at ", ", put back at ", "    = data.k: declared \"1\", was \"9\"\n"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("drift --since 1h -o text (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
	if out, _, code := run("drift", "-A", "-o", "text"); code != exitUsage {
		t.Errorf("an unknown flag: exit %d, want %d\n%s", code, exitUsage, out)
	}
	if out, _, code := run("drift", "-n", "empty", "-o", "text"); code != 0 || !strings.HasPrefix(out, "Nothing is drifted as far as the history says (it begins at ") {
		t.Errorf("drift in a namespace without drift: exit %d, %q", code, out)
	}
	if out, _, _ := run("drift", "-o", "json"); !strings.Contains(out, `"name":"d"`) {
		t.Errorf("drift in every namespace lacks other/d:\n%s", out)
	}
	// history --drift lists the outside changes and the put-back, not
	// the release's other writes.
	out, _, _ = run("history", "-n", "shop", "--drift", "-o", "text")
	if n := strings.Count(out, "— outside Helm release shop/web"); n != 3 || !strings.Contains(out, "— sync by Helm release shop/web, put back after 120.0s") ||
		strings.Count(out, " updated ConfigMap ") != 4 {
		t.Errorf("history --drift: want the 3 outside changes and the put-back:\n%s", out)
	}
}
