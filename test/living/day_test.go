// Package living runs kubediff on a living local cluster (controller
// manager, scheduler, KWOK-simulated nodes) through a day in its life
// (internal/scenario) and holds it to quiet defaults: the changes a person
// made and the consequences worth knowing, not the machinery's heartbeat.
package living

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubediff/kubediff/internal/scenario"
	"github.com/kubediff/kubediff/internal/testenv"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/state"
)

// settle is how long the cluster must stay quiet after a step's action
// has finished before the next step starts, so that each step's
// consequences are counted with it.
const settle = 8 * time.Second

// textSettle is settle for -o text, which prints a folded burst once it
// has been quiet for 10 s.
const textSettle = 12 * time.Second

// idleMinutes is how long the cluster is watched doing nothing
// (KUBEDIFF_IDLE_MINUTES shortens it while working on the steps).
var idleMinutes = 5

var (
	env    *testenv.Env
	binary string // kubediff, built by TestMain
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	// kubediff keeps a history in ~/.local/state by default: the tests'
	// kubediffs keep one only where a test names it, never in the home of
	// whoever runs them (an empty KUBEDIFF_STATE_DIR names none).
	os.Setenv("KUBEDIFF_STATE_DIR", "")
	if n, err := strconv.Atoi(os.Getenv("KUBEDIFF_IDLE_MINUTES")); err == nil {
		idleMinutes = n
	}
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
	kubediff, remove, err := testenv.BuildKubediff()
	if err != nil {
		fmt.Fprintln(os.Stderr, "living:", err)
		return 1
	}
	defer remove()
	binary = kubediff
	return m.Run()
}

// watch runs the kubediff binary with args until the test ends.
func watch(t *testing.T, args ...string) (stdout, stderr *testenv.SyncBuffer, stop func()) {
	t.Helper()
	stdout, stderr = &testenv.SyncBuffer{}, &testenv.SyncBuffer{}
	cmd := exec.Command(binary, append([]string{"watch", "--kubeconfig", env.Kubeconfig, "--http-address", ""}, args...)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop = sync.OnceFunc(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	t.Cleanup(stop)
	testenv.Eventually(t, "kubediff to sync", 2*time.Minute, func() bool { return strings.Contains(stderr.String(), "msg=watching") })
	return stdout, stderr, stop
}

// quietStream is an output that must have been quiet for a while.
type quietStream struct {
	size  func() int // grows with what is written
	quiet time.Duration
}

// waitQuiet returns once nothing has been written to each stream for its
// quiet time.
func waitQuiet(streams ...quietStream) {
	last, since := make([]int, len(streams)), make([]time.Time, len(streams))
	for i, s := range streams {
		last[i], since[i] = s.size(), time.Now()
	}
	for {
		time.Sleep(250 * time.Millisecond)
		quiet := true
		for i, s := range streams {
			if n := s.size(); n != last[i] {
				last[i], since[i] = n, time.Now()
			}
			quiet = quiet && time.Since(since[i]) >= s.quiet
		}
		if quiet {
			return
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

// check is what a step must report with the default settings: at most
// max records in the JSON stream, and each of want (a describe() prefix)
// at least once, since nothing a person would want to know may go missing.
type check struct {
	max  int
	want []string
	// maxText, when set, bounds the lines -o text prints and the
	// sections (a record, or a folded burst) Slack gets, both folding
	// owned objects' records.
	maxText int
}

var checks = map[string]check{
	"create a Deployment of 10 replicas": {max: 15, maxText: 5, want: []string{"added Deployment day/web", "added ReplicaSet", "added Pod"}},
	"roll out a new image": {max: 30, maxText: 5, want: []string{
		"updated Deployment day/web: spec.template.spec.containers[name=nginx].image", "added ReplicaSet",
		"updated ReplicaSet", "added Pod", "deleted Pod"}},
	"scale 10 → 3": {max: 10, maxText: 5, want: []string{"updated Deployment day/web: spec.replicas", "updated ReplicaSet", "deleted Pod"}},
	"edit one line of a config file in a ConfigMap":     {max: 1, want: []string{`updated ConfigMap day/nginx: data["nginx.conf"]`}},
	"a Pod crash-loops (two restarts), then is deleted": {max: 4, want: []string{"added Pod day/crasher", "updated Pod day/crasher", "deleted Pod day/crasher"}},
	"cordon and drain a node":                           {max: 15, want: []string{"updated Node kwok-node-0: spec.unschedulable"}},
	"create a custom resource":                          {max: 1, want: []string{"added Gadget day/sprocket"}},
	"delete the custom resource":                        {max: 1, want: []string{"deleted Gadget day/sprocket"}},
}

func TestDayInTheLife(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	k := scenario.Kubectl{Path: env.Kubectl, Kubeconfig: env.Kubeconfig}
	if err := scenario.Setup(ctx, k); err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(t.TempDir(), "state")
	stdout, _, stopJSON := watch(t, "-o", "json", "--state-dir", stateDir)
	text, _, _ := watch(t, "-o", "text", "--color", "never")
	slack := &testenv.SlackServer{}
	slackSrv := httptest.NewServer(slack)
	defer slackSrv.Close()
	cfg := filepath.Join(t.TempDir(), "slack.yaml")
	sink := fmt.Sprintf("sinks:\n  - name: day\n    type: slack\n    token: xoxb-living\n    channel: \"#day\"\n    apiURL: %s/api/\n", slackSrv.URL)
	if err := os.WriteFile(cfg, []byte(sink), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, _ = watch(t, "-o", "none", "--config", cfg)
	// kubewatch beside it, for the comparison in docs/living-cluster.md.
	kubewatch := startKubewatch(t)
	settled := func() {
		waitQuiet(quietStream{func() int { return len(stdout.String()) }, settle},
			quietStream{func() int { return len(text.String()) }, textSettle},
			quietStream{func() int { return len(slack.Sections()) }, textSettle})
	}
	settled()
	var kubewatchSteps []string
	for _, step := range scenario.Steps(k, testenv.NodeName(0)) {
		before := len(testenv.ParseRecords(t, stdout.String()))
		textBefore := len(text.String())
		slackBefore := len(slack.Sections())
		kubewatchBefore := len(kubewatch.messages())
		if err := step.Run(ctx); err != nil {
			t.Fatalf("%s: %v", step.Name, err)
		}
		if step.Done != nil {
			if err := step.Done(ctx); err != nil {
				t.Fatalf("%s: %v\n%s", step.Name, err, env.ProcessLogs(20))
			}
		}
		settled()
		recs := testenv.ParseRecords(t, stdout.String())[before:]
		textLines := strings.Split(strings.TrimSpace(text.String()[textBefore:]), "\n")
		slackLines := slack.Sections()[slackBefore:]
		kubewatchSteps = append(kubewatchSteps, fmt.Sprintf("%-50s %3d messages", step.Name, len(kubewatch.messages())-kubewatchBefore))
		var lines []string
		for _, c := range recs {
			lines = append(lines, describe(c))
		}
		t.Logf("%-50s %3d records, %d lines of text, %d Slack sections\n    %s\n  text:\n    %s\n  slack:\n    %s", step.Name, len(recs), len(textLines),
			len(slackLines), strings.Join(lines, "\n    "), strings.Join(textLines, "\n    "), strings.Join(slackLines, "\n    "))
		c, ok := checks[step.Name]
		if !ok {
			t.Fatalf("no check for step %q", step.Name)
		}
		if len(recs) > c.max {
			t.Errorf("%s: %d records, want at most %d", step.Name, len(recs), c.max)
		}
		if c.maxText > 0 && len(textLines) > c.maxText {
			t.Errorf("%s: %d lines of text, want at most %d", step.Name, len(textLines), c.maxText)
		}
		if c.maxText > 0 && len(slackLines) > c.maxText {
			t.Errorf("%s: %d Slack sections, want at most %d", step.Name, len(slackLines), c.maxText)
		}
		if len(slackLines) == 0 {
			t.Errorf("%s: nothing posted to Slack", step.Name)
		}
		for _, w := range c.want {
			if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, w) }) {
				t.Errorf("%s: nothing reported as %q", step.Name, w)
			}
		}
	}
	// A restart is news each time: the crash loop's two restarts show.
	restarts := 0
	for _, c := range testenv.ParseRecords(t, stdout.String()) {
		if c.Name == "crasher" && strings.Contains(c.Changed, "restartCount") {
			restarts++
		}
	}
	if restarts < 2 {
		t.Errorf("%d restarts of the crash-looping Pod reported, want 2", restarts)
	}
	for minute := 1; minute <= idleMinutes; minute++ {
		before, slackBefore, kubewatchBefore := len(testenv.ParseRecords(t, stdout.String())), len(slack.Sections()), len(kubewatch.messages())
		time.Sleep(time.Minute) // the idle minute itself, not a wait for anything
		recs := testenv.ParseRecords(t, stdout.String())[before:]
		t.Logf("idle minute %d: %d records", minute, len(recs))
		kubewatchSteps = append(kubewatchSteps, fmt.Sprintf("idle minute %-38d %3d messages", minute, len(kubewatch.messages())-kubewatchBefore))
		if n := len(slack.Sections()) - slackBefore; n > 0 {
			t.Errorf("idle minute %d: %d Slack sections", minute, n)
		}
		for _, c := range recs {
			t.Errorf("idle minute %d: %s", minute, describe(c))
		}
	}
	if len(kubewatch.messages()) == 0 {
		t.Errorf("kubewatch posted nothing: the comparison is void; its log ends:\n%s", kubewatch.stderr())
	}
	t.Logf("kubewatch %s (webhook handler, every type it watches) on the same steps:\n    %s", "v0.1.0", strings.Join(kubewatchSteps, "\n    "))
	stopJSON()
	reportHistoryCost(t, stateDir)
}

// reportHistoryCost prints what the day's history holds: the records,
// and the states of quiet changes (status counters, Pods starting) that
// it keeps without a record so that get --at answers the status the API
// server held. Quiet states must be there: a rollout's status moves on
// without a record.
func reportHistoryCost(t *testing.T, dir string) {
	t.Helper()
	reader, closeDB, err := state.OpenHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = closeDB() }()
	stats, err := reader.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("history after the day: %d records, %d quiet states, %d bytes in all (%.0f bytes per entry); of them %d Event entries (folded per object and reason), %d bytes (%.0f bytes per entry, %.0f%% of the history)",
		stats.Records, stats.QuietStates, stats.Bytes, float64(stats.Bytes)/float64(max(1, stats.Records+stats.QuietStates+stats.Events)),
		stats.Events, stats.EventBytes, float64(stats.EventBytes)/float64(max(1, stats.Events)), 100*float64(stats.EventBytes)/float64(max(1, stats.Bytes)))
	if stats.Events == 0 {
		t.Error("the history kept no Event: the controllers' and the scheduler's say nothing beside the changes")
	}
	if stats.QuietStates == 0 {
		t.Error("the history kept no quiet state: get --at would show the status of the last record as current")
	}
}

// kubectlOrFail is a kubectl against the living cluster that fails the
// test when a command fails, each within ten minutes of the first.
func kubectlOrFail(t *testing.T) func(stdin string, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	k := scenario.Kubectl{Path: env.Kubectl, Kubeconfig: env.Kubeconfig}
	return func(stdin string, args ...string) {
		t.Helper()
		if out, err := k.Run(ctx, stdin, args...); err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}
}
