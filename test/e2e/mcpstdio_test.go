package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPStdioAnswersAMalformedLine: an assistant's host that sends one
// line kubediff mcp cannot read (cut short, or JSON that is no JSON-RPC
// message) gets a JSON-RPC error with id null for it, -32700 and -32600,
// and the session goes on: the SDK's client, talking to the binary over
// its stdin and stdout, calls a tool before and after and is answered.
func TestMCPStdioAnswersAMalformedLine(t *testing.T) {
	ns, dir := stateDirWithOneRecord(t)

	relay := startMCPRelay(t, "--state-dir", dir)
	if got := listChanges(t, relay.session, ns); len(got) != 1 {
		t.Fatalf("list_changes before the malformed line: %v", got)
	}
	for _, bad := range []struct {
		line string
		code int
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{`, -32700},
		{`{"hello":"world"}`, -32600},
	} {
		line, code := bad.line, bad.code
		relay.inject(line)
		select {
		case reply := <-relay.nullIDReplies:
			if reply.Error.Code != code {
				t.Errorf("%s: answered %+v, want code %d", line, reply.Error, code)
			}
		case <-relay.outputEnded:
			t.Fatalf("%s: kubediff mcp ended its output instead of answering; its stderr:\n%s", line, relay.stderr.String())
		case <-time.After(deadline):
			t.Fatalf("%s: no error reply with id null within %s; kubediff mcp's stderr:\n%s", line, deadline, relay.stderr.String())
		}
	}
	if got := listChanges(t, relay.session, ns); len(got) != 1 {
		t.Errorf("list_changes after the malformed lines: %v", got)
	}
}

// mcpRelay sits between the SDK's client and `kubediff mcp`: it passes
// whole lines both ways, lets the test put a line of its own between the
// client's, and keeps back replies with id null (which the client, having
// sent no such request, would take for a broken connection).
type mcpRelay struct {
	session       *mcp.ClientSession
	stdinMu       sync.Mutex
	stdin         io.Writer
	stderr        *syncBuffer
	nullIDReplies chan nullIDReply
	outputEnded   chan struct{}
}

type nullIDReply struct {
	Error struct {
		Code    int
		Message string
	}
}

func startMCPRelay(t *testing.T, args ...string) *mcpRelay {
	t.Helper()
	cmd := exec.Command(kubediff, append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	r := &mcpRelay{stderr: &syncBuffer{}, nullIDReplies: make(chan nullIDReply, 10), outputEnded: make(chan struct{})}
	cmd.Stderr = r.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	r.stdin = stdin
	fromClient, clientOut := io.Pipe()
	clientIn, toClient := io.Pipe()
	go func() { // client → kubediff, line by line
		lines := bufio.NewScanner(fromClient)
		lines.Buffer(nil, 16<<20)
		for lines.Scan() {
			r.inject(lines.Text())
		}
	}()
	go func() { // kubediff → client, but the replies with id null
		defer close(r.outputEnded)
		defer toClient.Close()
		lines := bufio.NewScanner(stdout)
		lines.Buffer(nil, 16<<20)
		for lines.Scan() {
			var head struct{ ID json.RawMessage }
			if json.Unmarshal(lines.Bytes(), &head) == nil && string(head.ID) == "null" {
				var reply nullIDReply
				_ = json.Unmarshal(lines.Bytes(), &reply)
				r.nullIDReplies <- reply
				continue
			}
			if _, err := toClient.Write(append(lines.Bytes(), '\n')); err != nil {
				return
			}
		}
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "kubediff-e2e", Version: "v0"}, nil)
	r.session, err = client.Connect(bg, &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, r.stderr.String())
	}
	t.Cleanup(func() { _ = r.session.Close() })
	return r
}

// inject writes one line to kubediff's stdin, never inside another.
func (r *mcpRelay) inject(line string) {
	r.stdinMu.Lock()
	defer r.stdinMu.Unlock()
	_, _ = io.WriteString(r.stdin, line+"\n")
}
