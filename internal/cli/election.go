package cli

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"strings"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/leader"
)

// serviceAccountNamespace is where a pod finds its own namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

func electionOptions(le config.LeaderElectionConfig, c *clients, log *slog.Logger, onLeader func(bool)) leader.Options {
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
	host, _ := os.Hostname()
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	return leader.Options{
		Client:        c.kube.CoordinationV1(),
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
