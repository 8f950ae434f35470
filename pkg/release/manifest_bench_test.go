package release

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkHelmManifest is what reading a release's manifest costs, once
// per revision as its record is first seen: a 5 MB manifest of 1,000
// ConfigMaps (the values and a Secret read past).
func BenchmarkHelmManifest(b *testing.B) {
	var m strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&m, "---\n# Source: big/templates/cm-%d.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  file: |\n", i, i)
		for j := range 50 {
			fmt.Fprintf(&m, "    line %d of a config file, with a value of its own: %08x\n", j, i*7919+j)
		}
	}
	manifest := m.String()
	t := &testing.T{}
	secret := helmSecretWith(t, "big", 1, "deployed", "1.0.0", 10, manifest)
	b.ReportMetric(float64(len(manifest))/1e6, "MB")
	b.ResetTimer()
	for b.Loop() {
		objects, err := manifestOf(secret, true)
		if err != nil || len(objects) != 1000 {
			b.Fatalf("%d objects, %v", len(objects), err)
		}
	}
}
