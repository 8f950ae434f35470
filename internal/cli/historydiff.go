package cli

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/historyapi"
	"github.com/kubediff/kubediff/pkg/state"
)

// openStateHistory reads a state dir's history.
var openStateHistory = state.OpenHistory

// runDiff prints how the object changed between --from and --to.
func runDiff(cmd *cobra.Command, src historyapi.Source, arg string, out io.Writer) error {
	now := time.Now()
	from, err := momentFlag(cmd, "from", now)
	if err != nil {
		return err
	}
	to, err := momentFlag(cmd, "to", now)
	if err != nil {
		return err
	}
	if to.IsZero() {
		to = now
	}
	id, err := resolveObject(cmd, src, arg)
	if err != nil {
		return err
	}
	var sides [2]string
	found := 0
	for i, at := range []time.Time{from, to} {
		raw, err := src.At(cmd.Context(), id, at)
		switch {
		case errors.Is(err, history.ErrNotFound):
			continue // all added, or all removed
		case err != nil:
			return stateError(arg, at, err)
		}
		found++
		y, err := yaml.JSONToYAML(raw)
		if err != nil {
			return err
		}
		sides[i] = string(y)
	}
	if found == 0 {
		return fmt.Errorf("%s existed at neither moment (as far as kubediff saw)", arg)
	}
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(sides[0]), B: difflib.SplitLines(sides[1]),
		FromFile: arg + " at " + from.UTC().Format(time.RFC3339Nano),
		ToFile:   arg + " at " + to.UTC().Format(time.RFC3339Nano),
		Context:  3,
	})
	if err != nil {
		return err
	}
	_, err = io.WriteString(out, text)
	return err
}

// writeObject prints a kept state as YAML or JSON.
func writeObject(out io.Writer, raw []byte, format string) error {
	switch format {
	case "json":
		_, err := fmt.Fprintf(out, "%s\n", raw)
		return err
	case "yaml":
		y, err := yaml.JSONToYAML(raw)
		if err != nil {
			return err
		}
		_, err = out.Write(y)
		return err
	}
	return usageError{fmt.Errorf("-o %q: want yaml or json", format)}
}
