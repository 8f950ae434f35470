// Package e2e proves kubediff against a real kube-apiserver and etcd started
// on this machine (see internal/testenv and `make testenv`).
package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubediff/kubediff/internal/cli"
	"github.com/kubediff/kubediff/internal/testenv"
	"github.com/kubediff/kubediff/pkg/record"
)

// deadline is how long tests wait for something to happen. Generous: the
// machines are small, the control plane shares them, and CI may run
// beside other work: a slow step must not read as a failure.
const deadline = 2 * time.Minute

var (
	env      *testenv.Env
	clients  *kubernetes.Clientset
	kubediff string
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	// The tests run kubediff in this process, where it would move the
	// runtime to one P once synced: that is for a process of its own.
	os.Setenv("GOMAXPROCS", strconv.Itoa(runtime.GOMAXPROCS(0)))
	// kubediff keeps a history in ~/.local/state by default: the tests'
	// kubediffs keep one only where a test names it, never in the home of
	// whoever runs them (an empty KUBEDIFF_STATE_DIR names none).
	os.Setenv("KUBEDIFF_STATE_DIR", "")
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer env.Stop()
	// The tests create objects by the hundred: lift client-go's 5 QPS.
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 200, 400
	clients = kubernetes.NewForConfigOrDie(cfg)

	var remove func()
	if kubediff, remove, err = testenv.BuildKubediff(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer remove()
	return m.Run()
}

// syncBuffer collects a process's output while a test polls it.
type syncBuffer = testenv.SyncBuffer

// run is one kubediff watch, in this process (so the race detector sees the
// whole pipeline) or as the built binary.
type run struct {
	t              *testing.T
	stdout, stderr *syncBuffer
	done           chan int
	stop           func()
	process        *os.Process // the binary's, for startBinary
	stopped        bool        // shutdown ran
}

// startWatch runs `kubediff watch` in-process as the cluster admin with
// args and waits until its caches have synced.
func startWatch(t *testing.T, args ...string) *run {
	t.Helper()
	return startWatchAs(t, env.Kubeconfig, args...)
}

// startWatchAs is startWatch with another user's kubeconfig.
func startWatchAs(t *testing.T, kubeconfig string, args ...string) *run {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &run{t: t, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan int, 1), stop: cancel}
	// Port 0: tests never fight over :8080; the address is logged.
	full := append([]string{"watch", "--kubeconfig", kubeconfig, "--http-address", "127.0.0.1:0"}, args...)
	go func() { r.done <- cli.Run(ctx, full, r.stdout, r.stderr) }()
	t.Cleanup(r.shutdown)
	r.waitSynced()
	return r
}

// startBinary runs the built kubediff binary with args.
func startBinary(t *testing.T, args ...string) *run {
	t.Helper()
	return startBinaryWithEnv(t, nil, args...)
}

// startBinaryWithEnv is startBinary with more environment variables.
func startBinaryWithEnv(t *testing.T, environment []string, args ...string) *run {
	t.Helper()
	return startBinaryTo(t, nil, environment, args...)
}

// startBinaryTo is startBinaryWithEnv writing records to stdout instead
// of the run's buffer (a pipe the test reads as it likes).
func startBinaryTo(t *testing.T, stdout io.Writer, environment []string, args ...string) *run {
	t.Helper()
	if len(args) > 0 && args[0] == "watch" {
		args = append(args, "--http-address", "127.0.0.1:0")
	}
	return startProcess(t, stdout, environment, kubediff, args...)
}

// startProcess runs program (kubediff, or kubectl running it as a
// plugin) with args until it has synced.
func startProcess(t *testing.T, stdout io.Writer, environment []string, program string, args ...string) *run {
	t.Helper()
	r := &run{t: t, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan int, 1)}
	if stdout == nil {
		stdout = r.stdout
	}
	cmd := exec.Command(program, args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+env.Kubeconfig), environment...)
	cmd.Stdout, cmd.Stderr = stdout, r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		r.done <- cmd.ProcessState.ExitCode()
	}()
	r.process = cmd.Process
	r.stop = func() { _ = cmd.Process.Signal(os.Interrupt) }
	t.Cleanup(r.shutdown)
	r.waitSynced()
	return r
}

func (r *run) waitSynced() {
	r.t.Helper()
	eventually(r.t, "kubediff to sync its caches", func() bool {
		select {
		case code := <-r.done:
			r.t.Fatalf("kubediff exited with %d before syncing; stderr:\n%s", code, r.stderr.String())
		default:
		}
		return strings.Contains(r.stderr.String(), "msg=watching")
	})
}

// shutdown stops kubediff (SIGINT for the binary) and checks it exits
// cleanly; later calls do nothing.
func (r *run) shutdown() {
	if r.stopped {
		return
	}
	r.stopped = true
	r.stop()
	select {
	case code := <-r.done:
		if code != 0 && code != -1 { // -1: killed by the test
			r.t.Errorf("kubediff exited with %d; stderr:\n%s", code, r.stderr.String())
		}
	case <-time.After(deadline):
		r.t.Errorf("kubediff did not stop within %s", deadline)
	}
}

// logOnFailure prints the run's stderr and records if the test fails:
// what kubediff said is the first thing to read.
func (r *run) logOnFailure() {
	r.t.Cleanup(func() {
		if r.t.Failed() {
			r.t.Logf("kubediff's stderr:\n%s\nrecords:\n%s", r.stderr.String(), r.stdout.String())
		}
	})
}

// records parses every JSON line printed so far.
func (r *run) records() []record.Change {
	r.t.Helper()
	return testenv.ParseRecords(r.t, r.stdout.String())
}

// recordsFor returns the records about one object.
func (r *run) recordsFor(kind, namespace, name string) []record.Change {
	var out []record.Change
	for _, c := range r.records() {
		if c.Kind == kind && c.Namespace == namespace && c.Name == name {
			out = append(out, c)
		}
	}
	return out
}

// waitRecords waits until the object has at least n records and returns them.
func (r *run) waitRecords(kind, namespace, name string, n int) []record.Change {
	r.t.Helper()
	var got []record.Change
	eventually(r.t, fmt.Sprintf("%d records for %s %s/%s", n, kind, namespace, name), func() bool {
		got = r.recordsFor(kind, namespace, name)
		return len(got) >= n
	})
	return got
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.Eventually(t, what, deadline, cond)
}

// newNamespace creates a namespace unique to the test and deletes it after.
func newNamespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = fmt.Sprintf("%s-%d", strings.Trim(name, "-"), time.Now().UnixNano()%100000)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := clients.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = clients.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// kubectl runs the real kubectl against the test control plane.
func kubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(env.Kubectl, append([]string{"--kubeconfig", env.Kubeconfig}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
