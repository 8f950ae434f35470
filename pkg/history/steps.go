package history

import (
	"bytes"
	"math"
	"time"
)

// Step is one kept change of an object: a record, or a state kept
// without one (a quiet change).
type Step struct {
	Time time.Time
	// Record is the record's JSON line; nil for a state kept alone.
	Record []byte
	// State is the object's state after the step (JSON); nil after a
	// deletion.
	State []byte
}

// Steps are an object's kept steps up to a moment, newest first.
type Steps struct {
	Steps []Step
	// Complete says that Steps reach back to the object's oldest kept
	// step: nothing older is kept about it but Before.
	Complete bool
	// Before is the object's state before its oldest kept step, when
	// Complete and the history kept one (the object existed when the
	// history began).
	Before []byte
	// Begin is when the history begins (zero: nothing kept yet).
	Begin time.Time
}

// Steps returns at most limit of the object's steps kept at or before
// until, newest first. It only copies what it reads inside the read
// transaction and unpacks the states after it, so that a long walk never
// holds up the state's flush.
func (r *Reader) Steps(id ObjectID, until time.Time, limit int) (Steps, error) {
	var out Steps
	var packed, before []byte
	var packedStates [][]byte
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
		for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Prev() {
			if len(out.Steps) == limit {
				return nil
			}
			key := k[len(prefix):]
			_, line, _ := bytes.Cut(b.records.Get(key), []byte{0})
			step := Step{Time: keyTime(key)}
			if len(line) > 0 {
				step.Record = bytes.Clone(line)
			}
			out.Steps = append(out.Steps, step)
			packedStates = append(packedStates, bytes.Clone(b.after.Get(key)))
			packed = key
		}
		out.Complete = true
		if packed != nil {
			before = bytes.Clone(b.before.Get(packed))
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	for i, p := range packedStates {
		if len(p) == 0 {
			continue
		}
		if out.Steps[i].State, err = unpackState(p); err != nil {
			return out, err
		}
	}
	if len(before) > 0 {
		out.Before, err = unpackState(before)
	}
	return out, err
}
