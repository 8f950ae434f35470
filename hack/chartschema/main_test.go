package main

import (
	"bytes"
	"os"
	"testing"
)

// The chart's schema checks config with what pkg/config generates: the
// same keys and words kubediff's own validation accepts. After changing
// the config types, `make chart-schema` writes it again.
func TestChartSchemaIsGenerated(t *testing.T) {
	const path = "../../charts/kubediff/values.schema.json"
	committed, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	generated, err := Splice(committed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, generated) {
		t.Errorf("%s is not what pkg/config generates: run `make chart-schema`", path)
	}
}
