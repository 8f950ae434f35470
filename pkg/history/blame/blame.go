// Package blame says, for each line of an object's YAML, which kept
// change last changed it: when, by whom, and the record's id, as `git
// blame` does for a file. It compares the object's kept states place by
// place (a map key, a list item by its name), newest first, and stops as
// soon as every line is explained, so that its work is bounded by the
// object's history and usually far less.
package blame

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/record"
)

// Kinds of origin of a line.
const (
	// Record: a kept record changed the line last.
	Record = "record"
	// Quiet: a change the quiet rules keep out of the stream (a status
	// counter) changed it last; the history kept its state, no record.
	Quiet = "quiet"
	// BeforeHistory: the line is as it was when the history began (or
	// before what retention kept of the object).
	BeforeHistory = "beforeHistory"
	// Unwalked: the line did not change in the newest steps blame reads
	// (MaxSteps); it changed earlier, or before the history.
	Unwalked = "unwalked"
)

// Line is one line of the object's YAML and where it comes from.
type Line struct {
	Text string `json:"text"`
	// Field is the place the line shows, as records name fields
	// (spec.template.spec.containers[name=web].image).
	Field string `json:"field"`
	// Origin is one of Record, Quiet, BeforeHistory and Unwalked.
	Origin string `json:"origin"`
	// Time is when the change was kept (zero for BeforeHistory and
	// Unwalked).
	Time time.Time `json:"time,omitzero"`
	// Record is the record's id (record.Change.ID); Type its type (added,
	// updated).
	Record string `json:"record,omitempty"`
	Type   string `json:"type,omitempty"`
	// User is who made it as the API server authenticated them, when an
	// identity source said; Manager its field manager; By both for people
	// ("alice (kubectl)").
	User    string `json:"user,omitempty"`
	Manager string `json:"manager,omitempty"`
	By      string `json:"by,omitempty"`
}

// Blame is the object's lines, each with its origin.
type Blame struct {
	Lines []Line `json:"lines"`
	// Begin is when the history begins.
	Begin time.Time `json:"begin,omitzero"`
	// Walked is how many of the object's kept steps were compared.
	Walked int `json:"walked"`
}

// View shows a kept state as blame compares and prints it (the fields
// watch ignores left out, values redacted).
type View func(obj map[string]any) map[string]any

// Of blames the lines of the object's state at the moment asked, given
// its kept steps up to then (newest first: steps.Steps[0] is the step
// that left that state, when there is one). View applies to every state.
func Of(state []byte, steps history.Steps, view View) (Blame, error) {
	out := Blame{Begin: steps.Begin}
	obj, err := decode(state, view)
	if err != nil {
		return out, err
	}
	lines, paths, err := yamlLines(obj)
	if err != nil {
		return out, err
	}
	origins := map[string]*Line{}
	pending := map[string]bool{}
	for _, p := range paths {
		pending[p.key()] = true
	}
	newer := flat(obj)
	for i := 0; i < len(steps.Steps) && len(pending) > 0; i++ {
		older, known, err := olderState(steps, i, view)
		if err != nil {
			return out, err
		}
		if !known {
			break // the walk stopped at its bound
		}
		origin, err := originOf(steps.Steps[i])
		if err != nil {
			return out, err
		}
		for key := range pending {
			if v, ok := older[key]; !ok || v != newer[key] {
				origins[key] = &origin
				delete(pending, key)
			}
		}
		newer = older
		out.Walked = i + 1
	}
	rest := Line{Origin: BeforeHistory}
	if !steps.Complete {
		rest.Origin = Unwalked
	}
	for i, text := range lines {
		line := rest
		if o := origins[paths[i].key()]; o != nil {
			line = *o
		}
		line.Text, line.Field = text, paths[i].String()
		out.Lines = append(out.Lines, line)
	}
	return out, nil
}

// olderState is the object's places before step i: after step i+1, or
// before the oldest step. known is false when step i is the oldest read
// but not the oldest kept.
func olderState(steps history.Steps, i int, view View) (older map[string]string, known bool, err error) {
	var raw []byte
	switch {
	case i+1 < len(steps.Steps):
		raw, err = steps.Steps[i+1].StateJSON()
	case !steps.Complete:
		return nil, false, nil
	default:
		raw, err = steps.BeforeJSON()
	}
	if err != nil {
		return nil, false, err
	}
	if raw == nil {
		return map[string]string{}, true, nil // it did not exist
	}
	obj, err := decode(raw, view)
	if err != nil {
		return nil, false, err
	}
	return flat(obj), true, nil
}

// originOf says what a step was.
func originOf(s history.Step) (Line, error) {
	if s.Record == nil {
		return Line{Origin: Quiet, Time: s.Time}, nil
	}
	var c record.Change
	if err := json.Unmarshal(s.Record, &c); err != nil {
		return Line{}, fmt.Errorf("blame: a kept record cannot be read: %w", err)
	}
	l := Line{Origin: Record, Time: s.Time, Record: c.ID, Type: c.Type, By: c.By()}
	if c.User != nil {
		l.User = c.User.Name
	}
	if c.Manager != nil {
		l.Manager = c.Manager.Name
	}
	return l, nil
}

func decode(raw []byte, view View) (map[string]any, error) {
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("blame: a kept state cannot be read: %w", err)
	}
	if view != nil {
		obj = view(obj)
	}
	return obj, nil
}

func flat(obj map[string]any) map[string]string {
	out := map[string]string{}
	flatten(obj, nil, out)
	return out
}
