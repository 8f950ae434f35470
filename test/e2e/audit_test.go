package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubediff/kubediff/internal/testenv"
	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/identity/audit"
	"github.com/kubediff/kubediff/pkg/identity/auditlog"
	"github.com/kubediff/kubediff/pkg/identity/auditwebhook"
	"github.com/kubediff/kubediff/pkg/identity/identitytest"
)

// wantWrite is a write a client made and what the API server answered.
type wantWrite struct {
	user, verb, resource, subresource, name, uid, resourceVersion string
}

func (w wantWrite) String() string {
	return fmt.Sprintf("%s %s %s/%s %s uid=%s rv=%s", w.user, w.verb, w.resource, w.subresource, w.name, w.uid, w.resourceVersion)
}

func asWant(w identity.Write) wantWrite {
	return wantWrite{w.User.Name, w.Verb, w.Resource, w.Subresource, w.Name, w.UID, w.ResourceVersion}
}

// auditedCluster is an audited API server whose webhook and log the
// test's sources take.
type auditedCluster struct {
	server          *testenv.APIServer
	files           *testenv.AuditTLS
	webhook         *auditwebhook.Server
	fromWebhook     *identitytest.Recorder
	fromLog         *identitytest.Recorder
	logDir, logPath string
	kubediffLog     *syncBuffer // what the sources logged
}

func startAuditedCluster(t *testing.T) *auditedCluster {
	t.Helper()
	dir := t.TempDir()
	files, err := testenv.NewAuditTLS(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := &auditedCluster{files: files, fromWebhook: &identitytest.Recorder{}, fromLog: &identitytest.Recorder{}, kubediffLog: &syncBuffer{},
		logDir: filepath.Join(dir, "audit")}
	c.logPath = filepath.Join(c.logDir, "audit.log")
	log := slog.New(slog.NewTextHandler(c.kubediffLog, nil))
	c.webhook, err = auditwebhook.Start(auditwebhook.Config{Address: "127.0.0.1:0", CertFile: files.ServingCert, KeyFile: files.ServingKey,
		ClientCAFile: files.ClientCA, TokenFile: files.TokenFile}, c.fromWebhook, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.webhook.Stop)
	// Followed before the API server has made it, or its directory.
	stop, err := auditlog.Follow(c.logPath, audit.Options{}, c.fromLog, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	kubeconfig := filepath.Join(dir, "audit-webhook.kubeconfig")
	if err := testenv.WriteWebhookKubeconfig(kubeconfig, "https://"+c.webhook.Addr()+"/audit", files.ServingCA, files.ClientCert, files.ClientKey, ""); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(c.logDir, 0o700); err != nil {
		t.Fatal(err)
	}
	c.server, err = env.StartAuditedAPIServer(testenv.AuditOptions{
		PolicyFile:        filepath.Join(repoRoot(t), "deploy", "audit", "policy.yaml"),
		WebhookConfigFile: kubeconfig, BatchMaxWait: time.Second,
		LogPath: c.logPath, LogMaxSizeMB: 1,
		Tokens: []string{`alice-token,alice,alice-uid,"devs"`},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.server.Kill() })
	c.server.LogOnFailure(t)
	return c
}

// userClients returns clients of the audited server for alice (a static
// token) and for a ServiceAccount (a token the TokenRequest API made),
// both allowed to write Deployments, Secrets and ConfigMaps in ns.
func (c *auditedCluster) userClients(t *testing.T, ns string) (alice, sa *kubernetes.Clientset, aliceDynamic *dynamic.DynamicClient) {
	t.Helper()
	ctx := context.Background()
	if _, err := clients.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The edit ClusterRole gets its rules from the aggregation controller,
	// which this control plane does not run: a Role of its own.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "editor"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "deployments/scale"}, Verbs: []string{"*"}},
		{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps"}, Verbs: []string{"*"}}}}
	if _, err := clients.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "editors"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "editor"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "alice"}, {Kind: "ServiceAccount", Name: "deployer", Namespace: ns}}}
	if _, err := clients.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token, err := clients.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "deployer", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	aliceConfig := env.TokenConfig(c.server, "alice-token")
	alice = kubernetes.NewForConfigOrDie(aliceConfig)
	sa = kubernetes.NewForConfigOrDie(env.TokenConfig(c.server, token.Status.Token))
	// RBAC reaches the audited server through its own watch: wait for it.
	var lastErr error
	if !pollUntil(deadline, func() bool {
		_, lastErr = alice.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		return lastErr == nil
	}) {
		t.Fatalf("alice cannot list Deployments through the audited server: %v", lastErr)
	}
	return alice, sa, dynamic.NewForConfigOrDie(aliceConfig)
}

func deployment(name string, annotations map[string]string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}, Spec: appsv1.DeploymentSpec{
		Replicas: new(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}}}
}

// Users alice (a static token) and a ServiceAccount write through an API
// server audited with deploy/audit/policy.yaml, its webhook pointed at
// kubediff's audit webhook and its log followed: both sources name, for
// every write, its user and verb, and the uid and resourceVersion the API
// server answered, the repeated scales of one Deployment included.
func TestAuditSourcesNameWhoMadeEachWrite(t *testing.T) {
	c := startAuditedCluster(t)
	ns := newNamespace(t)
	alice, sa, aliceDynamic := c.userClients(t, ns)
	ctx := context.Background()
	const saName = "system:serviceaccount:"
	var want []wantWrite

	created, err := alice.AppsV1().Deployments(ns).Create(ctx, deployment("web", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(created.UID)
	want = append(want, wantWrite{"alice", "create", "deployments", "", "web", uid, created.ResourceVersion})
	// kubectl scale's two ways: an update of the Scale, a patch of it.
	for _, replicas := range []int32{3, 5} {
		scale, err := alice.AppsV1().Deployments(ns).UpdateScale(ctx, "web", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, wantWrite{"alice", "update", "deployments", "scale", "web", uid, scale.ResourceVersion})
	}
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	scaled, err := aliceDynamic.Resource(deployments).Namespace(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}, "scale")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, wantWrite{"alice", "patch", "deployments", "scale", "web", uid, scaled.GetResourceVersion()})
	patched, err := alice.AppsV1().Deployments(ns).Patch(ctx, "web", types.StrategicMergePatchType, []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, wantWrite{"alice", "patch", "deployments", "", "web", uid, patched.ResourceVersion})
	patched.Labels = map[string]string{"tier": "front"}
	updated, err := alice.AppsV1().Deployments(ns).Update(ctx, patched, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, wantWrite{"alice", "update", "deployments", "", "web", uid, updated.ResourceVersion})
	bySA, err := sa.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"metadata":{"annotations":{"deployed-by":"ci"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, wantWrite{saName + ns + ":deployer", "patch", "deployments", "", "web", uid, bySA.ResourceVersion})
	// A patch that changes nothing answers the version it found: no write.
	if _, err := sa.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"metadata":{"annotations":{"deployed-by":"ci"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// A dry run changes nothing either.
	if _, err := alice.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":9}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	if err := alice.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The answer to a delete is a Status naming the uid, no version.
	want = append(want, wantWrite{"alice", "delete", "deployments", "", "web", uid, ""})

	for source, notes := range map[string]*identitytest.Recorder{"the webhook": c.fromWebhook, "the log": c.fromLog} {
		t.Run(source, func(t *testing.T) { expectWrites(t, notes, ns, "deployments", want) })
	}
	t.Run("a Secret's write names who and which, and leaks nothing", func(t *testing.T) { c.secretLeaksNothing(t, ns, alice) })
	t.Run("the webhook refuses strangers and replays", func(t *testing.T) { c.refusesStrangersAndReplays(t, ns) })
	t.Run("the log is followed across its rotation", func(t *testing.T) { c.followsRotation(t, ns, alice) })
}

// expectWrites waits until notes holds, for resource in ns, exactly the
// writes wanted, in any order.
func expectWrites(t *testing.T, notes *identitytest.Recorder, ns, resource string, want []wantWrite) {
	t.Helper()
	var got []wantWrite
	same := func() bool {
		got = nil
		for _, w := range notes.In(ns) {
			if w.Resource == resource {
				got = append(got, asWant(w))
			}
		}
		if len(got) != len(want) {
			return false
		}
		for _, w := range want {
			n := 0
			for _, g := range got {
				if g == w {
					n++
				}
			}
			if n != 1 {
				return false
			}
		}
		return true
	}
	if !pollUntil(deadline, same) {
		t.Fatalf("noted writes:\n%s\nwant:\n%s", lines(got), lines(want))
	}
}

func lines(ws []wantWrite) string {
	var b strings.Builder
	for _, w := range ws {
		b.WriteString("  " + w.String() + "\n")
	}
	return b.String()
}

// pollUntil is eventually without failing: false when ok never held.
func pollUntil(within time.Duration, ok func() bool) bool {
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if ok() {
			return true
		}
	}
	return ok()
}

func (c *auditedCluster) secretLeaksNothing(t *testing.T, ns string, alice *kubernetes.Clientset) {
	const value = "p4ssw0rd-that-must-not-leak"
	if _, err := alice.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		StringData: map[string]string{"password": value}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Logged at Metadata level: no response, so no version; the
	// request names no uid either.
	want := []wantWrite{{"alice", "create", "secrets", "", "db", "", ""}}
	expectWrites(t, c.fromWebhook, ns, "secrets", want)
	expectWrites(t, c.fromLog, ns, "secrets", want)
	for what, text := range map[string]string{
		"kubediff's log":           c.kubediffLog.String(),
		"the webhook's writes":     fmt.Sprintf("%#v", c.fromWebhook.In(ns)),
		"the log follower's write": fmt.Sprintf("%#v", c.fromLog.In(ns)),
		"the API server's audit log (the policy's Metadata level)": c.auditLogText(t),
	} {
		if strings.Contains(text, value) {
			t.Errorf("%s holds the Secret's value", what)
		}
	}
}

// auditLogText is every audit log file the API server wrote.
func (c *auditedCluster) auditLogText(t *testing.T) string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(c.logDir, "*.log"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no audit log in %s (%v)", c.logDir, err)
	}
	var all []byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return string(all)
}

func (c *auditedCluster) refusesStrangersAndReplays(t *testing.T, ns string) {
	ca, err := os.ReadFile(c.files.ServingCA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	post := func(token string, body []byte) int {
		req, _ := http.NewRequest(http.MethodPost, "https://"+c.webhook.Addr()+"/audit", bytes.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// A real event of this test, as the API server wrote it.
	event := c.auditEventOf(t, ns, "secrets")
	batch := []byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[` + string(event) + `]}`)
	forged := bytes.Replace(batch, []byte(`"username":"alice"`), []byte(`"username":"mallory"`), 1)
	forged = bytes.Replace(forged, []byte(`"auditID":"`), []byte(`"auditID":"forged-`), 1)
	if code := post("", forged); code != http.StatusUnauthorized {
		t.Errorf("a post with no certificate nor token answered %d, want 401", code)
	}
	if code := post("not-the-token", forged); code != http.StatusUnauthorized {
		t.Errorf("a post with a wrong token answered %d, want 401", code)
	}
	for range 2 {
		if code := post(c.files.Token, batch); code != http.StatusOK {
			t.Fatalf("a replayed batch answered %d, want 200 (and nothing noted)", code)
		}
	}
	// Writes are noted in the order they came: once a later post's is
	// noted, the replays would have been.
	marker := bytes.Replace(forged, []byte(`"auditID":"forged-`), []byte(`"auditID":"marker-`), 1)
	if code := post(c.files.Token, marker); code != http.StatusOK {
		t.Fatalf("a new event with the token answered %d, want 200", code)
	}
	// The marker and the refused posts name mallory; only the marker
	// may be noted.
	eventually(t, "the marker event to be noted", func() bool {
		for _, w := range c.fromWebhook.In(ns) {
			if w.User.Name == "mallory" {
				return true
			}
		}
		return false
	})
	var secretWrites []string
	for _, w := range c.fromWebhook.In(ns) {
		if w.Resource == "secrets" {
			secretWrites = append(secretWrites, w.User.Name)
		}
	}
	if !slices.Equal(secretWrites, []string{"alice", "mallory"}) { // alice's, once; the marker
		t.Errorf("the Secret's writes noted: %q; want alice's once and the marker (a refused post or a replay noted?)", secretWrites)
	}
}

// auditEventOf returns the first audit log line of a write to resource in
// ns.
func (c *auditedCluster) auditEventOf(t *testing.T, ns, resource string) []byte {
	t.Helper()
	scanner := bufio.NewScanner(strings.NewReader(c.auditLogText(t)))
	scanner.Buffer(nil, 16<<20)
	for scanner.Scan() {
		var ev struct {
			ObjectRef struct{ Namespace, Resource string }
			Verb      string
		}
		if json.Unmarshal(scanner.Bytes(), &ev) == nil && ev.ObjectRef.Namespace == ns && ev.ObjectRef.Resource == resource && ev.Verb == "create" {
			return append([]byte(nil), scanner.Bytes()...)
		}
	}
	t.Fatalf("no audit event of a create of %s in %s", resource, ns)
	return nil
}

// followsRotation writes enough for the API server to rotate its 1 MB
// log (each create's event holds the object twice, with an annotation of
// 200 KB), and expects every write from the log follower.
func (c *auditedCluster) followsRotation(t *testing.T, ns string, alice *kubernetes.Clientset) {
	big := map[string]string{"example.com/padding": strings.Repeat("x", 200<<10)}
	var want []wantWrite
	for i := range 6 {
		name := fmt.Sprintf("big-%d", i)
		d, err := alice.AppsV1().Deployments(ns).Create(context.Background(), deployment(name, big), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, wantWrite{"alice", "create", "deployments", "", name, string(d.UID), d.ResourceVersion})
	}
	rotated, err := filepath.Glob(filepath.Join(c.logDir, "audit-*.log"))
	if err != nil || len(rotated) == 0 {
		t.Fatalf("the API server did not rotate its audit log (%v)", err)
	}
	var got []wantWrite
	ok := pollUntil(deadline, func() bool {
		got = nil
		for _, w := range c.fromLog.In(ns) {
			if strings.HasPrefix(w.Name, "big-") {
				got = append(got, asWant(w))
			}
		}
		return len(got) == len(want)
	})
	if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the rotation the log follower noted:\n%s\nwant:\n%s", lines(got), lines(want))
	}
}
