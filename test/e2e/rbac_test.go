package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestRBACChangesSaidInPlainWords: `kubediff watch -o text`, as a person
// runs it, says what access RBAC changes made with kubectl gave or took
// away, under each record: a ClusterRoleBinding of the bootstrap
// cluster-admin to alice, created and deleted; a Role gaining secrets; a
// ClusterRole whose rules are only reordered says nothing of access.
func TestRBACChangesSaidInPlainWords(t *testing.T) {
	ns := newNamespace(t)
	w := startBinary(t, "watch", "-o", "text", "--color", "never")
	w.logOnFailure()
	binding := fmt.Sprintf("admins-%d", time.Now().UnixNano()%100000)
	t.Cleanup(func() { _, _ = cliKubectl("delete", "clusterrolebinding", binding, "--ignore-not-found") })

	kubectl(t, "", "create", "clusterrolebinding", binding, "--clusterrole=cluster-admin", "--user=alice")
	waitText(t, w, "alice gains cluster-admin through ClusterRoleBinding "+binding)

	kubectl(t, "", "create", "role", "reader", "-n", ns, "--verb=get,list,watch", "--resource=configmaps")
	waitText(t, w, "Role "+ns+"/reader now grants get, list, watch on configmaps in "+ns)
	kubectl(t, "", "patch", "role", "reader", "-n", ns, "--type=json", "-p", `[{"op":"add","path":"/rules/0/resources/-","value":"secrets"}]`)
	waitText(t, w, "Role "+ns+"/reader now grants get, list, watch on secrets in "+ns)

	// Reordered rules: the record shows the fields that moved, and no
	// sentence of access; the binding's deletion, which follows, does.
	role := "reorder-" + ns
	t.Cleanup(func() { _, _ = cliKubectl("delete", "clusterrole", role, "--ignore-not-found") })
	kubectl(t, "", "create", "clusterrole", role, "--verb=get,list", "--resource=pods")
	kubectl(t, "", "patch", "clusterrole", role, "--type=json", "-p", `[{"op":"add","path":"/rules/-","value":{"apiGroups":[""],"resources":["nodes"],"verbs":["get"]}}]`)
	waitText(t, w, "ClusterRole "+role+" now grants get on nodes in every namespace")
	kubectl(t, "", "patch", "clusterrole", role, "--type=json", "-p", `[{"op":"move","from":"/rules/1","path":"/rules/0"}]`)
	kubectl(t, "", "delete", "clusterrolebinding", binding)
	waitText(t, w, "alice loses cluster-admin through ClusterRoleBinding "+binding)
	out := w.stdout.String()
	reordered := out[strings.LastIndex(out, "updated ClusterRole "+role):]
	reordered = reordered[:strings.Index(reordered, "deleted ClusterRoleBinding")]
	if !strings.Contains(reordered, "rules[0]") || strings.Contains(reordered, "»") {
		t.Errorf("the reordered role's record should show its moved rules and no sentence of access:\n%s", reordered)
	}
}

// TestRBACAccessOnThePage: the history page shows a Role's sentences of
// access on its record, in a browser, to a reviewer who may read Roles.
func TestRBACAccessOnThePage(t *testing.T) {
	ns := newNamespace(t)
	w := startBinary(t, "watch", "-n", ns, "--state-dir", filepath.Join(t.TempDir(), "state"))
	w.logOnFailure()
	kubectl(t, "", "create", "role", "reader", "-n", ns, "--verb=get,list,watch", "--resource=configmaps")
	kubectl(t, "", "patch", "role", "reader", "-n", ns, "--type=json", "-p", `[{"op":"add","path":"/rules/0/resources/-","value":"secrets"}]`)
	want := "Role " + ns + "/reader now grants get, list, watch on secrets in " + ns
	eventually(t, "the record of the Role gaining secrets", func() bool { return strings.Contains(w.stdout.String(), want) })

	// A reviewer who may read Roles there (the history checks it).
	reviewer := serviceAccountKubeconfig(t, ns, "reviewer",
		rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles"}, Verbs: []string{"get", "list"}}, ns)
	browser := newBrowser(t)
	page := startUI(t, "--server", httpAddress(t, w), "--kubeconfig", reviewer)
	base := strings.TrimSuffix(page, page[strings.Index(page, "/open?"):])
	inBrowser(t, browser, "the Role's page", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(".legend")),
		chromedp.Navigate(base+"/?object=roles.rbac.authorization.k8s.io/reader&namespace="+ns),
		chromedp.WaitVisible(chromedp.CSS(".record ul.access")))
	if text := mainText(t, browser); !strings.Contains(text, want) {
		t.Errorf("the Role's page lacks %q:\n%s", want, text)
	}
	screenshot(t, browser, "rbac-access")
}

// waitText waits until the run's text output holds s.
func waitText(t *testing.T, w *run, s string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%q in the output", s), func() bool { return strings.Contains(w.stdout.String(), s) })
}

// cliKubectl runs kubectl for a cleanup, where a failure is no test's.
func cliKubectl(args ...string) (string, error) {
	out, err := exec.Command(env.Kubectl, append([]string{"--kubeconfig", env.Kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}
