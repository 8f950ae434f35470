// Package living runs kubediff on a living local cluster (controller
// manager, scheduler, KWOK-simulated nodes) through a day in its life
// (internal/scenario) and holds it to quiet defaults: the changes a person
// made and the consequences worth knowing, not the machinery's heartbeat.
package living

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kubediff/kubediff/internal/scenario"
	"github.com/kubediff/kubediff/internal/testenv"
	"github.com/kubediff/kubediff/pkg/record"
)

// settle is how long the cluster must stay quiet after a step's action
// has finished before the next step starts, so that each step's
// consequences are counted with it.
const settle = 8 * time.Second

// idleMinutes is how long the cluster is watched doing nothing.
const idleMinutes = 5

var (
	env      *testenv.Env
	kubediff string
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	env, err = testenv.Start()
	if err == nil {
		defer env.Stop()
		err = env.StartLiving(3)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "living:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "kubediff-living-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "living:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if kubediff, err = testenv.BuildKubediff(dir); err != nil {
		fmt.Fprintln(os.Stderr, "living:", err)
		return 1
	}
	return m.Run()
}

// watch runs the kubediff binary with args until the test ends.
func watch(t *testing.T, args ...string) (stdout, stderr *testenv.SyncBuffer) {
	t.Helper()
	stdout, stderr = &testenv.SyncBuffer{}, &testenv.SyncBuffer{}
	cmd := exec.Command(kubediff, append([]string{"watch", "--kubeconfig", env.Kubeconfig, "--http-address", ""}, args...)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	eventually(t, "kubediff to sync", 2*time.Minute, func() bool { return strings.Contains(stderr.String(), "msg=watching") })
	return stdout, stderr
}

func eventually(t *testing.T, what string, within time.Duration, ok func() bool) {
	t.Helper()
	end := time.Now().Add(within)
	for !ok() {
		if time.Now().After(end) {
			t.Fatalf("gave up waiting for %s after %s", what, within)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func parse(t *testing.T, out string) []record.Change {
	t.Helper()
	var recs []record.Change
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var c record.Change
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("stdout line is not a record: %v\n%s", err, sc.Text())
		}
		recs = append(recs, c)
	}
	return recs
}

// waitQuiet returns once no record has come for settle.
func waitQuiet(out *testenv.SyncBuffer) {
	last, since := len(out.String()), time.Now()
	for time.Since(since) < settle {
		time.Sleep(250 * time.Millisecond)
		if n := len(out.String()); n != last {
			last, since = n, time.Now()
		}
	}
}

func describe(c record.Change) string {
	s := fmt.Sprintf("%s %s %s", c.Type, c.Kind, c.ObjectName())
	if c.Changed != "" {
		s += ": " + c.Changed
	}
	return s
}

func TestDayInTheLife(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	k := scenario.Kubectl{Path: env.Kubectl, Kubeconfig: env.Kubeconfig}
	if err := scenario.Setup(ctx, k); err != nil {
		t.Fatal(err)
	}
	stdout, _ := watch(t, "-o", "json")
	waitQuiet(stdout)
	start := len(parse(t, stdout.String()))
	for _, step := range scenario.Steps(k, testenv.NodeName(0)) {
		before := len(parse(t, stdout.String()))
		if err := step.Run(ctx); err != nil {
			t.Fatalf("%s: %v", step.Name, err)
		}
		if step.Done != nil {
			if err := step.Done(ctx); err != nil {
				t.Fatalf("%s: %v\n%s", step.Name, err, env.ProcessLogs(20))
			}
		}
		waitQuiet(stdout)
		recs := parse(t, stdout.String())[before:]
		t.Logf("%-50s %4d records", step.Name, len(recs))
		for _, c := range recs {
			t.Logf("    %s", describe(c))
		}
	}
	_ = start
	for minute := 1; minute <= idleMinutes; minute++ {
		before := len(parse(t, stdout.String()))
		time.Sleep(time.Minute)
		recs := parse(t, stdout.String())[before:]
		t.Logf("idle minute %d: %d records", minute, len(recs))
		for _, c := range recs {
			t.Logf("    %s", describe(c))
		}
	}
}
