package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestHistoryAnswersAfterTheFact: changes made at known moments come back
// from `kubediff history` (the very lines stdout printed), `get --at`
// (each intermediate state, none before creation or after deletion) and
// `diff` (the right lines), through --server while kubediff runs, as a
// user with a token, and from the state dir once it stopped. A user bound
// to another namespace sees none of it; a caller without a token gets
// 401.
func TestHistoryAnswersAfterTheFact(t *testing.T) {
	ns, elsewhere := newNamespace(t), newNamespace(t)
	dir := filepath.Join(t.TempDir(), "state")
	w := startBinary(t, "watch", "-n", ns, "--state-dir", dir)
	w.logOnFailure()
	moments := changeAtKnownMoments(t, w, ns)

	server := httpAddress(t, w)
	viewer := tokenKubeconfig(t, ns, "viewer", ns)
	stranger := tokenKubeconfig(t, ns, "stranger", elsewhere)
	live := []string{"--server", server, "--kubeconfig", viewer}
	// The history is written by the state dir's flush, once a second.
	eventually(t, "the deletion in the history", func() bool {
		out, _ := cliOutput(t, append([]string{"history", "cm/settings", "-n", ns}, live...)...)
		return strings.Count(out, "\n") == 4
	})
	checkHistoryQueries(t, w, ns, moments, live)

	if out, code := cliOutput(t, "history", "-n", ns, "--server", server, "--kubeconfig", stranger); code != 0 || out != "" {
		t.Errorf("a user of another namespace sees (exit %d):\n%s", code, out)
	}
	if _, code := cliOutput(t, "get", "cm/settings", "-n", ns, "--at", moments[1], "--server", server, "--kubeconfig", stranger); code != 1 {
		t.Errorf("a user of another namespace gets an object: exit %d", code)
	}
	if code, body := get(t, server+"/api/v1/history/records"); code != http.StatusUnauthorized {
		t.Errorf("no token: %d %s", code, body)
	}
	// The state dir of a running kubediff answers too (through the
	// socket it serves there), as it does once stopped.
	checkHistoryQueries(t, w, ns, moments, []string{"--state-dir", dir})

	stopWith(t, w, syscall.SIGTERM)
	checkHistoryQueries(t, w, ns, moments, []string{"--state-dir", dir})
}

// changeAtKnownMoments creates a ConfigMap, changes it twice and deletes
// it, and returns five moments: before it, after each step.
func changeAtKnownMoments(t *testing.T, w *run, ns string) []string {
	t.Helper()
	cms := clients.CoreV1().ConfigMaps(ns)
	var moments []string
	mark := func() {
		moments = append(moments, time.Now().UTC().Format(time.RFC3339Nano))
		time.Sleep(20 * time.Millisecond) // moments apart from the records' own times
	}
	mark()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"level": "one"}}
	if _, err := cms.Create(bg, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("ConfigMap", ns, "settings", 1)
	mark()
	for i, level := range []string{"two", "three"} {
		p := fmt.Sprintf(`{"data":{"level":%q}}`, level)
		if _, err := cms.Patch(bg, "settings", types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		w.waitRecords("ConfigMap", ns, "settings", 2+i)
		mark()
	}
	if err := cms.Delete(bg, "settings", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("ConfigMap", ns, "settings", 4)
	mark()
	return moments
}

// checkHistoryQueries asks history, get --at and diff through source
// (--server or --state-dir flags).
func checkHistoryQueries(t *testing.T, w *run, ns string, moments []string, source []string) {
	t.Helper()
	var printed []string
	for _, line := range strings.Split(w.stdout.String(), "\n") {
		if strings.Contains(line, `"namespace":"`+ns+`"`) && strings.Contains(line, `"name":"settings"`) {
			printed = append(printed, line)
		}
	}
	out, code := cliOutput(t, append([]string{"history", "configmaps/settings", "-n", ns, "--since", "10m"}, source...)...)
	if code != 0 || strings.TrimSpace(out) != strings.Join(printed, "\n") {
		t.Errorf("%v: history (exit %d):\n%s\nwant what watch printed:\n%s", source, code, out, strings.Join(printed, "\n"))
	}
	for i, want := range []string{"", "one", "two", "three", ""} {
		out, code := cliOutput(t, append([]string{"get", "cm/settings", "-n", ns, "--at", moments[i]}, source...)...)
		switch {
		case want == "" && code != 1:
			t.Errorf("%v: get --at moment %d: exit %d, want 1 (did not exist):\n%s", source, i, code, out)
		case want != "" && (code != 0 || !strings.Contains(out, "level: "+want)):
			t.Errorf("%v: get --at moment %d: exit %d, want level %s:\n%s", source, i, code, want, out)
		}
	}
	out, code = cliOutput(t, append([]string{"diff", "cm/settings", "-n", ns, "--from", moments[1], "--to", moments[3]}, source...)...)
	if code != 0 || !strings.Contains(out, "-  level: one") || !strings.Contains(out, "+  level: three") {
		t.Errorf("%v: diff (exit %d):\n%s", source, code, out)
	}
}

// cliOutput runs kubediff's command line in the test process and returns
// its stdout (stderr appended when it fails) and exit code.
func cliOutput(t *testing.T, args ...string) (string, int) {
	t.Helper()
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	code := runCLI(stdout, stderr, args...)
	if code != 0 {
		return stdout.String() + stderr.String(), code
	}
	return stdout.String(), code
}

// tokenKubeconfig makes a ServiceAccount in ns that may list ConfigMaps
// in namespace mayList only, and returns a kubeconfig with its token.
func tokenKubeconfig(t *testing.T, ns, name, mayList string) string {
	t.Helper()
	reads := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}
	return serviceAccountKubeconfig(t, ns, name, reads, mayList)
}

// serviceAccountKubeconfig makes a ServiceAccount in ns granted rule in
// each of namespaces (by a Role and RoleBinding there), and returns a
// kubeconfig with its token.
func serviceAccountKubeconfig(t *testing.T, ns, name string, rule rbacv1.PolicyRule, namespaces ...string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := clients.CoreV1().ServiceAccounts(ns).Create(bg, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, granted := range namespaces {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name + "-reads"}, Rules: []rbacv1.PolicyRule{rule}}
		if _, err := clients.RbacV1().Roles(granted).Create(bg, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-reads"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}}
		if _, err := clients.RbacV1().RoleBindings(granted).Create(bg, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := clients.CoreV1().ServiceAccounts(ns).CreateToken(bg, name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for key := range cfg.AuthInfos {
		cfg.AuthInfos[key] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig-"+name)
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
