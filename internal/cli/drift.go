package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubediff/kubediff/pkg/drift"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
	"github.com/kubediff/kubediff/pkg/notify/visible"
	"github.com/kubediff/kubediff/pkg/record"
)

func newDriftCommand(out, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "drift [-n NS] [--since TIME]",
		Short: "List what is drifted from its GitOps owner's declared state now",
		Long: `List the objects whose fields someone changed outside their GitOps owner
(an Argo CD Application, a Flux Kustomization or HelmRelease, a Helm
release) and that no write has put back yet, grouped per owner, each
drifted field with its declared value and its value now. It reads the
history (a state dir's, a running kubediff's with --server, or
PostgreSQL's with --history-store), so it knows what kubediff saw:
drift kubediff did not see, or whose records retention dropped, is not
listed (docs/drift.md). With --since, also the drift that came back
since then.`,
		Example: `  kubediff drift
  kubediff drift -n shop --since 24h --server http://127.0.0.1:8080 -o text`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format, _ := cmd.Flags().GetString("output"); format != "json" && format != "text" {
				return usageError{fmt.Errorf("-o %q: want json or text", format)}
			}
			since, err := momentFlag(cmd, "since", time.Now())
			if err != nil {
				return err
			}
			src, done, err := openHistory(cmd, stderr)
			if err != nil {
				return err
			}
			defer done()
			ns, _ := cmd.Flags().GetString("namespace")
			ledger, begin, err := readDrift(cmd.Context(), src, ns)
			if err != nil {
				return err
			}
			var ended []drift.Drift
			if cmd.Flags().Changed("since") {
				ended = ledger.Ended(since)
				warnBeforeHistory(stderr, since, begin)
			}
			groups := groupDrift(ledger.Open(), ended)
			if recordFormat(cmd) == "text" {
				return writeDriftText(out, groups, since, begin)
			}
			return writeDriftJSON(out, groups)
		},
	}
	addHistorySourceFlags(cmd)
	f := cmd.Flags()
	f.StringP("namespace", "n", "", "only objects in this namespace (default: every namespace)")
	f.String("since", "", "also list the drift that came back since TIME (RFC 3339, a length of time ago such as 24h or 7d)")
	f.StringP("output", "o", "json", "json (one line per owner) or text; default: text on a terminal, else json")
	markUnbound(cmd, "namespace", "since", "output")
	completeWords(cmd, "output", "json", "text")
	return cmd
}

// readDrift follows the history's drift (drift.Ledger) from its
// beginning: first the outside changes and the writes that said they
// put them back (history --drift), then, for each object still drifted,
// its every record since, so that an owner's write that put back some
// fields only, which names no record, ends those too.
func readDrift(ctx context.Context, src historyapi.Source, ns string) (*drift.Ledger, time.Time, error) {
	ledger := drift.NewLedger()
	add := func(c record.Change) error { ledger.Add(c); return nil }
	q := history.Query{Namespace: ns, Drift: true, Events: history.EventsNone}
	begin, err := printRecords(ctx, src, q, add)
	if err != nil {
		return nil, begin, err
	}
	for _, d := range ledger.Open() {
		o := d.Object
		group, _, grouped := strings.Cut(o.APIVersion, "/")
		if !grouped {
			group = "" // the core group: v1
		}
		q := history.Query{Select: []history.Selector{{Group: group, Resource: o.Resource, Name: o.Name}},
			Namespace: o.Namespace, From: d.Since, Events: history.EventsNone}
		ledger.Forget(d)
		if _, err := printRecords(ctx, src, q, add); err != nil {
			return nil, begin, err
		}
	}
	return ledger, begin, nil
}

// driftGroup is one owner's drift, as drift -o json prints it (a line
// each).
type driftGroup struct {
	Owner   record.GitOps `json:"owner"`
	Drifted []drift.Drift `json:"drifted"`
	PutBack []drift.Drift `json:"putBack,omitempty"`
}

// groupDrift groups open and ended drift per owner, in owner order
// (both come sorted by owner).
func groupDrift(open, ended []drift.Drift) []driftGroup {
	var groups []driftGroup
	index := map[string]int{}
	at := func(owner record.GitOps) *driftGroup {
		key := drift.OwnerLabel(owner)
		i, ok := index[key]
		if !ok {
			i = len(groups)
			index[key] = i
			groups = append(groups, driftGroup{Owner: owner, Drifted: []drift.Drift{}})
		}
		return &groups[i]
	}
	for _, d := range open {
		g := at(d.Owner)
		g.Drifted = append(g.Drifted, d)
	}
	for _, d := range ended {
		g := at(d.Owner)
		g.PutBack = append(g.PutBack, d)
	}
	return groups
}

func writeDriftJSON(out io.Writer, groups []driftGroup) error {
	enc := json.NewEncoder(out)
	for _, g := range groups {
		if err := enc.Encode(g); err != nil {
			return err
		}
	}
	return nil
}

// writeDriftText prints each owner, its drifted objects and their
// fields as text output says drift (≠ FIELD: declared …, now …), and
// what came back; or a sentence saying nothing is drifted, and since
// when the history knows.
func writeDriftText(out io.Writer, groups []driftGroup, since, begin time.Time) error {
	w := &errWriter{w: out}
	if len(groups) == 0 {
		w.printf("Nothing is drifted%s.\n", historySince(begin))
	}
	for _, g := range groups {
		w.printf("%s\n", visible.String(g.Owner.Owner()))
		for _, d := range g.Drifted {
			w.printf("  %s, drifted since %s by %s (record %s)\n", objectText(d.Object), stamp(d.Since), orUnknown(d.By), visible.String(d.Record))
			for _, f := range d.Fields {
				w.printf("    ≠ %s\n", fieldText(f, ", now "))
			}
		}
		for _, d := range g.PutBack {
			w.printf("  %s, drifted at %s by %s, put back at %s after %ss (record %s)\n", objectText(d.Object), stamp(d.Since), orUnknown(d.By),
				stamp(*d.Until), fmt.Sprintf("%.1f", d.Seconds), visible.String(d.EndedBy))
			for _, f := range d.Fields {
				w.printf("    = %s\n", fieldText(f, ", was "))
			}
		}
	}
	if len(groups) > 0 && !since.IsZero() && !hasPutBack(groups) {
		w.printf("Nothing came back since %s.\n", stamp(since))
	}
	return w.err
}

func hasPutBack(groups []driftGroup) bool {
	for _, g := range groups {
		if len(g.PutBack) > 0 {
			return true
		}
	}
	return false
}

// historySince says since when the history knows (" in the history,
// which begins at …"), so that "nothing" is read for what it covers.
func historySince(begin time.Time) string {
	if begin.IsZero() {
		return " (the history holds nothing yet)"
	}
	return " as far as the history says (it begins at " + stampUp(begin) + ")"
}

func objectText(o drift.Object) string {
	name := o.Name
	if o.Namespace != "" {
		name = o.Namespace + "/" + o.Name
	}
	return visible.String(o.Kind + " " + name)
}

func orUnknown(by string) string {
	if by == "" {
		return "someone kubediff could not name"
	}
	return visible.String(by)
}

// fieldText says a drifted field: "spec.replicas: declared 2, now 5"
// (now says "was" for drift that came back).
func fieldText(f drift.Field, now string) string {
	declared := "unknown"
	switch {
	case f.Undeclared:
		declared = "none"
	case f.Declared != nil || f.Truncated:
		declared = jsonText(f.Declared)
	}
	value := "none"
	if f.Now != nil {
		value = jsonText(f.Now)
	}
	return visible.String(f.Field + ": declared " + declared + now + value)
}

// maxDriftValue is how much of a value a line shows: a drifted
// ConfigMap's whole file would bury the list.
const maxDriftValue = 200

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if r := []rune(string(b)); len(r) > maxDriftValue {
		return string(r[:maxDriftValue]) + "…"
	}
	return string(b)
}

// errWriter keeps the first write error, so that a list of lines is
// written without checking each.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
