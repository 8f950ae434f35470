package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/discovery"
)

// RestConfig resolves the cluster connection the way kubectl does: the
// --kubeconfig file, else KUBECONFIG, else ~/.kube/config, and the
// in-cluster service account when none of those exists.
func RestConfig(cfg config.Config, log *slog.Logger) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = cfg.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: cfg.Context}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) || errors.Is(err, clientcmd.ErrEmptyConfig) {
			return nil, ConfigError{errors.New("no cluster to talk to: pass --kubeconfig, set KUBECONFIG, create ~/.kube/config, or run inside a pod")}
		}
		return nil, ConfigError{fmt.Errorf("kubeconfig: %w", err)}
	}
	rc.UserAgent = "kubediff/" + Version
	// One LIST per watched type at start: the client-go default of 5 QPS
	// would make the initial sync of ~60 types take over ten seconds.
	rc.QPS, rc.Burst = 50, 100
	rc.WarningHandler = &warningLogger{log: log, seen: map[string]bool{}}
	return rc, nil
}

// warningLogger logs each distinct API server warning (such as "v1
// Endpoints is deprecated") once, instead of once per list and watch
// request for the life of the process.
type warningLogger struct {
	log  *slog.Logger
	mu   sync.Mutex
	seen map[string]bool
	// watched holds the kinds watched, as "group/version Kind" (the way
	// a deprecation warning names its replacement).
	watched atomic.Pointer[map[string]bool]
}

// watching tells the logger which kinds are watched (nil-safe: clients
// made without it).
func (w *warningLogger) watching(targets []discovery.Target) {
	if w == nil {
		return
	}
	kinds := map[string]bool{}
	for _, t := range targets {
		kinds[t.Resource.GVR.GroupVersion().String()+" "+t.Resource.Kind] = true
	}
	w.watched.Store(&kinds)
}

// replacementWatched says whether a deprecation warning's replacement
// ("...; use discovery.k8s.io/v1 EndpointSlice") is watched.
func (w *warningLogger) replacementWatched(text string) bool {
	_, replacement, found := strings.Cut(text, "; use ")
	kinds := w.watched.Load()
	return found && kinds != nil && (*kinds)[strings.TrimSpace(replacement)]
}

// HandleWarningHeader implements rest.WarningHandler.
func (w *warningLogger) HandleWarningHeader(code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen[text] {
		return
	}
	w.seen[text] = true
	if strings.Contains(text, " deprecated") {
		// kubediff watches every type the server offers, deprecated
		// ones too: worth knowing, not a fault to act on, and nothing
		// to know when the replacement is watched as well.
		level := slog.LevelInfo
		if w.replacementWatched(text) {
			level = slog.LevelDebug
		}
		w.log.Log(context.Background(), level, "API server says a watched type is deprecated", "warning", text)
		return
	}
	w.log.Warn("API server warning", "warning", text)
}
