package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestKubectlRunsKubediffAsAPlugin: with the binary on PATH as
// kubectl-kubediff, the real kubectl runs `kubectl kubediff version`, its
// errors say `kubectl kubediff`, and `kubectl kubediff watch` with
// kubectl's connection flags reports a change.
func TestKubectlRunsKubediffAsAPlugin(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "kubectl-kubediff")
	if err := os.Symlink(kubediff, plugin); err != nil {
		t.Fatal(err)
	}
	path := []string{"PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH")}
	kubectl := func(args ...string) (string, int) {
		cmd := exec.Command(env.Kubectl, args...)
		cmd.Env = append(os.Environ(), path...)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	if out, code := kubectl("plugin", "list"); !strings.Contains(out, plugin) {
		t.Fatalf("kubectl plugin list (exit %d) does not find kubectl-kubediff:\n%s", code, out)
	}
	if out, code := kubectl("kubediff", "version"); code != 0 || !strings.Contains(out, "kubediff") {
		t.Fatalf("kubectl kubediff version: exit %d\n%s", code, out)
	}
	if out, code := kubectl("kubediff", "watch", "--bogus"); code != 2 || !strings.HasPrefix(out, "kubectl kubediff: unknown flag: --bogus") {
		t.Fatalf("kubectl kubediff watch --bogus: exit %d, %q; want 2 and an error naming kubectl kubediff", code, out)
	}
	if out, _ := kubectl("kubediff", "watch", "--help"); !strings.Contains(out, "kubectl kubediff watch [TYPE") {
		t.Fatalf("help does not say kubectl kubediff:\n%s", out)
	}

	ns := newNamespace(t)
	cms := clients.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := startProcess(t, nil, path, env.Kubectl, "kubediff", "watch", "--kubeconfig", env.Kubeconfig, "-n", ns, "cm/settings", "--http-address", "")
	if _, err := cms.Patch(bg, "settings", types.MergePatchType, []byte(`{"data":{"v":"1"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := w.waitRecords("ConfigMap", ns, "settings", 1); got[0].Changed != "data" {
		t.Fatalf("kubectl kubediff watch reported %+v", got[0])
	}
}
