package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubediff/kubediff/pkg/record"
)

// packConfig enables every rule of the pack that TestPackRulesOnRealObjects
// tries, the deletions of Secrets and ConfigMaps limited to namespaces
// (%[1]s: the test's prefix).
const packConfig = `
rulePack:
  - {name: secret-deleted, namespaces: ["%[1]s-prod-*"]}
  - name: configmap-deleted
    namespaces: ["%[1]s-prod-*"]
    severity: critical
  - rbac-admin-binding
  - rbac-dangerous-access
  - networkpolicy-deleted
  - podsecurity-label-removed
  - crd-deleted
  - webhook-configuration-changed
  - node-cordoned
`

// packCase is one record the test expects, and the rules it names.
type packCase struct {
	typ, kind, namespace, name string
	rules                      []string
	says                       string // a part of the record's summary or access sentences
}

// TestPackRulesOnRealObjects enables the pack's rules and makes, with
// kubectl against the real API server, the change each rule is for and
// one it is not for, and checks that the records kubediff prints name
// exactly the rules they should, each with its summary: the RBAC rules'
// records with the access sentences.
func TestPackRulesOnRealObjects(t *testing.T) {
	prefix := fmt.Sprintf("pack-%d", time.Now().UnixNano()%100000)
	prod, dev := prefix+"-prod-eu", prefix+"-dev"
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, packConfig, prefix), 0o600); err != nil {
		t.Fatal(err)
	}
	w := startBinary(t, "watch", "--config", cfg)
	w.logOnFailure()
	cleanup := func(args ...string) {
		t.Cleanup(func() {
			_, _ = cliKubectl(append([]string{"delete", "--ignore-not-found", "--wait=false"}, args...)...)
		})
	}
	for _, ns := range []string{prod, dev} {
		kubectl(t, "", "create", "namespace", ns)
		cleanup("namespace", ns)
	}
	var want []packCase
	want = append(want, deleteConfig(t, prod, dev)...)
	want = append(want, changeRBAC(t, prefix, prod, cleanup)...)
	want = append(want, changeSecurity(t, prefix, dev, cleanup)...)

	kubectl(t, "", "-n", dev, "create", "configmap", "marker")
	w.waitRecords("ConfigMap", dev, "marker", 1) // every record before it is out too
	for _, c := range want {
		got := w.recordsFor(c.kind, c.namespace, c.name)
		i := slices.IndexFunc(got, func(r record.Change) bool { return r.Type == c.typ && slices.Equal(r.Rules, c.rules) })
		if i < 0 {
			t.Errorf("no %s %s %s/%s record naming rules %v; its records: %s", c.typ, c.kind, c.namespace, c.name, c.rules, describeRecords(got))
			continue
		}
		said := got[i].Summary + "\n" + strings.Join(got[i].Access, "\n")
		if !strings.Contains(said, c.says) || (c.rules != nil && got[i].Summary == "") {
			t.Errorf("%s %s %s/%s: summary %q, access %q, want a summary, and either to say %q", c.typ, c.kind, c.namespace, c.name,
				got[i].Summary, got[i].Access, c.says)
		}
	}
}

// deleteConfig deletes a Secret and a ConfigMap in a namespace the rules
// are limited to, and in one they are not.
func deleteConfig(t *testing.T, prod, dev string) []packCase {
	for _, ns := range []string{prod, dev} {
		kubectl(t, "", "-n", ns, "create", "secret", "generic", "db", "--from-literal=password=hunter2")
		kubectl(t, "", "-n", ns, "create", "configmap", "app", "--from-literal=mode=on")
		kubectl(t, "", "-n", ns, "delete", "secret", "db")
		kubectl(t, "", "-n", ns, "delete", "configmap", "app")
	}
	return []packCase{
		{"deleted", "Secret", prod, "db", []string{"secret-deleted"}, "Secret " + prod + "/db deleted"},
		{"deleted", "ConfigMap", prod, "app", []string{"configmap-deleted"}, "ConfigMap " + prod + "/app deleted"},
		{"deleted", "Secret", dev, "db", nil, ""},
		{"deleted", "ConfigMap", dev, "app", nil, ""},
	}
}

// changeRBAC binds cluster-admin, admin and view, and has a Role gain
// configmaps then secrets, and a ClusterRole pods/exec.
func changeRBAC(t *testing.T, prefix, ns string, cleanup func(...string)) []packCase {
	binding, role := prefix+"-admins", prefix+"-exec"
	cleanup("clusterrolebinding", binding)
	cleanup("clusterrole", role)
	kubectl(t, "", "create", "clusterrolebinding", binding, "--clusterrole=cluster-admin", "--user=alice")
	kubectl(t, "", "-n", ns, "create", "rolebinding", "admins", "--clusterrole=admin", "--group=ops")
	kubectl(t, "", "-n", ns, "create", "rolebinding", "viewers", "--clusterrole=view", "--user=bob")
	kubectl(t, "", "-n", ns, "create", "role", "reader", "--verb=get,list,watch", "--resource=configmaps")
	kubectl(t, "", "-n", ns, "patch", "role", "reader", "--type=json", "-p", `[{"op":"add","path":"/rules/0/resources/-","value":"secrets"}]`)
	kubectl(t, "", "create", "clusterrole", role, "--verb=create", "--resource=pods/exec")
	rbac := []string{"rbac-admin-binding"}
	dangerous := []string{"rbac-dangerous-access"}
	return []packCase{
		{"added", "ClusterRoleBinding", "", binding, rbac, "alice gains cluster-admin through ClusterRoleBinding " + binding},
		{"added", "RoleBinding", ns, "admins", rbac, "group ops gains ClusterRole admin in " + ns + " through RoleBinding " + ns + "/admins"},
		{"added", "RoleBinding", ns, "viewers", nil, ""},
		{"added", "Role", ns, "reader", nil, ""},
		{"updated", "Role", ns, "reader", dangerous, "Role " + ns + "/reader now grants get, list, watch on secrets in " + ns},
		{"added", "ClusterRole", "", role, dangerous, "ClusterRole " + role + " now grants create on pods/exec in every namespace"},
	}
}

// changeSecurity deletes a NetworkPolicy, removes a Namespace's Pod
// Security label, deletes a CRD, creates, changes and deletes a webhook
// configuration, and cordons a Node.
func changeSecurity(t *testing.T, prefix, ns string, cleanup func(...string)) []packCase {
	cases := []packCase{
		{"deleted", "NetworkPolicy", ns, "deny-all", []string{"networkpolicy-deleted"}, "NetworkPolicy " + ns + "/deny-all deleted"},
		{"updated", "Namespace", "", ns, nil, ""}, // the label added
		{"updated", "Namespace", "", ns, []string{"podsecurity-label-removed"}, "pod-security.kubernetes.io/enforce\"] removed"},
	}
	kubectl(t, `{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "deny-all"}, "spec": {"podSelector": {}}}`,
		"-n", ns, "create", "-f", "-")
	kubectl(t, "", "-n", ns, "delete", "networkpolicy", "deny-all")
	kubectl(t, "", "label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted")
	kubectl(t, "", "label", "namespace", ns, "pod-security.kubernetes.io/enforce-")

	crd := "widgets" + strings.TrimPrefix(prefix, "pack-") + ".pack.example.com"
	cleanup("crd", crd)
	kubectl(t, fmt.Sprintf(crdManifest, crd, strings.TrimPrefix(prefix, "pack-")), "create", "-f", "-")
	kubectl(t, "", "delete", "crd", crd)
	cases = append(cases, packCase{"deleted", "CustomResourceDefinition", "", crd, []string{"crd-deleted"}, "CustomResourceDefinition " + crd + " deleted"})

	hook := prefix + "-never"
	cleanup("validatingwebhookconfiguration", hook)
	kubectl(t, fmt.Sprintf(webhookManifest, hook), "create", "-f", "-")
	kubectl(t, "", "patch", "validatingwebhookconfiguration", hook, "--type=json", "-p", `[{"op":"replace","path":"/webhooks/0/timeoutSeconds","value":2}]`)
	kubectl(t, "", "patch", "validatingwebhookconfiguration", hook, "--type=json", "-p", `[{"op":"add","path":"/webhooks/0/clientConfig/caBundle","value":"bm90IGEgcGVt"}]`)
	kubectl(t, "", "delete", "validatingwebhookconfiguration", hook)
	webhook := []string{"webhook-configuration-changed"}
	cases = append(cases,
		packCase{"added", "ValidatingWebhookConfiguration", "", hook, webhook, "ValidatingWebhookConfiguration " + hook + " added"},
		packCase{"updated", "ValidatingWebhookConfiguration", "", hook, webhook, "timeoutSeconds"},
		packCase{"updated", "ValidatingWebhookConfiguration", "", hook, nil, ""}, // the caBundle alone
		packCase{"deleted", "ValidatingWebhookConfiguration", "", hook, webhook, "deleted"})

	node := prefix + "-node"
	cleanup("node", node)
	kubectl(t, `{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "`+node+`"}}`, "create", "-f", "-")
	kubectl(t, "", "cordon", node)
	return append(cases, packCase{"updated", "Node", "", node, []string{"node-cordoned"}, "Node " + node + " cordoned"})
}

const crdManifest = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[1]s}
spec:
  group: pack.example.com
  scope: Namespaced
  names: {kind: Widget%[2]s, plural: widgets%[2]s, singular: widget%[2]s, listKind: Widget%[2]sList}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`

// webhookManifest is a webhook no request reaches: it selects objects of
// a label nothing carries, and is ignored if it fails.
const webhookManifest = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: %s}
webhooks:
- name: never.pack.example.com
  clientConfig: {url: "https://127.0.0.1:1/never"}
  rules: [{apiGroups: ["pack.example.com"], apiVersions: ["v1"], operations: ["CREATE"], resources: ["nothing"]}]
  objectSelector: {matchLabels: {pack-never: "true"}}
  failurePolicy: Ignore
  sideEffects: None
  admissionReviewVersions: [v1]
`

// describeRecords says records in a line each, for a failure message.
func describeRecords(rs []record.Change) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "\n  %s rules=%v summary=%q changed=%s", r.Type, r.Rules, r.Summary, r.Changed)
	}
	return b.String()
}
