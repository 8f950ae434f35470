package cli

import (
	"context"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/leader"
	"github.com/kubediff/kubediff/pkg/listkeys"
	"github.com/kubediff/kubediff/pkg/metrics"
	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/notify/stdout"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// progressInterval is how often sync progress is logged while caches fill.
const progressInterval = 2 * time.Second

// syncTimeout bounds the wait for the initial sync before kubediff goes on.
const syncTimeout = 2 * time.Minute

func newWatchCommand(out, stderr io.Writer) *cobra.Command {
	d := config.Default()
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Watch every resource and print each change",
		Long: `Watch every resource type the API server offers (custom resources
included) and print one record per change on stdout: JSON lines by default,
or readable text with -o text. Objects that exist when kubediff starts are
not reported; only what changes afterwards.`,
		Example: `  kubediff watch -o text
  kubediff watch -n default -n prod --resources deployments,configmaps
  kubediff watch -o json | jq 'select(.kind == "Deployment")'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			return watchWithReload(cmd, cfg, out, stderr)
		},
	}
	addSelectionFlags(cmd)
	f := cmd.Flags()
	f.StringP("output", "o", d.Output, "record format on stdout: json, text, none (only the configured sinks)")
	f.String("color", d.Color, "colour in text output: auto (when stdout is a terminal and NO_COLOR is unset), always, never")
	f.StringSlice("ignore-path", nil, "JSON Pointer of a field whose changes are not reported (repeatable; * matches any key)")
	f.Bool("patch", d.Diff.Patch, "add an RFC 6902 JSON Patch to each update record")
	f.String("diff-style", d.Diff.Style, "how -o text shows an update: compact (one line per field) or unified (YAML diff)")
	f.Int("queue-size", d.QueueSize, "records each sink may have waiting before new ones are dropped")
	f.Duration("drain-timeout", d.DrainTimeout, "at shutdown, how long queued records may take to be delivered")
	f.Duration("rediscovery-interval", d.RediscoveryInterval, "how often to look for new or removed types, besides whenever a CRD or APIService changes")
	f.String("http-address", d.HTTPAddress, "address serving /healthz, /readyz and /metrics; empty turns it off")
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
	rc, err := restConfig(cfg, log)
	if err != nil {
		return err
	}
	c, err := newClients(rc)
	if err != nil {
		return err
	}
	differ, err := newDiffer(cfg, c, log)
	if err != nil {
		return err
	}
	planner := newPlanner(cfg, c)
	plan, err := planner.Plan(ctx)
	if plan.All == nil && err != nil {
		return planError(err)
	}
	if err != nil {
		log.Warn("some API groups could not be discovered", "err", err)
	}
	meta, err := metadata.NewForConfig(rc)
	if err != nil {
		return err
	}
	sinks, err := startSinks(ctx, cfg, plan.All, out, log)
	if err != nil {
		return err
	}
	m := metrics.New()
	m.AddQueues(sinks.router.Queues())

	// Without leader election this replica leads from the start.
	gate := leader.NewGate(func(ch diff.Change) []notify.Mark {
		m.RecordsEmitted.WithLabelValues(ch.Resource, ch.Type).Inc()
		return sinks.router.Dispatch(ch)
	}, cfg.LeaderElection.HoldRecords, cfg.LeaderElection.Enabled, log)
	var elector *leader.Elector
	if cfg.LeaderElection.Enabled {
		opts := electionOptions(cfg.LeaderElection, c, log, func(leading bool) {
			if leading {
				m.Leader.Set(1)
			} else {
				m.Leader.Set(0)
			}
		})
		if elector, err = leader.New(gate, opts); err != nil {
			return usageError{err}
		}
	} else {
		gate.Lead(0)
		m.Leader.Set(1)
	}

	w, err := watcher.New(rc, func(ev watcher.Event) {
		m.EventsObserved.WithLabelValues(ev.Resource.GVR.Resource, string(ev.Type)).Inc()
		// Namespaces created after the plan that match an exclusion glob
		// are not filtered by the server.
		if ns := ev.Object().GetNamespace(); ns != "" && discovery.MatchesAny(cfg.ExcludeNamespaces, ns) {
			return
		}
		if ch, ok := differ.Diff(ev); ok {
			gate.Emit(ch)
		}
	}, watcher.Options{
		Logger: log,
		Transform: func(r discovery.Resource) cache.TransformFunc {
			return differ.CacheTransform(r)
		},
	})
	if err != nil {
		return err
	}

	var synced atomic.Bool
	if cfg.HTTPAddress != "" {
		_, stop, err := metrics.Serve(cfg.HTTPAddress, m, synced.Load, log)
		switch {
		case err == nil:
			defer stop() // before a reload's new run binds the same address
		case cfg.HTTPAddress == config.Default().HTTPAddress:
			// In a terminal, something else often has :8080; the watch
			// matters more than its metrics.
			log.Warn("not serving health and metrics (set --http-address to choose another address)", "err", err)
		default:
			return usageError{err}
		}
	}
	// syncTo makes the informers match a plan, at start and after each
	// rediscovery.
	forbidden := &forbiddenLog{log: log, warned: map[string]bool{}}
	syncTo := func(plan discovery.Plan) {
		forbidden.report(plan.Statuses)
		w.Sync(ctx, keepUnavailable(plan, w.Targets()))
		m.InformersRunning.Set(float64(w.Progress().Informers))
		m.LastSync.SetToCurrentTime()
	}
	steady := tuneRuntimeForSync()
	syncTo(plan)
	reportSyncProgress(ctx, w, log, func(allSynced bool) {
		steady(allSynced)
		synced.Store(true) // /readyz says so before the log line does
	})

	var background sync.WaitGroup
	monitor := &discovery.Monitor{Metadata: meta, Access: planner.Access, Interval: cfg.RediscoveryInterval, Log: log}
	background.Go(func() {
		monitor.Run(ctx, func(ctx context.Context) {
			plan, err := planner.Plan(ctx)
			if plan.All == nil && err != nil {
				if ctx.Err() == nil {
					log.Warn("rediscovery failed; still watching what was found before", "err", err)
				}
				return
			}
			if err != nil {
				log.Warn("some API groups could not be rediscovered; still watching what was found of them before", "err", err)
			}
			syncTo(plan)
		})
	})
	if elector != nil {
		background.Go(func() { elector.Run(ctx) })
	}

	<-ctx.Done()
	log.Info("stopping")
	background.Wait()
	w.Wait()
	sinks.drain(cfg.DrainTimeout, log)
	return nil
}

// keepUnavailable adds to the plan's targets the running ones of API
// groups that failed this discovery: an aggregated API that blinks must not
// stop its informers, whose restart would not report what changed between.
func keepUnavailable(plan discovery.Plan, running []discovery.Target) []discovery.Target {
	targets := plan.Targets
	for _, t := range running {
		if slices.Contains(plan.Unavailable, t.Resource.GVR.GroupVersion()) {
			targets = append(targets, t)
		}
	}
	return targets
}

// forbiddenLog warns once per forbidden type, and again only if access was
// granted and then withdrawn.
type forbiddenLog struct {
	log    *slog.Logger
	warned map[string]bool
}

func (f *forbiddenLog) report(statuses []discovery.Status) {
	for _, s := range statuses {
		key := s.Resource.GVR.String()
		switch {
		case s.State == discovery.StateForbidden && !f.warned[key]:
			f.warned[key] = true
			f.log.Warn("not watching a type kubediff may not read", "resource", s.Resource.String(), "reason", s.Reason)
		case s.State == discovery.StateWatched && f.warned[key]:
			delete(f.warned, key)
			f.log.Info("access granted: now watching", "resource", s.Resource.String())
		}
	}
}

// reportSyncProgress logs progress while the caches fill, then calls
// synced and logs one line saying what is watched; it returns then, or
// when ctx is done.
//
// A type whose list never succeeds (a CRD whose conversion webhook is down)
// must not hold everything else back: after syncTimeout kubediff goes on,
// saying which informers have not synced; they report once they do.
func reportSyncProgress(ctx context.Context, w *watcher.Watcher, log *slog.Logger, synced func(allSynced bool)) {
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastReport := start
	for {
		p := w.Progress()
		took := time.Since(start).Round(time.Millisecond).String()
		if p.Synced == p.Informers {
			synced(true)
			log.Info("watching", "types", p.Types, "informers", p.Informers, "objects", p.Objects, "syncTime", took)
			return
		}
		if time.Since(start) >= syncTimeout {
			synced(false)
			log.Warn("watching, though some informers have not synced yet", "unsynced", w.Unsynced(), "types", p.Types,
				"informers", p.Informers, "objects", p.Objects, "syncTime", took)
			return
		}
		if time.Since(lastReport) >= progressInterval {
			lastReport = time.Now()
			log.Info("syncing caches", "synced", p.Synced, "of", p.Informers, "objects", p.Objects)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func newDiffer(cfg config.Config, c *clients, log *slog.Logger) (*diff.Differ, error) {
	d := cfg.Diff
	rules := diff.Rules{
		Paths: d.IgnorePaths,
		Defaults: diff.Defaults{
			Bookkeeping:        d.Defaults.Bookkeeping,
			LeaseRenewals:      d.Defaults.LeaseRenewals,
			DeploymentRevision: d.Defaults.DeploymentRevision,
			StatusTimestamps:   d.Defaults.StatusTimestamps,
		},
	}
	for _, r := range d.Ignore {
		rules.PerResource = append(rules.PerResource, diff.ResourceRule{Resources: r.Resources, Paths: r.Paths})
	}
	differ, err := diff.New(diff.Options{
		Rules:    rules,
		Redact:   diff.RedactOptions{Paths: d.Redact.Paths, Keys: d.Redact.Keys},
		ListKeys: listkeys.New(c.discovery.OpenAPIV3(), log),
		Patch:    d.Patch,
		Unified:  cfg.Output == config.OutputText && d.Style == config.StyleUnified,
		// The watcher's informers cache objects through CacheTransform.
		CachedObjects: true,
	})
	if err != nil {
		return nil, usageError{err}
	}
	return differ, nil
}

func newStdoutSink(cfg config.Config, out io.Writer) notify.Notifier {
	if cfg.Output == config.OutputText {
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

// tuneRuntimeForSync sets the Go runtime up for the initial lists and
// returns the function that sets it up for what follows, leaving alone
// what the user set with GOGC or GOMAXPROCS.
//
// The initial lists come in bulk, on every core, and make garbage faster
// than anything after: collecting it sooner keeps the peak near the
// steady state. Afterwards, changes arrive one at a time and each is
// handed along a few goroutines; with more than one P, each hand-off
// wakes an idle thread, which costs more than the work itself (one P:
// about 15% less CPU per update, docs/benchmarks.md).
func tuneRuntimeForSync() (steady func(allSynced bool)) {
	restoreGC := func() {}
	if os.Getenv("GOGC") == "" {
		old := debug.SetGCPercent(25)
		restoreGC = func() { debug.SetGCPercent(old) }
	}
	ownProcs := os.Getenv("GOMAXPROCS") == ""
	if ownProcs {
		runtime.SetDefaultGOMAXPROCS() // a reload syncs on every core again
	}
	return func(allSynced bool) {
		restoreGC()
		// Types still listing after the sync timeout keep every core.
		if ownProcs && allSynced {
			runtime.GOMAXPROCS(1)
		}
		// The initial lists leave garbage worth several times the cache;
		// give it back to the OS now rather than over the next minutes,
		// so that resident memory reflects what kubediff keeps.
		debug.FreeOSMemory()
	}
}
