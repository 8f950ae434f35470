package app

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"github.com/kubediff/kubediff/internal/residency"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/listkeys"
	"github.com/kubediff/kubediff/pkg/metrics"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// progressInterval is how often sync progress is logged while caches fill.
const progressInterval = 2 * time.Second

// syncTimeout bounds the wait for the initial sync before kubediff goes on.
const syncTimeout = 2 * time.Minute

// discover plans what to watch. A plan missing some API groups is used
// (plan.Unavailable names them; targetSync says so once per episode);
// without any plan, the error says why.
func discover(ctx context.Context, planner *discovery.Planner, log *slog.Logger) (discovery.Plan, error) {
	plan, err := planner.Plan(ctx)
	if plan.All == nil && err != nil {
		return plan, PlanError(err)
	}
	if err != nil {
		log.Debug("discovery was partial", "err", err)
	}
	return plan, nil
}

// targetSync keeps the watcher's targets matching the discovered plan.
type targetSync struct {
	watcher *watcher.Watcher
	// listKeys is refreshed at each rediscovery: a CRD's schema may have
	// changed which of its lists are keyed.
	listKeys *listkeys.Source
	metrics  *metrics.Metrics
	health   *typeHealth // keeps the latest plan for the types endpoint
	warnings *warningLogger
	log      *slog.Logger
	warned   map[string]bool // forbidden types already warned about
	// learn is told each plan applied (the types Events may regard).
	learn func(discovery.Plan)
	// unavailable are the API groups that failed discovery last time.
	unavailable map[schema.GroupVersion]bool
	// waiting are the named types waited for last time (plan.Waiting).
	waiting []string
	// rediscoveryFailing is set while rediscovery fails for a reason other
	// than the API server not answering (that outage is reported apart).
	rediscoveryFailing bool
}

// start watches plan's targets and returns once their caches have synced
// (or syncTimeout passed), calling synced just before it logs so.
func (s *targetSync) start(ctx context.Context, plan discovery.Plan, synced func()) {
	steady := tuneRuntimeForSync()
	s.apply(ctx, plan)
	reportSyncProgress(ctx, s.watcher, s.log, func(allSynced bool) {
		steady(allSynced)
		synced() // /readyz says so before the log line does
	})
}

// follow rediscovers whenever a CRD or APIService changes, and every
// interval, until ctx is done.
func (s *targetSync) follow(ctx context.Context, planner *discovery.Planner, c *Clients, interval time.Duration) {
	monitor := &discovery.Monitor{Metadata: c.Metadata, Access: planner.Access, Interval: interval, Log: s.log}
	monitor.Run(ctx, func(ctx context.Context) {
		s.listKeys.Refresh()
		plan, err := discover(ctx, planner, s.log)
		s.reportRediscovery(ctx, err)
		if err == nil {
			s.apply(ctx, plan)
		}
	})
}

// reportRediscovery warns once while rediscovery fails and says once when
// it works again; not at all when the API server does not answer: the
// outage's own two lines say so, and a line per attempt would repeat them.
func (s *targetSync) reportRediscovery(ctx context.Context, err error) {
	switch {
	case err == nil && s.rediscoveryFailing:
		s.rediscoveryFailing = false
		s.log.Info("rediscovery works again")
	case err == nil || ctx.Err() != nil:
	case s.watcher.Unreachable(err):
		s.log.Debug("rediscovery failed: the API server does not answer", "err", err)
	case !s.rediscoveryFailing:
		s.rediscoveryFailing = true
		s.log.Warn("rediscovery failed; still watching what was found before", "err", err)
	default:
		s.log.Debug("rediscovery still failing", "err", err)
	}
}

func (s *targetSync) apply(ctx context.Context, plan discovery.Plan) {
	if s.health != nil {
		s.health.plan.Store(&plan)
	}
	if s.learn != nil {
		s.learn(plan)
	}
	s.reportForbidden(plan.Statuses)
	s.reportUnavailable(plan.Unavailable)
	s.reportWaiting(plan.Waiting)
	targets := keepUnavailable(plan, s.watcher.Targets())
	s.warnings.watching(targets)
	s.watcher.Sync(ctx, targets)
	s.metrics.WatchesRunning.Set(float64(s.watcher.Progress().Watches))
	s.metrics.LastSync.SetToCurrentTime()
}

// reportForbidden warns once per forbidden type, and again only if access
// was granted and then withdrawn.
func (s *targetSync) reportForbidden(statuses []discovery.Status) {
	for _, st := range statuses {
		key := st.Resource.GVR.String()
		switch {
		case st.State == discovery.StateForbidden && !s.warned[key]:
			s.warned[key] = true
			s.log.Warn("not watching a type kubediff may not read", "resource", st.Resource.String(), "reason", st.Reason)
		case st.State == discovery.StateWatched && s.warned[key]:
			delete(s.warned, key)
			s.log.Info("access granted: now watching", "resource", st.Resource.String())
		}
	}
}

// reportUnavailable says once when API groups stop answering discovery
// (an aggregated API whose Service is gone) and once when they answer
// again, not at every rediscovery.
func (s *targetSync) reportUnavailable(groups []schema.GroupVersion) {
	now := map[schema.GroupVersion]bool{}
	var lost, back []string
	for _, gv := range groups {
		now[gv] = true
		if !s.unavailable[gv] {
			lost = append(lost, gv.String())
		}
	}
	for gv := range s.unavailable {
		if !now[gv] {
			back = append(back, gv.String())
		}
	}
	s.unavailable = now
	if len(lost) > 0 {
		slices.Sort(lost)
		s.log.Warn("API groups unavailable: their types are not watched until they answer (what is already watched stays watched)", "groups", lost)
	}
	if len(back) > 0 {
		slices.Sort(back)
		s.log.Info("API groups no longer unavailable (answering again, or removed)", "groups", back)
	}
}

// keepUnavailable adds to the plan's targets the running ones of API
// groups that failed this discovery: an aggregated API that blinks must not
// stop its watches, whose restart would not report what changed between.
func keepUnavailable(plan discovery.Plan, running []discovery.Target) []discovery.Target {
	targets := plan.Targets
	for _, t := range running {
		if slices.Contains(plan.Unavailable, t.Resource.GVR.GroupVersion()) {
			targets = append(targets, t)
		}
	}
	return targets
}

// reportSyncProgress logs progress while the caches fill, then calls
// synced and logs one line saying what is watched; it returns then, or
// when ctx is done.
//
// A type whose list never succeeds (a CRD whose conversion webhook is down)
// must not hold everything else back: after syncTimeout kubediff goes on,
// saying which watches have not synced; they report once they do.
func reportSyncProgress(ctx context.Context, w *watcher.Watcher, log *slog.Logger, synced func(allSynced bool)) {
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastReport := start
	counted := false
	for {
		p := w.Progress()
		took := time.Since(start).Round(time.Millisecond).String()
		if p.Synced+p.Failing == p.Watches {
			// Types that cannot be listed do not hold the others back:
			// they are named, retried, and reported once they work.
			synced(true)
			log.Info("watching", "types", p.Types, "watches", p.Watches, "objects", p.Objects, "syncTime", took)
			if p.Failing > 0 {
				log.Warn("some types cannot be listed: retrying them with backoff; their changes are reported once they can", "failing", w.Failing())
			}
			return
		}
		if time.Since(start) >= syncTimeout {
			synced(false)
			log.Warn("watching, though some watches have not synced yet", "unsynced", w.Unsynced(), "types", p.Types,
				"watches", p.Watches, "objects", p.Objects, "syncTime", took)
			return
		}
		if time.Since(lastReport) >= progressInterval {
			if !counted {
				// A sync this long is worth an estimate: the server says
				// how many objects the types still listing have. In the
				// background: a server slow to answer must not hold up
				// the sync's own timeout.
				go w.CountUnsynced(ctx)
				counted = true
			}
			lastReport = time.Now()
			log.Info("syncing caches", syncProgress(p, time.Since(start))...)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// syncProgress is a progress line's attributes: types synced, objects
// so far, and once the server has said how many there are, the expected
// total and the time left at the rate so far.
func syncProgress(p watcher.Progress, elapsed time.Duration) []any {
	attrs := []any{"synced", p.Synced, "of", p.Watches, "objects", p.Objects}
	if p.Expected == 0 {
		return attrs
	}
	attrs = append(attrs, "expected", p.Expected)
	if left := p.Expected - p.Objects; left > 0 && p.Objects > 0 {
		attrs = append(attrs, "remaining", (time.Duration(float64(elapsed) * float64(left) / float64(p.Objects))).Round(time.Second).String())
	}
	return attrs
}

// steadyGCPercent is the garbage collector's GOGC once synced. The heap
// kubediff keeps is small (the cache is compressed) and its garbage per
// update smaller still, so collecting at half the live heap rather than
// all of it costs little: side by side at 100 updates a second, GOGC=50
// held 42.6 MB against 48.2 MB at 100, for the same CPU (make bench).
const steadyGCPercent = 50

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
		debug.SetGCPercent(25)
		restoreGC = func() { debug.SetGCPercent(steadyGCPercent) }
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
		residency.ReleaseBinaryPages()
	}
}

// reportWaiting says once when named types are waited for (their API
// groups unavailable), and once when they are all found.
func (s *targetSync) reportWaiting(waiting []string) {
	switch {
	case len(waiting) > 0 && !slices.Equal(waiting, s.waiting):
		s.log.Warn("types named in resources are not served now, while API groups are unavailable: waiting for them (a misspelt name waits too)", "resources", waiting)
	case len(waiting) == 0 && len(s.waiting) > 0:
		s.log.Info("types waited for are served again: watching them", "resources", s.waiting)
	}
	s.waiting = waiting
}
