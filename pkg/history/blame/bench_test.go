package blame

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/record"
)

// BenchmarkBlameWorstCase blames a ConfigMap of 20 keys whose one key
// changed in each of 1,000 steps (MaxBlameSteps in historyapi) while the
// others last changed at its creation: blame walks every step.
func BenchmarkBlameWorstCase(b *testing.B) {
	const steps = 1000
	data := map[string]any{}
	for i := range 20 {
		data[fmt.Sprintf("key%02d", i)] = fmt.Sprintf("value %d of a setting", i)
	}
	var kept history.Steps
	kept.Complete = true
	for i := steps; i > 0; i-- {
		data["counter"] = fmt.Sprint(i)
		state, _ := json.Marshal(configMap(data))
		c, _ := json.Marshal(record.Change{Type: record.Updated, ID: fmt.Sprintf("uid/%d/updated", i)})
		kept.Steps = append(kept.Steps, history.Step{State: state, Record: c})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Of(kept.Steps[0].State, kept, nil); err != nil {
			b.Fatal(err)
		}
	}
}
