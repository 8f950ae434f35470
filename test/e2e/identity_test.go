package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubediff/kubediff/internal/testcert"
	"github.com/kubediff/kubediff/internal/testenv"
	"github.com/kubediff/kubediff/pkg/record"
)

// whoCluster is an audited API server (deploy/audit/policy.yaml) whose
// webhook posts to a port a `kubediff watch` takes, and whose log file
// one follows.
type whoCluster struct {
	server      *testenv.APIServer
	files       *testenv.AuditTLS
	webhookAddr string
	logPath     string
}

// freeAddress is a loopback address nothing listens on now, for a
// kubediff started later.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func startWhoCluster(t *testing.T) *whoCluster {
	t.Helper()
	dir := t.TempDir()
	files, err := testenv.NewAuditTLS(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := &whoCluster{files: files, webhookAddr: freeAddress(t), logPath: filepath.Join(dir, "audit", "audit.log")}
	kubeconfig := filepath.Join(dir, "audit-webhook.kubeconfig")
	if err := testenv.WriteWebhookKubeconfig(kubeconfig, "https://"+c.webhookAddr+"/audit", files.ServingCA, files.ClientCert, files.ClientKey, ""); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Dir(c.logPath), 0o700); err != nil {
		t.Fatal(err)
	}
	c.server, err = env.StartAuditedAPIServer(testenv.AuditOptions{
		PolicyFile:        filepath.Join(repoRoot(t), "deploy", "audit", "policy.yaml"),
		WebhookConfigFile: kubeconfig, BatchMaxWait: time.Second, LogPath: c.logPath,
		Tokens: []string{`alice-token,alice,alice-uid,"devs"`, `bob-token,bob,bob-uid,"system:masters"`},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.server.Kill() })
	c.server.LogOnFailure(t)
	return c
}

// webhookArgs are the flags that serve the audit webhook c's API server
// posts to.
func (c *whoCluster) webhookArgs() []string {
	return []string{"--audit-webhook-address", c.webhookAddr, "--audit-webhook-cert-file", c.files.ServingCert,
		"--audit-webhook-key-file", c.files.ServingKey, "--audit-webhook-client-ca-file", c.files.ClientCA}
}

// tokenKubeconfigFor writes a kubeconfig for the audited server with a
// bearer token, for kubectl run as that user.
func (c *whoCluster) tokenKubeconfigFor(t *testing.T, name, token string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["audited"] = &clientcmdapi.Cluster{Server: c.server.URL, CertificateAuthorityData: env.Config.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["audited"] = &clientcmdapi.Context{Cluster: "audited", AuthInfo: name}
	cfg.CurrentContext = "audited"
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// people are alice (a static token) and the ServiceAccount deployer (a
// token from the TokenRequest API), both allowed to write Deployments,
// ConfigMaps and Secrets in ns, as kubectl kubeconfigs of the audited
// server.
type people struct{ alice, deployer, deployerName string }

func (c *whoCluster) people(t *testing.T, ns string) people {
	t.Helper()
	grantWrites(t, ns)
	if _, err := clients.CoreV1().ServiceAccounts(ns).Create(bg, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token, err := clients.CoreV1().ServiceAccounts(ns).CreateToken(bg, "deployer", &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := people{alice: c.tokenKubeconfigFor(t, "alice", "alice-token"), deployer: c.tokenKubeconfigFor(t, "deployer", token.Status.Token),
		deployerName: "system:serviceaccount:" + ns + ":deployer"}
	// RBAC reaches the audited server through its own watch: wait for it.
	eventually(t, "alice and deployer to be allowed to write in "+ns, func() bool {
		return kubectlAsOK(p.alice, "-n", ns, "auth", "can-i", "patch", "deployments") && kubectlAsOK(p.deployer, "-n", ns, "auth", "can-i", "delete", "configmaps")
	})
	return p
}

func kubectlAsOK(kubeconfig string, args ...string) bool {
	return exec.Command(env.Kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...).Run() == nil
}

// as runs kubectl as a user's kubeconfig, with environment variables env
// (KUBE_EDITOR for an edit).
func as(t *testing.T, kubeconfig, stdin string, environ []string, args ...string) {
	t.Helper()
	cmd := exec.Command(env.Kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), environ...)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// wantWho is a record the operator's commands make and who made it.
type wantWho struct{ kind, name, typ, what, user string }

const (
	firstPassword  = "correct-horse-battery-1"
	secondPassword = "correct-horse-battery-2"
)

// operate does what an operator would in ns, as alice and as deployer,
// with kubectl through the audited server: scale three times (a
// controller writing the Deployment's status in between, as
// kube-controller-manager does), set an image, apply, edit, write a
// Secret, delete. It returns the records it makes, in order per object.
func operate(t *testing.T, ns string, p people) []wantWho {
	t.Helper()
	n := "-n=" + ns
	as(t, p.alice, "", nil, n, "create", "deployment", "web", "--image=nginx:1.27")
	want := []wantWho{{"Deployment", "web", "added", "", "alice"}}
	for _, replicas := range []int{5, 2, 3} {
		as(t, p.alice, "", nil, n, "scale", "deployment/web", fmt.Sprintf("--replicas=%d", replicas))
		controllerWritesStatus(t, ns, int32(replicas))
		want = append(want, wantWho{"Deployment", "web", "updated", fmt.Sprintf("spec.replicas → %d", replicas), "alice"})
	}
	as(t, p.alice, "", nil, n, "set", "image", "deployment/web", "nginx=nginx:1.28")
	want = append(want, wantWho{"Deployment", "web", "updated", "image", "alice"})
	settings := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: %s}\n"
	as(t, p.deployer, fmt.Sprintf(settings, "fast"), nil, n, "apply", "-f", "-")
	as(t, p.deployer, fmt.Sprintf(settings, "safe"), nil, n, "apply", "-f", "-")
	as(t, p.alice, "", []string{"KUBE_EDITOR=sed -i s/mode:\\ safe/mode:\\ slow/"}, n, "edit", "configmap", "settings")
	want = append(want, wantWho{"ConfigMap", "settings", "added", "", p.deployerName}, wantWho{"ConfigMap", "settings", "updated", "safe", p.deployerName},
		wantWho{"ConfigMap", "settings", "updated", "slow", "alice"})
	as(t, p.alice, "", nil, n, "create", "secret", "generic", "db", "--from-literal=password="+firstPassword)
	as(t, p.alice, "", nil, n, "patch", "secret", "db", "-p", `{"stringData":{"password":"`+secondPassword+`"}}`)
	want = append(want, wantWho{"Secret", "db", "added", "", "alice"}, wantWho{"Secret", "db", "updated", "", "alice"})
	as(t, p.deployer, "", nil, n, "delete", "configmap", "settings")
	as(t, p.alice, "", nil, n, "delete", "deployment", "web")
	return append(want, wantWho{"ConfigMap", "settings", "deleted", "", p.deployerName}, wantWho{"Deployment", "web", "deleted", "", "alice"})
}

// controllerWritesStatus writes the Deployment's status as
// kube-controller-manager would, through the first API server (not
// audited): a write no source names, which makes no record.
func controllerWritesStatus(t *testing.T, ns string, replicas int32) {
	t.Helper()
	d, err := clients.AppsV1().Deployments(ns).Get(bg, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: replicas}
	if _, err := clients.AppsV1().Deployments(ns).UpdateStatus(context.Background(), d, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil {
		t.Fatal(err)
	}
}

// checkWho waits for the records of what operate did in ns and checks
// that each names the user who made it, and the scales kubectl.
func checkWho(t *testing.T, w *run, ns string, want []wantWho) {
	t.Helper()
	var got []record.Change
	eventually(t, fmt.Sprintf("%d records in %s", len(want), ns), func() bool {
		got = nil
		for _, c := range w.records() {
			if c.Namespace == ns && (c.Kind == "Deployment" || c.Kind == "Secret" || c.Kind == "ConfigMap" && c.Name == "settings") {
				got = append(got, c)
			}
		}
		return len(got) >= len(want)
	})
	perObject := map[string][]record.Change{}
	for _, c := range got {
		perObject[c.Kind+"/"+c.Name] = append(perObject[c.Kind+"/"+c.Name], c)
	}
	seen := map[string]int{}
	for _, wanted := range want {
		key := wanted.kind + "/" + wanted.name
		i := seen[key]
		seen[key]++
		if i >= len(perObject[key]) {
			t.Errorf("no record for %s %s (%s)", wanted.typ, key, wanted.what)
			continue
		}
		c := perObject[key][i]
		user := "<none>"
		if c.User != nil {
			user = c.User.Name
		}
		if c.Type != wanted.typ || user != wanted.user || !strings.Contains(recordText(c), wanted.what) {
			t.Errorf("%s %s (%s): got %s %s by %s (changes %s)", wanted.typ, key, wanted.what, c.Type, c.Changed, user, recordText(c))
		}
		if strings.HasPrefix(wanted.what, "spec.replicas") && (c.Manager == nil || c.Manager.Name != "kubectl") {
			t.Errorf("%s: manager %+v, want kubectl", wanted.what, c.Manager)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d records, want %d", len(got), len(want))
	}
}

// recordText is a record's changes as "field → to" lines, to find what a
// record says.
func recordText(c record.Change) string {
	var b strings.Builder
	for _, fc := range c.Changes {
		fmt.Fprintf(&b, "%s → %v; ", fc.Field, fc.To)
	}
	return b.String()
}

// leaksNoPassword checks that neither of the Secret's values, nor their
// base64, is in what kubediff printed, logged or kept.
func leaksNoPassword(t *testing.T, w *run, stateDir string) {
	t.Helper()
	everything := w.stdout.String() + w.stderr.String()
	_ = filepath.Walk(stateDir, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			data, _ := os.ReadFile(path)
			everything += string(data)
		}
		return nil
	})
	for _, v := range []string{firstPassword, secondPassword} {
		for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v))} {
			if strings.Contains(everything, form) {
				t.Errorf("the Secret's value %q is in kubediff's output, logs or state dir", form)
			}
		}
	}
}

// The journey of issue 34, as an operator would take it: `kubediff
// watch` with each source of who made each change in turn, alice (a
// token) and a ServiceAccount operating with kubectl through an audited
// API server. Every record names the right user, the repeated scales
// included; the history lists exactly alice's changes for --user alice;
// the Secret's values appear nowhere.
func TestWatchNamesWhoMadeEachChange(t *testing.T) {
	c := startWhoCluster(t)
	// A record waits for its source at most --identity-wait: generous
	// here, so that a loaded machine's late audit batch still names it;
	// kubediff_identity_wait_seconds says how long records waited.
	const wait = "--identity-wait=45s"
	sources := []struct {
		name string
		args func(t *testing.T, ns string) []string
	}{
		{"the audit webhook", func(*testing.T, string) []string { return c.webhookArgs() }},
		{"the audit log", func(*testing.T, string) []string { return []string{"--audit-log", c.logPath} }},
		{"the admission observer", observerArgs},
	}
	for _, source := range sources {
		t.Run(source.name, func(t *testing.T) {
			ns := newNamespace(t)
			p := c.people(t, ns)
			state := t.TempDir()
			args := append([]string{"watch", "-o", "json", "-n", ns, "--state-dir", state, wait}, source.args(t, ns)...)
			w := startBinary(t, args...)
			w.logOnFailure()
			waitNamed(t, w, ns, p)
			want := operate(t, ns, p)
			checkWho(t, w, ns, want)
			identityMetrics(t, w, len(want))
			w.shutdown()
			leaksNoPassword(t, w, state)
			historyOfAlice(t, state, ns, want)
		})
	}
}

// observerArgs starts nothing: it makes the admission observer's
// certificate, registers the shipped webhook for ns at a free address
// and returns the flags that serve it there.
func observerArgs(t *testing.T, ns string) []string {
	t.Helper()
	certFile, keyFile, certPEM, err := testcert.LoopbackFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddress(t)
	tokenFile, path := observerToken(t)
	registerObserver(t, ns, "https://"+addr+path, certPEM)
	return []string{"--admission-observer-address", addr, "--admission-observer-cert-file", certFile, "--admission-observer-key-file", keyFile,
		"--admission-observer-token-file", tokenFile}
}

// historyOfAlice checks that `kubediff history --user alice` lists
// exactly alice's records.
func historyOfAlice(t *testing.T, state, ns string, want []wantWho) {
	t.Helper()
	out, code := cliOutput(t, "history", "--state-dir", state, "-n", ns, "--user", "alice", "--from", "1h", "-o", "json")
	if code != 0 {
		t.Fatalf("history --user alice: exit %d\n%s", code, out)
	}
	var alices int
	for _, wanted := range want {
		if wanted.user == "alice" {
			alices++
		}
	}
	var got []record.Change
	for _, r := range testenv.ParseRecords(t, out) {
		if r.User == nil || r.User.Name != "alice" {
			t.Errorf("history --user alice lists a record by %+v: %s %s/%s", r.User, r.Type, r.Kind, r.Name)
		}
		if r.Name != "probe" {
			got = append(got, r)
		}
	}
	if len(got) != alices {
		t.Errorf("history --user alice lists %d records, want alice's %d", len(got), alices)
	}
}

// waitNamed writes a ConfigMap as alice until kubediff names her on its
// record: the source is then flowing (the API server has taken up a new
// webhook registration, sent its first audit batch, or written its log).
func waitNamed(t *testing.T, w *run, ns string, p people) {
	t.Helper()
	as(t, p.alice, "", nil, "-n", ns, "create", "configmap", "probe")
	try := 0
	eventually(t, "a record naming alice, the source flowing", func() bool {
		for _, c := range w.recordsFor("ConfigMap", ns, "probe") {
			if c.User != nil && c.User.Name == "alice" {
				return true
			}
		}
		try++
		as(t, p.alice, "", nil, "-n", ns, "label", "--overwrite", "configmap", "probe", fmt.Sprintf("try=%d", try))
		return false
	})
}

// identityMetrics checks that /metrics counts the records named, and logs
// how long they waited for their source (docs/identity.md quotes it).
func identityMetrics(t *testing.T, w *run, atLeast int) {
	t.Helper()
	_, body := get(t, httpAddress(t, w)+"/metrics")
	var named float64
	var lines []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "kubediff_identity_") {
			lines = append(lines, line)
		}
		if strings.HasPrefix(line, `kubediff_identity_records_total{result="named"}`) {
			_, _ = fmt.Sscan(strings.Fields(line)[1], &named)
		}
	}
	if named < float64(atLeast) {
		t.Errorf("kubediff_identity_records_total{result=\"named\"} = %v, want at least %d:\n%s", named, atLeast, strings.Join(lines, "\n"))
	}
	t.Logf("identity metrics:\n%s", strings.Join(lines, "\n"))
}
