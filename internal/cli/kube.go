package cli

import (
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubediff/kubediff/pkg/config"
)

// restConfig resolves the cluster connection the way kubectl does: the
// --kubeconfig file, else KUBECONFIG, else ~/.kube/config, and the
// in-cluster service account when none of those exists.
func restConfig(cfg config.Config) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = cfg.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: cfg.Context}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) || errors.Is(err, clientcmd.ErrEmptyConfig) {
			return nil, usageError{errors.New("no cluster to talk to: pass --kubeconfig, set KUBECONFIG, create ~/.kube/config, or run inside a pod")}
		}
		return nil, usageError{fmt.Errorf("kubeconfig: %w", err)}
	}
	rc.UserAgent = "kubediff/" + version
	// One LIST per watched type at start: the client-go default of 5 QPS
	// would make the initial sync of ~60 types take over ten seconds.
	rc.QPS, rc.Burst = 50, 100
	return rc, nil
}
