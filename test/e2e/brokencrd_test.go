package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// TestBrokenConversionWebhookHoldsNothingBack: a CRD whose preferred
// version needs a conversion webhook that points nowhere (a common state
// while an operator upgrades) cannot be listed. kubediff is ready at once
// anyway, names the type in one warning, reports the other types'
// changes, and once the webhook is fixed reports the broken type's
// objects created meanwhile and its changes.
func TestBrokenConversionWebhookHoldsNothingBack(t *testing.T) {
	ns := newNamespace(t)
	crd := installBrokenConversionCRD(t)
	group := crd.Spec.Group
	dyn := dynamic.NewForConfigOrDie(env.Config)
	gadgetsV1 := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}).Namespace(ns)
	gadget := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Gadget",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"size": int64(1)}}}
	}
	if _, err := gadgetsV1.Create(bg, gadget("before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	started := time.Now()
	w := startWatch(t, "-n", ns, "--log-level", "debug")
	took := time.Since(started)
	w.logOnFailure()
	t.Logf("watching %s after start, with the broken type", took.Round(100*time.Millisecond))
	// Held back, the start would wait for the 2-minute sync timeout; a
	// loaded machine may take a while to start, so the bound is half of it.
	if took > time.Minute {
		t.Errorf("watching after %s: a broken type held the others back (want well under the 2-minute sync timeout)", took)
	}
	eventually(t, "a warning naming the broken type", func() bool {
		return hasLine(w.stderr.String(), "some types cannot be listed", "gadgets."+group)
	})
	if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "meanwhile"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("ConfigMap", ns, "meanwhile", 1)
	metricsURL := httpAddress(t, w) + "/metrics"
	if code, body := get(t, metricsURL); code != 200 || !strings.Contains(body, `kubediff_type_failing{namespace="`+ns+`",resource="gadgets.`+group+`"} 1`) {
		t.Errorf("/metrics does not name the broken type:\n%s", grepLines(body, "kubediff_type"))
	}
	checkTypeStates(t, httpAddress(t, w), map[string]string{"gadgets": "retrying", "configmaps": "synced"})
	if _, err := gadgetsV1.Create(bg, gadget("while-broken"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The operator's upgrade completes: no conversion needed any more.
	ext := apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions()
	fix := []byte(`{"spec":{"conversion":{"strategy":"None","webhook":null}}}`)
	if _, err := ext.Patch(bg, crd.Name, types.MergePatchType, fix, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	got := w.waitRecords("Gadget", ns, "while-broken", 1)
	if got[0].Type != "added" {
		t.Errorf("the Gadget created while its type was broken: %s, want added", got[0].Type)
	}
	eventually(t, "one line saying the type works again", func() bool {
		return hasLine(w.stderr.String(), "listed again", "gadgets."+group)
	})
	if _, err := gadgetsV1.Patch(bg, "before", types.MergePatchType, []byte(`{"spec":{"size":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("Gadget", ns, "before", 1)
	if _, body := get(t, metricsURL); !strings.Contains(body, "kubediff_types_failing 0") {
		t.Errorf("/metrics after the fix:\n%s", grepLines(body, "kubediff_type"))
	}
	var said []string
	for _, line := range strings.Split(w.stderr.String(), "\n") {
		if strings.Contains(line, "gadgets."+group) && !strings.Contains(line, "level=DEBUG") {
			said = append(said, line)
		}
	}
	if len(said) > 3 { // the failure, the summary naming it, the recovery
		t.Errorf("%d log lines name the broken type, want one when it breaks and one when it heals:\n%s", len(said), strings.Join(said, "\n"))
	}
}

// installBrokenConversionCRD installs Gadgets stored as v1 and served
// (preferred) as v2 through a conversion webhook at a port nothing
// listens on.
func installBrokenConversionCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	group := fmt.Sprintf("b%d.e2e.kubediff.io", time.Now().UnixNano()%1000000)
	schemaProps := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}},
		}}}
	nowhere := "https://127.0.0.1:1/convert"
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Gadget", Plural: "gadgets", Singular: "gadget", ListKind: "GadgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schemaProps},
				{Name: "v2", Served: true, Schema: schemaProps},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: &nowhere},
					ConversionReviewVersions: []string{"v1"}}},
		},
	}
	installCRD(t, crd, "v2")
	return crd
}

// grepLines returns the lines of text holding part.
func grepLines(text, part string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, part) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// checkTypeStates asks the running kubediff at server, as `kubediff
// resources --server` does with a user's token, how each type's watches
// are doing, and checks the states want names (by resource), with the
// broken ones' errors and the healthy ones' objects.
func checkTypeStates(t *testing.T, server string, want map[string]string) {
	t.Helper()
	kc := tokenKubeconfig(t, newNamespace(t), "operator", "default")
	out, code := cliOutput(t, "resources", "--server", server, "--kubeconfig", kc, "-o", "json")
	if code != 0 {
		t.Fatalf("resources --server: exit %d: %s", code, out)
	}
	var rows []struct {
		Resource, Status, State, Reason string
		Objects                         int
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, r := range rows {
		state, ok := want[r.Resource]
		if !ok {
			continue
		}
		delete(want, r.Resource)
		switch {
		case r.State != state:
			t.Errorf("%s: state %q, want %q (%+v)", r.Resource, r.State, state, r)
		case state == "retrying" && r.Reason == "":
			t.Errorf("%s: retrying without the error: %+v", r.Resource, r)
		}
	}
	if len(want) > 0 {
		t.Errorf("no rows for %v in:\n%s", want, out)
	}
	table, _ := cliOutput(t, "resources", "--server", server, "--kubeconfig", kc)
	if !strings.Contains(table, "LAST CHANGE") || !strings.Contains(table, "retrying") {
		t.Errorf("resources --server table:\n%s", table)
	}
}
