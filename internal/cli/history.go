package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubediff/kubediff/internal/app"
	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/glob"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/apiservice"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
	"github.com/kubediff/kubediff/pkg/moment"
	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/notify/fold"
	"github.com/kubediff/kubediff/pkg/notify/stdout"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/rollout"
)

func newHistoryCommand(out, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history [TYPE[,TYPE...] | TYPE/NAME... | TYPE NAME...]",
		Short: "Print the changes kubediff kept, oldest first",
		Long: `Print the records kubediff kept in its history (a state dir's, by default the
one 'kubediff watch' keeps, or a running kubediff's with --server), oldest first, exactly as 'kubediff watch' printed
them. Types go by any name kubectl accepts; without one, every type.
Without -n, every namespace.`,
		Example: `  kubediff history --since 1h
  kubediff history deploy web -n shop --from 2h --until now -o text
  kubediff history --user alice --since 24h -o text
  kubediff history --rule 'rbac-*' --severity warning --since 7d -o text
  kubediff history --release shop/web --since 24h -o text
  kubediff history --drift -n shop --since 7d -o text
  kubediff history configmaps --server http://127.0.0.1:8080 --since 30m`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if format, _ := cmd.Flags().GetString("output"); format != "json" && format != "text" {
				return usageError{fmt.Errorf("-o %q: want json or text", format)}
			}
			src, done, err := openHistory(cmd, stderr)
			if err != nil {
				return err
			}
			defer done()
			q, err := historyQuery(cmd, src, args)
			if err != nil {
				return err
			}
			print, flush := historyPrinter(cmd, out, src)
			printed := 0
			begin, err := printRecords(cmd.Context(), src, q, func(c record.Change) error { printed++; return print(c) })
			err = errors.Join(err, flush())
			warnBeforeHistory(stderr, q.From, begin)
			if err == nil && printed == 0 {
				err = neverSeen(cmd, src, q, args)
			}
			return err
		},
	}
	addHistorySourceFlags(cmd)
	f := cmd.Flags()
	f.StringP("namespace", "n", "", "only this namespace (default: every namespace)")
	f.BoolP("all-namespaces", "A", false, "every namespace (the default)")
	f.String("user", "", "only changes made by this user, as the API server named them (alice, system:serviceaccount:NAMESPACE:NAME): exact, and known only for records an identity source named")
	f.String("rule", "", "only records that matched this rule (a name or a glob, such as image-changed or rbac-*; docs/rules.md)")
	f.String("severity", "", "only records whose rules' severity is at least this: info, warning, critical")
	f.String("events", history.EventsWarnings, "Kubernetes Events listed among the changes of the objects they are about (and their owners'): all, warnings, none (docs/why.md)")
	f.String("release", "", "only changes of objects this release applied: a Helm release, Argo CD Application, Flux Kustomization or HelmRelease, by NAME or NAMESPACE/NAME (docs/why.md)")
	f.Bool("drift", false, "only changes made outside their object's GitOps owner (Argo CD, Flux, Helm) and the writes that put them back (docs/drift.md)")
	f.String("since", "", "only records of the last DURATION (such as 15m, 2h, 7d)")
	f.String("from", "", "only records from TIME (RFC 3339, a length of time ago such as 15m or 7d, or now)")
	f.String("until", "", "only records until TIME (RFC 3339, a length of time ago such as 15m or 7d, or now)")
	f.StringP("output", "o", "json", "json (as 'watch -o json') or text (as 'watch -o text'); default: text on a terminal, else json")
	f.String("color", "auto", "colour in text output: auto, always, never")
	f.Bool("fold", true, "in text output, fold a controller's burst (a rollout's Pods) into one line, as watch did; --fold=false prints every record")
	markUnbound(cmd, "namespace", "all-namespaces", "user", "rule", "severity", "events", "release", "drift", "since", "from", "until", "output", "color", "fold")
	cmd.AddCommand(newHistoryImportCommand(out))
	return cmd
}

func newGetCommand(out, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get TYPE/NAME | TYPE NAME [--at TIME]",
		Short: "Print an object as kubediff had it at a moment",
		Long: `Print an object as kubediff had it at a moment (default: now): the state
it cached then (fields the rules ignore left out, secrets redacted), from
its history.
Exits 1 when the object did not exist then.`,
		Example: `  kubediff get deploy web -n shop
  kubediff get deploy/web -n shop --at 1m --state-dir "$HOME/.local/state/kubediff/clusters/$(kubectl config current-context)"
  kubediff get cm/settings -n shop --at 1m --server http://127.0.0.1:8080 -o json`,
		Args: objectArg,
		RunE: func(cmd *cobra.Command, args []string) error {
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
			raw, err := src.At(cmd.Context(), id, at)
			if err != nil {
				return stateError(cmd, src, arg, id, at, err)
			}
			format, _ := cmd.Flags().GetString("output")
			managed, _ := cmd.Flags().GetBool("show-managed-fields")
			return writeObject(out, raw, format, managed)
		},
	}
	addHistorySourceFlags(cmd)
	f := cmd.Flags()
	f.StringP("namespace", "n", "", "the object's namespace (default: the kubeconfig context's, else default)")
	f.String("at", "", "the moment (default: now): RFC 3339 (fractional seconds allowed), a length of time ago such as 15m or 7d, or now")
	f.StringP("output", "o", "yaml", "yaml or json")
	f.Bool("show-managed-fields", false, "keep metadata.managedFields in the output (left out by default, as kubectl get does)")
	markUnbound(cmd, "namespace", "at", "output", "show-managed-fields")
	completeWords(cmd, "output", "yaml", "json")
	return cmd
}

func newDiffCommand(out, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "diff TYPE/NAME | TYPE NAME --from TIME [--to TIME]",
		Short: "Show how an object changed between two moments",
		Long: `Show, as a unified diff of YAML, how an object changed between two moments
(--to defaults to now), as kubediff had it then. An object that did not
exist at one of them shows as all added or all removed. Like watch, it
leaves out what the built-in quiet rules ignore (managedFields,
resourceVersion, generation, heartbeat times); --all shows every field
kept.`,
		Example: `  kubediff diff deploy/web -n shop --from 1m
  kubediff diff cm/settings -n shop --from 1m --to now --server http://127.0.0.1:8080`,
		Args: objectArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			src, done, err := openHistory(cmd, stderr)
			if err != nil {
				return err
			}
			defer done()
			arg, _ := oneObject(args)
			return runDiff(cmd, src, arg, out)
		},
	}
	addHistorySourceFlags(cmd)
	f := cmd.Flags()
	f.StringP("namespace", "n", "", "the object's namespace (default: the kubeconfig context's, else default)")
	f.String("from", "", "the first moment: RFC 3339, a length of time ago such as 1h or 7d, or now")
	f.String("to", "", "the second moment (default: now)")
	f.Bool("all", false, "show every field kept, managedFields and resourceVersion included")
	markUnbound(cmd, "namespace", "from", "to", "all")
	addColorFlag(cmd)
	_ = cmd.MarkFlagRequired("from")
	return cmd
}

// objectArg takes one object, as TYPE/NAME or, as kubectl does, TYPE NAME.
func objectArg(_ *cobra.Command, args []string) error {
	_, err := oneObject(args)
	return err
}

// oneObject is the object args name, as TYPE/NAME: deploy/web, or the
// kubectl habit deploy web.
func oneObject(args []string) (string, error) {
	arg := ""
	switch {
	case len(args) == 1:
		arg = args[0]
	case len(args) == 2 && !strings.Contains(args[0], "/") && !strings.Contains(args[1], "/"):
		arg = args[0] + "/" + args[1]
	default:
		return "", usageError{fmt.Errorf("want one object, as TYPE/NAME or TYPE NAME (such as deploy/web or deploy web); got %d arguments: %s",
			len(args), strings.Join(args, " "))}
	}
	_, _, err := splitObjectArg(arg)
	return arg, err
}

// addHistorySourceFlags adds where the history is read.
func addHistorySourceFlags(cmd *cobra.Command) {
	cmd.Flags().String("state-dir", "", "read the history in this state dir, while the kubediff writing it runs or after (also KUBEDIFF_STATE_DIR or the config's state.dir; default: the one watch keeps, $XDG_STATE_HOME/kubediff or ~/.local/state/kubediff, the current context's)")
	cmd.Flags().String("server", "", "ask a running kubediff at its --http-address (http://HOST:PORT) as your kubeconfig's user")
	cmd.Flags().Bool("via-apiserver", false, "ask the kubediff serving the aggregated API "+apiservice.Group+" through your cluster's API server, as your kubeconfig's user whatever its credentials (client certificates, exec plugins, tokens)")
	cmd.Flags().String("cluster", "", "of a kubediff watching several contexts, the one whose history to read (required with a token there): the kubeconfig context of that name gives the credentials (--context: another), and with --state-dir its directory; with --history-store, the cluster's name or id in the database")
	cmd.Flags().String("history-store", "", "read the history in this PostgreSQL database (postgres://USER@HOST/DB; the password from --history-store-password-file or PGPASSWORD), as its credentials allow: no Kubernetes RBAC applies (docs/fleet.md)")
	cmd.Flags().String("history-store-password-file", "", "file holding --history-store's password")
	markUnbound(cmd, "server", "cluster", "via-apiserver")
}

// openHistory opens the history the flags point at: a running kubediff
// (--server) or a state dir.
func openHistory(cmd *cobra.Command, stderr io.Writer) (historyapi.Source, func(), error) {
	if src, closeStore, err := openHistoryStore(cmd); src != nil || err != nil {
		return src, closeStore, err
	}
	remote, dir, err := historyFlags(cmd, stderr)
	if err != nil || remote != nil {
		return remote, func() {}, err
	}
	src, err := openStateDir(cmd, dir)
	if err != nil {
		return nil, nil, err
	}
	return src, func() {}, nil
}

// openStateDir reads the history in dir under the diff rules the flags
// and config give (what its states lack).
func openStateDir(cmd *cobra.Command, dir string) (app.StateDir, error) {
	cfg, err := loadConfigWithArgs(cmd, nil)
	if err != nil {
		return app.StateDir{}, err
	}
	rules, err := app.DiffRules(cfg)
	if err != nil {
		return app.StateDir{}, err
	}
	src, err := app.OpenStateDir(dir, rules)
	if err != nil && cfg.State.Default && dir == cfg.State.Dir && errors.Is(err, fs.ErrNotExist) {
		return src, fmt.Errorf("no history yet in the default state dir %s, where `kubediff watch` keeps one for this context: run it first, or say where the history is: %s, or --server URL", dir, stateDirSources)
	}
	return src, err
}

// historyFlags reads where the history is: a running kubediff, asked as
// the kubeconfig's user, or else a state dir.
func historyFlags(cmd *cobra.Command, stderr io.Writer) (remote *historyapi.Remote, dir string, err error) {
	cfg, err := loadConfigWithArgs(cmd, nil)
	if err != nil {
		return nil, "", err
	}
	cluster, _ := cmd.Flags().GetString("cluster")
	via, _ := cmd.Flags().GetBool("via-apiserver")
	server, _ := cmd.Flags().GetString("server")
	if cluster != "" && (via || server != "") {
		if cfg.Context, err = clusterContext(cfg, cluster); err != nil {
			return nil, "", err
		}
	}
	if via {
		rc, err := app.RestConfig(cfg, app.NewLogger(stderr, cfg.Log))
		if err != nil {
			return nil, "", err
		}
		remote, err = historyapi.NewRemoteThroughAPIServer(rc, apiservice.Prefix, apiservice.Version+"."+apiservice.Group)
		return remote, "", err
	}
	if server != "" {
		rc, err := app.RestConfig(cfg, app.NewLogger(stderr, cfg.Log))
		if err != nil {
			return nil, "", err
		}
		if remote, err = historyapi.NewRemote(server, rc); err != nil {
			return nil, "", usageError{err}
		}
		remote.Cluster = cluster
		return remote, "", nil
	}
	if cfg.State.Dir == "" {
		return nil, "", usageError{fmt.Errorf("say where the history is: %s (a state dir, read while the kubediff writing it runs or after; default %s), or --server URL (a running kubediff, asked as your kubeconfig's user)", stateDirSources, defaultStateRootText())}
	}
	if cluster != "" && !cfg.State.Default { // the default is the cluster's already
		return nil, app.ClusterStateDir(cfg.State.Dir, cluster), nil
	}
	return nil, cfg.State.Dir, nil
}

// clusterContext is the kubeconfig context whose credentials are sent
// for cluster: --context when given, else the context named like the
// cluster, so that a token goes only to the cluster it is for (a
// kubediff of several clusters names each after its context).
func clusterContext(cfg config.Config, cluster string) (string, error) {
	if cfg.Context != "" {
		return cfg.Context, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = cfg.Kubeconfig
	raw, err := rules.Load()
	if err != nil {
		return "", fmt.Errorf("--cluster %s: kubeconfig: %w", cluster, err)
	}
	if raw.Contexts[cluster] == nil {
		return "", usageError{fmt.Errorf("--cluster %s: your kubeconfig has no context %q to take that cluster's credentials from; name the context that holds them with --context", cluster, cluster)}
	}
	return cluster, nil
}

// historyQuery reads the history command's selection.
func historyQuery(cmd *cobra.Command, src historyapi.Source, args []string) (history.Query, error) {
	var q history.Query
	q.Namespace, _ = cmd.Flags().GetString("namespace")
	q.User, _ = cmd.Flags().GetString("user")
	q.Rule, _ = cmd.Flags().GetString("rule")
	q.Severity, _ = cmd.Flags().GetString("severity")
	q.Release, _ = cmd.Flags().GetString("release")
	q.Drift, _ = cmd.Flags().GetBool("drift")
	if err := historyapi.CheckReleaseFilter(q.Release); err != nil {
		return q, usageError{fmt.Errorf("--%w", err)}
	}
	if err := glob.Valid([]string{q.Rule}); err != nil {
		return q, usageError{fmt.Errorf("--rule %q: %w", q.Rule, err)}
	}
	q.Events, _ = cmd.Flags().GetString("events")
	if err := historyapi.CheckEvents(q.Events); err != nil {
		return q, usageError{fmt.Errorf("--%w", err)}
	}
	if record.SeverityRank(q.Severity) < 0 {
		return q, usageError{fmt.Errorf("--severity %q: want one of %s", q.Severity, strings.Join(record.Severities, ", "))}
	}
	if all, _ := cmd.Flags().GetBool("all-namespaces"); all {
		q.Namespace = ""
	}
	types, objects, err := readArgs(args)
	if err != nil {
		return q, err
	}
	for _, arg := range append(types, objects...) {
		typ, name, _ := strings.Cut(arg, "/")
		r, err := historyapi.ResolveType(cmd.Context(), src, typ)
		if err != nil {
			return q, nameError(err)
		}
		q.Select = append(q.Select, history.Selector{Group: r.GVR.Group, Resource: r.GVR.Resource, Name: name})
	}
	if q.From, q.Until, err = historyWindow(cmd); err != nil {
		return q, err
	}
	return q, nil
}

// historyWindow reads --since, --from and --until.
func historyWindow(cmd *cobra.Command) (from, until time.Time, err error) {
	now := time.Now()
	since, _ := cmd.Flags().GetString("since")
	fromFlag, _ := cmd.Flags().GetString("from")
	switch {
	case since != "" && fromFlag != "":
		return from, until, usageError{errors.New("--since and --from say the same thing: give one")}
	case since != "":
		d, err := moment.ParseAge(since)
		if err != nil || d <= 0 {
			return from, until, usageError{fmt.Errorf("--since %q: want a length of time such as 15m, 2h or 7d", since)}
		}
		from = now.Add(-d)
	default:
		if from, err = momentFlag(cmd, "from", now); err != nil {
			return from, until, err
		}
	}
	if until, err = momentFlag(cmd, "until", now); err != nil {
		return from, until, err
	}
	if !until.IsZero() && from.After(until) {
		return from, until, usageError{fmt.Errorf("--from %s is after --until %s: give the older moment first",
			stamp(from), stamp(until))}
	}
	return from, until, nil
}

// momentFlag reads a TIME flag (moment.Parse: RFC 3339, 15m, 7d, now);
// zero when not given.
func momentFlag(cmd *cobra.Command, name string, now time.Time) (time.Time, error) {
	s, _ := cmd.Flags().GetString(name)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := historyapi.ParseMoment(s, now)
	if err != nil {
		return t, usageError{fmt.Errorf("--%s: %w", name, err)}
	}
	if t.After(now) {
		return t, usageError{fmt.Errorf("--%s %s is in the future (now is %s): the history holds only what happened", name,
			stamp(t), stamp(now))}
	}
	return t, nil
}

// splitObjectArg reads TYPE/NAME. Commands check it before opening the
// history, so that a state dir and a running kubediff refuse it alike.
func splitObjectArg(arg string) (typ, name string, err error) {
	typ, name, ok := strings.Cut(arg, "/")
	if !ok || typ == "" || name == "" || strings.Contains(name, "/") {
		return "", "", usageError{fmt.Errorf("%q: want TYPE/NAME with one slash, such as deploy/web", arg)}
	}
	return typ, name, nil
}

// resolveObject reads TYPE/NAME with -n into the object's id.
func resolveObject(cmd *cobra.Command, src historyapi.Source, arg string) (change.ObjectID, error) {
	typ, name, err := splitObjectArg(arg)
	if err != nil {
		return "", err
	}
	id, err := historyapi.ResolveObject(cmd.Context(), src, typ, name, objectNamespace(cmd))
	return id, nameError(err)
}

// nameError makes a name the history cannot resolve a usage error.
func nameError(err error) error {
	if errors.Is(err, historyapi.ErrBadName) {
		return usageError{err}
	}
	return err
}

// objectNamespace is -n, else the kubeconfig context's namespace, as
// kubectl chooses it.
func objectNamespace(cmd *cobra.Command) string {
	if ns, _ := cmd.Flags().GetString("namespace"); ns != "" {
		return ns
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path, _ := cmd.Flags().GetString("kubeconfig"); path != "" {
		rules.ExplicitPath = path
	}
	var context string
	if contexts, _ := cmd.Flags().GetStringArray("context"); len(contexts) > 0 {
		context = contexts[len(contexts)-1]
	}
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context}).Namespace()
	if err != nil || ns == "" {
		return "default"
	}
	return ns
}

// stateError says why an object's state at a moment is not there, and
// in which namespace it was looked for.
func stateError(cmd *cobra.Command, src historyapi.Source, arg string, id change.ObjectID, at time.Time, err error) error {
	when := stamp(at)
	switch {
	case errors.Is(err, history.ErrNotFound):
		if deleted, ok := lastDeletion(cmd, src, id, at); ok {
			before := stamp(time.Time(deleted.Time).Add(-time.Millisecond))
			by := ""
			if who := deleted.By(); who != "" {
				by = " by " + who
			}
			return fmt.Errorf("%s%s did not exist at %s: it was deleted at %s%s; its last state is at %s (kubediff %s %s --at %s)",
				arg, searchedNamespace(cmd, id), when, stamp(time.Time(deleted.Time)), by, before, cmd.Name(), arg, before)
		}
		return fmt.Errorf("%s%s did not exist at %s (as far as kubediff saw)", arg, searchedNamespace(cmd, id), when)
	case errors.Is(err, history.ErrBeforeHistory):
		return fmt.Errorf("%s is older than kubediff's history%s (retention, or before kubediff first kept it)", when, historyBegins(cmd, src))
	}
	return err
}

// neverSeen says, for a query of one object that printed nothing, when
// the whole history holds no change of it: a mistyped name or namespace
// (exit 1, as get's "did not exist"), rather than an empty answer that
// reads as "nothing happened".
func neverSeen(cmd *cobra.Command, src historyapi.Source, q history.Query, args []string) error {
	if len(q.Select) != 1 || q.Select[0].Name == "" {
		return nil
	}
	ever := history.Query{Select: q.Select, Namespace: q.Namespace, Limit: 1}
	page, err := src.Records(cmd.Context(), ever)
	if err != nil || len(page.Records) > 0 {
		return err
	}
	where := " in any namespace"
	if q.Namespace != "" {
		where = " in namespace " + q.Namespace
	}
	since := ""
	if begin := historyBegins(cmd, src); begin != "" {
		since = " (it" + strings.TrimPrefix(begin, ", which") + ")"
	}
	return fmt.Errorf("kubediff's history%s holds no change of %s%s: a name or namespace mistyped, or an object unchanged since",
		since, strings.Join(args, " "), where)
}

// lastDeletion is the object's last record up to at when it is its
// deletion: the object was there before it, and the question may be
// asked of the moment before.
func lastDeletion(cmd *cobra.Command, src historyapi.Source, id change.ObjectID, at time.Time) (record.Change, bool) {
	group, resource, namespace, name := id.Parts()
	q := history.Query{Select: []history.Selector{{Group: group, Resource: resource, Name: name}}, Namespace: namespace, Until: at}
	var last record.Change
	if _, err := printRecords(cmd.Context(), src, q, func(c record.Change) error { last = c; return nil }); err != nil {
		return record.Change{}, false
	}
	return last, last.Type == record.Deleted
}

// historyBegins says when the history begins (", which begins at …"),
// so that the question can be asked again at a moment it holds; nothing
// when the source cannot say.
func historyBegins(cmd *cobra.Command, src historyapi.Source) string {
	page, err := src.Records(cmd.Context(), history.Query{Limit: 1})
	if err != nil || page.Begin == nil {
		return ""
	}
	return ", which begins at " + stampUp(*page.Begin)
}

// searchedNamespace names the namespace an object was looked for in
// (nothing for a cluster-scoped type), and where it came from when -n
// did not name it: an object in another namespace is the usual reason
// for "did not exist".
func searchedNamespace(cmd *cobra.Command, id change.ObjectID) string {
	_, _, ns, _ := id.Parts()
	switch {
	case ns == "":
		return ""
	case cmd.Flags().Changed("namespace"):
		return " in namespace " + ns
	}
	return " in namespace " + ns + " (your kubeconfig context's, or default: -n names another)"
}

// historyPrinter prints records as watch prints them: JSON, or text with
// a controller's bursts folded as watch folded them (--fold=false: every
// record). done prints what is still folding.
func historyPrinter(cmd *cobra.Command, out io.Writer, src historyapi.Source) (print func(record.Change) error, done func() error) {
	format := recordFormat(cmd)
	color, _ := cmd.Flags().GetString("color")
	folding, _ := cmd.Flags().GetBool("fold")
	var sink notify.Notifier = stdout.NewJSON(out)
	switch {
	case format == "text" && folding:
		replay := stdout.NewReplayText(out, app.UseColor(color, out))
		replay.SetOutcome(keptOutcome(cmd.Context(), src))
		sink = replay
	case format == "text":
		sink = stdout.NewText(out, app.UseColor(color, out))
	}
	done = func() error { return nil }
	if closer, ok := sink.(notify.Closer); ok {
		done = closer.Close
	}
	return func(c record.Change) error { return sink.Notify(cmd.Context(), c) }, done
}

// keptOutcome says how a workload's rollout stood at a moment, from its
// state the history kept then: a replayed burst says how it ended as
// watch said it.
func keptOutcome(ctx context.Context, src historyapi.Source) fold.Outcome {
	return func(kind, namespace, name string, at time.Time) string {
		id, err := historyapi.ResolveObject(ctx, src, strings.ToLower(kind)+".apps", name, namespace)
		if err != nil {
			return ""
		}
		raw, err := src.At(ctx, id, at)
		if err != nil {
			return ""
		}
		var u unstructured.Unstructured
		if err := u.UnmarshalJSON(raw); err != nil {
			return ""
		}
		return rollout.Outcome(&u)
	}
}

// printRecords prints every page of q's records, and returns when the
// history begins (zero: unknown).
func printRecords(ctx context.Context, src historyapi.Source, q history.Query, print func(record.Change) error) (begin time.Time, err error) {
	for {
		page, err := src.Records(ctx, q)
		if err != nil {
			return begin, err
		}
		if page.Begin != nil {
			begin = *page.Begin
		}
		for _, raw := range page.Records {
			c, err := historyapi.DecodeRecord(raw)
			if err != nil {
				return begin, err
			}
			if err := print(c); err != nil {
				return begin, err
			}
		}
		if page.Next == "" {
			return begin, nil
		}
		q.After = page.Next
	}
}

// warnBeforeHistory says, when a window starts before the history does
// (retention dropped what is older, or kubediff kept nothing yet), that
// the records of that part are not there: an empty answer is not "no
// changes".
func warnBeforeHistory(stderr io.Writer, from, begin time.Time) {
	if from.IsZero() || begin.IsZero() || !from.Before(begin) {
		return
	}
	fmt.Fprintf(stderr, "warning: kubediff's history begins at %s (older records were dropped by retention, or never kept): "+
		"nothing is known of %s to then\n", stampUp(begin), stamp(from))
}

// stampLayout is how kubediff prints a moment: RFC 3339 to the
// millisecond, as records print their times and as the history keeps them.
const stampLayout = "2006-01-02T15:04:05.000Z07:00"

// stamp prints t to the millisecond.
func stamp(t time.Time) string { return t.UTC().Truncate(time.Millisecond).Format(stampLayout) }

// stampUp prints a beginning to the millisecond, rounded up, so that the
// moment printed, given back, is within what it begins.
func stampUp(t time.Time) string {
	up := t.UTC().Truncate(time.Millisecond)
	if up.Before(t) {
		up = up.Add(time.Millisecond)
	}
	return up.Format(stampLayout)
}
