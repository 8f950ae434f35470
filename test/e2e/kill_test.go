package e2e

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubediff/kubediff/internal/testenv"
	"github.com/kubediff/kubediff/pkg/record"
)

// TestSIGKILLLosesNothingWithAStateDir: while a writer changes 20 plain
// ConfigMaps and 20 owned by a controller (whose updates kubediff holds to
// join them), kubediff with a state dir is killed with SIGKILL again and
// again at random moments — before its sync, in the first second after
// it, and later — and started again. Every change is reported at least
// once: for each object, the records' from → to steps chain from its
// first value to its last, with no step missing; and the history the runs
// kept holds each step exactly once.
func TestSIGKILLLosesNothingWithAStateDir(t *testing.T) {
	ns := newNamespace(t)
	cms := clients.CoreV1().ConfigMaps(ns)
	isController := true
	var names []string
	for i := range 40 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i)}, Data: map[string]string{"k": "0"}}
		if i%2 == 1 {
			cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "owner", UID: "owner-uid", Controller: &isController}}
		}
		if _, err := cms.Create(bg, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, cm.Name)
	}
	state := filepath.Join(t.TempDir(), "state")
	var out testenv.SyncBuffer // every run's records, in order
	first := startKillable(t, &out, ns, state)
	first.waitSynced(t)

	final := map[string]int{}
	var mu sync.Mutex
	writing, stopWriter := context.WithCancel(context.Background())
	var changes atomic.Int64
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for n := 1; writing.Err() == nil; n++ {
			name := names[rand.N(len(names))]
			patch := fmt.Sprintf(`{"data":{"k":%q}}`, strconv.Itoa(n))
			if _, err := cms.Patch(bg, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Errorf("patch: %v", err)
				return
			}
			mu.Lock()
			final[name] = n
			mu.Unlock()
			changes.Add(1)
			time.Sleep(20 * time.Millisecond) // the writer's pace, not a wait for kubediff
		}
	}()

	run := first
	kills := []string{}
	for i := range 8 {
		var after time.Duration
		switch {
		case i%4 == 3: // before the sync: killed while listing
			after = time.Duration(rand.N(300)) * time.Millisecond
		case i%2 == 0: // the first second after the sync
			run.waitSynced(t)
			after = time.Duration(rand.N(1000)) * time.Millisecond
		default:
			run.waitSynced(t)
			after = time.Duration(1000+rand.N(3000)) * time.Millisecond
		}
		time.Sleep(after) // the moment of the kill is the scenario
		run.kill()
		kills = append(kills, after.Round(10*time.Millisecond).String())
		run = startKillable(t, &out, ns, state)
	}
	stopWriter()
	<-writerDone
	run.waitSynced(t)
	t.Logf("%d changes; killed %d times, %s after start or sync", changes.Load(), len(kills), strings.Join(kills, ", "))

	// Held updates are released after their quiet time; lost ones never.
	missing := unchained(testenv.ParseRecords(t, out.String()), final)
	for end := time.Now().Add(deadline); len(missing) > 0 && time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
		missing = unchained(testenv.ParseRecords(t, out.String()), final)
	}
	if err := run.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-run.done
	if len(missing) > 0 {
		t.Fatalf("%d of %d objects lost changes: %s", len(missing), len(final), strings.Join(missing, "; "))
	}
	checkHistoryChains(t, ns, state, final)
}

// checkHistoryChains reads the history the killed runs left and checks
// that each object's kept records step from "0" to its final value, each
// from where the one before ended: a record kept without its state would
// be reported again after the kill (a step twice), a state kept without
// its record would leave a step out.
func checkHistoryChains(t *testing.T, ns, state string, final map[string]int) {
	t.Helper()
	out, code := cliOutput(t, "history", "configmaps", "-n", ns, "--state-dir", state)
	if code != 0 {
		t.Fatalf("history: exit %d: %s", code, out)
	}
	at := map[string]string{}
	for _, c := range testenv.ParseRecords(t, out) {
		for _, fc := range c.Changes {
			if c.Type != record.Updated || fc.Path != "/data/k" {
				continue
			}
			from, to := fc.From.(string), fc.To.(string)
			if was := cmp.Or(at[c.Name], "0"); from != was {
				t.Errorf("%s: history steps %s → %s after reaching %s", c.Name, from, to, was)
			}
			at[c.Name] = to
		}
	}
	for name, last := range final {
		if at[name] != strconv.Itoa(last) {
			t.Errorf("%s: history reaches %q, changed to %d", name, at[name], last)
		}
	}
}

// unchained returns, for each object whose records' steps do not lead
// from "0" to its final value, what is missing.
func unchained(recs []record.Change, final map[string]int) []string {
	steps := map[string]map[string]string{} // object → from → furthest to
	for _, c := range recs {
		for _, fc := range c.Changes {
			if c.Type != record.Updated || fc.Path != "/data/k" {
				continue
			}
			from, _ := fc.From.(string)
			to, _ := fc.To.(string)
			if steps[c.Name] == nil {
				steps[c.Name] = map[string]string{}
			}
			if prev, ok := steps[c.Name][from]; !ok || atoi(to) > atoi(prev) {
				steps[c.Name][from] = to
			}
		}
	}
	var missing []string
	for name, last := range final {
		at := "0"
		for seen := 0; at != strconv.Itoa(last) && seen <= len(steps[name]); seen++ {
			next, ok := steps[name][at]
			if !ok {
				break
			}
			at = next
		}
		if at != strconv.Itoa(last) {
			missing = append(missing, fmt.Sprintf("%s: reported up to %s, changed to %d", name, at, last))
		}
	}
	return missing
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// killable is a kubediff binary whose records go to a shared buffer.
type killable struct {
	cmd    *exec.Cmd
	stderr testenv.SyncBuffer
	done   chan struct{}
}

func startKillable(t *testing.T, out *testenv.SyncBuffer, ns, state string) *killable {
	t.Helper()
	k := &killable{done: make(chan struct{})}
	k.cmd = exec.Command(kubediff, "watch", "--state-dir", state, "-n", ns, "--http-address", "")
	k.cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	k.cmd.Stdout, k.cmd.Stderr = out, &k.stderr
	if err := k.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = k.cmd.Wait(); close(k.done) }()
	t.Cleanup(func() { _ = k.cmd.Process.Kill(); <-k.done })
	return k
}

func (k *killable) waitSynced(t *testing.T) {
	t.Helper()
	eventually(t, "kubediff to sync", func() bool {
		select {
		case <-k.done:
			t.Fatalf("kubediff exited: %s", k.stderr.String())
		default:
		}
		return strings.Contains(k.stderr.String(), "msg=watching")
	})
}

func (k *killable) kill() {
	_ = k.cmd.Process.Signal(syscall.SIGKILL)
	<-k.done
}
