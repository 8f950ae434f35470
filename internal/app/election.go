package app

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"strings"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/leader"
	"github.com/kubediff/kubediff/pkg/metrics"
)

// serviceAccountNamespace is where a pod finds its own namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// newElector prepares the election that opens and closes gate, or
// returns nil without leader election: the gate then leads from the start.
func newElector(le config.LeaderElectionConfig, c *Clients, gate leader.Gate, m *metrics.Metrics, log *slog.Logger) (*leader.Elector, error) {
	if !le.Enabled {
		m.Leader.Set(1)
		return nil, nil
	}
	elector, err := leader.New(gate, electionOptions(le, c, log, func(leading bool) {
		if leading {
			m.Leader.Set(1)
		} else {
			m.Leader.Set(0)
		}
	}))
	if err != nil {
		return nil, ConfigError{err}
	}
	return elector, nil
}

// electionNamespace is where the election's Leases live: the configured
// namespace, else the pod's, else default.
func electionNamespace(le config.LeaderElectionConfig) string {
	ns := le.Namespace
	if ns == "" {
		ns = os.Getenv("POD_NAMESPACE")
	}
	if ns == "" {
		if data, err := os.ReadFile(serviceAccountNamespace); err == nil {
			ns = strings.TrimSpace(string(data))
		}
	}
	if ns == "" {
		ns = "default"
	}
	return ns
}

// ownLeases are the election's Leases ("namespace/name"), which kubediff
// never reports: they are its own bookkeeping, not the cluster's news.
func ownLeases(le config.LeaderElectionConfig) []string {
	if !le.Enabled {
		return nil
	}
	ns := electionNamespace(le)
	return []string{ns + "/" + le.Name, ns + "/" + leader.ProgressLeaseName(le.Name)}
}

func electionOptions(le config.LeaderElectionConfig, c *Clients, log *slog.Logger, onLeader func(bool)) leader.Options {
	ns := electionNamespace(le)
	host, _ := os.Hostname()
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	return leader.Options{
		Client:        c.Kube.CoordinationV1(),
		Namespace:     ns,
		Name:          le.Name,
		Identity:      host + "_" + hex.EncodeToString(suffix),
		LeaseDuration: le.LeaseDuration,
		RenewDeadline: le.RenewDeadline,
		RetryPeriod:   le.RetryPeriod,
		OnLeader:      onLeader,
		Log:           log,
	}
}
