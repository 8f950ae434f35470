package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/listkeys"
	"github.com/kubediff/kubediff/pkg/metrics"
	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/notify/stdout"
	"github.com/kubediff/kubediff/pkg/pipeline"
	"github.com/kubediff/kubediff/pkg/state"
	"github.com/kubediff/kubediff/pkg/watcher"
)

func newWatchCommand(out, stderr io.Writer) *cobra.Command {
	d := config.Default()
	cmd := &cobra.Command{
		Use:   "watch [TYPE[,TYPE...] | TYPE/NAME... | TYPE NAME...]",
		Short: "Watch every resource and print each change",
		Long: `Watch every resource type the API server offers (custom resources
included) and print one record per change on stdout: JSON lines by default,
or readable text with -o text. Objects that exist when kubediff starts are
not reported; only what changes afterwards.

Arguments narrow what is watched as kubectl get's do: types by any name
kubectl accepts, or single objects (filtered by the API server).`,
		Example: `  kubediff watch -o text
  kubediff watch deployments,configmaps
  kubediff watch -n prod deploy/web cm/settings
  kubediff watch -n default -n prod --resources deployments,configmaps
  kubediff watch -o json | jq 'select(.kind == "Deployment")'`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			return watchWithReload(cmd, cfg, out, stderr)
		},
	}
	addSelectionFlags(cmd)
	addCompletion(cmd, true)
	f := cmd.Flags()
	f.StringP("output", "o", d.Output, "record format on stdout: json, text, none (only the configured sinks)")
	f.String("color", d.Color, "colour in text output: auto (when stdout is a terminal and NO_COLOR is unset), always, never")
	f.Bool("fold", d.Fold, "in text output, fold a burst of records of objects one owner controls (a rollout's Pods) into one line")
	f.StringSlice("ignore-path", nil, "JSON Pointer of a field whose changes are not reported (repeatable; * matches any key)")
	f.Bool("patch", d.Diff.Patch, "add an RFC 6902 JSON Patch to each update record")
	f.String("diff-style", d.Diff.Style, "how -o text shows an update: compact (one line per field) or unified (YAML diff)")
	f.Int("queue-size", d.QueueSize, fmt.Sprintf("without --state-dir, records each sink may have waiting in memory before new ones are dropped, at most %d (stdout waits for its reader instead)", config.MaxQueueSize))
	f.String("queue-max-bytes", d.QueueMaxBytes, "with --state-dir, how much each sink's queue may hold on disk (a byte count or a quantity such as 256Mi); stdout waits for room, other sinks drop new records")
	f.Duration("drain-timeout", d.DrainTimeout, "at shutdown, how long queued records may take to be delivered")
	f.Duration("rediscovery-interval", d.RediscoveryInterval, "how often to look for new or removed types, besides whenever a CRD or APIService changes")
	f.String("http-address", d.HTTPAddress, "address serving /healthz, /readyz and /metrics, loopback only by default (in a pod, :8080 lets probes and Prometheus reach it); empty turns it off")
	f.Bool("compress-cache", d.CompressCache, "keep cached objects compressed with a dictionary per type (about a third of the memory, about 2 µs an update); --compress-cache=false keeps plain JSON")
	f.String("state-dir", d.State.Dir, "keep what kubediff saw in this directory, so that after a restart it reports what changed while it was down")
	le := d.LeaderElection
	f.Bool("leader-elect", le.Enabled, "run several replicas with one emitting, elected through a Lease")
	f.String("leader-election-namespace", le.Namespace, "namespace of the Lease (default: the pod's namespace, else default)")
	f.String("leader-election-id", le.Name, "name of the Lease")
	f.Duration("leader-election-lease-duration", le.LeaseDuration, "how long a leader's lease lasts without renewal")
	f.Duration("leader-election-renew-deadline", le.RenewDeadline, "how long the leader keeps trying to renew before giving up")
	f.Duration("leader-election-retry-period", le.RetryPeriod, "how often candidates try to acquire or renew the Lease")
	return cmd
}

func runWatch(ctx context.Context, cfg config.Config, out, stderr io.Writer) error {
	log := newLogger(stderr, cfg.Log)
	if cfg.ResyncPeriod != 0 {
		log.Warn("resyncPeriod is deprecated and has no effect: kubediff's cache never replays", "resyncPeriod", cfg.ResyncPeriod.String())
	}
	st, err := openState(cfg.State.Dir, log)
	if err != nil {
		return err
	}
	defer closeState(st, log) // runs after the watches stopped: their last writes included
	rc, err := restConfig(cfg, log)
	if err != nil {
		return err
	}
	c, err := newClients(rc)
	if err != nil {
		return err
	}
	differ, err := newDiffer(cfg, c, st, log)
	if err != nil {
		return err
	}
	planner := newPlanner(cfg, c)
	plan, err := discover(ctx, planner, log)
	if err != nil {
		return err
	}
	sinks, err := startSinks(ctx, cfg, plan.All, st, out, log)
	if err != nil {
		return err
	}
	defer sinks.drain(cfg.DrainTimeout, log)
	m := metrics.New()
	m.AddQueues(sinks.router.Queues())
	le := cfg.LeaderElection
	p := pipeline.New(pipeline.Options{Differ: differ, Router: sinks.router, Metrics: m, ExcludeNamespaces: cfg.ExcludeNamespaces,
		Election: le.Enabled, HoldRecords: le.HoldRecords, Holds: stateHolds(st), OwnLeases: ownLeases(le), Log: log})
	elector, err := newElector(le, c, p.Gate(), m, log)
	if err != nil {
		return err
	}
	if err := bindState(ctx, st, c); err != nil {
		return err
	}
	w, err := watcher.New(rc, p.Handle, watcher.Options{Logger: log, Transform: p.CacheTransform, State: st, Rules: differ.RulesFingerprint(), Compress: cfg.CompressCache,
		OnConnection: func(up bool) { m.APIServerConnected.Set(map[bool]float64{true: 1}[up]) }})
	if err != nil {
		return err
	}
	var synced atomic.Bool
	ready := func() error {
		switch {
		case !synced.Load():
			return errors.New("caches are still syncing")
		case !w.Connected():
			return errors.New("the API server does not answer: watches wait for it")
		}
		return nil
	}
	stopHTTP, err := serveHTTP(cfg.HTTPAddress, m, ready, log)
	if err != nil {
		return err
	}
	defer stopHTTP() // before a reload's new run binds the same address

	targets := &targetSync{watcher: w, metrics: m, log: log, warned: map[string]bool{}}
	targets.start(ctx, plan, func() { synced.Store(true) })
	var background sync.WaitGroup
	if st != nil {
		background.Go(func() { st.Run(ctx) })
	}
	background.Go(func() { p.Run(ctx) })
	background.Go(func() { targets.follow(ctx, planner, c, cfg.RediscoveryInterval) })
	if elector != nil {
		background.Go(func() { elector.Run(ctx) })
	}
	<-ctx.Done()
	log.Info("stopping")
	background.Wait()
	w.Wait()
	return nil
}

// serveHTTP serves health and metrics on addr until the returned stop is
// called; an empty addr serves nothing.
func serveHTTP(addr string, m *metrics.Metrics, ready func() error, log *slog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	_, stop, err = metrics.Serve(addr, m, ready, log)
	switch {
	case err == nil:
		return stop, nil
	case addr == config.Default().HTTPAddress:
		// In a terminal, something else often has port 8080; the watch
		// matters more than its metrics.
		log.Warn("not serving health and metrics (set --http-address to choose another address)", "err", err)
		return func() {}, nil
	}
	// A malformed address is refused with the config; this one is well
	// formed but taken or not permitted: a runtime failure.
	return nil, err
}

func newDiffer(cfg config.Config, c *clients, st *state.Store, log *slog.Logger) (*diff.Differ, error) {
	d := cfg.Diff
	var salt []byte // without a state dir: one for this process
	if st != nil {
		var err error
		if salt, err = st.Salt(); err != nil {
			return nil, err
		}
	}
	rules := diff.Rules{
		Paths:    d.IgnorePaths,
		Defaults: d.Defaults.Enabled(),
	}
	for _, r := range d.Ignore {
		rules.PerResource = append(rules.PerResource, diff.ResourceRule{Resources: r.Resources, Paths: r.Paths})
	}
	for _, r := range d.DefaultsOff {
		rules.DefaultsOff = append(rules.DefaultsOff, diff.DefaultsOff{Rules: r.Rules, Resources: r.Resources})
	}
	differ, err := diff.New(diff.Options{
		Rules:    rules,
		Redact:   diff.RedactOptions{Paths: d.Redact.Paths, Keys: d.Redact.Keys, Salt: salt},
		ListKeys: listkeys.New(c.discovery.OpenAPIV3(), log),
		Patch:    d.Patch,
		Unified:  cfg.Output == config.OutputText && d.Style == config.StyleUnified,
		// The watcher caches objects through CacheTransform.
		CachedObjects: true,
	})
	if err != nil {
		return nil, usageError{err}
	}
	return differ, nil
}

func newStdoutSink(cfg config.Config, out io.Writer) notify.Notifier {
	switch {
	case cfg.Output == config.OutputText && cfg.Fold:
		return stdout.NewFoldingText(out, useColor(cfg.Color, out))
	case cfg.Output == config.OutputText:
		return stdout.NewText(out, useColor(cfg.Color, out))
	}
	return stdout.NewJSON(out)
}

// useColor follows --color, and in auto mode colours only a terminal and
// respects NO_COLOR (https://no-color.org).
func useColor(mode string, out io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
