package e2e

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubediff/kubediff/pkg/record"
)

// restorer is a ServiceAccount that may read and write Deployments and
// ConfigMaps in ns (and read Secrets there), as an operator who puts an
// object back would: a kubeconfig with its token.
func restorer(t *testing.T, ns string) string {
	t.Helper()
	rule := rbacv1.PolicyRule{APIGroups: []string{"", "apps", "batch"}, Resources: []string{"deployments", "configmaps", "secrets", "jobs", "pods"},
		Verbs: []string{"get", "list", "create", "update", "patch"}}
	return serviceAccountKubeconfig(t, ns, "restorer", rule, ns)
}

// kubediffWithStdin runs the built binary with stdin and returns its
// stdout, stderr and exit code.
func kubediffWithStdin(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(kubediff, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

func deploymentOf(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}}}
}

// moment is now as a TIME flag, a little apart from the records around it.
func moment() string {
	defer time.Sleep(20 * time.Millisecond)
	// To the millisecond, as kubediff prints moments back.
	return time.Now().UTC().Truncate(time.Millisecond).Format("2006-01-02T15:04:05.000Z07:00")
}

// The restore journey of issue 37 against the real API server: a deleted
// Deployment comes back as it was at a moment before its deletion (its
// owner, deleted since, left out with a warning) and the API server
// accepts the manifest; a Deployment scaled to zero is rolled back with
// --apply after the diff is shown and the question answered on stdin; a
// Secret's restore is refused with the reason; a user who may not list
// Deployments gets nothing.
func TestRestorePutsObjectsBack(t *testing.T) {
	ns := newNamespace(t)
	w := startBinary(t, "watch", "-o", "json", "-n", ns, "--state-dir", filepath.Join(t.TempDir(), "state"))
	w.logOnFailure()
	operator := restorer(t, ns)
	live := []string{"--server", httpAddress(t, w), "--kubeconfig", operator}
	deployments := clients.AppsV1().Deployments(ns)

	parent, err := clients.CoreV1().ConfigMaps(ns).Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "parent"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	web := deploymentOf(ns, "web", 2)
	web.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "parent", UID: parent.UID}}
	if _, err := deployments.Create(bg, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := deployments.Patch(bg, "web", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("Deployment", ns, "web", 2)
	before := moment()
	if err := clients.CoreV1().ConfigMaps(ns).Delete(bg, "parent", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A garbage collector, where one runs, may have deleted it already.
	if err := deployments.Delete(bg, "web", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	w.waitRecords("Deployment", ns, "web", 3)
	w.waitRecords("ConfigMap", ns, "parent", 2) // added, deleted

	restoresDeleted(t, ns, before, live)
	restoresADeletedJob(t, w, ns, live)
	restoresADeletedPod(t, w, ns, live)
	rollsBackAScaleToZero(t, w, ns, live)
	refusesASecret(t, w, ns, live)

	pods := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}
	stranger := serviceAccountKubeconfig(t, ns, "pods-only", pods, ns)
	out, errOut, code := kubediffWithStdin(t, "", "restore", "deploy/web", "-n", ns, "--at", before, "--server", httpAddress(t, w), "--kubeconfig", stranger)
	if code != 1 || strings.Contains(out, "nginx") || !strings.Contains(errOut, "RBAC") {
		t.Errorf("restore by a user who may not list Deployments (exit %d):\n%s%s", code, out, errOut)
	}
}

// restoresDeleted prints the deleted Deployment web as it was at a
// moment before its deletion and applies the manifest as printed.
func restoresDeleted(t *testing.T, ns, before string, live []string) {
	t.Helper()
	var manifest, warnings string
	// The history is written by the state dir's flush, once a second:
	// the Deployment's states, and its owner's deletion.
	eventually(t, "the Deployment and its owner's deletion in the history", func() bool {
		manifest, warnings, _ = kubediffWithStdin(t, "", append([]string{"restore", "deploy/web", "-n", ns, "--at", before}, live...)...)
		return strings.Contains(warnings, "left out")
	})
	for _, gone := range []string{"uid:", "resourceVersion:", "managedFields:", "status:", "creationTimestamp:", "generation:", "ownerReferences:"} {
		if strings.Contains(manifest, gone) {
			t.Errorf("the manifest holds %s:\n%s", gone, manifest)
		}
	}
	if !strings.Contains(manifest, "replicas: 3") || !strings.Contains(warnings, "owner reference to ConfigMap parent left out: it no longer exists") {
		t.Errorf("manifest:\n%s\nstderr:\n%s", manifest, warnings)
	}
	kubectl(t, manifest, "apply", "--server-side", "--field-manager", "kubediff-restore", "-f", "-")
	d, err := clients.AppsV1().Deployments(ns).Get(bg, "web", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 3 || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.27" {
		t.Errorf("the restored Deployment: %v %+v", err, d)
	}
}

// restoresADeletedJob deletes a Job and applies the manifest its
// restore prints: the API server generated the Job's selector and
// labels from its old uid, which a new Job must not carry (it refuses a
// selector it did not make).
func restoresADeletedJob(t *testing.T, w *run, ns string, live []string) {
	t.Helper()
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "migrate"}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "migrate", Image: "busybox:1.36"}}}}}}
	made, err := clients.BatchV1().Jobs(ns).Create(bg, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.waitRecords("Job", ns, "migrate", 1)
	before := moment()
	if err := clients.BatchV1().Jobs(ns).Delete(bg, "migrate", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("Job", ns, "migrate", 2)
	var manifest, errOut string
	var code int
	eventually(t, "the Job in the history", func() bool {
		manifest, errOut, code = kubediffWithStdin(t, "", append([]string{"restore", "job/migrate", "-n", ns, "--at", before}, live...)...)
		return code == 0
	})
	if strings.Contains(manifest, string(made.UID)) {
		t.Errorf("the Job's manifest names its old uid (the selector the API server made):\n%s\nstderr:\n%s", manifest, errOut)
	}
	kubectl(t, manifest, "apply", "--server-side", "--field-manager", "kubediff-restore", "-f", "-")
	if restored, err := clients.BatchV1().Jobs(ns).Get(bg, "migrate", metav1.GetOptions{}); err != nil || restored.UID == made.UID {
		t.Errorf("the restored Job: %v", err)
	}
}

// restoresADeletedPod deletes a Pod bound to a node that is gone and
// applies the manifest its restore prints: the restored Pod waits for
// the scheduler to place it, instead of naming the gone node again
// (which no scheduler would ever correct).
func restoresADeletedPod(t *testing.T, w *run, ns string, live []string) {
	t.Helper()
	// The API server's ServiceAccount admission wants the namespace's
	// default account, which no controller makes here.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := clients.CoreV1().ServiceAccounts(ns).Create(bg, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "solo"}, Spec: corev1.PodSpec{NodeName: "node-gone",
		Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}
	if _, err := clients.CoreV1().Pods(ns).Create(bg, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("Pod", ns, "solo", 1)
	before := moment()
	if err := clients.CoreV1().Pods(ns).Delete(bg, "solo", metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Pod's deletion", func() bool {
		return slices.ContainsFunc(w.recordsFor("Pod", ns, "solo"), func(c record.Change) bool { return c.Type == record.Deleted })
	})
	var manifest, errOut string
	var code int
	eventually(t, "the Pod in the history", func() bool {
		manifest, errOut, code = kubediffWithStdin(t, "", append([]string{"restore", "pod/solo", "-n", ns, "--at", before}, live...)...)
		return code == 0
	})
	if strings.Contains(manifest, "node-gone") || !strings.Contains(manifest, "nginx:1.27") {
		t.Errorf("the Pod's manifest:\n%s\nstderr:\n%s", manifest, errOut)
	}
	kubectl(t, manifest, "apply", "--server-side", "--field-manager", "kubediff-restore", "-f", "-")
	restored, err := clients.CoreV1().Pods(ns).Get(bg, "solo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if restored.Spec.NodeName == "node-gone" {
		t.Error("the restored Pod is bound to the gone node; want it left to the scheduler")
	}
}

// rollsBackAScaleToZero scales the Deployment api to zero and rolls it
// back with --apply: declined first, then answered y.
func rollsBackAScaleToZero(t *testing.T, w *run, ns string, live []string) {
	t.Helper()
	if _, err := clients.AppsV1().Deployments(ns).Create(bg, deploymentOf(ns, "api", 4), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("Deployment", ns, "api", 1)
	before := moment()
	kubectl(t, "", "-n", ns, "scale", "deployment/api", "--replicas=0")
	w.waitRecords("Deployment", ns, "api", 2)
	args := append([]string{"restore", "deploy/api", "-n", ns, "--at", before, "--apply"}, live...)
	var out, errOut string
	var code int
	eventually(t, "the scale in the history, and the restore's diff", func() bool {
		out, errOut, code = kubediffWithStdin(t, "n\n", args...)
		return code == 0 && strings.Contains(out, "-  replicas: 0")
	})
	if !strings.Contains(out, "+  replicas: 4") || !strings.Contains(errOut, "Apply this to Deployment "+ns+"/api? [y/N]") || !strings.Contains(errOut, "not applied") {
		t.Errorf("restore --apply answered n (exit %d):\n%s\nstderr:\n%s", code, out, errOut)
	}
	if d, _ := clients.AppsV1().Deployments(ns).Get(bg, "api", metav1.GetOptions{}); *d.Spec.Replicas != 0 {
		t.Errorf("declined, and the Deployment has %d replicas", *d.Spec.Replicas)
	}
	out, errOut, code = kubediffWithStdin(t, "y\n", args...)
	if code != 0 || !strings.Contains(out, "-  replicas: 0") || !strings.Contains(out, "restored Deployment "+ns+"/api as it was at "+before) {
		t.Errorf("restore --apply answered y (exit %d):\n%s\nstderr:\n%s", code, out, errOut)
	}
	d, err := clients.AppsV1().Deployments(ns).Get(bg, "api", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 4 {
		t.Fatalf("after the restore: %v, replicas %v", err, d.Spec.Replicas)
	}
	managers := map[string]bool{}
	for _, f := range d.ManagedFields {
		managers[f.Manager] = f.Operation == metav1.ManagedFieldsOperationApply
	}
	if !managers["kubediff-restore"] {
		t.Errorf("managers after the restore: %v, want kubediff-restore applying", managers)
	}
}

// refusesASecret asks for a Secret's restore: refused, with the reason,
// and nothing printed.
func refusesASecret(t *testing.T, w *run, ns string, live []string) {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, StringData: map[string]string{"password": "correct-horse-battery-staple"}}
	if _, err := clients.CoreV1().Secrets(ns).Create(bg, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("Secret", ns, "db", 1)
	var out, errOut string
	var code int
	eventually(t, "the Secret in the history", func() bool {
		out, errOut, code = kubediffWithStdin(t, "", append([]string{"restore", "secret/db", "-n", ns, "--at", moment()}, live...)...)
		return !strings.Contains(errOut, "did not exist")
	})
	if code != 1 || out != "" || !strings.Contains(errOut, "cannot restore: the kept state is incomplete: a Secret's values are redacted") {
		t.Errorf("restore of a Secret (exit %d):\n%s\nstderr:\n%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, "correct-horse") {
		t.Error("the Secret's value is in restore's output")
	}
}
