package app

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
	"github.com/kubediff/kubediff/pkg/metrics"
)

// Several clusters in one process (--context a --context b,
// --all-contexts). Each cluster is a program of its own: its clients,
// pipeline, sinks' queues and state dir (DIR/clusters/CONTEXT). So one
// cluster's outage, slow sink or failed start touches only its own
// records, and each keeps the state dir's crash consistency (a record is
// queued in the same store, in the same write, as the state it leads
// to). They share the process: stdout (each record written whole; in
// text, each line prefixed with the cluster), the logs (each line names
// its cluster), and one HTTP server: /readyz names the clusters not
// ready, metrics carry a cluster label, and the types, history, timeline
// and MCP endpoints serve the cluster ?cluster= names (the first context
// when none is named).

// fleetContexts returns the contexts to watch side by side: none (or
// one) means the single cluster cfg.Context names.
func fleetContexts(cfg config.Config) ([]string, error) {
	if !cfg.AllContexts {
		return cfg.Contexts, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = cfg.Kubeconfig
	raw, err := rules.Load()
	if err != nil {
		return nil, ConfigError{fmt.Errorf("--all-contexts: kubeconfig: %w", err)}
	}
	if len(raw.Contexts) == 0 {
		return nil, ConfigError{errors.New("--all-contexts: the kubeconfig has no contexts")}
	}
	return slices.Sorted(maps.Keys(raw.Contexts)), nil
}

// retryStartAfter paces the attempts to start a cluster that cannot be
// reached, up to retryStartMax apart.
const (
	retryStartAfter = 5 * time.Second
	retryStartMax   = time.Minute
)

// runFleet runs a program per context until ctx is done. A cluster that
// cannot be reached at start is tried again (one warning, one line when it
// starts) while the others run; a mistake in the configuration stops all.
func runFleet(ctx context.Context, cfg config.Config, contexts []string, stdout io.Writer, log *slog.Logger) error {
	if len(contexts) == 1 {
		cfg.Context, cfg.Contexts, cfg.AllContexts = contexts[0], nil, false
		p := &program{cfg: cfg, log: log, metrics: metrics.New()}
		return p.runAll(ctx, stdout, singleServe(p, cfg, log))
	}
	reg := metrics.NewRegistry()
	fleet := &fleetHTTP{order: contexts, ready: map[string]func() error{}, muxes: map[string]*http.ServeMux{}}
	stopHTTP, err := serveHTTP(cfg.HTTPAddress, &metrics.Metrics{Registry: reg}, fleet.readiness, fleet.routes, log)
	if err != nil {
		return err
	}
	defer stopHTTP()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	shared := &lockedWriter{w: stdout}
	var wg sync.WaitGroup
	for _, name := range contexts {
		p := &program{cfg: clusterConfig(cfg, name), log: log.With("cluster", name), metrics: metrics.ForCluster(reg, name)}
		var out io.Writer = shared
		if cfg.Output == config.OutputText {
			out = &prefixWriter{prefix: []byte("[" + name + "] "), w: shared}
		}
		p.retryConnect = true
		wg.Go(func() {
			if err := p.runAll(ctx, out, fleet.serveFor(name)); err != nil {
				cancel(fmt.Errorf("cluster %s: %w", name, err))
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); !errors.Is(err, context.Canceled) {
		return err // one cluster's failure, which stopped the others
	}
	return nil
}

// connectRetrying is connect, tried again while the cluster cannot be
// reached (one warning, then debug lines); a mistake in the
// configuration is returned at once.
func (p *program) connectRetrying(ctx context.Context) error {
	wait, warned := retryStartAfter, false
	for {
		err := p.connect(ctx)
		var ce ConfigError
		if err == nil || !p.retryConnect || ctx.Err() != nil || errors.As(err, &ce) {
			return err
		}
		if !warned {
			p.log.Warn("cannot reach this cluster; the others go on, and it is tried again", "err", err)
			warned = true
		} else {
			p.log.Debug("still cannot reach this cluster", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, retryStartMax)
	}
}

// clusterConfig is cfg for one of several contexts.
func clusterConfig(cfg config.Config, name string) config.Config {
	cfg.Context, cfg.Contexts, cfg.AllContexts = name, nil, false
	if cfg.State.Dir != "" {
		cfg.State.Dir = filepath.Join(cfg.State.Dir, "clusters", dirName(name))
	}
	return cfg
}

// dirName is a context's name as one directory name, one to one: a
// lowercase letter, a digit, '-', '_' and '.' (but a leading one) stand
// for themselves; every other byte is %XX. So "dev" and "kind-kind" keep
// their directories, "x/y" (x%2Fy) and "x_y" no longer share one, ".."
// (%2E.) stays inside clusters/, and "Prod" (%50rod) and "prod" differ
// on a file system that ignores case (macOS, Windows). EKS contexts are
// ARNs: arn%3Aaws%3Aeks%3Aeu-west-1%3A123%3Acluster%2Fprod.
func dirName(context string) string {
	var b strings.Builder
	for i := 0; i < len(context); i++ {
		c := context[i]
		plain := 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' && i > 0
		if plain {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// ClusterStateDir is where the state of the cluster context names lives
// in a state dir written by several clusters' kubediff, or "" when dir
// holds one cluster.
func ClusterStateDir(dir, context string) string {
	return filepath.Join(dir, "clusters", dirName(context))
}

// singleServe serves one program's endpoints on the configured address.
func singleServe(p *program, cfg config.Config, log *slog.Logger) serveFunc {
	return func(ready func() error, routes func(*http.ServeMux)) (func(), error) {
		return serveHTTP(cfg.HTTPAddress, p.metrics, ready, onlyCluster(cmp.Or(cfg.ClusterName, contextName(cfg)), routes), log)
	}
}

// onlyCluster serves routes to requests naming no cluster or this one
// (name): a request naming another carries a token meant for another
// cluster, which must not be checked here.
func onlyCluster(name string, routes func(*http.ServeMux)) func(*http.ServeMux) {
	if routes == nil {
		return nil
	}
	return func(mux *http.ServeMux) {
		inner := http.NewServeMux()
		routes(inner)
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			if asked := r.URL.Query().Get(historyapi.ClusterParam); asked != "" && asked != name {
				historyapi.WriteError(w, http.StatusNotFound, "NotFound", fmt.Errorf("cluster %q: not watched here (this kubediff watches %s alone; leave out ?cluster=, --cluster)", asked, cmp.Or(name, "one unnamed cluster")))
				return
			}
			inner.ServeHTTP(w, r)
		})
	}
}

// fleetHTTP is the one HTTP server of several clusters.
type fleetHTTP struct {
	order []string // the contexts; the first serves requests naming none
	mu    sync.Mutex
	ready map[string]func() error // by context, while its program runs
	muxes map[string]*http.ServeMux
}

// serveFor is the serveFunc of one cluster's program.
func (f *fleetHTTP) serveFor(name string) serveFunc {
	return func(ready func() error, routes func(*http.ServeMux)) (func(), error) {
		mux := http.NewServeMux()
		if routes != nil {
			routes(mux)
		}
		f.mu.Lock()
		f.ready[name], f.muxes[name] = ready, mux
		f.mu.Unlock()
		return func() {
			f.mu.Lock()
			delete(f.ready, name)
			delete(f.muxes, name)
			f.mu.Unlock()
		}, nil
	}
}

// readiness is ready when every cluster is, and names those that are not.
func (f *fleetHTTP) readiness() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var not []string
	for _, name := range f.order {
		ready := f.ready[name]
		if ready == nil {
			not = append(not, "cluster "+name+": not connected")
		} else if err := ready(); err != nil {
			not = append(not, "cluster "+name+": "+err.Error())
		}
	}
	if len(not) > 0 {
		return errors.New(strings.Join(not, "; "))
	}
	return nil
}

// routes hands every other path to the cluster ?cluster= names. A
// request with a token must name it: the token is checked by that
// cluster alone, never by one it was not meant for (historyapi's
// cluster.go). One without (the page and its files, a first 401) goes to
// the first.
func (f *fleetHTTP) routes(mux *http.ServeMux) {
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get(historyapi.ClusterParam)
		if name == "" && r.Header.Get("Authorization") != "" {
			historyapi.WriteError(w, http.StatusBadRequest, "BadRequest", fmt.Errorf("this kubediff watches several clusters (%s): name the one your token is for with ?cluster=NAME (kubediff --cluster NAME); it checks the token there alone", strings.Join(f.order, ", ")))
			return
		}
		if name == "" {
			name = f.order[0]
		}
		f.mu.Lock()
		m := f.muxes[name]
		f.mu.Unlock()
		if m == nil {
			historyapi.WriteError(w, http.StatusNotFound, "NotFound", fmt.Errorf("cluster %q: not watched here, or not connected (clusters: %s)", name, strings.Join(f.order, ", ")))
			return
		}
		m.ServeHTTP(w, r)
	})
}

// lockedWriter serialises the clusters' writes to one stream; each record
// is one Write (pkg/notify/stdout), so records never interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// prefixWriter starts each line of text output with its cluster's name.
type prefixWriter struct {
	prefix []byte
	w      io.Writer
	buf    bytes.Buffer
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf.Reset()
	for line := range bytes.Lines(b) {
		p.buf.Write(p.prefix)
		p.buf.Write(line)
	}
	if _, err := p.w.Write(p.buf.Bytes()); err != nil {
		return 0, err
	}
	return len(b), nil
}
