package app

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubediff/kubediff/pkg/config"
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
		// ones too (their replacements as well): worth knowing, not a
		// fault to act on.
		w.log.Info("API server says a watched type is deprecated", "warning", text)
		return
	}
	w.log.Warn("API server warning", "warning", text)
}
