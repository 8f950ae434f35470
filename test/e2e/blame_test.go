package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubediff/kubediff/pkg/history/blame"
	"github.com/kubediff/kubediff/pkg/record"
)

// The blame journey of issue 37: a ConfigMap created by a ServiceAccount
// and edited three times, by alice and by it, through an audited API
// server; `kubediff blame` (through --server as a user who may list
// ConfigMaps there, and from the state dir once kubediff stopped) names
// for each key the record that last changed it and its user. A user who
// may not list ConfigMaps gets nothing.
func TestBlameNamesTheChangeAndUserOfEachKey(t *testing.T) {
	c := startWhoCluster(t)
	ns := newNamespace(t)
	p := c.people(t, ns)
	state := t.TempDir()
	w := startBinary(t, "watch", "-o", "json", "-n", ns, "--state-dir", state, "--identity-wait=45s", "--audit-log", c.logPath)
	w.logOnFailure()
	waitNamed(t, w, ns, p)

	n := "-n=" + ns
	as(t, p.deployer, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: blamed}\ndata: {mode: fast, size: small, zone: a}\n", nil, n, "apply", "-f", "-")
	w.waitRecords("ConfigMap", ns, "blamed", 1)
	as(t, p.alice, "", nil, n, "patch", "configmap", "blamed", "-p", `{"data":{"mode":"safe"}}`)
	w.waitRecords("ConfigMap", ns, "blamed", 2)
	as(t, p.deployer, "", nil, n, "patch", "configmap", "blamed", "-p", `{"data":{"size":"large"}}`)
	w.waitRecords("ConfigMap", ns, "blamed", 3)
	as(t, p.alice, "", nil, n, "patch", "configmap", "blamed", "-p", `{"data":{"mode":"slow"}}`)
	records := w.waitRecords("ConfigMap", ns, "blamed", 4)

	viewer := tokenKubeconfig(t, ns, "viewer", ns)
	live := []string{"--server", httpAddress(t, w), "--kubeconfig", viewer}
	want := map[string]struct {
		record *record.Change
		user   string
	}{
		"mode: slow":   {&records[3], "alice"},
		"size: large":  {&records[2], p.deployerName},
		"zone: a":      {&records[0], p.deployerName},
		"name: blamed": {&records[0], p.deployerName},
	}
	var got blame.Blame
	// The history keeps a record once its user is known (the audit log
	// is read in batches) and the state dir's flush has run.
	eventually(t, "blame to name the last change's user", func() bool {
		out, code := cliOutput(t, append([]string{"blame", "cm/blamed", "-n", ns, "-o", "json"}, live...)...)
		got = blame.Blame{}
		return code == 0 && json.Unmarshal([]byte(out), &got) == nil && lineWith(got, "mode: slow").User == "alice"
	})
	for text, wanted := range want {
		l := lineWith(got, text)
		if l.Origin != blame.Record || l.Record != wanted.record.ID || l.User != wanted.user {
			t.Errorf("%q blamed on %+v, want record %s by %s", text, l, wanted.record.ID, wanted.user)
		}
	}
	out, code := cliOutput(t, append([]string{"blame", "cm/blamed", "-n", ns}, live...)...)
	if code != 0 || !strings.Contains(out, blame.ShortID(records[3].ID)+" ") || !strings.Contains(out, "alice (kubectl") || !strings.Contains(out, "│   mode: slow") {
		t.Errorf("blame as text (exit %d):\n%s", code, out)
	}

	// RBAC as every history query: no list on ConfigMaps, no blame.
	pods := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}
	stranger := serviceAccountKubeconfig(t, ns, "pods-only", pods, ns)
	out, code = cliOutput(t, "blame", "cm/blamed", "-n", ns, "--server", httpAddress(t, w), "--kubeconfig", stranger)
	if code != 1 || strings.Contains(out, "mode") || !strings.Contains(out, "RBAC") {
		t.Errorf("a user who may not list ConfigMaps (exit %d):\n%s", code, out)
	}

	w.shutdown()
	out, code = cliOutput(t, "blame", "cm/blamed", "-n", ns, "--state-dir", state, "-o", "json")
	var fromDir blame.Blame
	if code != 0 || json.Unmarshal([]byte(out), &fromDir) != nil || lineWith(fromDir, "size: large").User != p.deployerName {
		t.Errorf("blame from the state dir (exit %d):\n%s", code, out)
	}
}

// lineWith is the blamed line whose text has s.
func lineWith(b blame.Blame, s string) blame.Line {
	for _, l := range b.Lines {
		if strings.Contains(l.Text, s) {
			return l
		}
	}
	return blame.Line{}
}
