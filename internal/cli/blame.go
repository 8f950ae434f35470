package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
)

func newBlameCommand(out, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "blame TYPE/NAME | TYPE NAME [--at TIME]",
		Short: "Print an object with, on each line, the change that last changed it",
		Long: `Print an object as kubediff had it at a moment (default: now), as YAML,
each line annotated, as git blame does, with the kept change that last
changed it: the record's id, when, and who (the user when an identity
source said, with the field manager; else the manager). A line unchanged
since the history began says "older than the history"; a line a quiet
change made (a status counter, which makes no record) says so. Like diff,
it leaves out what the built-in quiet rules ignore; --all shows every
field kept. Exits 1 when the object did not exist then.`,
		Example: `  kubediff blame cm/settings -n shop
  kubediff blame deploy/web -n shop --at 1m --server http://127.0.0.1:8080
  kubediff blame deploy/web -n shop -o json --server http://127.0.0.1:8080 | jq '.lines[] | select(.user == "alice")'`,
		Args: objectArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, _ := cmd.Flags().GetString("output")
			if format != "text" && format != "json" {
				return usageError{fmt.Errorf("-o %q: want text or json", format)}
			}
			src, done, err := openHistory(cmd, stderr)
			if err != nil {
				return err
			}
			defer done()
			at, err := momentOrNow(cmd, "at")
			if err != nil {
				return err
			}
			arg, _ := oneObject(args)
			id, err := resolveObject(cmd, src, arg)
			if err != nil {
				return err
			}
			all, _ := cmd.Flags().GetBool("all")
			b, err := src.Blame(cmd.Context(), id, at, all)
			if err != nil {
				return stateError(cmd, src, arg, id, at, err)
			}
			if format == "json" {
				return json.NewEncoder(out).Encode(b)
			}
			return b.WriteText(out)
		},
	}
	addHistorySourceFlags(cmd)
	f := cmd.Flags()
	f.StringP("namespace", "n", "", "the object's namespace (default: the kubeconfig context's, else default)")
	f.String("at", "", "the moment (default: now): RFC 3339, a length of time ago such as 15m or 7d, or now")
	f.StringP("output", "o", "text", "text (the YAML, each line annotated) or json (for tools)")
	f.Bool("all", false, "show every field kept, managedFields and resourceVersion included")
	markUnbound(cmd, "namespace", "at", "output", "all")
	addCompletion(cmd, true)
	return cmd
}

// momentOrNow reads a TIME flag, now when not given.
func momentOrNow(cmd *cobra.Command, name string) (time.Time, error) {
	now := time.Now()
	t, err := momentFlag(cmd, name, now)
	if err == nil && t.IsZero() {
		t = now
	}
	return t, err
}
