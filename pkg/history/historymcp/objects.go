package historymcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"sigs.k8s.io/yaml"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
	"github.com/kubediff/kubediff/pkg/watcher"
)

type objectAtInput struct {
	objectInput
	At string `json:"at,omitempty" jsonschema:"the moment: RFC 3339, a length of time ago such as 30m or 7d, or now (default: now)"`
}

func (t tools) objectAt(ctx context.Context, _ *mcp.CallToolRequest, in objectAtInput) (*mcp.CallToolResult, any, error) {
	t, err := t.in(ctx, in.Cluster)
	if err != nil {
		return nil, nil, err
	}
	id, at, err := t.objectMoment(ctx, in.objectInput, in.At)
	if err != nil {
		return nil, nil, err
	}
	raw, err := t.src.At(ctx, id, at)
	if err != nil {
		return nil, nil, momentError(in.objectInput, at.UTC().Format("2006-01-02T15:04:05.000Z"), err)
	}
	y, err := yaml.JSONToYAML(raw)
	if err != nil {
		return nil, nil, err
	}
	return text(string(y)), nil, nil
}

// objectMoment resolves a tool's object and reads its moment at (empty:
// now).
func (t tools) objectMoment(ctx context.Context, in objectInput, at string) (change.ObjectID, time.Time, error) {
	when, err := t.moment("at", at)
	if err != nil {
		return "", when, err
	}
	id, err := historyapi.ResolveObject(ctx, t.src, in.Type, in.Name, in.Namespace)
	return id, when, err
}

type objectDiffInput struct {
	objectInput
	From string `json:"from" jsonschema:"the first moment: RFC 3339, or a duration ago such as 2h"`
	To   string `json:"to,omitempty" jsonschema:"the second moment (default: now)"`
}

func (t tools) objectDiff(ctx context.Context, _ *mcp.CallToolRequest, in objectDiffInput) (*mcp.CallToolResult, any, error) {
	if in.From == "" {
		return nil, nil, errors.New("from is needed")
	}
	t, err := t.in(ctx, in.Cluster)
	if err != nil {
		return nil, nil, err
	}
	from, err := t.moment("from", in.From)
	if err != nil {
		return nil, nil, err
	}
	to, err := t.moment("to", in.To)
	if err != nil {
		return nil, nil, err
	}
	id, err := historyapi.ResolveObject(ctx, t.src, in.Type, in.Name, in.Namespace)
	if err != nil {
		return nil, nil, err
	}
	diff, err := historyapi.UnifiedDiff(ctx, t.src, id, in.label(), from, to, historyapi.WatchView())
	if err != nil {
		return nil, nil, momentError(in.objectInput, in.From, err)
	}
	if diff == "" {
		diff = "no difference"
	}
	return text(diff), nil, nil
}

func (in objectInput) label() string {
	if in.Namespace == "" {
		return in.Type + "/" + in.Name
	}
	return in.Type + "/" + in.Name + " in " + in.Namespace
}

// momentError says plainly why there is no state.
func momentError(in objectInput, when string, err error) error {
	switch {
	case errors.Is(err, history.ErrNotFound):
		return fmt.Errorf("%s did not exist at %s, as far as kubediff saw", in.label(), when)
	case errors.Is(err, history.ErrBeforeHistory):
		return fmt.Errorf("%s is before kubediff's history begins (retention, or before kubediff kept it)", when)
	}
	return err
}

type typesOutput struct {
	Types []typeInfo `json:"types"`
	// Health says whether the states below are a running kubediff's.
	Health string `json:"health"`
}

type typeInfo struct {
	Name       string `json:"name" jsonschema:"as kubectl names it: resource.group"`
	Kind       string `json:"kind"`
	Namespaced bool   `json:"namespaced"`
	ShortNames string `json:"shortNames,omitempty"`
	// State is synced, syncing or retrying (with Error), on a running
	// kubediff; Objects how many it holds.
	State   string `json:"state,omitempty" jsonschema:"synced, syncing, or retrying (the type cannot be listed now; see error)"`
	Error   string `json:"error,omitempty"`
	Objects int    `json:"objects,omitempty"`
}

func (t tools) watchedTypes(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, typesOutput, error) {
	types, err := t.src.Resolve(ctx, "")
	if err != nil {
		return nil, typesOutput{}, err
	}
	states, health := t.states(ctx)
	out := typesOutput{Types: []typeInfo{}, Health: health}
	for _, r := range types {
		info := typeInfo{Name: r.String(), Kind: r.Kind, Namespaced: r.Namespaced, ShortNames: strings.Join(r.ShortNames, ", ")}
		for _, st := range states[r.String()] {
			info.State, info.Objects = watcher.WorseState(info.State, st.State), info.Objects+st.Objects
			if st.Error != "" {
				info.Error = st.Error
			}
		}
		out.Types = append(out.Types, info)
	}
	return nil, out, nil
}

// states are the running kubediff's watches by type, and a sentence
// saying where they come from.
func (t tools) states(ctx context.Context) (map[string][]watcher.TargetState, string) {
	if t.health == nil {
		return nil, "a state dir: kubediff is not running, so no watch health"
	}
	all, err := t.health(ctx)
	if err != nil {
		return nil, "the running kubediff did not say how its watches are doing: " + err.Error()
	}
	by := map[string][]watcher.TargetState{}
	for _, st := range all {
		by[st.Resource] = append(by[st.Resource], st)
	}
	return by, "the running kubediff's watches, now"
}
