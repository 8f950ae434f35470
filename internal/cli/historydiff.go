package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
)

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
	view := historyapi.WatchView()
	if all, _ := cmd.Flags().GetBool("all"); all {
		view = nil
	}
	text, err := historyapi.UnifiedDiff(cmd.Context(), src, id, arg, from, to, view)
	switch {
	case errors.Is(err, history.ErrBeforeHistory):
		return stateError(cmd, src, arg, id, from, err) // from is the older moment
	case errors.Is(err, history.ErrNotFound):
		return fmt.Errorf("%s%s existed at neither moment (as far as kubediff saw)", arg, searchedNamespace(cmd, id))
	}
	if err != nil {
		return err
	}
	return writeDiff(cmd, out, text)
}

// writeObject prints a kept state as YAML or JSON.
func writeObject(out io.Writer, raw []byte, format string, managedFields bool) error {
	if !managedFields {
		raw = withoutManagedFields(raw)
	}
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

// withoutManagedFields drops metadata.managedFields, as kubectl get does
// unless --show-managed-fields: half an object, of interest to few.
func withoutManagedFields(raw []byte) []byte {
	var obj map[string]any
	if json.Unmarshal(raw, &obj) != nil {
		return raw
	}
	meta, ok := obj["metadata"].(map[string]any)
	if !ok || meta["managedFields"] == nil {
		return raw
	}
	delete(meta, "managedFields")
	out, err := json.Marshal(obj)
	if err != nil {
		return raw
	}
	return out
}
