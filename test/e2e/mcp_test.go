package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubediff/kubediff/internal/testenv"
)

// TestMCPAnswersAnAssistant: the MCP SDK's own client starts `kubediff
// mcp` as a subprocess, as an assistant's host would, lists its tools and
// calls each against changes made at known moments — through a running
// kubediff as a user who may list the namespace, and from the state dir
// after it stopped. A controller's three new objects come back as one
// burst. A user bound to another namespace sees none of it.
func TestMCPAnswersAnAssistant(t *testing.T) {
	ns, elsewhere := newNamespace(t), newNamespace(t)
	// Made before kubediff starts: the namespace then holds only the
	// scenario's changes.
	assistant, outsider := tokenKubeconfig(t, ns, "assistant", ns), tokenKubeconfig(t, ns, "outsider", elsewhere)
	dir := filepath.Join(t.TempDir(), "state")
	w := startBinary(t, "watch", "-n", ns, "--state-dir", dir)
	w.logOnFailure()
	moments := changeAtKnownMoments(t, w, ns)
	createOwned(t, w, ns, "web-1", "web-2", "web-3")

	server := httpAddress(t, w)
	viewer := mcpSession(t, "--server", server, "--kubeconfig", assistant)
	eventually(t, "the history to hold the changes", func() bool { // written once a second
		got := listChanges(t, viewer, ns)
		return len(got) == 5 && got[4].Burst != nil && got[4].Burst.Records == 3
	})
	checkMCPTools(t, viewer, ns, moments)
	var health struct {
		Types []struct{ Name, State string }
	}
	callTool(t, viewer, "watched_types", map[string]any{}, &health)
	if !slices.ContainsFunc(health.Types, func(x struct{ Name, State string }) bool { return x.Name == "configmaps" && x.State == "synced" }) {
		t.Errorf("watched_types through --server does not say ConfigMaps are synced: %+v", health.Types)
	}

	stranger := mcpSession(t, "--server", server, "--kubeconfig", outsider)
	if got := listChanges(t, stranger, ns); len(got) != 0 {
		t.Errorf("a user of another namespace sees %d changes: %v", len(got), got)
	}

	// The same tools over streamable HTTP on kubediff's own address, with
	// the caller's token; without one, no session.
	checkMCPTools(t, mcpHTTPSession(t, server, tokenOf(t, assistant)), ns, moments)
	if got := listChanges(t, mcpHTTPSession(t, server, tokenOf(t, outsider)), ns); len(got) != 0 {
		t.Errorf("over HTTP, a user of another namespace sees %d changes", len(got))
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "kubediff-e2e", Version: "v0"}, nil)
	if s, err := client.Connect(bg, &mcp.StreamableClientTransport{Endpoint: server + "/mcp", DisableStandaloneSSE: true, MaxRetries: -1}, nil); err == nil {
		if _, err := s.ListTools(bg, nil); err == nil {
			t.Error("MCP over HTTP answered a caller without a token")
		}
		_ = s.Close()
	}

	stopWith(t, w, syscall.SIGTERM)
	checkMCPTools(t, mcpSession(t, "--state-dir", dir), ns, moments)
}

// createOwned creates ConfigMaps a controller owns, as a rollout would.
func createOwned(t *testing.T, w *run, ns string, names ...string) {
	t.Helper()
	isController := true
	for _, name := range names {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d4f", UID: "rs-uid", Controller: &isController}}}}
		if _, err := clients.CoreV1().ConfigMaps(ns).Create(bg, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		w.waitRecords("ConfigMap", ns, name, 1)
	}
}

// mcpSession starts `kubediff mcp` with args through the SDK's client.
func mcpSession(t *testing.T, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(kubediff, append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "kubediff-e2e", Version: "v0"}, nil)
	session, err := client.Connect(bg, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() { _ = session.Close() })
	return session
}

// callTool calls a tool and returns its structured result decoded into
// out, or its text when out is nil; a tool error fails the test.
func callTool(t *testing.T, s *mcp.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	res, err := s.CallTool(bg, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if res.IsError {
		t.Fatalf("%s %v: tool error: %s", name, args, text)
	}
	if out != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %v: %s", name, err, b)
		}
	}
	return text
}

type mcpEntry struct {
	Type, Kind, Name, Fields string
	Burst                    *struct {
		Owner   string
		Records int
		Objects int
	}
}

func listChanges(t *testing.T, s *mcp.ClientSession, ns string) []mcpEntry {
	t.Helper()
	var out struct{ Changes []mcpEntry }
	callTool(t, s, "list_changes", map[string]any{"namespace": ns, "from": "15m"}, &out)
	return out.Changes
}

// checkMCPTools calls every tool and checks what it says of the scenario.
func checkMCPTools(t *testing.T, s *mcp.ClientSession, ns string, moments []string) {
	t.Helper()
	tools, err := s.ListTools(bg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"list_changes", "object_at", "object_blame", "object_changes", "object_diff", "restore_preview", "watched_types"}; !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}

	var summary []string
	for _, e := range listChanges(t, s, ns) {
		line := e.Type + " " + e.Kind + "/" + e.Name
		if e.Burst != nil {
			line += " " + e.Burst.Owner + " x" + string(rune('0'+e.Burst.Records))
		}
		summary = append(summary, line)
	}
	want := "added ConfigMap/settings, updated ConfigMap/settings, updated ConfigMap/settings, deleted ConfigMap/settings, burst ReplicaSet/web-5d4f ReplicaSet/web-5d4f x3"
	if strings.Join(summary, ", ") != want {
		t.Errorf("list_changes:\n  %s\nwant\n  %s", strings.Join(summary, ", "), want)
	}

	var history struct {
		Changes []struct {
			Type   string
			Fields []struct{ Field, From, To string }
		}
	}
	callTool(t, s, "object_changes", map[string]any{"type": "cm", "name": "settings", "namespace": ns, "from": "15m"}, &history)
	if len(history.Changes) != 4 || len(history.Changes[1].Fields) != 1 || history.Changes[1].Fields[0].From != "one" || history.Changes[1].Fields[0].To != "two" {
		t.Errorf("object_changes: %+v", history.Changes)
	}
	if got := callTool(t, s, "object_at", map[string]any{"type": "configmap", "name": "settings", "namespace": ns, "at": moments[2]}, nil); !strings.Contains(got, "level: two") {
		t.Errorf("object_at moment 2:\n%s", got)
	}
	diff := callTool(t, s, "object_diff", map[string]any{"type": "cm", "name": "settings", "namespace": ns, "from": moments[1], "to": moments[3]}, nil)
	if !strings.Contains(diff, "-  level: one") || !strings.Contains(diff, "+  level: three") {
		t.Errorf("object_diff:\n%s", diff)
	}
	blamed := callTool(t, s, "object_blame", map[string]any{"type": "cm", "name": "settings", "namespace": ns, "at": moments[3]}, nil)
	// Short ids, as git blame's: the level's line names a later record
	// (the update) than the name's (the creation).
	level := regexp.MustCompile(`(?m)^(\S+/\d+) +\S+ +\S+ +│ +level: three$`).FindStringSubmatch(blamed)
	name := regexp.MustCompile(`(?m)^(\S+/\d+) .*│ +name: settings$`).FindStringSubmatch(blamed)
	if level == nil || name == nil || level[1] == name[1] {
		t.Errorf("object_blame at moment 3:\n%s", blamed)
	}
	preview := callTool(t, s, "restore_preview", map[string]any{"type": "cm", "name": "settings", "namespace": ns, "at": moments[2]}, nil)
	if !strings.Contains(preview, "level: two") || !strings.Contains(preview, "+  level: two") || strings.Contains(preview, "resourceVersion") {
		t.Errorf("restore_preview of the deleted ConfigMap at moment 2:\n%s", preview)
	}
	var types struct{ Types []struct{ Name string } }
	callTool(t, s, "watched_types", map[string]any{}, &types)
	if !slices.ContainsFunc(types.Types, func(x struct{ Name string }) bool { return x.Name == "configmaps" }) {
		t.Errorf("watched_types: %+v", types.Types)
	}
}

// mcpHTTPSession connects the SDK's client to kubediff's /mcp with token.
func mcpHTTPSession(t *testing.T, server, token string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "kubediff-e2e", Version: "v0"}, nil)
	httpClient := &http.Client{Transport: testenv.Bearer{Token: token, Next: http.DefaultTransport}}
	session, err := client.Connect(bg, &mcp.StreamableClientTransport{Endpoint: server + "/mcp", HTTPClient: httpClient, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect over HTTP: %v", err)
	}
	t.Cleanup(func() { _ = session.Close() })
	return session
}

// tokenOf reads the bearer token of a kubeconfig tokenKubeconfig wrote.
func tokenOf(t *testing.T, kubeconfig string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range cfg.AuthInfos {
		if ai.Token != "" {
			return ai.Token
		}
	}
	t.Fatalf("no token in %s", kubeconfig)
	return ""
}
