package living

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kubediff/kubediff/internal/scenario"
	"github.com/kubediff/kubediff/internal/testenv"
)

// deadline bounds each wait of these tests: the machine is shared.
const deadline = 2 * time.Minute

// whyNamespace holds the objects of TestWhyARolloutStalls.
const whyNamespace = "why"

// TestWhyARolloutStalls is the operator's question "why did it not roll
// out?" asked of a living cluster: a Deployment of 3 where a quota of 3
// Pods leaves room for 2 stalls, and the real kube-controller-manager says why in a
// FailedCreate Event about the ReplicaSet; a Pod no node can take gets
// the real scheduler's FailedScheduling. watch -o text shows the
// Deployment's change with one warning line under its folded burst, which
// says it stalled; history, the timeline page (Chromium) and MCP
// object_changes (the official SDK client) list the warning among the
// Deployment's changes, to a caller who may list Events there, and not
// to one who may not.
func TestWhyARolloutStalls(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	k := scenario.Kubectl{Path: env.Kubectl, Kubeconfig: env.Kubeconfig}
	kubectl := func(stdin string, args ...string) string {
		t.Helper()
		out, err := k.Run(ctx, stdin, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	kubectl(whyQuota, "apply", "-f", "-")
	text, stderr, _ := watch(t, "-o", "text", "--color", "never", "-n", whyNamespace,
		"--state-dir", filepath.Join(t.TempDir(), "state"), "--http-address", "127.0.0.1:0")
	server := servedAt(t, stderr.String())
	reader, blind := whyReaders(t, kubectl)

	kubectl(stuckPod, "apply", "-f", "-") // one of the quota's three Pods
	kubectl("", "-n", whyNamespace, "create", "deployment", "web", "--image=nginx:1.27", "--replicas=3")
	testenv.Eventually(t, "the quota's warning and the scheduler's", deadline, func() bool {
		out := text.String()
		return strings.Contains(out, "FailedCreate") && strings.Contains(out, "FailedScheduling") && strings.Contains(out, "owned   Deployment why/web")
	})
	waitQuiet(quietStream{func() int { return len(text.String()) }, textSettle})
	out := text.String()
	t.Logf("watch -o text:\n%s", out)
	checkWatchText(t, out)

	history := func(kubeconfig string, args ...string) string {
		t.Helper()
		cmd := exec.Command(binary, append([]string{"history", "-n", whyNamespace, "-o", "text", "--color", "never", "--server", server, "--kubeconfig", kubeconfig}, args...)...)
		got, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("history %v: %v\n%s", args, err, got)
		}
		return string(got)
	}
	deploy := history(reader, "deploy/web")
	t.Logf("history deploy/web:\n%s", deploy)
	if !strings.Contains(deploy, "added   Deployment why/web") || !regexp.MustCompile(`warning ReplicaSet why/web-\S+ FailedCreate: .*exceeded quota`).MatchString(deploy) {
		t.Errorf("history deploy/web lacks the Deployment's change or its ReplicaSet's FailedCreate:\n%s", deploy)
	}
	if got := history(blind, "deploy/web"); !strings.Contains(got, "added   Deployment why/web") || strings.Contains(got, "warning ReplicaSet") {
		t.Errorf("a caller who may not list Events sees them, or not the change:\n%s", got)
	}
	// The namespace's history folds the burst as watch did, and says how
	// it ended from the Deployment's state kept at its end.
	if got := history(reader); !regexp.MustCompile(`owned   Deployment why/web: .*stalled: FailedCreate`).MatchString(got) {
		t.Errorf("history -n why does not fold the burst saying it stalled:\n%s", got)
	}
	if got := history(reader, "pod/stuck"); !strings.Contains(got, "warning Pod why/stuck FailedScheduling") {
		t.Errorf("history pod/stuck lacks the scheduler's FailedScheduling:\n%s", got)
	}
	checkWhyMCP(t, server, tokenOf(t, kubectl, "reader"))
	checkWhyPage(t, server, reader)
}

// checkWatchText holds watch -o text to what an operator should read:
// the Deployment's change, its burst folded and saying it stalled, and
// one FailedCreate line under it, whatever the controller's retries.
func checkWatchText(t *testing.T, out string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	created := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "added   Deployment why/web") })
	fold := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "owned   Deployment why/web:") })
	var warnings []int
	for i, l := range lines {
		if strings.Contains(l, "FailedCreate") && strings.Contains(l, "warning ReplicaSet why/web-") {
			warnings = append(warnings, i)
		}
	}
	switch {
	case created < 0 || fold < created:
		t.Errorf("no Deployment change, or its burst before it")
	case len(warnings) != 1:
		t.Errorf("%d FailedCreate warning lines, want one", len(warnings))
	case warnings[0] != fold+1 || !strings.HasPrefix(lines[warnings[0]], "  warning") || !strings.Contains(lines[warnings[0]], "exceeded quota"):
		t.Errorf("the warning is not under the folded burst, or does not say why: %q", lines[warnings[0]])
	}
	if fold >= 0 && !strings.Contains(lines[fold], "stalled: FailedCreate") {
		t.Errorf("the folded burst does not say the rollout stalled: %q", lines[fold])
	}
	if !regexp.MustCompile(`(?m)^\S+ warning Pod why/stuck FailedScheduling: 0/3 nodes are available`).MatchString(out) {
		t.Error("no FailedScheduling line for the Pod no node can take")
	}
}

// checkWhyMCP asks object_changes of the Deployment, as an assistant's
// SDK client would: the ReplicaSet's FailedCreate is among its changes.
func checkWhyMCP(t *testing.T, server, token string) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "kubediff-living", Version: "v0"}, nil)
	httpClient := &http.Client{Transport: testenv.Bearer{Token: token, Next: http.DefaultTransport}}
	session, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: server + "/mcp", HTTPClient: httpClient, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("MCP over HTTP: %v", err)
	}
	defer session.Close()
	res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "object_changes",
		Arguments: map[string]any{"type": "deploy", "name": "web", "namespace": whyNamespace, "from": "1h"}})
	if err != nil || res.IsError {
		t.Fatalf("object_changes: %v %+v", err, res)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var got struct {
		Changes []struct {
			Type, Object string
			Event        *struct{ Type, Reason, Message string }
		}
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	types := []string{}
	for _, c := range got.Changes {
		types = append(types, c.Type)
		if c.Event != nil && c.Event.Type == "Warning" && c.Event.Reason == "FailedCreate" && strings.Contains(c.Event.Message, "exceeded quota") &&
			strings.HasPrefix(c.Object, "ReplicaSet/web-") && slices.Contains(types, "added") {
			return
		}
	}
	t.Errorf("object_changes lacks the Deployment's change followed by its ReplicaSet's FailedCreate:\n%s", raw)
}

// checkWhyPage opens the timeline and the Deployment's page in headless
// Chromium through kubediff ui: the warning is drawn on the ReplicaSet's
// row of the Deployment's burst, and listed on the Deployment's page.
func checkWhyPage(t *testing.T, server, kubeconfig string) {
	t.Helper()
	page := testenv.StartUI(t, binary, deadline, nil, "--no-browser", "--server", server, "--kubeconfig", kubeconfig)
	base := strings.TrimSuffix(page, regexp.MustCompile(`/open\?.*$`).FindString(page))
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("no chromium: `make browser` (hack/browser.sh) installs Debian's package")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1280, 900))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	browser, cancel := chromedp.NewContext(alloc)
	defer cancel()
	if err := chromedp.Do(browser, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(".legend"))); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	within := func(what string, steps ...chromedp.Action[chromedp.Void]) context.Context {
		t.Helper()
		ctx, stop := context.WithTimeout(browser, deadline)
		t.Cleanup(stop)
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return ctx
	}
	ctx := within("the timeline of deploy/web", chromedp.Navigate(base+"/?namespace="+whyNamespace+"&kind=deploy&name=web&from=1h"),
		chromedp.WaitVisible(chromedp.CSS(".mark.event.warning")))
	label, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(".mark.event.warning").getAttribute("aria-label")`))
	if err != nil || !strings.Contains(label, "FailedCreate") || !strings.Contains(label, "ReplicaSet web-") {
		t.Errorf("the warning's mark reads %q (%v)", label, err)
	}
	ctx = within("the Deployment's page", chromedp.Navigate(base+"/?object=deployments.apps/web&namespace="+whyNamespace),
		chromedp.WaitVisible(chromedp.CSS(".record.warning")))
	record, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".record.warning")))
	if err != nil || !strings.Contains(record, "warning FailedCreate") || !strings.Contains(record, "exceeded quota") {
		t.Errorf("the Deployment's page shows the warning as %q (%v)", record, err)
	}
}

// whyReaders are kubeconfigs of two ServiceAccounts that may list the
// Deployment, its ReplicaSets and Pods in the namespace: reader may list
// its Events too, blind may not.
func whyReaders(t *testing.T, kubectl func(string, ...string) string) (reader, blind string) {
	t.Helper()
	ns := []string{"-n", whyNamespace}
	for _, who := range []struct{ name, resources string }{{"reader", "deployments,replicasets,pods,events"}, {"blind", "deployments,replicasets,pods"}} {
		kubectl("", append(ns, "create", "serviceaccount", who.name)...)
		kubectl("", append(ns, "create", "role", who.name, "--verb=get,list", "--resource="+who.resources)...)
		kubectl("", append(ns, "create", "rolebinding", who.name, "--role="+who.name, "--serviceaccount="+whyNamespace+":"+who.name)...)
		config := filepath.Join(t.TempDir(), "kubeconfig-"+who.name)
		raw := kubectl("", "config", "view", "--raw", "--minify", "-o", "json")
		var kc map[string]any
		if err := json.Unmarshal([]byte(raw), &kc); err != nil {
			t.Fatal(err)
		}
		for _, u := range kc["users"].([]any) {
			u.(map[string]any)["user"] = map[string]any{"token": tokenOf(t, kubectl, who.name)}
		}
		b, _ := json.Marshal(kc)
		if err := os.WriteFile(config, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if who.name == "reader" {
			reader = config
		} else {
			blind = config
		}
	}
	return reader, blind
}

// tokenOf is a token of the ServiceAccount name in the namespace.
func tokenOf(t *testing.T, kubectl func(string, ...string) string, name string) string {
	t.Helper()
	return strings.TrimSpace(kubectl("", "-n", whyNamespace, "create", "token", name))
}

// servedAt is the address of kubediff's HTTP server, from its log.
func servedAt(t *testing.T, stderr string) string {
	t.Helper()
	m := regexp.MustCompile(`msg="serving health and metrics" address=(\S+)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no HTTP address logged:\n%s", stderr)
	}
	return "http://" + m[1]
}

// whyQuota is the namespace and its quota of three Pods.
var whyQuota = fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: v1
kind: ResourceQuota
metadata:
  name: pods
  namespace: %[1]s
spec:
  hard:
    pods: "3"
`, whyNamespace)

// stuckPod asks for a node no one has.
var stuckPod = fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: stuck
  namespace: %s
spec:
  nodeSelector:
    kubediff.io/no-such-node: "true"
  containers:
  - name: app
    image: nginx:1.27
`, whyNamespace)
