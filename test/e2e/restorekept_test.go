package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Issue 44 against the real API server: a restore's server-side apply
// leaves the fields others added since, which the manifest does not set
// (an env var from kubectl set env); restore --apply names them and who
// set them, before the question and after the apply, instead of saying
// the object is as it was. Ctrl-C at the question applies nothing and
// exits non-zero.
func TestRestoreNamesWhatItKeepsAndCtrlCAborts(t *testing.T) {
	ns := newNamespace(t)
	w := startBinary(t, "watch", "-o", "json", "-n", ns, "--state-dir", filepath.Join(t.TempDir(), "state"))
	w.logOnFailure()
	live := []string{"--server", httpAddress(t, w), "--kubeconfig", restorer(t, ns)}
	deployments := clients.AppsV1().Deployments(ns)
	if _, err := deployments.Create(bg, deploymentOf(ns, "web", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitRecords("Deployment", ns, "web", 1)
	before := moment()
	kubectl(t, "", "-n", ns, "set", "env", "deployment/web", "FOO=bar")
	kubectl(t, "", "-n", ns, "scale", "deployment/web", "--replicas=5")
	w.waitRecords("Deployment", ns, "web", 3)
	args := append([]string{"restore", "deploy/web", "-n", ns, "--at", before, "--apply"}, live...)
	kept := "spec.template.spec.containers[name=app].env (set by kubectl-set (Update, "

	var out, errOut string
	var code int
	eventually(t, "the Deployment's states in the history, and the restore's diff", func() bool {
		out, errOut, code = kubediffWithStdin(t, "n\n", args...)
		return code == 0 && strings.Contains(out, "+  replicas: 2")
	})
	if !strings.Contains(out, "Not as it was after the apply: 1 field(s) added since that the restore does not set and server-side apply keeps:\n  "+kept) {
		t.Errorf("before the question, the kept env var is not named (exit %d):\n%s\nstderr:\n%s", code, out, errOut)
	}

	interruptedAtTheQuestion(t, args)
	if d, _ := deployments.Get(bg, "web", metav1.GetOptions{}); *d.Spec.Replicas != 5 {
		t.Errorf("interrupted, and the Deployment has %d replicas", *d.Spec.Replicas)
	}

	out, errOut, code = kubediffWithStdin(t, "y\n", args...)
	want := "restored Deployment " + ns + "/web as it was at " + before + " (resourceVersion "
	if i := strings.Index(out, want); code != 0 || i < 0 || !strings.Contains(out[i:], "), but for 1 field(s) added since that the restore does not set and server-side apply keeps:\n  "+kept) {
		t.Errorf("restore --apply answered y (exit %d): want %q and the kept env var named:\n%s\nstderr:\n%s", code, want, out, errOut)
	}
	d, err := deployments.Get(bg, "web", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 2 {
		t.Fatalf("after the restore: %v, %+v", err, d)
	}
	if env := d.Spec.Template.Spec.Containers[0].Env; len(env) != 1 || env[0].Name != "FOO" {
		t.Errorf("env after the restore: %+v; the apply was to keep FOO, as it says", env)
	}
}

// interruptedAtTheQuestion runs restore with args, its stdin open and
// empty, sends it SIGINT (Ctrl-C) once it asks, and wants it to exit
// non-zero, saying nothing was applied.
func interruptedAtTheQuestion(t *testing.T, args []string) {
	t.Helper()
	cmd := exec.Command(kubediff, args...)
	stdin, err := cmd.StdinPipe() // kept open: nothing is typed
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	eventually(t, "the question", func() bool { return strings.Contains(stderr.String(), "[y/N]") })
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(time.Minute): // a hang guard, not a speed assertion
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("Ctrl-C at the question: still waiting a minute later\nstderr:\n%s", stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code == 0 || !strings.Contains(stderr.String(), "interrupted at the question: nothing applied") ||
		strings.Contains(stdout.String(), "restored Deployment") {
		t.Errorf("Ctrl-C at the question: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
}
