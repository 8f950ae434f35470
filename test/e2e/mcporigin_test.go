package e2e

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kubediff/kubediff/internal/testenv"
)

// TestMCPOverHTTPRefusesOtherOrigins: a web page of another origin,
// calling kubediff's /mcp through the browser of a user who holds a
// token, is refused 403, as the MCP spec asks of a server; a client that
// sends no Origin (an assistant's host) and a page of kubediff's own
// origin are answered, the SDK's client lists the tools.
func TestMCPOverHTTPRefusesOtherOrigins(t *testing.T) {
	ns := newNamespace(t)
	viewer := tokenKubeconfig(t, ns, "viewer", ns)
	w := startBinary(t, "watch", "-n", ns, "--state-dir", filepath.Join(t.TempDir(), "state"))
	w.logOnFailure()
	server := httpAddress(t, w)
	token := tokenOf(t, viewer)
	own, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	for origin, want := range map[string]int{
		"":                                  http.StatusOK,
		own.Scheme + "://" + own.Host:       http.StatusOK,
		"http://evil.example":               http.StatusForbidden,
		"http://evil.example:" + own.Port(): http.StatusForbidden,
		"null":                              http.StatusForbidden,
	} {
		if got := mcpInitializeStatus(t, server, token, origin); got != want {
			t.Errorf("Origin %q: %d, want %d", origin, got, want)
		}
	}
	for _, origin := range []string{"", own.Scheme + "://" + own.Host} {
		session := mcpHTTPSessionFrom(t, server, token, origin)
		if _, err := session.ListTools(bg, nil); err != nil {
			t.Errorf("Origin %q: list tools: %v", origin, err)
		}
	}
}

// mcpInitializeStatus posts an MCP initialize to server's /mcp with a
// bearer token and origin (none when empty) and returns the status.
func mcpInitializeStatus(t *testing.T, server, token, origin string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"v0"}}}`
	req, err := http.NewRequest(http.MethodPost, server+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := (&http.Client{Timeout: deadline}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// mcpHTTPSessionFrom is mcpHTTPSession sending an Origin header.
func mcpHTTPSessionFrom(t *testing.T, server, token, origin string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "kubediff-e2e", Version: "v0"}, nil)
	var next http.RoundTripper = testenv.Bearer{Token: token, Next: http.DefaultTransport}
	if origin != "" {
		next = originTransport{origin: origin, next: next}
	}
	httpClient := &http.Client{Transport: next, Timeout: time.Minute}
	session, err := client.Connect(bg, &mcp.StreamableClientTransport{Endpoint: server + "/mcp", HTTPClient: httpClient, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect over HTTP from %q: %v", origin, err)
	}
	t.Cleanup(func() { _ = session.Close() })
	return session
}

type originTransport struct {
	origin string
	next   http.RoundTripper
}

func (o originTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Origin", o.origin)
	return o.next.RoundTrip(r)
}
