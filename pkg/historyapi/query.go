package historyapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pmezard/go-difflib/difflib"
	"sigs.k8s.io/yaml"

	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/record"
)

// The queries below are shared by the command line and the MCP server.

// ErrBadName marks a type or object name the history cannot resolve:
// the caller's mistake.
var ErrBadName = errors.New("bad name")

// ParseMoment reads a moment: RFC 3339 (fractional seconds allowed) or a
// duration before now ("15m").
func ParseMoment(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2026-11-23T14:02:00Z) nor a duration ago (15m)", s)
}

// ResolveType finds the one type kubectl would by name among those the
// history knows.
func ResolveType(ctx context.Context, src Source, name string) (discovery.Resource, error) {
	found, err := src.Resolve(ctx, name)
	switch {
	case err != nil:
		return discovery.Resource{}, err
	case len(found) == 0:
		return discovery.Resource{}, fmt.Errorf("%w: %q: no such type in kubediff's history (it knows the types it watched)", ErrBadName, name)
	case len(found) > 1:
		var names []string
		for _, r := range found {
			names = append(names, r.String())
		}
		return discovery.Resource{}, fmt.Errorf("%w: %q names several types: %s; say which", ErrBadName, name, strings.Join(names, ", "))
	}
	return found[0], nil
}

// ResolveObject names an object of the type called typ: namespace is
// ignored for a cluster-scoped type.
func ResolveObject(ctx context.Context, src Source, typ, name, namespace string) (history.ObjectID, error) {
	if name == "" {
		return "", fmt.Errorf("%w: an object name is needed", ErrBadName)
	}
	r, err := ResolveType(ctx, src, typ)
	if err != nil {
		return "", err
	}
	if !r.Namespaced {
		namespace = ""
	}
	return history.NewObjectID(r.GVR.Group, r.GVR.Resource, namespace, name), nil
}

// UnifiedDiff is how the object changed between from and to, as a
// unified diff of YAML labelled with label and the moments, each state
// shown through view (nil: everything kept). An object missing at one
// moment shows as all added or all removed.
func UnifiedDiff(ctx context.Context, src Source, id history.ObjectID, label string, from, to time.Time, view View) (string, error) {
	var sides [2]string
	found := 0
	for i, at := range []time.Time{from, to} {
		raw, err := src.At(ctx, id, at)
		switch {
		case errors.Is(err, history.ErrNotFound):
			continue
		case err != nil:
			return "", err
		}
		found++
		if raw, err = view.show(id, raw); err != nil {
			return "", err
		}
		y, err := yaml.JSONToYAML(raw)
		if err != nil {
			return "", err
		}
		sides[i] = string(y)
	}
	if found == 0 {
		return "", fmt.Errorf("%s existed at neither moment (as far as kubediff saw): %w", label, history.ErrNotFound)
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(sides[0]), B: difflib.SplitLines(sides[1]),
		FromFile: label + " at " + from.UTC().Format(time.RFC3339Nano),
		ToFile:   label + " at " + to.UTC().Format(time.RFC3339Nano),
		Context:  3,
	})
}

// DecodeRecord reads a kept record, numbers as they were written.
func DecodeRecord(raw []byte) (record.Change, error) {
	var c record.Change
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("a kept record cannot be read: %w", err)
	}
	return c, nil
}
