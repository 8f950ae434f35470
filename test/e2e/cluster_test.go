package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
)

// repoRoot is where deploy/ lives.
func repoRoot(t *testing.T) string {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	_, err := clients.CoreV1().Namespaces().Create(bg, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
}

// impersonating writes a kubeconfig that acts as the given user and groups.
func impersonating(t *testing.T, user string, groups ...string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range cfg.AuthInfos {
		ai.Impersonate, ai.ImpersonateGroups = user, groups
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDeployManifests: every manifest passes a server-side dry run, and
// kubediff running as the manifests' ServiceAccount, with exactly their
// RBAC, reports changes, takes part in leader election and answers the
// history API (TokenReview and SubjectAccessReview as itself).
func TestDeployManifests(t *testing.T) {
	root := repoRoot(t)
	for _, ns := range []string{"kubediff", "team-a", "team-b"} {
		ensureNamespace(t, ns)
	}
	for _, args := range [][]string{
		{"-k", filepath.Join(root, "deploy", "base")},
		{"-k", filepath.Join(root, "deploy", "namespaced")},
		{"-f", filepath.Join(root, "deploy", "components", "secrets", "rbac.yaml")},
		{"-f", filepath.Join(root, "deploy", "components", "all-custom-resources", "rbac.yaml")},
	} {
		out := kubectl(t, "", append([]string{"apply", "--dry-run=server"}, args...)...)
		if !strings.Contains(out, "(server dry run)") {
			t.Fatalf("dry run of %v:\n%s", args, out)
		}
	}
	kubectl(t, "", "apply", "-k", filepath.Join(root, "deploy", "base"))
	// Gone after the test, cluster-wide objects too: the README's `helm
	// install` (examples_test.go) must not find them.
	t.Cleanup(func() {
		kubectl(t, "", "delete", "-k", filepath.Join(root, "deploy", "base"), "--ignore-not-found", "--wait=false")
		removeNamespace(t, "kubediff")
	})

	runsAs(t, "kubediff", "kubediff", "kubediff")
}

// runsAs runs kubediff as the ServiceAccount namespace/name, with exactly
// the RBAC installed for it and a state dir, electing a leader through the
// Lease lease in that namespace: it must lead, report a change, skip
// Secrets (one warning), log no error, and answer `kubediff history
// --server` for a user with a token: the installed RBAC lets it check the
// user's token (TokenReview) and what the user may list
// (SubjectAccessReview).
func runsAs(t *testing.T, namespace, name, lease string) {
	t.Helper()
	kc := impersonating(t, "system:serviceaccount:"+namespace+":"+name, "system:serviceaccounts", "system:serviceaccounts:"+namespace, "system:authenticated")
	ns := newNamespace(t)
	w := startWatchAs(t, kc, "--state-dir", filepath.Join(t.TempDir(), "state"), "--leader-elect", "--leader-election-namespace", namespace, "--leader-election-id", lease,
		"--leader-election-lease-duration", "4s", "--leader-election-renew-deadline", "3s", "--leader-election-retry-period", "1s")
	eventually(t, "kubediff to lead", func() bool { return strings.Contains(w.stderr.String(), "leading: emitting records") })
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "deployed"}, Data: map[string]string{"k": "v"}}
	if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("ConfigMap", ns, "deployed", 1)
	historyAnswers(t, w, ns)
	if !strings.Contains(w.stderr.String(), `msg="not watching a type kubediff may not read" resource=secrets`) {
		t.Errorf("Secrets should be forbidden without the opt-in:\n%s", w.stderr.String())
	}
	if strings.Contains(w.stderr.String(), "level=ERROR") {
		t.Errorf("errors running with exactly the installed RBAC:\n%s", w.stderr.String())
	}
}

// historyAnswers asks w's history API, as a user who may list ConfigMaps
// in ns only, for the record of the ConfigMap "deployed" there; a user of
// another namespace gets none. Without create on tokenreviews kubediff
// answers 503; without create on subjectaccessreviews every record is
// left out.
func historyAnswers(t *testing.T, w *run, ns string) {
	t.Helper()
	server := httpAddress(t, w)
	viewer := tokenKubeconfig(t, ns, "viewer", ns)
	var out string
	var code int
	// The history is written by the state dir's flush, once a second.
	if !poll(func() bool {
		out, code = cliOutput(t, "history", "cm/deployed", "-n", ns, "--server", server, "--kubeconfig", viewer)
		return code == 0 && strings.Contains(out, `"name":"deployed"`)
	}) {
		t.Errorf("kubediff history --server as a user who may list ConfigMaps in %s (exit %d):\n%s\nkubediff's log:\n%s", ns, code, out, w.stderr.String())
	}
	stranger := tokenKubeconfig(t, ns, "stranger", newNamespace(t))
	if out, code := cliOutput(t, "history", "-n", ns, "--server", server, "--kubeconfig", stranger); code != 0 || out != "" {
		t.Errorf("a user of another namespace sees (exit %d):\n%s", code, out)
	}
}

// poll is eventually that reports instead of failing the test.
func poll(cond func() bool) bool {
	for end := time.Now().Add(deadline); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func httpAddress(t *testing.T, r *run) string {
	t.Helper()
	m := regexp.MustCompile(`msg="serving health and metrics" address=(\S+)`).FindStringSubmatch(r.stderr.String())
	if m == nil {
		t.Fatalf("no HTTP address logged:\n%s", r.stderr.String())
	}
	return "http://" + m[1]
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestHealthReadinessAndMetrics(t *testing.T) {
	ns := newNamespace(t)
	w := startWatch(t, "-n", ns)
	base := httpAddress(t, w)
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := get(t, base+path); code != 200 {
			t.Errorf("%s = %d %s", path, code, body)
		}
	}
	deliveries := regexp.MustCompile(`kubediff_sink_deliveries_total\{sink="stdout"\} (\d+)`)
	_, before := get(t, base+"/metrics")
	m := deliveries.FindStringSubmatch(before)
	if m == nil {
		t.Fatalf("no stdout delivery counter:\n%s", before)
	}
	if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "counted"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("ConfigMap", ns, "counted", 1)
	var after string
	eventually(t, "the delivery counter to move", func() bool {
		_, after = get(t, base+"/metrics")
		n := deliveries.FindStringSubmatch(after)
		return n != nil && n[1] != m[1]
	})
	for _, want := range []string{
		`kubediff_events_observed_total{resource="configmaps",type="added"}`,
		`kubediff_records_emitted_total{resource="configmaps",type="added"}`,
		"kubediff_sink_queue_depth", "kubediff_sink_drops_total", "kubediff_sink_retries_total", "kubediff_sink_failures_total",
		"kubediff_watches_running", "kubediff_last_sync_timestamp_seconds", "kubediff_leader 1",
	} {
		if !strings.Contains(after, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestLeaderTakeover: two replicas, one emits; SIGKILL the leader while
// changes keep coming; the other takes over within the lease duration and
// every change is reported (at least once across both outputs; duplicates
// are counted and logged).
func TestLeaderTakeover(t *testing.T) {
	ns := newNamespace(t)
	const updates = 60
	for i := range 6 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"k": "-1"}}
		if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"watch", "-n", ns, "--leader-elect", "--leader-election-namespace", ns,
		"--leader-election-lease-duration", "4s", "--leader-election-renew-deadline", "3s", "--leader-election-retry-period", "1s"}
	a, b := startBinary(t, args...), startBinary(t, args...)
	var lead, follow *run
	eventually(t, "a leader", func() bool {
		switch {
		case strings.Contains(a.stderr.String(), "leading: emitting records"):
			lead, follow = a, b
		case strings.Contains(b.stderr.String(), "leading: emitting records"):
			lead, follow = b, a
		}
		return lead != nil
	})

	var killedAt time.Time
	for i := range updates {
		if i == updates/3 {
			// Whatever the follower printed so far, it printed while the
			// leader lived.
			if out := follow.stdout.String(); out != "" {
				t.Fatalf("the follower emitted while the leader lived:\n%s", out)
			}
			_ = lead.process.Signal(syscall.SIGKILL)
			killedAt = time.Now()
		}
		patch := fmt.Sprintf(`{"data":{"k":"%d"}}`, i)
		if _, err := clients.CoreV1().ConfigMaps(ns).Patch(bg, fmt.Sprintf("cm-%d", i%6), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // pacing the writer, not waiting for kubediff
	}
	eventually(t, "the follower to take over", func() bool { return strings.Contains(follow.stderr.String(), "leading: emitting records") })
	// The lease is 4 s; the writer goes on patching meanwhile, and on a
	// loaded machine each patch can take a while, so the bound is loose:
	// it catches a follower waiting for something else than the lease
	// (client-go's 15 s default, a relist), not a slow machine.
	if took := time.Since(killedAt); took > 40*time.Second {
		t.Errorf("takeover took %s with a 4 s lease", took)
	}
	seen := func(r *run) map[string]int {
		out := map[string]int{}
		for _, c := range r.records() {
			if c.Type == "updated" && c.Kind == "ConfigMap" && c.Namespace == ns {
				out[fmt.Sprint(c.Changes[0].To)]++
			}
		}
		return out
	}
	var fromLeader, fromFollower map[string]int
	eventually(t, "every update reported", func() bool {
		fromLeader, fromFollower = seen(lead), seen(follow)
		for i := range updates {
			if fromLeader[fmt.Sprint(i)]+fromFollower[fmt.Sprint(i)] == 0 {
				return false
			}
		}
		return true
	})
	duplicates := 0
	for i := range updates {
		if n := fromLeader[fmt.Sprint(i)] + fromFollower[fmt.Sprint(i)]; n > 1 {
			duplicates += n - 1
		}
	}
	// A receiver drops duplicates by id: both replicas must give a change
	// the same one.
	ids := map[string]map[string]bool{} // value → ids
	for _, r := range []*run{lead, follow} {
		for _, c := range r.records() {
			if c.Type == "updated" && c.Kind == "ConfigMap" && c.Namespace == ns {
				v := fmt.Sprint(c.Changes[0].To)
				if ids[v] == nil {
					ids[v] = map[string]bool{}
				}
				ids[v][c.ID] = true
			}
		}
	}
	for v, set := range ids {
		if len(set) != 1 {
			t.Errorf("update to %s reported with %d different ids: %v", v, len(set), set)
		}
	}
	if m := regexp.MustCompile(`msg="leading: emitting records".*`).FindString(follow.stderr.String()); m != "" {
		t.Log(m)
	}
	t.Logf("%d updates: %d reported by the killed leader, %d by the new one, %d duplicates", updates, len(fromLeader), len(fromFollower), duplicates)
}

// TestConfigReload: a changed config file is applied without a restart; an
// invalid one is logged and the running config kept.
func TestConfigReload(t *testing.T) {
	ns := newNamespace(t)
	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	write := func(s string) {
		if err := os.WriteFile(cfgFile+".tmp", []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(cfgFile+".tmp", cfgFile); err != nil {
			t.Fatal(err)
		}
	}
	write("namespaces: [" + ns + "]\n")
	w := startWatch(t, "--config", cfgFile)
	cms := clients.CoreV1().ConfigMaps(ns)
	create := func(name string) {
		if _, err := cms.Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("before")
	w.waitRecords("ConfigMap", ns, "before", 1)

	write("namespaces: [" + ns + "]\nexcludeResources: [configmaps]\n")
	eventually(t, "the new config", func() bool { return strings.Count(w.stderr.String(), "msg=watching") == 2 })
	create("ignored")
	if _, err := clients.CoreV1().Secrets(ns).Create(bg, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "marker"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("Secret", ns, "marker", 1)
	if got := w.recordsFor("ConfigMap", ns, "ignored"); len(got) != 0 {
		t.Fatalf("ConfigMaps are excluded by the new config, yet: %+v", got)
	}

	write("namespaces: [" + ns + "]\noutput: yaml\n")
	eventually(t, "the invalid config to be rejected", func() bool {
		return strings.Contains(w.stderr.String(), "config file changed but is invalid; keeping the running config")
	})
	if _, err := clients.CoreV1().Secrets(ns).Create(bg, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "still-running"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("Secret", ns, "still-running", 1)

	// Valid as a file, but failing when the watch starts: back to the last
	// config that worked.
	write("namespaces: [" + ns + "]\nresources: [nosuchthings]\n")
	eventually(t, "the failing config to be rolled back", func() bool {
		return strings.Contains(w.stderr.String(), "the new config failed to start; going back to the previous one")
	})
	eventually(t, "the previous config to run again", func() bool {
		return strings.Count(w.stderr.String(), "msg=watching") == 3
	})
	if _, err := clients.CoreV1().Secrets(ns).Create(bg, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "after-rollback"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("Secret", ns, "after-rollback", 1)
}
