// Package historymcp answers AI assistants from kubediff's history over
// the Model Context Protocol (the official Go SDK): the changes of a
// window, one object's changes, an object at a moment, the difference
// between two moments, and the types kubediff knows. Results are sized
// for a model's context: paged, a controller's bursts summarised, no
// whole object unless asked for one.
package historymcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kubediff/kubediff/pkg/history/historyapi"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// Options are what the server reads and says about itself.
type Options struct {
	// Source is the history: a state dir's or a running kubediff's.
	Source historyapi.Source
	// Version is kubediff's version, told to clients.
	Version string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Health, for a running kubediff, says how its watches are doing.
	Health func(context.Context) ([]watcher.TargetState, error)
	// Cluster, for a history store of several clusters, is the history of
	// the cluster a tool's cluster argument names (nil: Source is one
	// cluster's). Source then lists every cluster's records together.
	Cluster func(ctx context.Context, name string) (historyapi.Source, error)
}

// NewServer returns an MCP server with kubediff's history tools.
func NewServer(o Options) *mcp.Server {
	if o.Now == nil {
		o.Now = time.Now
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "kubediff", Title: "kubediff history", Version: o.Version}, &mcp.ServerOptions{
		Instructions: "kubediff keeps every change to every Kubernetes object it watched: what changed, when and by whom, " +
			"with secrets redacted. Start with list_changes for a time window (default: the last hour), then " +
			"object_changes, object_at, object_diff and object_blame for one object; restore_preview shows how to put one back. Times are RFC 3339 or a duration ago such as 15m.",
	})
	t := tools{src: o.Source, now: o.Now, health: o.Health, cluster: o.Cluster}
	mcp.AddTool(s, &mcp.Tool{Name: "list_changes", Annotations: readOnly, Title: "Changes in a time window",
		Description: "Changes kubediff recorded in a time window, oldest first, optionally filtered by namespace, type, name, " +
			"the field manager or the user who made them, the release that applied them (Helm, Argo CD, Flux), the rules they matched, or a changed field; " +
			"each names its release when its object carries one. A controller's burst on the objects it owns is summarised as one " +
			"entry; Kubernetes Events about objects are entries of type event. Paged: pass next back as cursor for more."}, t.listChanges)
	mcp.AddTool(s, &mcp.Tool{Name: "object_changes", Annotations: readOnly, Title: "One object's changes",
		Description: "Every change kubediff recorded to one object (type as kubectl names it, such as deploy or configmaps), " +
			"oldest first, each with who made it and the changed fields' old and new values (long values cut); optionally only one user's. " +
			"Among them, in time order, the Kubernetes Events about the object and the objects it owns (a Deployment's ReplicaSets and Pods): " +
			"why it changed or stalled, such as FailedCreate over a quota or FailedScheduling, folded per object and reason with a count."}, t.objectChanges)
	mcp.AddTool(s, &mcp.Tool{Name: "object_at", Annotations: readOnly, Title: "An object at a moment",
		Description: "The object as kubediff had it at a moment, as YAML (fields kubediff ignores left out, secrets redacted). " +
			"An error says when it did not exist then."}, t.objectAt)
	mcp.AddTool(s, &mcp.Tool{Name: "object_diff", Annotations: readOnly, Title: "An object between two moments",
		Description: "A unified diff of the object's YAML between two moments (to defaults to now)."}, t.objectDiff)
	mcp.AddTool(s, &mcp.Tool{Name: "object_blame", Annotations: readOnly, Title: "Who last changed each line of an object",
		Description: "The object's YAML at a moment (default: now), each line with the kept change that last changed it: " +
			"the record's id, when, and who (the user when known, with the field manager), as git blame does; " +
			"lines unchanged since the history began say so."}, t.objectBlame)
	mcp.AddTool(s, &mcp.Tool{Name: "restore_preview", Annotations: readOnly, Title: "Preview putting an object back as it was",
		Description: "The manifest that would put the object back as it was at a moment (deleted objects too), ready for server-side apply, " +
			"and its diff against the object as kubediff has it now. It applies nothing. A Secret, a type whose fields kubediff prunes, " +
			"or a state with a redacted value is refused with the reason."}, t.restorePreview)
	mcp.AddTool(s, &mcp.Tool{Name: "watched_types", Annotations: readOnly, Title: "Types kubediff knows",
		Description: "The resource types kubediff watched and keeps history for, with the names kubectl accepts, and, " +
			"from a running kubediff, whether each is synced, syncing or retrying (cannot be listed now, with the error)."}, t.watchedTypes)
	return s
}

// readOnly says what every tool is: a reader of kubediff's history, which
// changes nothing and reaches nothing beyond it, so that a host may call
// it without asking the user first.
var readOnly = &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)}

// tools are the handlers, over one history.
type tools struct {
	src     historyapi.Source
	now     func() time.Time
	health  func(context.Context) ([]watcher.TargetState, error) // nil for a state dir
	cluster func(ctx context.Context, name string) (historyapi.Source, error)
}

// in is t reading the history of the cluster a tool's argument names
// ("": the history t reads).
func (t tools) in(ctx context.Context, cluster string) (tools, error) {
	if cluster == "" {
		return t, nil
	}
	if t.cluster == nil {
		return t, errors.New("cluster: this history is one cluster's; leave cluster out")
	}
	src, err := t.cluster(ctx, cluster)
	if err != nil {
		return t, fmt.Errorf("cluster: %w", err)
	}
	t.src = src
	return t, nil
}

// window reads a from/until pair, from defaulting to an hour ago.
func (t tools) window(from, until string) (time.Time, time.Time, error) {
	now := t.now()
	start, end := now.Add(-time.Hour), time.Time{}
	var err error
	if from != "" {
		if start, err = historyapi.ParseMoment(from, now); err != nil {
			return start, end, fmt.Errorf("from: %w", err)
		}
	}
	if until != "" {
		if end, err = historyapi.ParseMoment(until, now); err != nil {
			return start, end, fmt.Errorf("until: %w", err)
		}
	}
	return start, end, nil
}

// moment reads one moment, empty meaning now.
func (t tools) moment(name, s string) (time.Time, error) {
	if s == "" {
		return t.now(), nil
	}
	at, err := historyapi.ParseMoment(s, t.now())
	if err != nil {
		return at, fmt.Errorf("%s: %w", name, err)
	}
	return at, nil
}

// text is a result holding one text.
func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
