package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubediff/kubediff/internal/app"
	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
	"github.com/kubediff/kubediff/pkg/history/restore"
)

// restoreManager is the field manager of a restore's server-side apply.
const restoreManager = "kubediff-restore"

func newRestoreCommand(out, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "restore TYPE/NAME | TYPE NAME --at TIME [--apply]",
		Short: "Print (or apply) an object as it was at a moment, ready for server-side apply",
		Long: `Print an object as kubediff had it at a moment, deleted objects too, as a
manifest ready for server-side apply: without what the API server sets
(uid, resourceVersion, managedFields, status, creationTimestamp,
generation) and without owner references to objects that no longer exist
(said on stderr). A state kubediff did not keep whole is refused with the
reason: a Secret (its values are redacted), a type whose fields the rules
prune, any redacted value.

--apply applies it with your kubeconfig's credentials: a server-side dry
run first, the diff against the live object, a y/N question (--yes skips
it; Ctrl-C applies nothing), then a server-side apply as field manager
kubediff-restore, which takes over the fields it sets from other managers.
Fields others added since, which the manifest does not set (an env var
from kubectl set env), stay: they are listed with who set them, before
the question and after the apply.`,
		Example: `  kubediff restore deploy/web -n shop --at 1m > web.yaml
  kubediff restore cm/settings -n shop --at 1m --server http://127.0.0.1:8080 --apply`,
		Args: objectArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, _ := cmd.Flags().GetString("output")
			if format != "yaml" && format != "json" {
				return usageError{fmt.Errorf("-o %q: want yaml or json", format)}
			}
			arg, _ := oneObject(args)
			m, id, at, err := restoreManifest(cmd, arg, stderr)
			if err != nil {
				return err
			}
			if apply, _ := cmd.Flags().GetBool("apply"); apply {
				return applyRestore(cmd, id, m, at, out, stderr)
			}
			return printManifest(out, m.Object, format)
		},
	}
	addHistorySourceFlags(cmd)
	f := cmd.Flags()
	f.StringP("namespace", "n", "", "the object's namespace (default: the kubeconfig context's, else default)")
	f.String("at", "", "the moment to restore: RFC 3339, or a length of time ago such as 15m or 7d")
	f.StringP("output", "o", "yaml", "yaml or json")
	f.Bool("apply", false, "apply the manifest with your kubeconfig (server-side apply as kubediff-restore), after a dry run and the diff against the live object")
	f.Bool("yes", false, "with --apply, apply without asking")
	markUnbound(cmd, "namespace", "at", "output", "apply", "yes")
	addColorFlag(cmd)
	_ = cmd.MarkFlagRequired("at")
	addCompletion(cmd, true)
	return cmd
}

// restoreManifest reads the object's manifest at --at from the history,
// and says its warnings on stderr.
func restoreManifest(cmd *cobra.Command, arg string, stderr io.Writer) (restore.Manifest, change.ObjectID, time.Time, error) {
	src, done, err := openHistory(cmd, stderr)
	if err != nil {
		return restore.Manifest{}, "", time.Time{}, err
	}
	defer done()
	at, err := momentFlag(cmd, "at", time.Now())
	if err != nil {
		return restore.Manifest{}, "", at, err
	}
	id, err := resolveObject(cmd, src, arg)
	if err != nil {
		return restore.Manifest{}, "", at, err
	}
	m, err := src.Restore(cmd.Context(), id, at)
	if err != nil {
		return m, id, at, stateError(cmd, src, arg, id, at, err)
	}
	for _, w := range m.Warnings {
		fmt.Fprintln(stderr, "warning: "+w)
	}
	return m, id, at, nil
}

func printManifest(out io.Writer, obj map[string]any, format string) error {
	raw, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return writeObject(out, raw, format, true) // a manifest to apply holds none
}

// applyRestore applies the manifest to the cluster with the caller's own
// credentials: a dry run, the diff against the live object and the
// fields the apply keeps, a question, then the apply.
func applyRestore(cmd *cobra.Command, id change.ObjectID, m restore.Manifest, at time.Time, out, stderr io.Writer) error {
	client, err := restoreClient(cmd, id, m, stderr)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	obj := &unstructured.Unstructured{Object: m.Object}
	name, when := obj.GetName(), stamp(at)
	text, kept, err := previewRestore(ctx, client, id, obj, at)
	if err != nil {
		return err
	}
	if text == "" && len(kept) == 0 {
		fmt.Fprintf(out, "%s is already as it was at %s: nothing to apply\n", objectLabel(obj), when)
		return nil
	}
	if text == "" {
		fmt.Fprintf(out, "%s: what the restore sets is as it was at %s: nothing to apply; but %s\n", objectLabel(obj), when, keptList(kept))
		return nil
	}
	if err := writeDiff(cmd, out, text); err != nil {
		return err
	}
	if len(kept) > 0 {
		fmt.Fprintf(out, "Not as it was after the apply: %s\n", keptList(kept))
	}
	if yes, _ := cmd.Flags().GetBool("yes"); !yes {
		ok, err := confirm(ctx, cmd.InOrStdin(), stderr, fmt.Sprintf("Apply this to %s? [y/N] ", objectLabel(obj)))
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintln(stderr, "not applied")
			return nil
		}
	}
	applied, err := client.Apply(ctx, name, obj, metav1.ApplyOptions{FieldManager: restoreManager, Force: true})
	if err != nil {
		return fmt.Errorf("the API server refused the restore: %w", err)
	}
	// What the apply kept is told from its result: a manager may have
	// written since the dry run.
	if kept, err = restore.Kept(applied.GetManagedFields(), restoreManager); err != nil {
		return err
	}
	fmt.Fprintf(out, "restored %s as it was at %s (resourceVersion %s)%s\n", objectLabel(obj), when, applied.GetResourceVersion(), keptNote(kept))
	return nil
}

// previewRestore is what applying obj would do: the diff from the live
// object to the dry run's result ("" when none), and the fields the
// apply would keep as others set them since.
func previewRestore(ctx context.Context, client dynamic.ResourceInterface, id change.ObjectID, obj *unstructured.Unstructured, at time.Time) (string, []restore.KeptField, error) {
	dry, err := client.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: restoreManager, Force: true, DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return "", nil, fmt.Errorf("the API server refused the restore's dry run: %w", err)
	}
	live, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return "", nil, fmt.Errorf("reading the live object: %w", err)
	}
	text, err := restoreDiff(ctx, id, live, dry, at)
	if err != nil {
		return "", nil, err
	}
	kept, err := restore.Kept(dry.GetManagedFields(), restoreManager)
	return text, kept, err
}

// keptNote says, after a restore's message, that it is not the whole
// object as it was (nothing when it is).
func keptNote(kept []restore.KeptField) string {
	if len(kept) == 0 {
		return ""
	}
	return ", but for " + keptList(kept)
}

// keptList names the fields others added since, which a server-side
// apply leaves, and who set them, one a line.
func keptList(kept []restore.KeptField) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d field(s) added since that the restore does not set and server-side apply keeps:", len(kept))
	for _, k := range kept {
		b.WriteString("\n  " + k.String())
	}
	return b.String()
}

// restoreClient is a dynamic client for the object's type and namespace
// with the kubeconfig's credentials.
func restoreClient(cmd *cobra.Command, id change.ObjectID, m restore.Manifest, stderr io.Writer) (dynamic.ResourceInterface, error) {
	cfg, err := loadConfigWithArgs(cmd, nil)
	if err != nil {
		return nil, err
	}
	rc, err := app.RestConfig(cfg, app.NewLogger(stderr, cfg.Log))
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	group, resource, namespace, _ := id.Parts()
	gv, err := schema.ParseGroupVersion(fmt.Sprint(m.Object["apiVersion"]))
	if err != nil {
		return nil, fmt.Errorf("the kept state's apiVersion: %w", err)
	}
	client := dyn.Resource(schema.GroupVersionResource{Group: group, Version: gv.Version, Resource: resource})
	if namespace == "" {
		return client, nil
	}
	return client.Namespace(namespace), nil
}

// restoreDiff is how the apply would change the live object (nil: none),
// as watch would show it.
func restoreDiff(ctx context.Context, id change.ObjectID, live, dry *unstructured.Unstructured, at time.Time) (string, error) {
	var from []byte
	if live != nil {
		var err error
		if from, err = live.MarshalJSON(); err != nil {
			return "", err
		}
	}
	to, err := dry.MarshalJSON()
	if err != nil {
		return "", err
	}
	label := objectLabel(dry)
	return historyapi.DiffObjects(ctx, id, from, to, label+" live", label+" restored as at "+stamp(at))
}

// confirm asks question on stderr and reads the answer: y or yes. When
// ctx is done first (Ctrl-C: main's context), it returns ctx's cause,
// so that nothing is applied and kubediff exits non-zero.
func confirm(ctx context.Context, in io.Reader, stderr io.Writer, question string) (bool, error) {
	fmt.Fprint(stderr, question)
	answer := make(chan string, 1)
	// The read cannot be interrupted (a terminal's stdin has no
	// deadline): when ctx ends first, the goroutine ends with the
	// process, which exits right after, or with in's next line.
	go func() {
		line, err := bufio.NewReader(in).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			line = ""
		}
		answer <- line
	}()
	select {
	case <-ctx.Done():
		fmt.Fprintln(stderr)
		return false, fmt.Errorf("interrupted at the question: nothing applied (%w)", context.Cause(ctx))
	case line := <-answer:
		line = strings.ToLower(strings.TrimSpace(line))
		return line == "y" || line == "yes", nil
	}
}

func objectLabel(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetKind() + " " + u.GetName()
	}
	return u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
}
