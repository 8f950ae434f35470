package main

import (
	"strings"
	"testing"
)

// A run that stopped after its paced phase (as the million-object run
// did, at etcd's quota) prints the paced figures, and says of the later
// phases that they were not measured rather than print zeros as figures.
func TestATableOfAStoppedRunSaysWhatWasNotMeasured(t *testing.T) {
	var out strings.Builder
	printTable(&out, Results{Updates: 30000, AchievedRate: 496, KubediffCPUPer1000: 0.164, LatencyP99Ms: 155.2})
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		lines[strings.TrimSpace(l[:54])] = strings.TrimSpace(l[54:])
	}
	for row, want := range map[string]string{
		"paced updates":                          "30000 at 496/s",
		"kubediff CPU per 1000 updates":          "0.164 s",
		"beside the peers, CPU per 1000 updates": "not measured",
		"burst updates":                          "not measured",
		"compressed cache: RSS":                  "not measured",
		"state dir: restart":                     "not measured",
	} {
		if lines[row] != want {
			t.Errorf("%s: %q, want %q", row, lines[row], want)
		}
	}
	if strings.Contains(out.String(), "NaN") {
		t.Errorf("NaN printed:\n%s", out.String())
	}
}
