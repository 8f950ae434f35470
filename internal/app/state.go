package app

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/discovery"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/historyapi"
	"github.com/kubediff/kubediff/pkg/history/historymcp"
	"github.com/kubediff/kubediff/pkg/history/historyui"
	"github.com/kubediff/kubediff/pkg/pipeline"
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/state"
	"github.com/kubediff/kubediff/pkg/watcher"
)

// openState opens the state dir, or returns nil without one. It only
// touches the disk, so that a bad dir is reported before any network call.
// A dir kubediff cannot use (read-only, full, in use by another
// kubediff) is a runtime failure: the command line is right.
func openState(cfg config.Config, log *slog.Logger) (*state.Store, error) {
	if cfg.State.Dir == "" {
		return nil, nil
	}
	st, err := state.Open(cfg.State.Dir, log)
	if err != nil {
		return nil, err
	}
	retention, maxBytes, _ := cfg.History.Bounds()    // validated
	eventRetention, _ := cfg.History.EventRetention() // validated
	policy := history.Policy{Retention: retention, MaxBytes: maxBytes, EventRetention: eventRetention, Outbox: cfg.History.Store != ""}
	if err := st.SetHistory(policy); err != nil {
		st.Close()
		return nil, fmt.Errorf("state dir %s: history: %w", cfg.State.Dir, err)
	}
	return st, nil
}

// clusterIdentity names the cluster a state dir belongs to: the
// kube-system namespace's UID (the usual cluster id), or the server's
// address when it cannot be read.
func clusterIdentity(ctx context.Context, c *Clients) string {
	if ns, err := c.Kube.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err == nil {
		return "kube-system/" + string(ns.UID)
	}
	return "server/" + c.Rest.Host
}

// bindState ties the state dir to the cluster (clusterIdentity).
func bindState(st *state.Store, identity string) error {
	if st == nil {
		return nil
	}
	return st.Bind(identity)
}

// recordCluster is the cluster every record names: clusterName or the
// kubeconfig context's name, and the kube-system namespace's UID when it
// could be read.
func recordCluster(cfg config.Config, identity string) *record.Cluster {
	c := &record.Cluster{Name: cmp.Or(cfg.ClusterName, contextName(cfg))}
	c.ID, _ = strings.CutPrefix(identity, "kube-system/")
	if strings.HasPrefix(identity, "server/") {
		c.ID = ""
	}
	if c.Name == "" && c.ID == "" {
		return nil
	}
	return c
}

// contextName is the kubeconfig context kubediff uses ("" in a pod).
func contextName(cfg config.Config) string {
	if cfg.Context != "" {
		return cfg.Context
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = cfg.Kubeconfig
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).RawConfig()
	if err != nil {
		return ""
	}
	return raw.CurrentContext
}

// closeState writes the last changes and closes the state dir.
func closeState(st *state.Store, log *slog.Logger) {
	if st == nil {
		return
	}
	if err := st.Close(); err != nil {
		log.Error("cannot write the state store at shutdown: the next start may report recent changes again", "err", err)
	}
}

// storeAs is the state store as the interface T a stage declares of it
// (watcher.Journal, pipeline.StateHolds, pipeline.Keeper), or T's nil
// without a state dir: never a nil *state.Store inside T, which the
// stage would take for a store.
func storeAs[T any](st *state.Store) T {
	var none T
	if st == nil {
		return none
	}
	return any(st).(T)
}

// The state store is what each stage declares of a store, checked here
// at compile time rather than by storeAs's conversion at run time.
var (
	_ watcher.Journal     = (*state.Store)(nil)
	_ pipeline.StateHolds = (*state.Store)(nil)
	_ pipeline.Keeper     = (*state.Store)(nil)
)

// historyRoutes serves, with a history (historyReader), the history API
// (pkg/history/historyapi), its timeline page (pkg/history/historyui) and
// MCP for assistants (pkg/history/historymcp).
func historyRoutes(reader historyapi.Store, access *historyapi.Access, w *watcher.Watcher, rules *diff.Differ) func(*http.ServeMux) {
	if reader == nil {
		return nil
	}
	api := historyapi.NewHandler(reader, access)
	api.SetRules(rules)
	return func(mux *http.ServeMux) {
		api.Register(mux)
		historyui.Register(mux)
		states := func(context.Context) ([]watcher.TargetState, error) { return w.States(), nil }
		historymcp.Register(mux, api, access, states, Version)
	}
}

// DiffRules is a Differ with cfg's diff rules, to tell what states kept
// under them lack (a restore's check), not to diff.
func DiffRules(cfg config.Config) (*diff.Differ, error) { return newDiffer(cfg, nil, nil) }

// allRoutes registers each of routes (nil ones skipped).
func allRoutes(routes []func(*http.ServeMux)) func(*http.ServeMux) {
	return func(mux *http.ServeMux) {
		for _, r := range routes {
			if r != nil {
				r(mux)
			}
		}
	}
}

// keepTypeNames keeps the names of the planned types in the history, so
// that `kubediff get` finds a type none of whose objects changed.
func keepTypeNames(st *state.Store, plan discovery.Plan, log *slog.Logger) {
	if st == nil {
		return
	}
	types := make([]discovery.Resource, 0, len(plan.Targets))
	for _, t := range plan.Targets {
		types = append(types, t.Resource)
	}
	if err := st.KeepTypes(types); err != nil {
		log.Warn("cannot write the watched types' names to the history", "err", err)
	}
}
