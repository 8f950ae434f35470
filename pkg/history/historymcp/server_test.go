package historymcp

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kubediff/kubediff/pkg/history/historyapi"
)

// TestToolsSayTheyOnlyRead: an assistant's host asks the user before a
// tool that may change something; every tool here only reads the
// history, and says so (readOnlyHint), as the SDK's client sees it.
func TestToolsSayTheyOnlyRead(t *testing.T) {
	ctx := context.Background()
	serverSide, clientSide := mcp.NewInMemoryTransports()
	server := NewServer(Options{Source: historyapi.Local{}, Version: "test"})
	serverSession, err := server.Connect(ctx, serverSide, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer serverSession.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	session, err := client.Connect(ctx, clientSide, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 7 {
		t.Errorf("%d tools, want 7", len(tools.Tools))
	}
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if a := tool.Annotations; a == nil || !a.ReadOnlyHint || a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("%s: annotations %+v, want readOnlyHint true, openWorldHint false", tool.Name, a)
		}
		// The README lists them all (it named 5 of 7).
		if !strings.Contains(string(readme), "`"+tool.Name+"`") {
			t.Errorf("README.md does not name the tool %s", tool.Name)
		}
	}
}
