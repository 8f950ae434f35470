package living

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kubediff/kubediff/internal/scenario"
	"github.com/kubediff/kubediff/internal/testenv"
	"github.com/kubediff/kubediff/internal/testsync"
	"github.com/kubediff/kubediff/pkg/notify/fold"
	"github.com/kubediff/kubediff/pkg/record"
)

// helmChart writes chart web at version: a Deployment of three
// replicas whose Pods carry the labels `helm create` gives them
// (instance, managed-by: Helm).
func helmChart(t *testing.T, dir, version string) string {
	t.Helper()
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: web\nversion: " + version + "\nappVersion: \"2.0\"\n",
		"values.yaml": "image: nginx:1.27\n",
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app.kubernetes.io/name: web, app.kubernetes.io/instance: {{ .Release.Name }}, app.kubernetes.io/managed-by: {{ .Release.Service }}}
spec:
  replicas: 3
  selector: {matchLabels: {app.kubernetes.io/name: web, app.kubernetes.io/instance: {{ .Release.Name }}}}
  template:
    metadata:
      labels: {app.kubernetes.io/name: web, app.kubernetes.io/instance: {{ .Release.Name }}, app.kubernetes.io/managed-by: {{ .Release.Service }}}
    spec: {containers: [{name: web, image: {{ .Values.image | quote }}}]}
`,
	}
	testsync.WriteFiles(t, dir, files)
	return dir
}

// helm runs the Helm `make helm` builds against the living cluster.
func helm(t *testing.T, args ...string) {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", "..", ".tools", "bin", "helm"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append(args, "--kubeconfig", env.Kubeconfig)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helm %v (make helm builds it): %v\n%s", args, err, out)
	}
}

// TestHelmUpgradeOnALivingCluster: `helm upgrade` of a release, with the
// Deployment controller and KWOK's kubelets rolling it out, names its
// revision and chart on every record it caused: the Deployment Helm
// changed, the ReplicaSets the controller made and scaled (they carry
// the Deployment's Helm annotations) and the Pods created and deleted
// (they carry the chart's managed-by and instance labels); text output
// reads as an operator would see it.
func TestHelmUpgradeOnALivingCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	k := scenario.Kubectl{Path: env.Kubectl, Kubeconfig: env.Kubeconfig}
	ns := fmt.Sprintf("release-%d", time.Now().UnixNano()%100000)
	if _, err := k.Run(ctx, "", "create", "namespace", ns); err != nil {
		t.Fatal(err)
	}
	stdout, _, _ := watch(t, "-o", "json", "-n", ns)
	text, _, _ := watch(t, "-o", "text", "--color", "never", "-n", ns)
	settled := func() {
		waitQuiet(quietStream{func() int { return len(stdout.String()) }, settle}, quietStream{func() int { return len(text.String()) }, textSettle})
	}
	rolledOut := func() {
		if out, err := k.Run(ctx, "", "rollout", "status", "deployment/web", "-n", ns, "--timeout", "3m"); err != nil {
			t.Fatalf("rollout: %v\n%s\n%s", err, out, env.ProcessLogs(20))
		}
	}
	chart := helmChart(t, t.TempDir(), "1.4.1")
	helm(t, "install", "web", chart, "--namespace", ns)
	rolledOut()
	settled()
	before, textBefore := len(testenv.ParseRecords(t, stdout.String())), len(text.String())

	helmChart(t, chart, "1.4.2")
	helm(t, "upgrade", "web", chart, "--namespace", ns, "--set", "image=nginx:1.28")
	rolledOut()
	ended := time.Now()
	folded := regexp.MustCompile(`owned +Deployment ` + regexp.QuoteMeta(ns) + `/web: .*rolled out 3/3`)
	testsync.Eventually(t, "the upgrade's folded line", 2*time.Minute, func() bool { return folded.MatchString(text.String()[textBefore:]) })
	// It prints when the Deployment says the rollout ended, not a quiet
	// period or its old Pods' deletions later (it took 24 s when it did).
	if took := time.Since(ended); took >= fold.Quiet {
		t.Errorf("the upgrade's folded line printed %s after kubectl rollout status returned; want it as the rollout ends", took.Round(100*time.Millisecond))
	} else {
		t.Logf("the upgrade's folded line printed %s after kubectl rollout status returned", took.Round(100*time.Millisecond))
	}
	settled()
	kinds := map[string]int{}
	for _, c := range testenv.ParseRecords(t, stdout.String())[before:] {
		if strings.HasPrefix(c.Name, "sh.helm.release.v1.") {
			continue // Helm's own record of the release
		}
		kinds[c.Type+" "+c.Kind]++
		if r := c.Release; r == nil || r.Tool != record.ToolHelm || r.Name != "web" || r.Revision != 2 || r.Chart != "web-1.4.2" {
			t.Errorf("%s names release %+v, want web rev 2, chart web-1.4.2", describe(c), r)
		}
	}
	for _, want := range []string{"updated Deployment", "added ReplicaSet", "updated ReplicaSet", "added Pod", "deleted Pod"} {
		if kinds[want] == 0 {
			t.Errorf("no %s record of the upgrade: %v", want, kinds)
		}
	}
	t.Logf("the upgrade's records: %v\n%s", kinds, text.String()[textBefore:])
	// The upgrade is a new change of the Deployment: its controllers'
	// steps fold into one line of their own, not late steps of the
	// install's.
	if upgrade := text.String()[textBefore:]; len(folded.FindAllString(upgrade, -1)) != 1 || strings.Contains(upgrade, "late steps") {
		t.Errorf("the upgrade's rollout is not one folded line of its own:\n%s", upgrade)
	}
	line := fmt.Sprintf("updated Deployment %s/web by helm (release web rev 2, chart web-1.4.2)", ns)
	if !strings.Contains(text.String()[textBefore:], line) {
		t.Errorf("watch -o text lacks %q:\n%s", line, text.String()[textBefore:])
	}
}
