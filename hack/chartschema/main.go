// Command chartschema writes the config part of the chart's
// values.schema.json from pkg/config (config.Schema), leaving the rest of
// the file as it is: `make chart-schema`, or `go generate ./pkg/config`.
// A test checks that the committed file is what it writes.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/kubediff/kubediff/pkg/config"
)

// configKey opens the config part in the chart's schema, at the
// indentation its properties are written with.
const configKey = "\n    \"config\": {"

func main() {
	path := "charts/kubediff/values.schema.json"
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	if err := rewrite(path); err != nil {
		fmt.Fprintln(os.Stderr, "chartschema:", err)
		os.Exit(1)
	}
}

func rewrite(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := Splice(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, out, 0o644)
}

// Splice returns the chart's schema with its config part generated.
func Splice(schema []byte) ([]byte, error) {
	start := bytes.Index(schema, []byte(configKey))
	if start < 0 {
		return nil, errors.New(`no "config" under the top properties`)
	}
	open := start + len(configKey) - 1
	end := matchingBrace(schema, open)
	if end < 0 {
		return nil, errors.New(`the "config" object does not end`)
	}
	generated, err := json.MarshalIndent(config.Schema(), "    ", "  ")
	if err != nil {
		return nil, err
	}
	out := append([]byte{}, schema[:open]...)
	out = append(out, generated...)
	return append(out, schema[end+1:]...), nil
}

// matchingBrace finds the brace closing the one at open, outside strings.
func matchingBrace(b []byte, open int) int {
	depth, inString := 0, false
	for i := open; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{':
			depth++
		case c == '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}
