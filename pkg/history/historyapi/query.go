package historyapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/moment"
	"github.com/kubediff/kubediff/pkg/record"
)

// The queries below are shared by the command line and the MCP server.

// ErrBadName marks a type or object name the history cannot resolve:
// the caller's mistake.
var ErrBadName = errors.New("bad name")

// ParseMoment reads a moment: RFC 3339 (fractional seconds allowed), a
// length of time ago (15m, 36h, 7d) or now (moment.Parse).
func ParseMoment(s string, now time.Time) (time.Time, error) { return moment.Parse(s, now) }

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
func ResolveObject(ctx context.Context, src Source, typ, name, namespace string) (change.ObjectID, error) {
	if name == "" {
		return "", fmt.Errorf("%w: an object name is needed", ErrBadName)
	}
	if err := checkObjectName(name); err != nil {
		// Refused before any source answers, so that the state dir and a
		// running kubediff say the same.
		return "", fmt.Errorf("%w: %s/%s: %w", ErrBadName, typ, name, err)
	}
	r, err := ResolveType(ctx, src, typ)
	if err != nil {
		return "", err
	}
	if !r.Namespaced {
		namespace = ""
	}
	return change.NewObjectID(r.GVR.Group, r.GVR.Resource, namespace, name), nil
}

// Bounds of the two-moment diff: what one request may cost, whoever may
// write the object (a 60,000-line ConfigMap value cost difflib 72 s of
// CPU, on after the client left).
const (
	// MaxDiffBytes is the most YAML of one moment the diff reads; no
	// object the API server stores comes near it.
	MaxDiffBytes = 3 << 20
	// MaxDiffLines is the most lines that may differ on each side, between
	// the first and the last line that differ: an object added or removed
	// whole is not bounded by it (nothing to search).
	MaxDiffLines = 10000
	// DiffTimeout is the most time one diff may take.
	DiffTimeout = 10 * time.Second
)

// ErrDiffTooBig says a two-moment diff is past its bounds (413).
var ErrDiffTooBig = errors.New("too big to diff")

// UnifiedDiff is how the object changed between from and to, as a
// unified diff of YAML labelled with label and the moments, each state
// shown through view (nil: everything kept). An object missing at one
// moment shows as all added or all removed. It ends when ctx does, and is
// ErrDiffTooBig past MaxDiffBytes, MaxDiffLines or DiffTimeout.
func UnifiedDiff(ctx context.Context, src Source, id change.ObjectID, label string, from, to time.Time, view View) (string, error) {
	var sides [2][]string
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
		if sides[i], err = yamlLines(raw, label, at); err != nil {
			return "", err
		}
	}
	if found == 0 {
		return "", fmt.Errorf("%s existed at neither moment (as far as kubediff saw): %w", label, history.ErrNotFound)
	}
	return diffSides(ctx, sides, label+" at "+from.UTC().Format(time.RFC3339Nano), label+" at "+to.UTC().Format(time.RFC3339Nano))
}

// DiffObjects is a unified diff of YAML from one state of the object id
// names (JSON; nil: none) to another, each shown through WatchView, with
// the bounds of UnifiedDiff: how a restore would change the object.
func DiffObjects(ctx context.Context, id change.ObjectID, from, to []byte, fromLabel, toLabel string) (string, error) {
	var sides [2][]string
	for i, raw := range [][]byte{from, to} {
		if raw == nil {
			continue
		}
		shown, err := WatchView().show(id, raw)
		if err != nil {
			return "", err
		}
		if sides[i], err = yamlLines(shown, []string{fromLabel, toLabel}[i], time.Time{}); err != nil {
			return "", err
		}
	}
	return diffSides(ctx, sides, fromLabel, toLabel)
}

// diffSides is the unified diff of two YAML texts' lines, within the
// bounds of MaxDiffLines and DiffTimeout.
func diffSides(ctx context.Context, sides [2][]string, fromLabel, toLabel string) (string, error) {
	if a, b := differing(sides[0], sides[1]); a > MaxDiffLines && b > 0 || b > MaxDiffLines && a > 0 {
		return "", fmt.Errorf("%w: %s differs in %d lines and %s in %d, more than the %d this diff compares; read each whole (get --at)",
			ErrDiffTooBig, fromLabel, a, toLabel, b, MaxDiffLines)
	}
	diffCtx, cancel := context.WithTimeout(ctx, DiffTimeout)
	defer cancel()
	match, err := diffLines(diffCtx, sides[0], sides[1])
	switch {
	case err != nil && ctx.Err() == nil:
		return "", fmt.Errorf("%w: %s and %s differ too much to diff within %s; read each whole (get --at)", ErrDiffTooBig, fromLabel, toLabel, DiffTimeout)
	case err != nil:
		return "", err
	}
	return unified(sides[0], sides[1], match, fromLabel, toLabel), nil
}

// yamlLines is the object's JSON as lines of YAML, each with its "\n",
// or ErrDiffTooBig past MaxDiffBytes.
func yamlLines(raw []byte, label string, at time.Time) ([]string, error) {
	if len(raw) > MaxDiffBytes {
		return nil, fmt.Errorf("%w: %s at %s is %d bytes, more than the %d this diff reads", ErrDiffTooBig, label, at.UTC().Format(time.RFC3339Nano), len(raw), MaxDiffBytes)
	}
	y, err := yaml.JSONToYAML(raw)
	if err != nil {
		return nil, err
	}
	if len(y) > MaxDiffBytes {
		return nil, fmt.Errorf("%w: %s at %s is %d bytes of YAML, more than the %d this diff reads", ErrDiffTooBig, label, at.UTC().Format(time.RFC3339Nano), len(y), MaxDiffBytes)
	}
	lines := strings.SplitAfter(string(y), "\n")
	if last := len(lines) - 1; lines[last] == "" {
		lines = lines[:last]
	} else {
		lines[last] += "\n"
	}
	return lines, nil
}

// differing counts the lines of a and of b between the first and the
// last that differ.
func differing(a, b []string) (int, int) {
	start := 0
	for start < len(a) && start < len(b) && a[start] == b[start] {
		start++
	}
	end := 0
	for end < len(a)-start && end < len(b)-start && a[len(a)-1-end] == b[len(b)-1-end] {
		end++
	}
	return len(a) - start - end, len(b) - start - end
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
