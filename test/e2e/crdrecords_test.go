package e2e

import (
	"strings"
	"syscall"
	"testing"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestInstallingACRDIsOneRecord: applying a CRD and deleting it are one
// record each — not also the APIService the API server makes for its
// group, nor the API server's own status steps (names accepted,
// established) or the deletion's marks. Held updates are released at the
// stop, so what is counted is everything kubediff would ever print.
func TestInstallingACRDIsOneRecord(t *testing.T) {
	w := startBinary(t, "watch", "customresourcedefinitions.apiextensions.k8s.io,apiservices.apiregistration.k8s.io")
	w.logOnFailure()
	crd := installWidgetCRD(t)
	w.waitRecords("CustomResourceDefinition", "", crd.Name, 1)
	ext := apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions()
	if err := ext.Delete(bg, crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("CustomResourceDefinition", "", crd.Name, 2)
	stopWith(t, w, syscall.SIGTERM)

	var got []string
	for _, c := range w.records() {
		if c.Name == crd.Name || strings.HasSuffix(c.Name, "."+crd.Spec.Group) {
			got = append(got, c.Type+" "+c.Kind+" "+c.Changed)
		}
	}
	if want := "added CustomResourceDefinition , deleted CustomResourceDefinition "; strings.Join(got, ", ") != want {
		t.Errorf("records about the CRD:\n  %s\nwant\n  %s", strings.Join(got, "\n  "), want)
	}
}
