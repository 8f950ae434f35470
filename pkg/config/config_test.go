package config

import (
	"context"
	"math"
	"net"
	"runtime"
	"strings"
	"testing"

	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/record"
)

// queueSize is bounded, globally and per sink, so that a huge one is a
// clear error naming the key instead of a crash at start.
func TestQueueSizeIsBounded(t *testing.T) {
	tests := []struct {
		name      string
		global    int
		sink      int
		wantError string // empty: valid
	}{
		{name: "default", global: Default().QueueSize},
		{name: "the maximum", global: MaxQueueSize, sink: MaxQueueSize},
		{name: "zero", global: 0, wantError: "queueSize (--queue-size): 0 must be at least 1"},
		{name: "over the maximum", global: 100_000_000, wantError: "queueSize (--queue-size): 100000000 is over the maximum of 100000"},
		{name: "the largest int", global: math.MaxInt, wantError: "queueSize (--queue-size): 9223372036854775807 is over the maximum"},
		{name: "a sink's over the maximum", global: 10, sink: MaxQueueSize + 1, wantError: "sinks[a].queueSize: 100001 is over the maximum of 100000"},
		{name: "a sink's negative", global: 10, sink: -1, wantError: "sinks[a].queueSize: -1 must be at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.QueueSize = tt.global
			c.Sinks = []SinkEntry{{Name: "a", Type: "webhook", QueueSize: tt.sink, Options: map[string]any{"url": "http://127.0.0.1:1/"}}}
			err := c.Validate()
			switch {
			case tt.wantError == "" && err != nil:
				t.Fatalf("Validate() = %v, want no error", err)
			case tt.wantError != "" && (err == nil || !strings.Contains(err.Error(), tt.wantError)):
				t.Fatalf("Validate() = %v, want an error saying %q", err, tt.wantError)
			}
		})
	}
}

// The largest queueSize a sink may have costs a bounded amount of memory
// when the sink's queue starts (it sets aside room for every record),
// whatever the size of a record in memory becomes.
func TestLargestQueueSizeCostsLittleAtStart(t *testing.T) {
	const most = 64 << 20 // the README and MaxQueueSize's comment say 30 MB
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	q := notify.NewQueue("big", notify.NotifierFunc(func(context.Context, record.Change) error { return nil }),
		notify.QueueOptions{Size: MaxQueueSize})
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > most {
		t.Errorf("a queue of queueSize %d allocates %d MiB at start, over %d MiB: lower MaxQueueSize or stop preallocating", MaxQueueSize, got>>20, most>>20)
	}
	runtime.KeepAlive(q)
}

// kubediff run in a terminal opens no socket on the network: its health
// and metrics listen on loopback unless told otherwise (the manifests
// for a cluster say ":8080").
func TestDefaultHTTPAddressIsLoopbackOnly(t *testing.T) {
	host, port, err := net.SplitHostPort(Default().HTTPAddress)
	if err != nil {
		t.Fatal(err)
	}
	if port != "8080" {
		t.Errorf("default port = %s, want 8080 (what the manifests and the README name)", port)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		t.Errorf("the default address %q listens on %s: every interface, not loopback only", Default().HTTPAddress, ln.Addr())
	}
}
