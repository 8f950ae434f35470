package historymcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/kubediff/kubediff/internal/testsync"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
)

// TestLineTransportAnswersBadLinesAndGoesOn: lines that are not JSON,
// JSON that is no JSON-RPC message, a batch and a line over the size
// bound each get an error with id null, and a ping after them is
// answered.
func TestLineTransportAnswersBadLinesAndGoesOn(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	session, err := NewServer(Options{Source: historyapi.Local{}}).Connect(ctx, &LineTransport{In: inR, Out: outW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	replies := bufio.NewScanner(outR)
	replies.Buffer(nil, 1<<20)
	send := func(line string) {
		t.Helper()
		go func() { _, _ = io.WriteString(inW, line+"\n") }()
	}
	for _, bad := range []struct {
		line string
		code int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"`, -32700},
		{`not json`, -32700},
		{`{"hello":"world"}`, -32600},
		{`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`, -32600},
		{`{"jsonrpc":"2.0","id":3,"method":"ping","params":{"pad":"` + strings.Repeat("x", maxLine) + `"}}`, -32600},
	} {
		send(bad.line)
		if !replies.Scan() {
			t.Fatalf("%.60s: no reply: %v", bad.line, replies.Err())
		}
		var reply map[string]json.RawMessage
		var e struct{ Code int }
		err := json.Unmarshal(replies.Bytes(), &reply)
		if err == nil {
			err = json.Unmarshal(reply["error"], &e)
		}
		if err != nil || string(reply["id"]) != "null" || e.Code != bad.code {
			t.Errorf("%.60s: reply %s, want id null and code %d", bad.line, replies.Bytes(), bad.code)
		}
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	if !replies.Scan() || !strings.Contains(replies.Text(), `"id":4`) || strings.Contains(replies.Text(), "error") {
		t.Errorf("ping after the bad lines: %q", replies.Text())
	}
}

// TestRequestsOnAClosedPipeAreAllAnswered: `kubediff mcp <
// requests.jsonl` reads the whole file at once and meets its end before
// answering; every request read is answered before the session ends
// (before, the end of input ended the session and dropped them).
func TestRequestsOnAClosedPipeAreAllAnswered(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"four","method":"tools/list"}`,
	}
	var out testsync.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := NewServer(Options{Source: historyapi.Local{}}).Run(ctx, &LineTransport{In: strings.NewReader(strings.Join(lines, "\n") + "\n"), Out: &out})
	if err != nil && ctx.Err() != nil {
		t.Fatalf("the session did not end at the input's end: %v", err)
	}
	for _, id := range []string{`"id":1`, `"id":2`, `"id":3`, `"id":"four"`} {
		if !strings.Contains(out.String(), id) {
			t.Errorf("no answer with %s:\n%s", id, out.String())
		}
	}
}
