package e2e

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kubediff/kubediff/internal/testenv"
	"github.com/kubediff/kubediff/internal/testpg"
	"github.com/kubediff/kubediff/pkg/record"
)

// TestHistoryStoreOutlivesThePod: kubediff writes its history to a real
// PostgreSQL while a ConfigMap changes. The database is stopped mid-
// stream (the records still print at once), kubediff is SIGKILLed while
// rows wait, the database comes back and a new kubediff starts on the
// same state dir; at the end the state dir is deleted, as a Pod's
// emptyDir is. The database then answers `history` and `get --at` as the
// state dir did, with every change once.
func TestHistoryStoreOutlivesThePod(t *testing.T) {
	pg := testpg.StartPostgres(t)
	ns := newNamespace(t)
	dir := t.TempDir() + "/state"
	steady := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "steady"}, Data: map[string]string{"level": "never changed"}}
	if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, steady, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secrets := clients.CoreV1().Secrets(ns)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, StringData: map[string]string{"password": "first-s3cr3t-value"}}
	if _, err := secrets.Create(bg, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	watch := []string{"watch", "-n", ns, "--state-dir", dir, "--history-store", pg.DSN}
	first := startBinary(t, watch...)
	first.logOnFailure()
	cms := clients.CoreV1().ConfigMaps(ns)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"level": "1"}}
	if _, err := cms.Create(bg, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setLevel := func(level string) {
		t.Helper()
		if _, err := cms.Patch(bg, "settings", types.MergePatchType, []byte(`{"data":{"level":"`+level+`"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setLevel("2")
	first.waitRecords("ConfigMap", ns, "settings", 2)
	if _, err := secrets.Patch(bg, "creds", types.MergePatchType, []byte(`{"stringData":{"password":"second-s3cr3t-value"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	first.waitRecords("Secret", ns, "creds", 1)

	pg.Stop()
	setLevel("3")
	setLevel("4")
	first.waitRecords("ConfigMap", ns, "settings", 4) // the stream does not wait for the database
	eventually(t, "the outage said once", func() bool { return strings.Contains(first.stderr.String(), "history store: cannot write") })
	_ = first.process.Kill()
	first.stopped = true
	<-first.done

	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	second := startBinary(t, watch...)
	second.logOnFailure()
	setLevel("5")
	second.waitRecords("ConfigMap", ns, "settings", 1)
	second.shutdown()

	fromDir, code := cliOutput(t, "history", "configmaps", "-n", ns, "--state-dir", dir)
	if code != 0 {
		t.Fatalf("history of the state dir: exit %d: %s", code, fromDir)
	}
	fromDB := historyFromStore(t, pg.DSN, ns, fromDir)
	recs := testenv.ParseRecords(t, fromDB)
	var levels []string
	for _, c := range recs {
		for _, fc := range c.Changes {
			levels = append(levels, fc.To.(string))
		}
	}
	if len(recs) != 5 || recs[0].Type != record.Added || !slices.Equal(levels, []string{"2", "3", "4", "5"}) {
		t.Fatalf("the database's history: %d records, levels %v; want added and 2, 3, 4, 5 each once:\n%s", len(recs), levels, fromDB)
	}
	// A moment after a record and before the next (two patches may share
	// a millisecond): the object as that record left it.
	i := 1
	for i < len(recs)-2 && !time.Time(recs[i+1].Time).After(time.Time(recs[i].Time)) {
		i++
	}
	at, level := time.Time(recs[i].Time).Format(time.RFC3339Nano), levels[i-1]
	getDir, _ := cliOutput(t, "get", "cm", "settings", "-n", ns, "--at", at, "--state-dir", dir)
	getDB, code := cliOutput(t, "get", "cm", "settings", "-n", ns, "--at", at, "--history-store", pg.DSN)
	if code != 0 || getDB != getDir || !strings.Contains(getDB, "level: \""+level+"\"") {
		t.Errorf("get --at %s: from the database (exit %d):\n%s\nfrom the state dir:\n%s", at, code, getDB, getDir)
	}
	steadyDir, _ := cliOutput(t, "get", "cm", "steady", "-n", ns, "--state-dir", dir)
	steadyDB, code := cliOutput(t, "get", "cm", "steady", "-n", ns, "--history-store", pg.DSN)
	if code != 0 || steadyDB != steadyDir || !strings.Contains(steadyDB, "never changed") {
		t.Errorf("get of a ConfigMap that never changed, from the database (exit %d):\n%s\nfrom the state dir:\n%s", code, steadyDB, steadyDir)
	}
	for _, value := range []string{"first-s3cr3t-value", "second-s3cr3t-value"} {
		if where := testpg.FindInPostgres(t, pg.DSN, value); where != "" {
			t.Errorf("a Secret's value reached the database: %s", where)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if again := historyFromStore(t, pg.DSN, ns, fromDir); again != fromDB {
		t.Errorf("with the state dir gone the database answers otherwise:\n%s", again)
	}
}

// historyFromStore is `history configmaps -n ns` read from the database;
// it must be what the state dir said.
func historyFromStore(t *testing.T, dsn, ns, want string) string {
	t.Helper()
	got, code := cliOutput(t, "history", "configmaps", "-n", ns, "--history-store", dsn)
	if code != 0 || got != want {
		t.Fatalf("history from the database (exit %d):\n%s\nfrom the state dir:\n%s", code, got, want)
	}
	return got
}

// TestARescheduledReplicaAnswersFromTheDatabase: a kubediff with a
// history store keeps changes in two namespaces, then stops, as a Pod is
// drained; its replacement starts with an empty state dir (a new
// emptyDir) and serves the history API from the database: alice, who may
// list ConfigMaps in her namespace only, gets the first Pod's records of
// her namespace and none of the other's, and the change the new Pod
// printed a moment ago is in the answer.
func TestARescheduledReplicaAnswersFromTheDatabase(t *testing.T) {
	pg := testpg.StartPostgres(t)
	mine, other := newNamespace(t), newNamespace(t)
	store := []string{"--history-store", pg.DSN, "-n", mine + "," + other}
	first := startBinary(t, append([]string{"watch", "--state-dir", t.TempDir() + "/first"}, store...)...)
	first.logOnFailure()
	for _, ns := range []string{mine, other} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"level": "1"}}
		if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		first.waitRecords("ConfigMap", ns, "settings", 1)
	}
	first.shutdown()

	second := startBinary(t, append([]string{"watch", "--state-dir", t.TempDir() + "/second"}, store...)...)
	second.logOnFailure()
	if _, err := clients.CoreV1().ConfigMaps(mine).Patch(bg, "settings", types.MergePatchType, []byte(`{"data":{"level":"2"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	second.waitRecords("ConfigMap", mine, "settings", 1)
	alice := tokenKubeconfig(t, mine, "alice", mine)
	out, code := cliOutput(t, "history", "--server", httpAddress(t, second), "--kubeconfig", alice)
	recs := testenv.ParseRecords(t, out)
	if code != 0 || len(recs) != 2 || recs[0].Type != record.Added || recs[1].Type != record.Updated {
		t.Fatalf("alice's history through the new replica (exit %d): want the first Pod's creation and the new Pod's update:\n%s", code, out)
	}
	for _, c := range recs {
		if c.Namespace != mine {
			t.Errorf("alice sees a record of %s", c.Namespace)
		}
	}
}

// TestTwoClustersAndTwoReplicasShareOneDatabase: cluster alpha runs two
// kubediff replicas with leader election, cluster beta one kubediff, all
// writing to one PostgreSQL. The leader is SIGKILLed mid-stream; the
// other replica takes over. The database then holds each change of each
// cluster once: `history` lists both clusters' together, `--cluster`
// one's alone.
func TestTwoClustersAndTwoReplicasShareOneDatabase(t *testing.T) {
	pg := testpg.StartPostgres(t)
	ns := newNamespace(t)
	beta, _, betaClients := startBeta(t, ns)
	kc := twoContexts(t, beta)
	common := []string{"--kubeconfig", kc, "-n", ns, "--resources", "configmaps", "--history-store", pg.DSN}
	alpha := append([]string{"watch", "--context", "alpha", "--leader-elect", "--leader-election-namespace", ns,
		"--leader-election-lease-duration", "4s", "--leader-election-renew-deadline", "3s", "--leader-election-retry-period", "1s"}, common...)
	a1 := startBinary(t, append(alpha, "--state-dir", t.TempDir()+"/a1")...)
	a2 := startBinary(t, append(alpha, "--state-dir", t.TempDir()+"/a2")...)
	b := startBinary(t, append([]string{"watch", "--context", "beta", "--state-dir", t.TempDir() + "/b"}, common...)...)
	var lead, follow *run
	eventually(t, "a leader in alpha", func() bool {
		switch {
		case strings.Contains(a1.stderr.String(), "leading: emitting records"):
			lead, follow = a1, a2
		case strings.Contains(a2.stderr.String(), "leading: emitting records"):
			lead, follow = a2, a1
		}
		return lead != nil
	})
	follow.logOnFailure()
	b.logOnFailure()
	set := func(cs kubernetes.Interface, level string) {
		t.Helper()
		if _, err := cs.CoreV1().ConfigMaps(ns).Patch(bg, "settings", types.MergePatchType, []byte(`{"data":{"level":"`+level+`"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, cs := range []kubernetes.Interface{clients, betaClients} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"level": "0"}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	set(clients, "1")
	lead.waitRecords("ConfigMap", ns, "settings", 2)
	_ = lead.process.Kill()
	lead.stopped = true
	set(clients, "2")
	set(betaClients, "1")
	eventually(t, "the follower leading", func() bool { return strings.Contains(follow.stderr.String(), "leading: emitting records") })
	set(clients, "3")
	follow.waitRecords("ConfigMap", ns, "settings", 1)

	levels := func(out string) map[string]int {
		n := map[string]int{}
		for _, c := range testenv.ParseRecords(t, out) {
			key := c.Cluster.Name + " " + c.Type
			for _, fc := range c.Changes {
				key += " " + fc.To.(string)
			}
			n[key]++
		}
		return n
	}
	want := map[string]int{"alpha added": 1, "alpha updated 1": 1, "alpha updated 2": 1, "alpha updated 3": 1, "beta added": 1, "beta updated 1": 1}
	var got map[string]int
	eventually(t, "each change of each cluster in the database", func() bool {
		out, _ := cliOutput(t, "history", "configmaps", "-n", ns, "--history-store", pg.DSN)
		got = levels(out)
		return fmt.Sprint(got) == fmt.Sprint(want)
	})
	out, code := cliOutput(t, "history", "configmaps", "-n", ns, "--history-store", pg.DSN, "--cluster", "beta")
	if got := levels(out); code != 0 || fmt.Sprint(got) != "map[beta added:1 beta updated 1:1]" {
		t.Errorf("--cluster beta (exit %d): %v", code, got)
	}
	if out, code := cliOutput(t, "get", "cm", "settings", "-n", ns, "--history-store", pg.DSN); code != 2 || !strings.Contains(out, "--cluster") {
		t.Errorf("get without --cluster on a database of two clusters (exit %d): %s", code, out)
	}
	fleetOverMCP(t, pg.DSN, ns)
	fleetPage(t, pg.DSN, ns)
}

// fleetPage: `kubediff ui --history-store` in Chromium shows both
// clusters' ConfigMap as two rows naming their clusters; filtered to
// beta, beta's alone; a row opens its own cluster's object page.
func fleetPage(t *testing.T, dsn, ns string) {
	t.Helper()
	browser := newBrowser(t)
	page := startUI(t, "--history-store", dsn)
	base := strings.TrimSuffix(page, regexp.MustCompile(`/open\?.*$`).FindString(page))
	inBrowser(t, browser, "the way in", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(".legend")))
	inBrowser(t, browser, "the fleet's timeline", chromedp.Navigate(base+"/?namespace="+ns+"&from=30m"), chromedp.WaitVisible(chromedp.CSS(".legend")))
	text := mainText(t, browser)
	for _, want := range []string{"settings ConfigMap · " + ns + " · alpha", "settings ConfigMap · " + ns + " · beta"} {
		if !strings.Contains(text, want) {
			t.Errorf("the fleet's timeline lacks %q:\n%s", want, text)
		}
	}
	screenshot(t, browser, "fleet")
	inBrowser(t, browser, "filtered to beta", chromedp.Navigate(base+"/?namespace="+ns+"&from=30m&cluster=beta"), chromedp.WaitVisible(chromedp.CSS(".legend")))
	if text = mainText(t, browser); !strings.Contains(text, "2 changes") || strings.Contains(text, "alpha") {
		t.Errorf("filtered to beta:\n%s", text)
	}
	inBrowser(t, browser, "beta's object page", chromedp.Navigate(base+"/?namespace="+ns+"&from=30m"), chromedp.WaitVisible(chromedp.CSS(".legend")),
		chromedp.Click(chromedp.CSS(`a.label[href*="cluster=beta"]`)), chromedp.WaitVisible(chromedp.CSS(".record")))
	if text = mainText(t, browser); strings.Count(text, "updated") != 1 {
		t.Errorf("beta's object page should hold its one update:\n%s", text)
	}
}

// fleetOverMCP: an assistant, through the SDK's client, lists both
// clusters' changes together and asks one cluster's object by the
// cluster argument; asked without it, it is told to name one.
func fleetOverMCP(t *testing.T, dsn, ns string) {
	t.Helper()
	relay := startMCPRelay(t, "--history-store", dsn)
	if got := listChanges(t, relay.session, ns); len(got) < 6 {
		t.Errorf("list_changes of the fleet: %d changes, want both clusters' 6: %+v", len(got), got)
	}
	at := callTool(t, relay.session, "object_at", map[string]any{"type": "cm", "name": "settings", "namespace": ns, "cluster": "beta"}, nil)
	if !strings.Contains(at, `level: "1"`) {
		t.Errorf("object_at of beta's ConfigMap:\n%s", at)
	}
	res, err := relay.session.CallTool(bg, &mcp.CallToolParams{Name: "object_at", Arguments: map[string]any{"type": "cm", "name": "settings", "namespace": ns}})
	if err != nil || !res.IsError {
		t.Errorf("object_at without a cluster on a fleet: %v, %+v", err, res)
	} else if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "cluster") {
		t.Errorf("object_at without a cluster says: %s", text)
	}
}

// TestImportAStateDirOnce: `kubediff history import` copies a state dir
// kept without a store into the database, which then answers as the
// state dir does; a second import writes nothing twice; a state dir a
// kubediff runs with is refused, naming what to do.
func TestImportAStateDirOnce(t *testing.T) {
	pg := testpg.StartPostgres(t)
	ns, dir := stateDirWithOneRecord(t)
	for range 2 {
		out, code := cliOutput(t, "history", "import", "--state-dir", dir, "--history-store", pg.DSN, "--cluster", "laptop")
		if code != 0 || !strings.Contains(out, "imported") {
			t.Fatalf("import (exit %d): %s", code, out)
		}
	}
	fromDir, _ := cliOutput(t, "history", "-n", ns, "--state-dir", dir)
	fromDB, code := cliOutput(t, "history", "-n", ns, "--history-store", pg.DSN, "--cluster", "laptop")
	if code != 0 || fromDB != fromDir || strings.Count(fromDB, "\n") != 1 {
		t.Errorf("history after two imports (exit %d):\n%s\nfrom the state dir:\n%s", code, fromDB, fromDir)
	}
	running := startBinary(t, "watch", "-n", ns, "--state-dir", dir)
	if out, code := cliOutput(t, "history", "import", "--state-dir", dir, "--history-store", pg.DSN); code != 1 || !strings.Contains(out, "stop it first") {
		t.Errorf("import of a state dir in use (exit %d): %s", code, out)
	}
	running.shutdown()
}
