package e2e

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestKubectlStyleArgumentsWatchOnlyTheNamedObjects: `kubediff watch -n NS
// deploy/web cm/settings` reports changes to those two objects and none
// of their neighbours of the same types, which the API server filters
// out; an unknown type is a usage error naming it.
func TestKubectlStyleArgumentsWatchOnlyTheNamedObjects(t *testing.T) {
	ns := newNamespace(t)
	for _, name := range []string{"web", "api"} {
		labels := map[string]string{"app": name}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}}}
		if _, err := clients.AppsV1().Deployments(ns).Create(bg, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"settings", "other"} {
		if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w := startWatch(t, "-n", ns, "deploy/web", "cm/settings")
	if !strings.Contains(w.stderr.String(), "types=2 watches=2") {
		t.Errorf("want one watch per named object; stderr:\n%s", w.stderr.String())
	}
	image := func(name, tag string) {
		p := `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:` + tag + `"}]}}}}`
		if _, err := clients.AppsV1().Deployments(ns).Patch(bg, name, types.StrategicMergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	data := func(name, v string) {
		if _, err := clients.CoreV1().ConfigMaps(ns).Patch(bg, name, types.MergePatchType, []byte(`{"data":{"v":"`+v+`"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The neighbours change first: were they watched, their records
	// would come before the named objects' on the same streams.
	image("api", "1.28")
	data("other", "1")
	image("web", "1.28")
	data("settings", "1")
	w.waitRecords("Deployment", ns, "web", 1)
	w.waitRecords("ConfigMap", ns, "settings", 1)
	for _, c := range w.records() {
		if c.Name != "web" && c.Name != "settings" {
			t.Errorf("reported %s %s/%s, which was not named", c.Kind, c.Namespace, c.Name)
		}
	}

	var stdout, stderr syncBuffer
	if code := runCLI(&stdout, &stderr, "watch", "--kubeconfig", env.Kubeconfig, "deploymnts/web"); code != 2 ||
		!strings.Contains(stderr.String(), `no resource type named "deploymnts"`) {
		t.Errorf("an unknown type: exit %d, stderr %q; want 2 naming it", code, stderr.String())
	}

	// Completion, as a shell's Tab asks for it.
	complete := func(args ...string) []string {
		var stdout, stderr syncBuffer
		if code := runCLI(&stdout, &stderr, append([]string{"__complete", "watch", "--kubeconfig", env.Kubeconfig}, args...)...); code != 0 {
			t.Fatalf("completing %v: exit %d, %s", args, code, stderr.String())
		}
		return strings.Split(strings.TrimSpace(stdout.String()), "\n")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"configm"}, "configmaps"},
		{[]string{"-n", ns, "deploy/w"}, "deploy/web"},
		{[]string{"-n", ns, "deployment", "a"}, "api"},
		{[]string{"-n", ns[:len(ns)-2]}, ns},
	} {
		if got := complete(tc.args...); !slices.Contains(got, tc.want) {
			t.Errorf("completing %v gave %v, want %s among them", tc.args, got, tc.want)
		}
	}
}
