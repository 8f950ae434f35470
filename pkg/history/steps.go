package history

import (
	"bytes"
	"math"
	"time"

	"github.com/kubediff/kubediff/pkg/change"
)

// Step is one kept change of an object: a record, or a state kept
// without one (a quiet change).
type Step struct {
	Time time.Time
	// Record is the record's JSON line; nil for a state kept alone.
	Record []byte
	// State is the object's state after the step (JSON); nil after a
	// deletion. Read it with StateJSON: Reader.Steps leaves it packed.
	State  []byte
	packed []byte
}

// StateJSON is the object's state after the step, unpacked only when
// asked for: a blame that explains every line with the newest steps
// unpacks no other.
func (s Step) StateJSON() ([]byte, error) {
	if s.packed == nil {
		return s.State, nil
	}
	return unpackState(s.packed)
}

// Steps are an object's kept steps up to a moment, newest first.
type Steps struct {
	Steps []Step
	// Complete says that Steps reach back to the object's oldest kept
	// step: nothing older is kept about it but Before.
	Complete bool
	// Before is the object's state before its oldest kept step, when
	// Complete and the history kept one (the object existed when the
	// history began). Read it with BeforeJSON.
	Before       []byte
	packedBefore []byte
	// Begin is when the history begins (zero: nothing kept yet).
	Begin time.Time
}

// BeforeJSON is Before, unpacked.
func (s Steps) BeforeJSON() ([]byte, error) {
	if s.packedBefore == nil {
		return s.Before, nil
	}
	return unpackState(s.packedBefore)
}

// Steps returns at most limit of the object's steps kept at or before
// until, newest first. It only copies what it reads inside the read
// transaction, and leaves the states packed until asked for
// (Step.StateJSON), so that a long walk never holds up the state's flush.
func (r *Reader) Steps(id change.ObjectID, until time.Time, limit int) (Steps, error) {
	var out Steps
	err := r.view(func(b *readBuckets) error {
		if b.empty {
			return nil
		}
		out.Begin = b.begin()
		prefix := indexPrefix(id)
		c := b.objects.Cursor()
		k, _ := c.Seek(indexKey(id, timeKey(untilOf(until), math.MaxUint64)))
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		var oldest []byte
		for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Prev() {
			if len(out.Steps) == limit {
				return nil
			}
			oldest = k[len(prefix):]
			step := Step{Time: keyTime(oldest), packed: bytes.Clone(b.after.Get(oldest))}
			if _, line, _ := bytes.Cut(b.records.Get(oldest), []byte{0}); len(line) > 0 {
				step.Record = bytes.Clone(line)
			}
			out.Steps = append(out.Steps, step)
		}
		out.Complete = true
		if oldest != nil {
			out.packedBefore = bytes.Clone(b.before.Get(oldest))
		}
		return nil
	})
	return out, err
}
