// Package app is kubediff's program apart from its command line: Run
// builds the parts (state dir, clients, diff, discovery, sinks, pipeline,
// election, watcher) from a config.Config and runs them until its context
// is done. It never imports cobra or viper; internal/cli parses the
// command line into a config and calls Run, as stern's cobra command
// calls its library.
package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/history/apiservice"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
	"github.com/kubediff/kubediff/pkg/history/pgstore"
	"github.com/kubediff/kubediff/pkg/identity"
	"github.com/kubediff/kubediff/pkg/leader"
	"github.com/kubediff/kubediff/pkg/listkeys"
	"github.com/kubediff/kubediff/pkg/metrics"
	"github.com/kubediff/kubediff/pkg/pipeline"
	"github.com/kubediff/kubediff/pkg/release"
	"github.com/kubediff/kubediff/pkg/state"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// Version is kubediff's version, for its user agent (set by internal/cli
// from the build's stamp).
var Version = "dev"

// ConfigError marks a user's mistake found while starting (a sink that
// cannot be built from its keys, a resource name the server does not
// know, a kubeconfig that cannot be read): the command line exits 2 for
// it, 1 for any other failure.
type ConfigError struct{ Err error }

func (e ConfigError) Error() string { return e.Err.Error() }
func (e ConfigError) Unwrap() error { return e.Err }

// program is one run's parts, built in order by Run.
type program struct {
	cfg      config.Config
	log      *slog.Logger
	state    *state.Store // nil without a state dir
	clients  *Clients
	listKeys *listkeys.Source
	differ   *diff.Differ
	planner  *discovery.Planner
	plan     discovery.Plan
	sinks    *sinks
	metrics  *metrics.Metrics
	pipeline *pipeline.Pipeline
	elector  *leader.Elector // nil without leader election
	watcher  *watcher.Watcher
	warnings *warningLogger   // the API server's warnings, logged once
	book     *identity.Book   // who made each write; nil without a source
	objects  *objectLookup    // the objects Events regard
	shipper  *pgstore.Shipper // the history's copy in history.store; nil without one
	// retryConnect: one of several clusters, tried again while it cannot
	// be reached rather than failing the others (fleet.go).
	retryConnect bool
}

// Run watches the cluster cfg names (or, given several contexts, each of
// those clusters: fleet.go) and delivers each change's record to stdout
// and the configured sinks until ctx is done; operational logs go to
// stderr. Records still queued at the end are delivered for up to
// cfg.DrainTimeout (kept in the state dir when there is one).
func Run(ctx context.Context, cfg config.Config, stdout, stderr io.Writer) error {
	log := NewLogger(stderr, cfg.Log)
	contexts, err := fleetContexts(cfg)
	if err != nil {
		return err
	}
	if len(contexts) > 0 {
		return runFleet(ctx, cfg, contexts, stdout, log)
	}
	p := &program{cfg: cfg, log: log, metrics: metrics.New()}
	return p.runAll(ctx, stdout, singleServe(p, cfg, log))
}

// serveFunc serves a program's readiness and routes until the returned
// stop is called.
type serveFunc func(ready func() error, routes func(*http.ServeMux)) (stop func(), err error)

// runAll builds the program's parts in order and runs them until ctx is
// done.
func (p *program) runAll(ctx context.Context, stdout io.Writer, serve serveFunc) error {
	var err error
	if p.state, err = openState(p.cfg, p.log); err != nil {
		return err
	}
	defer closeState(p.state, p.log)                // after the watches stopped: their last writes included
	defer serveStateSocket(p.state, p.cfg, p.log)() // readers of the dir ask this kubediff
	if err := p.connectRetrying(ctx); err != nil {
		return err
	}
	p.objects = &objectLookup{everyType: p.cfg.LabelSelector != "" || discovery.PicksObjects(p.cfg.FieldSelector)}
	p.objects.learn(p.plan)
	if p.sinks, err = startSinks(ctx, p.cfg, p.plan.All, p.state, stdout, p.objects.outcome, p.log); err != nil {
		return err
	}
	defer p.sinks.drain(p.cfg.DrainTimeout, p.log)
	if err := p.assemble(ctx); err != nil {
		return err
	}
	defer func() { shipLast(p.shipper, p.state, p.cfg.DrainTimeout, p.log) }() // after the watches stopped
	return p.run(ctx, serve)
}

// connect reaches the cluster: clients, the differ (its list keys come
// from the server's OpenAPI), and the first plan of what to watch.
func (p *program) connect(ctx context.Context) error {
	rc, err := RestConfig(p.cfg, p.log)
	if err != nil {
		return err
	}
	p.warnings, _ = rc.WarningHandler.(*warningLogger)
	if p.clients, err = NewClients(rc); err != nil {
		return err
	}
	p.listKeys = listkeys.New(p.clients.Discovery.OpenAPIV3(), p.log)
	if p.differ, err = newDiffer(p.cfg, p.listKeys, p.state); err != nil {
		return err
	}
	p.planner = NewPlanner(p.cfg, p.clients)
	p.plan, err = discover(ctx, p.planner, p.log)
	return err
}

// releaseWait bounds how long a record whose object carries a release's
// marks waits for the release's state written before it (Helm updates
// its release Secret, Argo CD its Application, just after applying; a
// busy watch of those types may deliver them after the record).
const releaseWait = 5 * time.Second

// assemble connects the record path (pipeline, election) to the sinks and
// builds the watcher that feeds it.
func (p *program) assemble(ctx context.Context) error {
	p.metrics.AddQueues(p.sinks.router.Queues())
	le := p.cfg.LeaderElection
	cluster := clusterIdentity(ctx, p.clients)
	var identities pipeline.Identities
	if p.cfg.IdentitySources() {
		p.book = identity.NewBook()
		identities = p.book
	}
	ruleSet, err := compileRules(p.cfg, p.log)
	if err != nil {
		return err
	}
	p.pipeline = pipeline.New(pipeline.Options{Differ: p.differ, Router: p.sinks.router, Metrics: p.metrics, Cluster: recordCluster(p.cfg, cluster), Rules: ruleSet,
		Events: eventOptions(p.cfg, p.state, p.objects), Objects: p.objects,
		ExcludeNamespaces: p.cfg.ExcludeNamespaces, OwnLeases: ownLeases(le), Identities: identities, IdentityWait: p.cfg.Identity.Wait,
		Releases: release.NewBook(release.Options{HelmStorage: p.cfg.Release.HelmStorage, Log: p.log}), ReleaseWait: releaseWait,
		Election: le.Enabled, HoldRecords: le.HoldRecords, Holds: storeAs[pipeline.StateHolds](p.state), History: storeAs[pipeline.Keeper](p.state), Log: p.log})
	if p.elector, err = newElector(le, p.clients, p.pipeline.Gate(), p.metrics, p.log); err != nil {
		return err
	}
	if err := bindState(p.state, cluster); err != nil {
		return err
	}
	if p.shipper, err = newShipper(ctx, p.cfg, p.state, recordCluster(p.cfg, cluster), cluster, p.log); err != nil {
		return err
	}
	p.watcher, err = watcher.New(p.clients.Rest, p.pipeline.Handle, watcher.Options{Logger: p.log,
		Transform: p.pipeline.CacheTransform, Journal: storeAs[watcher.Journal](p.state), Rules: p.differ.RulesFingerprint(), Compress: p.cfg.CompressCache, ReadBatching: p.cfg.ReadBatching,
		OnConnection: func(up bool) { p.metrics.APIServerConnected.Set(map[bool]float64{true: 1}[up]) },
		OnNewCluster: p.pipeline.NewClusterID}) // records name the rebuilt cluster from then on
	if err != nil {
		return err
	}
	p.objects.watcher.Store(p.watcher)
	p.metrics.AddTypeHealth(func() (resources, namespaces []string) {
		for _, f := range p.watcher.Failing() {
			resources, namespaces = append(resources, f.Resource), append(namespaces, f.Namespace)
		}
		return resources, namespaces
	})
	return nil
}

// run serves health and metrics, starts the watches and what follows them
// (state writes, held records, rediscovery, the election), and waits for
// ctx.
func (p *program) run(ctx context.Context, serve serveFunc) error {
	var synced atomic.Bool
	ready := func() error {
		switch {
		case !synced.Load():
			return errors.New("caches are still syncing")
		case !p.watcher.Connected():
			return errors.New("the API server does not answer: watches wait for it")
		}
		return nil
	}
	health := &typeHealth{watcher: p.watcher}
	health.plan.Store(&p.plan)
	access := historyapi.NewAccess(p.clients.Kube, p.log)
	routes := []func(*http.ServeMux){health.routes(access), historyRoutes(historyReader(p.state, p.shipper, p.log), access, p.watcher, p.differ)}
	stopHTTP, err := serve(ready, allRoutes(routes))
	if err != nil {
		return err
	}
	defer stopHTTP() // before a reload's new run binds the same address
	stopAPIService, err := p.serveAPIService(ctx, allRoutes(routes))
	if err != nil {
		return err
	}
	defer stopAPIService()
	if p.book != nil {
		stopSources, err := startIdentitySources(ctx, p.cfg, p.book, p.log)
		if err != nil {
			return err
		}
		defer stopSources()
	}
	// The state writes and the release of held updates run from the
	// start: a type that syncs early reports changes (and holds updates
	// of owned objects) while others still sync.
	var background sync.WaitGroup
	if p.state != nil {
		background.Go(func() { p.state.Run(ctx) })
	}
	if p.shipper != nil {
		background.Go(func() { p.shipper.Run(ctx) })
	}
	background.Go(func() { p.pipeline.Run(ctx) })
	keepTypeNames(p.state, p.plan, p.log)
	targets := &targetSync{watcher: p.watcher, listKeys: p.listKeys, metrics: p.metrics, health: health, log: p.log, warned: map[string]bool{}, warnings: p.warnings,
		learn: p.objects.learn}
	targets.start(ctx, p.plan, func() { synced.Store(true) })
	background.Go(func() { targets.follow(ctx, p.planner, p.clients, p.cfg.RediscoveryInterval) })
	if p.elector != nil {
		background.Go(func() { p.elector.Run(ctx) })
	}
	<-ctx.Done()
	p.log.Info("stopping")
	background.Wait()
	p.watcher.Wait()
	return nil
}

// serveAPIService serves the history as an aggregated API when
// apiService.address is set.
func (p *program) serveAPIService(ctx context.Context, routes func(*http.ServeMux)) (stop func(), err error) {
	if p.cfg.APIService.Address == "" {
		return func() {}, nil
	}
	fp, err := apiservice.LoadFrontProxy(ctx, p.clients.Kube)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	routes(mux)
	_, stop, err = apiservice.Serve(p.cfg.APIService.Address, fp, mux, p.log)
	return stop, err
}
