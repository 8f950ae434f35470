package e2e

import (
	"encoding/base64"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/kubediff/kubediff/internal/testcert"
	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/identity/admission"
	"github.com/kubediff/kubediff/pkg/identity/identitytest"
)

// observer is an admission observer running in the test process on
// 127.0.0.1, as kubediff runs it.
type observer struct {
	url   string
	ca    []byte // the caBundle that trusts it
	notes *identitytest.Recorder
	logs  *syncBuffer
	stop  func()
}

// observerToken writes a fresh token for an observer and returns its
// file and the registration path that carries it (as the chart does).
func observerToken(t *testing.T) (file, path string) {
	t.Helper()
	token := fmt.Sprintf("e2e-token-%d-%d", time.Now().UnixNano(), os.Getpid())
	file = filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	return file, admission.Path + "/" + token
}

// startObserver serves the admission observer with a fresh certificate
// for 127.0.0.1 and a token in its URL's path, logging at debug level.
func startObserver(t *testing.T) *observer {
	t.Helper()
	certFile, keyFile, certPEM, err := testcert.LoopbackFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o := &observer{ca: certPEM, notes: &identitytest.Recorder{}, logs: &syncBuffer{}}
	log := slog.New(slog.NewTextHandler(o.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tokenFile, path := observerToken(t)
	addr, stop, err := admission.Serve(admission.Options{Address: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile, TokenFile: tokenFile}, o.notes, log)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	o.url, o.stop = "https://"+addr+path, func() { once.Do(stop) }
	t.Cleanup(o.stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the observer's log:\n%s", o.logs.String())
		}
	})
	return o
}

// registerObserver registers the shipped webhook
// (deploy/components/admission-observer) for url, trusting ca, for the
// namespace ns only (other tests' writes never wait for it), and deletes
// it when the test ends.
func registerObserver(t *testing.T, ns, url string, ca []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "components", "admission-observer", "webhook.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var reg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(data, &reg); err != nil {
		t.Fatal(err)
	}
	reg.Name, reg.Annotations = "kubediff-e2e-"+ns, nil
	for i := range reg.Webhooks {
		reg.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}
		reg.Webhooks[i].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
	}
	created, err := clients.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(bg, &reg, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = clients.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(bg, created.Name, metav1.DeleteOptions{})
	})
	return created
}

// waitObserved writes a ConfigMap in ns until the observer notes it: the
// API server takes up a new registration a moment after it is created.
func waitObserved(t *testing.T, ns string, notes *identitytest.Recorder) {
	t.Helper()
	kubectl(t, "", "-n", ns, "create", "configmap", "probe")
	try := 0
	eventually(t, "the API server to call the observer", func() bool {
		try++
		mark := notes.Count()
		kubectl(t, "", "-n", ns, "label", "--overwrite", "configmap", "probe", fmt.Sprintf("try=%d", try))
		for _, w := range notes.Since(mark) {
			if w.Resource == "configmaps" && w.Name == "probe" {
				return true
			}
		}
		return false
	})
}

// grantWrites lets alice and the ServiceAccount deployer write
// Deployments (scale included), ConfigMaps and Secrets in ns.
func grantWrites(t *testing.T, ns string) {
	t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "writer"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "deployments/scale"}, Verbs: []string{"*"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"*"}},
	}}
	if _, err := clients.RbacV1().Roles(ns).Create(bg, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "writer"},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "writer"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "alice"},
			{Kind: "ServiceAccount", Name: "deployer", Namespace: ns}}}
	if _, err := clients.RbacV1().RoleBindings(ns).Create(bg, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// expected is what one kubectl command's note must say.
type expected struct {
	user, verb, resource, subresource, name string
}

// writeAs runs kubectl as kubeconfig and checks what the observer noted
// for it: one write, as want says, whose uid is the object's and whose
// previous resourceVersion is the one the object had before (version
// says it: "" for a create). The API server may try an update twice when
// its cache was behind (it re-reads and runs admission again): the first
// try is noted too, with the stale version, by the same user. It returns
// the note of the write that happened.
func writeAs(t *testing.T, notes *identitytest.Recorder, version func() (uid, rv string), want expected, kubeconfig, stdin string, args ...string) identity.Write {
	t.Helper()
	uid, before := "", ""
	if want.verb != "create" {
		uid, before = version()
	}
	mark := notes.Count()
	kubectl(t, stdin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	if want.verb == "create" {
		uid, _ = version() // the new object's, read back
	}
	command := "kubectl " + strings.Join(args, " ")
	var happened []identity.Write
	for _, w := range notes.Since(mark) {
		if w.User.Name != want.user || w.Verb != want.verb || w.Resource != want.resource || w.Subresource != want.subresource || w.Name != want.name {
			t.Errorf("%s: noted %s %s %s/%s %s, want %+v", command, w.User.Name, w.Verb, w.Resource, w.Subresource, w.Name, want)
		}
		if w.UID == "" || w.UID != uid || w.ID == "" || w.Source != "admission" {
			t.Errorf("%s: noted uid %q (id %q, source %q), want uid %q", command, w.UID, w.ID, w.Source, uid)
		}
		if w.PreviousResourceVersion == before {
			happened = append(happened, w)
		} else {
			t.Logf("%s: a retried try noted with the stale version %s (the object was at %s)", command, w.PreviousResourceVersion, before)
		}
	}
	if len(happened) != 1 {
		t.Fatalf("%s: %d notes replace version %q, want 1: %+v", command, len(happened), before, notes.Since(mark))
	}
	return happened[0]
}

const webDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {tier: %s}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: "nginx:1.27"}]
`

// The admission observer against the real API server, registered as
// deploy/components/admission-observer ships it: alice (a client
// certificate) and a ServiceAccount (a token) create, scale three times,
// set an image, apply, replace and delete; each write is noted once with
// its user, verb, subresource, the object's uid (set on a create before
// validation) and the version it replaced. A Secret's value appears in no
// note and no log line; dry runs are not noted.
func TestAdmissionObserverNotesWhoWrote(t *testing.T) {
	ns := newNamespace(t)
	obs := startObserver(t)
	registerObserver(t, ns, obs.url, obs.ca)
	grantWrites(t, ns)
	alice, err := env.AddUser("alice")
	if err != nil {
		t.Fatal(err)
	}
	deployer := serviceAccountKubeconfig(t, ns, "deployer", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}, ns)
	waitObserved(t, ns, obs.notes)

	web := func() (string, string) {
		d, err := clients.AppsV1().Deployments(ns).Get(bg, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return string(d.UID), d.ResourceVersion
	}
	n := "-n=" + ns
	writeAs(t, obs.notes, web, expected{"alice", "create", "deployments", "", "web"}, alice, fmt.Sprintf(webDeployment, "front"), n, "apply", "-f", "-")
	for _, replicas := range []string{"5", "2", "3"} {
		writeAs(t, obs.notes, web, expected{"alice", "update", "deployments", "scale", "web"}, alice, "", n, "scale", "deployment/web", "--replicas="+replicas)
	}
	writeAs(t, obs.notes, web, expected{"alice", "update", "deployments", "", "web"}, alice, "", n, "set", "image", "deployment/web", "app=nginx:1.28")
	writeAs(t, obs.notes, web, expected{"alice", "update", "deployments", "", "web"}, alice, fmt.Sprintf(webDeployment, "back"), n, "apply", "-f", "-")
	current := kubectl(t, "", n, "get", "deployment", "web", "-o", "yaml")
	writeAs(t, obs.notes, web, expected{"alice", "update", "deployments", "", "web"}, alice, strings.Replace(current, "tier: back", "tier: edited", 1), n, "replace", "-f", "-")

	mark := obs.notes.Count()
	kubectl(t, "", "--kubeconfig", alice, n, "scale", "deployment/web", "--replicas=9", "--dry-run=server")
	kubectl(t, "", "--kubeconfig", alice, n, "create", "configmap", "dry", "--dry-run=server")
	// Heartbeats and Events are written often and name no author worth
	// a record: the registration's matchConditions spare them the call.
	kubectl(t, "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: beat}\nspec: {holderIdentity: me}\n", n, "apply", "-f", "-")
	kubectl(t, fmt.Sprintf("apiVersion: v1\nkind: Event\nmetadata: {name: news}\ninvolvedObject: {kind: ConfigMap, name: probe, namespace: %s}\nreason: Test\n", ns), n, "apply", "-f", "-")
	if got := obs.notes.Since(mark); len(got) != 0 {
		t.Errorf("dry runs, a Lease or an Event were noted: %+v", got)
	}
	writeAs(t, obs.notes, web, expected{"alice", "delete", "deployments", "", "web"}, alice, "", n, "delete", "deployment", "web", "--wait=false")

	made := func() (string, string) {
		cm, err := clients.CoreV1().ConfigMaps(ns).Get(bg, "made", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return string(cm.UID), cm.ResourceVersion
	}
	sa := "system:serviceaccount:" + ns + ":deployer"
	w := writeAs(t, obs.notes, made, expected{sa, "create", "configmaps", "", "made"}, deployer, "", n, "create", "configmap", "made", "--from-literal=k=v")
	if w.User.ServiceAccount == nil || w.User.ServiceAccount.Namespace != ns || w.User.ServiceAccount.Name != "deployer" {
		t.Errorf("the ServiceAccount's write names %+v", w.User)
	}
	writeAs(t, obs.notes, made, expected{sa, "update", "configmaps", "", "made"}, deployer, "", n, "label", "configmap", "made", "team=ci")

	secretLeaks(t, ns, alice, obs)
}

// secretLeaks writes a Secret as alice and checks that neither its value
// nor its base64 appears in the notes or the observer's log.
func secretLeaks(t *testing.T, ns, alice string, obs *observer) {
	t.Helper()
	const first, second = "hunter2-correct-horse", "battery-staple-42"
	db := func() (string, string) {
		s, err := clients.CoreV1().Secrets(ns).Get(bg, "db", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return string(s.UID), s.ResourceVersion
	}
	writeAs(t, obs.notes, db, expected{"alice", "create", "secrets", "", "db"}, alice, "", "-n", ns, "create", "secret", "generic", "db", "--from-literal=password="+first)
	writeAs(t, obs.notes, db, expected{"alice", "update", "secrets", "", "db"}, alice, "", "-n", ns, "patch", "secret", "db", "-p", `{"stringData":{"password":"`+second+`"}}`)
	out := fmt.Sprintf("%+v", obs.notes.Since(0)) + obs.logs.String()
	for _, v := range []string{first, second, base64.StdEncoding.EncodeToString([]byte(first)), base64.StdEncoding.EncodeToString([]byte(second))} {
		if strings.Contains(out, v) {
			t.Errorf("the Secret's value %q appears in what the observer noted or logged:\n%s", v, out)
		}
	}
	if !strings.Contains(obs.logs.String(), "the API server's reviews arrive") {
		t.Errorf("the observer did not say reviews arrive:\n%s", obs.logs.String())
	}
}

// writeLatencies patches the ConfigMap target in ns n times, one after
// another, and returns how long each took; every write must succeed.
func writeLatencies(t *testing.T, ns string, n int) []time.Duration {
	t.Helper()
	out := make([]time.Duration, 0, n)
	for i := range n {
		patch := fmt.Appendf(nil, `{"data":{"i":"%d-%d"}}`, time.Now().UnixNano(), i)
		start := time.Now()
		if _, err := clients.CoreV1().ConfigMaps(ns).Patch(bg, "target", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		out = append(out, time.Since(start))
	}
	return out
}

// percentile is the p-th percentile (0 < p ≤ 100) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(i, 0)]
}

// writesPerPhase is how many writes each phase of the cost measurement
// makes: 40, or KUBEDIFF_ADMISSION_WRITES for the figures in
// docs/identity.md.
func writesPerPhase(t *testing.T) int {
	n := 40
	if v := os.Getenv("KUBEDIFF_ADMISSION_WRITES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("KUBEDIFF_ADMISSION_WRITES=%q is not a count of writes", v)
		}
	}
	return n
}

// With the observer stopped (its port closed) the API server still
// serves every write, at its usual latency: failurePolicy Ignore, and a
// refused connection fails at once. An observer that accepts connections
// but never answers (a frozen process, a black-holed address) costs each
// write the registration's timeout, 1 s, and no more. The latencies of
// the same writes with no registration, the observer up, down and hung
// are logged (docs/identity.md quotes them).
func TestAdmissionObserverDownHoldsUpNoWrite(t *testing.T) {
	ns := newNamespace(t)
	n := writesPerPhase(t)
	kubectl(t, "", "-n", ns, "create", "configmap", "target")
	writeLatencies(t, ns, 10) // warm the API server's caches and connections
	phases := map[string][]time.Duration{"no webhook": writeLatencies(t, ns, n)}

	obs := startObserver(t)
	reg := registerObserver(t, ns, obs.url, obs.ca)
	waitObserved(t, ns, obs.notes)
	mark := obs.notes.Count()
	phases["observer up"] = writeLatencies(t, ns, n)
	// Each write replaced a version of its own; a try the API server
	// repeated (its cache behind) is noted twice with the same version.
	replaced := map[string]bool{}
	for _, w := range obs.notes.Since(mark) {
		replaced[w.PreviousResourceVersion] = true
	}
	if len(replaced) != n {
		t.Errorf("observer up: %d of %d writes noted", len(replaced), n)
	}
	t.Logf("observer up: %d notes for %d writes (tries repeated after a stale read are noted again)", len(obs.notes.Since(mark)), n)

	obs.stop()
	mark = obs.notes.Count()
	phases["observer down (port closed)"] = writeLatencies(t, ns, n)
	if got := obs.notes.Since(mark); len(got) != 0 {
		t.Errorf("a stopped observer noted %d writes", len(got))
	}
	if p50 := percentile(phases["observer down (port closed)"], 50); p50 > 500*time.Millisecond {
		t.Errorf("with the observer down, writes took %s (median): the API server should not wait for it", p50)
	}

	// A listener that never accepts: the TCP handshake completes in the
	// kernel, the TLS one never does, as with a frozen kubediff.
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	url := "https://" + hung.Addr().String() + admission.Path
	for i := range reg.Webhooks {
		reg.Webhooks[i].ClientConfig.URL = &url
	}
	if _, err := clients.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(bg, reg, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	timeout := time.Duration(*reg.Webhooks[0].TimeoutSeconds) * time.Second
	eventually(t, "the API server to call the hung address", func() bool {
		return writeLatencies(t, ns, 1)[0] >= timeout*9/10
	})
	phases["observer hung (never answers)"] = writeLatencies(t, ns, min(n, 10))
	if p50 := percentile(phases["observer hung (never answers)"], 50); p50 > 2*timeout+3*time.Second { // loose: a loaded machine's writes are slow too
		t.Errorf("with the observer hung, writes took %s (median), more than the %s timeout allows", p50, timeout)
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-32s %6s %10s %10s\n", "phase", "writes", "p50", "p99")
	for _, name := range []string{"no webhook", "observer up", "observer down (port closed)", "observer hung (never answers)"} {
		ds := phases[name]
		fmt.Fprintf(&table, "%-32s %6d %10s %10s\n", name, len(ds), percentile(ds, 50).Round(100*time.Microsecond), percentile(ds, 99).Round(100*time.Microsecond))
	}
	t.Logf("ConfigMap patch latency, timeoutSeconds %d:\n%s", *reg.Webhooks[0].TimeoutSeconds, table.String())
}
