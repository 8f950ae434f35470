package history

import (
	"strings"
	"testing"
	"time"
)

// An object's steps come back newest first, up to a moment and a limit:
// records with their lines, quiet states without, a deletion without a
// state; the state before the oldest only when the walk reached it.
func TestStepsNewestFirst(t *testing.T) {
	db := openDB(t)
	quiet := entryOf("default", "b", "b-quiet", 3)
	quiet.StateOnly = true
	write(t, db, unlimited, t0, entryOf("default", "a", "b", 2), quiet, entryOf("default", "b-quiet", "", 4), entryOf("other", "", "x", 3))
	r := reader(db)

	steps, err := r.Steps(settingsID, t0.Add(10*time.Minute), 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range steps.Steps {
		kind := "quiet"
		if s.Record != nil {
			kind = "record"
		}
		got = append(got, s.Time.Sub(t0).String()+" "+kind+" "+levelOf(t, s.StateJSON))
	}
	if want := "4m0s record none, 3m0s quiet b-quiet, 2m0s record b"; strings.Join(got, ", ") != want {
		t.Errorf("steps: %s, want %s", strings.Join(got, ", "), want)
	}
	if !steps.Complete || levelOf(t, steps.BeforeJSON) != "a" || !steps.Begin.Equal(t0) {
		t.Errorf("complete %v, before %q, begin %v: want the state before the oldest step", steps.Complete, levelOf(t, steps.BeforeJSON), steps.Begin)
	}

	steps, err = r.Steps(settingsID, t0.Add(3*time.Minute), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps.Steps) != 1 || levelOf(t, steps.Steps[0].StateJSON) != "b-quiet" || steps.Complete || levelOf(t, steps.BeforeJSON) != "none" {
		t.Errorf("up to minute 3, one step: %+v", steps)
	}
}

// levelOf is the data.level of the state read returns ("none": no state).
func levelOf(t *testing.T, read func() ([]byte, error)) string {
	t.Helper()
	raw, err := read()
	if err != nil {
		t.Fatal(err)
	}
	if raw == nil {
		return "none"
	}
	_, rest, _ := strings.Cut(string(raw), `"level":"`)
	level, _, _ := strings.Cut(rest, `"`)
	return level
}
