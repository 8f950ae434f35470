package cli

import (
	"context"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/listkeys"
	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/notify/stdout"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// progressInterval is how often sync progress is logged while caches fill.
const progressInterval = 2 * time.Second

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
			return runWatch(cmd.Context(), cfg, out, stderr)
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
	return cmd
}

func runWatch(ctx context.Context, cfg config.Config, out, stderr io.Writer) error {
	log := newLogger(stderr, cfg.Log)
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
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	meta, err := metadata.NewForConfig(rc)
	if err != nil {
		return err
	}
	sinks, err := startSinks(ctx, cfg, plan.All, out, log)
	if err != nil {
		return err
	}

	w := watcher.New(dyn, func(ev watcher.Event) {
		// Namespaces created after the plan that match an exclusion glob
		// are not filtered by the server.
		if ns := ev.Object().GetNamespace(); ns != "" && discovery.MatchesAny(cfg.ExcludeNamespaces, ns) {
			return
		}
		if c, ok := differ.Diff(ev); ok {
			sinks.router.Dispatch(c)
		}
	}, watcher.Options{
		ResyncPeriod: cfg.ResyncPeriod,
		Logger:       log,
		Transform: func(r discovery.Resource) cache.TransformFunc {
			return differ.CacheTransform(r)
		},
	})
	forbidden := &forbiddenLog{log: log, warned: map[string]bool{}}
	forbidden.report(plan.Statuses)
	if err := w.Sync(ctx, plan.Targets); err != nil {
		return err
	}
	reportSyncProgress(ctx, w, log)

	monitor := &discovery.Monitor{Metadata: meta, Access: planner.Access, Interval: cfg.RediscoveryInterval, Log: log}
	monitorDone := make(chan struct{})
	go func() {
		defer close(monitorDone)
		monitor.Run(ctx, func(ctx context.Context) {
			plan, err := planner.Plan(ctx)
			if plan.All == nil && err != nil {
				if ctx.Err() == nil {
					log.Warn("rediscovery failed; still watching what was found before", "err", err)
				}
				return
			}
			forbidden.report(plan.Statuses)
			if err := w.Sync(ctx, plan.Targets); err != nil {
				log.Warn("could not start watching a type", "err", err)
			}
		})
	}()

	<-ctx.Done()
	log.Info("stopping")
	<-monitorDone
	w.Wait()
	sinks.drain(cfg.DrainTimeout, log)
	return nil
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

// reportSyncProgress logs progress while the caches fill, then one line
// saying what is watched; it returns when synced or when ctx is done.
func reportSyncProgress(ctx context.Context, w *watcher.Watcher, log *slog.Logger) {
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastReport := start
	for {
		p := w.Progress()
		if p.Synced == p.Informers {
			log.Info("watching", "types", p.Types, "informers", p.Informers,
				"objects", p.Objects, "syncTime", time.Since(start).Round(time.Millisecond).String())
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
