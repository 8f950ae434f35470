package historymcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLine bounds one incoming message, as the SDK's stdio transport does.
const maxLine = mcp.DefaultMaxLineLength

// LineTransport is MCP over newline-delimited JSON-RPC messages read from
// In and written to Out (stdio). Unlike the SDK's stdio transport, which
// ends the session on the first line it cannot decode, it answers such a
// line with a JSON-RPC error whose id is null (-32700 when the line is not
// JSON, -32600 when it is JSON but no JSON-RPC message) and reads on, as
// JSON-RPC 2.0 asks: one bad line from a client must not take the server
// away from it. Batches (JSON arrays), which MCP 2025-06-18 removed, are
// answered -32600 the same way.
type LineTransport struct {
	In  io.Reader
	Out io.Writer
}

// Connect implements mcp.Transport.
func (t *LineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{out: t.Out, incoming: make(chan jsonrpc.Message), closed: make(chan struct{}), readDone: make(chan struct{}),
		pending: map[string]bool{}, answered: make(chan struct{})}
	go c.readLines(bufio.NewReaderSize(t.In, 64<<10))
	return c, nil
}

// lineConn reads on a goroutine of its own, so that Close unblocks a Read
// waiting for input (a read of stdin cannot be interrupted).
type lineConn struct {
	writeMu  sync.Mutex
	out      io.Writer
	incoming chan jsonrpc.Message
	readDone chan struct{} // closed when reading stopped, with readErr
	readErr  error
	close    sync.Once
	closed   chan struct{}

	// Requests read and not yet answered: at the input's end, Read
	// waits for their answers before saying EOF, or the session would
	// end and drop them (kubediff mcp < requests.jsonl answered nothing).
	pendingMu sync.Mutex
	pending   map[string]bool
	answered  chan struct{} // closed and replaced at each answer
}

// drainWait bounds how long the input's end waits for the answers of
// the requests read before it.
const drainWait = 2 * time.Minute

// readLines hands each message to Read and answers each bad line, until
// the input ends (io.EOF: the client went away) or the reply cannot be
// written.
func (c *lineConn) readLines(r *bufio.Reader) {
	defer close(c.readDone)
	for {
		line, err := readLine(r)
		if len(bytes.TrimSpace(line)) > 0 || errors.Is(err, errLineTooLong) {
			msg, reply := decodeLine(line, err)
			if reply != nil {
				if c.readErr = c.writeLine(reply); c.readErr != nil {
					return
				}
			} else {
				c.track(msg)
				select {
				case c.incoming <- msg:
				case <-c.closed:
					c.readErr = io.EOF
					return
				}
			}
		}
		if err != nil && !errors.Is(err, errLineTooLong) {
			c.readErr = err
			return
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line without its newline; a line over maxLine is
// read to its end and dropped, with errLineTooLong.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > maxLine {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if err == nil {
				err = errLineTooLong
			}
			return nil, err
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return bytes.TrimSuffix(line, []byte("\n")), err
		}
	}
}

// decodeLine returns the message a line holds, or else the error reply
// to write.
func decodeLine(line []byte, readErr error) (jsonrpc.Message, []byte) {
	switch {
	case errors.Is(readErr, errLineTooLong):
		return nil, errorReply(jsonrpc.CodeInvalidRequest, "message longer than 16 MiB")
	case !json.Valid(line):
		return nil, errorReply(jsonrpc.CodeParseError, "parse error: the line is not JSON")
	case bytes.HasPrefix(bytes.TrimSpace(line), []byte("[")):
		return nil, errorReply(jsonrpc.CodeInvalidRequest, "invalid request: JSON-RPC batches are not supported (MCP 2025-06-18 removed them)")
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, errorReply(jsonrpc.CodeInvalidRequest, "invalid request: not a JSON-RPC 2.0 message")
	}
	return msg, nil
}

// errorReply is a JSON-RPC error response to a message whose id could not
// be read: the id is null, as JSON-RPC 2.0 asks (the SDK's encoder would
// leave it out).
func errorReply(code int64, message string) []byte {
	type wireError struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}
	b, _ := json.Marshal(struct {
		JSONRPC string    `json:"jsonrpc"`
		ID      *string   `json:"id"`
		Error   wireError `json:"error"`
	}{"2.0", nil, wireError{code, message}})
	return b
}

func (c *lineConn) writeLine(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.out.Write(append(b, '\n'))
	return err
}

// Read implements mcp.Connection.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case msg := <-c.incoming:
		return msg, nil
	case <-c.readDone:
		c.waitAnswered(ctx)
		return nil, c.readErr
	case <-c.closed:
		return nil, io.EOF
	}
}

// track notes a request whose answer the input's end waits for.
func (c *lineConn) track(msg jsonrpc.Message) {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.pendingMu.Lock()
		c.pending[fmt.Sprint(req.ID.Raw())] = true
		c.pendingMu.Unlock()
	}
}

// untrack notes the answer to a request.
func (c *lineConn) untrack(msg jsonrpc.Message) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return
	}
	c.pendingMu.Lock()
	delete(c.pending, fmt.Sprint(resp.ID.Raw()))
	close(c.answered)
	c.answered = make(chan struct{})
	c.pendingMu.Unlock()
}

// waitAnswered waits until every request read has been answered, the
// session closes, ctx ends or drainWait passes.
func (c *lineConn) waitAnswered(ctx context.Context) {
	timeout := time.NewTimer(drainWait)
	defer timeout.Stop()
	for {
		c.pendingMu.Lock()
		left, answered := len(c.pending), c.answered
		c.pendingMu.Unlock()
		if left == 0 {
			return
		}
		select {
		case <-answered:
		case <-ctx.Done():
			return
		case <-c.closed:
			return
		case <-timeout.C:
			return
		}
	}
}

// Write implements mcp.Connection.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	err = c.writeLine(b)
	c.untrack(msg)
	return err
}

// Close implements mcp.Connection. It leaves In and Out open: they are
// the process's, which ends with the session.
func (c *lineConn) Close() error {
	c.close.Do(func() { close(c.closed) })
	return nil
}

// SessionID implements mcp.Connection: stdio has one session, unnamed.
func (c *lineConn) SessionID() string { return "" }
