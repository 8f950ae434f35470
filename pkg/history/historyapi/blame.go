package historyapi

import (
	"fmt"
	"time"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history/blame"
)

// MaxBlameSteps is the most of an object's kept steps (records and quiet
// changes) one blame compares, newest first: a Pod whose status churned
// all week does not cost a week of states. Lines unchanged over them
// say so.
const MaxBlameSteps = 1000

// blameOf blames the object's lines at at, as watch shows it (every field
// kept with all), from the history in reader. Its work is bounded by
// MaxBlameSteps states, each at most MaxDiffBytes.
func blameOf(reader Store, id change.ObjectID, at time.Time, all bool) (blame.Blame, error) {
	state, err := reader.At(id, at)
	if err != nil {
		return blame.Blame{}, err
	}
	if len(state) > MaxDiffBytes {
		return blame.Blame{}, fmt.Errorf("%w: the object is %d bytes, more than the %d blame reads", ErrDiffTooBig, len(state), MaxDiffBytes)
	}
	steps, err := reader.Steps(id, at, MaxBlameSteps)
	if err != nil {
		return blame.Blame{}, err
	}
	return blame.Of(state, steps, blameView(id, all))
}

// blameView shows each kept state as watch does, or every field kept,
// always through the current redaction rules.
func blameView(id change.ObjectID, all bool) blame.View {
	d := watchDiffer()
	if d == nil {
		return nil
	}
	r := resourceOf(id)
	if all {
		return func(obj map[string]any) map[string]any { return d.Redact(obj, r) }
	}
	return func(obj map[string]any) map[string]any { return d.Shown(obj, r) }
}
