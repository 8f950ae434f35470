package drift

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

// driftText sums up drift for a test: "OWNER KIND/NAME FIELD=DECLARED→NOW, …".
func driftText(ds []Drift) string {
	var out []string
	for _, d := range ds {
		s := OwnerLabel(d.Owner) + " " + d.Object.Kind + "/" + d.Object.Name
		for _, f := range d.Fields {
			declared, _ := json.Marshal(f.Declared)
			now, _ := json.Marshal(f.Now)
			if f.Undeclared {
				declared = []byte("none")
			}
			s += " " + f.Field + "=" + string(declared) + "→" + string(now)
		}
		if d.Until != nil {
			s += " ended by " + d.EndedBy
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

// The ledger reads, from the records the Classifier wrote, what is
// drifted after each one and what came back: it agrees with the
// records' own reverts, and also follows an owner's write that put back
// some of the fields only.
func TestLedgerFollowsDriftThroughRecords(t *testing.T) {
	argo := []any{entry("argocd-controller", "", ownsEverthing)}
	argoAfterScale := []any{entry("argocd-controller", "", merge(argoTracking, ownsTemplate)), entry("kubectl-edit", "", map[string]any{"f:spec": map[string]any{"f:replicas": map[string]any{}}})}
	argoAndEnv := []any{entry("argocd-controller", "", ownsEverthing), entry("kubectl-set", "", ownsTemplate)}
	const owner = "argocd:Application/shop "
	for _, tc := range []struct {
		name  string
		steps []step
		open  []string // after each step
		ended string   // at the end
	}{{
		name: "scaled and patched by hand, then both put back by Argo CD",
		steps: []step{
			{manager: "argocd-controller", entries: argo},
			{manager: "kubectl-edit", change: scale(5), entries: argoAfterScale},
			{manager: "kubectl-edit", change: image("nginx:1.28"), entries: argoAfterScale},
			{manager: "argocd-controller", change: both(scale(2), image("nginx:1.27")), entries: argo},
		},
		open: []string{"", owner + `Deployment/web spec.replicas=2→5`,
			owner + `Deployment/web spec.replicas=2→5 spec.template.spec.containers[0].image="nginx:1.27"→"nginx:1.28"`, ""},
		ended: owner + `Deployment/web spec.replicas=2→5 spec.template.spec.containers[0].image="nginx:1.27"→"nginx:1.28" ended by u1/4/updated`,
	}, {
		name: "Argo CD puts back the replicas only: the image stays drifted",
		steps: []step{
			{manager: "argocd-controller", entries: argo},
			{manager: "kubectl-edit", change: both(scale(5), image("nginx:1.28")), entries: argoAfterScale},
			{manager: "argocd-controller", change: scale(2), entries: argoAfterScale},
		},
		open: []string{"", owner + `Deployment/web spec.replicas=2→5 spec.template.spec.containers[0].image="nginx:1.27"→"nginx:1.28"`,
			owner + `Deployment/web spec.template.spec.containers[0].image="nginx:1.27"→"nginx:1.28"`},
	}, {
		name: "an env var Argo CD's apply leaves in place stays drifted",
		steps: []step{
			{manager: "argocd-controller", entries: argo},
			{manager: "kubectl-set", change: setEnv("DEBUG", "1"), entries: argoAndEnv},
			{manager: "argocd-controller", change: scale(3), entries: argoAndEnv},
		},
		open: []string{"", owner + `Deployment/web spec.template.spec.containers[0].env=none→[{"name":"DEBUG","value":"1"}]`,
			owner + `Deployment/web spec.template.spec.containers[0].env=none→[{"name":"DEBUG","value":"1"}]`},
	}, {
		name: "changed and changed back by hand",
		steps: []step{
			{manager: "argocd-controller", entries: argo},
			{manager: "kubectl-edit", change: image("nginx:1.28"), entries: argo},
			{manager: "kubectl-edit", change: image("nginx:1.27"), entries: argo},
		},
		open:  []string{"", owner + `Deployment/web spec.template.spec.containers[0].image="nginx:1.27"→"nginx:1.28"`, ""},
		ended: owner + `Deployment/web spec.template.spec.containers[0].image="nginx:1.27"→"nginx:1.28" ended by u1/3/updated`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			recs, _ := play(t, argoMarks, tc.steps, nil, nil)
			l := NewLedger()
			for i, rec := range recs {
				l.Add(rec)
				if got := driftText(l.Open()); got != tc.open[i] {
					t.Errorf("after step %d: drifted %q, want %q", i+1, got, tc.open[i])
				}
			}
			if got := driftText(l.Ended(time.Time{})); got != tc.ended {
				t.Errorf("came back: %q, want %q", got, tc.ended)
			}
		})
	}
}

// An object deleted is drifted no more; drift that came back before
// the window asked about is not listed; the seconds are the record's.
func TestLedgerDeletionAndWindow(t *testing.T) {
	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	rec := func(id string, s int, typ string, g *record.GitOps) record.Change {
		return record.Change{ID: id, Time: record.Timestamp(at.Add(time.Duration(s) * time.Second)), Type: typ,
			APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: id[:1], UID: id[:1], GitOps: g}
	}
	outside := &record.GitOps{Via: record.ViaOutside, Tool: record.ToolHelm, Namespace: "shop", Name: "web",
		Drift: []record.DriftedField{{Path: "/data/k", Field: "data.k", Declared: "1", Now: "2"}}}
	l := NewLedger()
	l.Add(rec("a1", 0, record.Updated, outside))
	l.Add(rec("a2", 5, record.Deleted, nil))
	l.Add(rec("b1", 10, record.Updated, outside))
	l.Add(rec("b2", 20, record.Updated, &record.GitOps{Via: record.ViaSync, Tool: record.ToolHelm, Namespace: "shop", Name: "web", Reverts: "b1", DriftSeconds: 9.5}))
	if open := l.Open(); len(open) != 0 {
		t.Errorf("drifted: %s, want nothing", driftText(open))
	}
	ended := l.Ended(at.Add(15 * time.Second))
	if got := driftText(ended); got != `helm:shop/web ConfigMap/b data.k="1"→"2" ended by b2` || ended[0].Seconds != 9.5 {
		t.Errorf("came back since 15s: %q (%v s), want b's drift, 9.5 s", got, ended)
	}
	if got := l.Ended(at.Add(21 * time.Second)); len(got) != 0 {
		t.Errorf("came back since 21s: %s, want nothing", driftText(got))
	}
}

// The Classifier tells when an object's drift opens and when it ends
// (the metric of open drift follows it): once each, however many fields
// drifted, and an object deleted or let go by the memory's bound ends
// its drift.
func TestTransitionsOpenAndEndOnce(t *testing.T) {
	argo := []any{entry("argocd-controller", "", ownsEverthing)}
	argoAfterScale := []any{entry("argocd-controller", "", merge(argoTracking, ownsTemplate)), entry("kubectl-edit", "", map[string]any{"f:spec": map[string]any{"f:replicas": map[string]any{}}})}
	var told []string
	tell := func(tr Transition) { told = append(told, fmt.Sprintf("%s %s %v", tr.Namespace, tr.Owner, tr.Open)) }
	play(t, argoMarks, []step{
		{manager: "argocd-controller", entries: argo},
		{manager: "kubectl-edit", change: scale(5), entries: argoAfterScale},
		{manager: "kubectl-edit", change: image("nginx:1.28"), entries: argoAfterScale},
		{manager: "argocd-controller", change: scale(3), entries: argoAfterScale}, // declares replicas anew: the image stays
		{manager: "argocd-controller", change: image("nginx:1.27"), entries: argo},
	}, nil, tell)
	if want := "shop argocd:Application/shop true; shop argocd:Application/shop false"; strings.Join(told, "; ") != want {
		t.Errorf("told %q, want %q", strings.Join(told, "; "), want)
	}

	told = nil
	cls := New(nil, nil, nil)
	cls.OnTransition(tell)
	cls.objects.max = 1
	for _, uid := range []string{"a", "b"} {
		st := cls.objects.ensure(uid)
		st.open = &openDrift{namespace: "ns-" + uid, owner: "helm:shop/web", fields: map[string]any{"/spec/replicas": int64(2)}}
	}
	cls.Classify(nil, nil, &record.Change{UID: "b", Type: record.Deleted})
	if want := "ns-a helm:shop/web false; ns-b helm:shop/web false"; strings.Join(told, "; ") != want {
		t.Errorf("let go, then deleted: told %q, want %q", strings.Join(told, "; "), want)
	}
}
