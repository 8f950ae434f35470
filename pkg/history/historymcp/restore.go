package historymcp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
)

func (t tools) objectBlame(ctx context.Context, _ *mcp.CallToolRequest, in objectAtInput) (*mcp.CallToolResult, any, error) {
	t, err := t.in(ctx, in.Cluster)
	if err != nil {
		return nil, nil, err
	}
	id, at, err := t.objectMoment(ctx, in.objectInput, in.At)
	if err != nil {
		return nil, nil, err
	}
	b, err := t.src.Blame(ctx, id, at, false)
	if err != nil {
		return nil, nil, momentError(in.objectInput, at.UTC().Format("2006-01-02T15:04:05.000Z"), err)
	}
	var out strings.Builder
	if err := b.WriteText(&out); err != nil {
		return nil, nil, err
	}
	return text(out.String()), nil, nil
}

type restoreInput struct {
	objectInput
	At string `json:"at" jsonschema:"the moment to restore: RFC 3339, or a duration ago such as 30m"`
}

// restorePreview shows the manifest a restore would apply and how it
// differs from the object as kubediff has it now: it applies nothing
// (kubediff restore --apply does, with the user's own credentials).
func (t tools) restorePreview(ctx context.Context, _ *mcp.CallToolRequest, in restoreInput) (*mcp.CallToolResult, any, error) {
	if in.At == "" {
		return nil, nil, errors.New("at is needed")
	}
	t, err := t.in(ctx, in.Cluster)
	if err != nil {
		return nil, nil, err
	}
	id, at, err := t.objectMoment(ctx, in.objectInput, in.At)
	if err != nil {
		return nil, nil, err
	}
	m, err := t.src.Restore(ctx, id, at)
	if err != nil {
		return nil, nil, momentError(in.objectInput, in.At, err)
	}
	manifest, err := historyapi.ManifestYAML(m)
	if err != nil {
		return nil, nil, err
	}
	current, err := t.src.At(ctx, id, t.now())
	if errors.Is(err, history.ErrNotFound) {
		current, err = nil, nil // deleted since: the restore creates it
	}
	if err != nil {
		return nil, nil, err
	}
	restored, err := json.Marshal(m.Object)
	if err != nil {
		return nil, nil, err
	}
	diff, err := historyapi.DiffObjects(ctx, id, current, restored, in.label()+" now", in.label()+" restored")
	if err != nil {
		return nil, nil, err
	}
	if diff == "" {
		diff = "no difference: the object is as it was then\n"
	}
	return text("Manifest for server-side apply (kubediff restore " + in.Type + "/" + in.Name + " --at " + in.At + " --apply applies it):\n" +
		string(manifest) + "\nHow it differs from the object as kubediff has it now:\n" + diff), nil, nil
}
