package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubediff/kubediff/pkg/config"
)

func newWatchCommand(out, stderr io.Writer) *cobra.Command {
	d := config.Default()
	cmd := &cobra.Command{
		Use:   "watch [TYPE[,TYPE...] | TYPE/NAME... | TYPE NAME...]",
		Short: "Watch every resource and print each change",
		Long: `Watch every resource type the API server offers (custom resources
included) and print one record per change on stdout: readable text on a
terminal, JSON lines into a pipe or a log (-o chooses either). Objects that
exist when kubediff starts are not reported; only what changes afterwards.

Arguments narrow what is watched as kubectl get's do: types by any name
kubectl accepts, or single objects (filtered by the API server).`,
		Example: `  kubediff watch -o text
  kubediff watch deployments,configmaps
  kubediff watch -n prod deploy/web cm/settings
  kubediff watch -n default -n prod --resources deployments,configmaps
  kubediff watch -o json | jq 'select(.kind == "Deployment")'`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			return watchWithDefaultState(cmd, cfg, out, stderr)
		},
	}
	addSelectionFlags(cmd)
	addCompletion(cmd, true)
	cmd.SetUsageFunc(watchUsage)
	f := cmd.Flags()
	f.StringP("output", "o", d.Output, "record format on stdout: json, text, none (only the configured sinks); default: text on a terminal, else json")
	f.String("color", d.Color, "colour in text output: auto (when stdout is a terminal and NO_COLOR is unset), always, never")
	f.Bool("fold", d.Fold, "in text output, fold a burst of records of objects one owner controls (a rollout's Pods) into one line")
	f.Bool("show-helm-storage", false, "report the Secrets and ConfigMaps in which Helm stores its releases, hidden by default (diff.defaults.helmStorage: false does the same)")
	f.String("events", d.Events, "Kubernetes Events printed as records of the object each is about, folded under its owner in text: none, warnings (once per object and reason while they repeat), all (docs/why.md)")
	markUnbound(cmd, "show-helm-storage") // diff.defaults.helmStorage, inverted (loadConfigWithArgs)
	f.StringSlice("ignore-path", nil, "JSON Pointer of a field whose changes are not reported (repeatable; * matches any key)")
	f.Bool("patch", d.Diff.Patch, "add an RFC 6902 JSON Patch to each update record")
	f.String("diff-style", d.Diff.Style, "how -o text shows an update: compact (one line per field) or unified (YAML diff)")
	f.Int("queue-size", d.QueueSize, fmt.Sprintf("without a state dir, records each sink may have waiting in memory before new ones are dropped, at most %d (stdout waits for its reader instead)", config.MaxQueueSize))
	f.String("queue-max-bytes", d.QueueMaxBytes, "with a state dir, how much each sink's queue may hold on disk (a byte count or a quantity such as 256Mi); stdout waits for room, other sinks drop new records")
	f.Duration("drain-timeout", d.DrainTimeout, "at shutdown, how long queued records may take to be delivered")
	f.Duration("read-batching", d.ReadBatching, "on a watch busy enough to bring 8 events in this long, let them wait up to this long to be read together (fewer wake-ups, less CPU); slower watches are read as events come; 0 always")
	f.Duration("rediscovery-interval", d.RediscoveryInterval, "how often to look for new or removed types, besides whenever a CRD or APIService changes")
	f.String("api-service-address", "", "serve the history as the aggregated API history.kubediff.io on this TLS address, for the API server to forward to (needs --state-dir; docs/history.md)")
	f.String("http-address", d.HTTPAddress, "address serving /healthz, /readyz and /metrics, loopback only by default (in a pod, :8080 lets probes and Prometheus reach it); empty turns it off")
	f.Bool("compress-cache", d.CompressCache, "keep cached objects compressed with a dictionary per type (about a third of the memory, about 2 µs an update); --compress-cache=false keeps plain JSON")
	f.String("state-dir", d.State.Dir, "keep the history, and what kubediff saw, in this directory: after a restart it reports what changed while it was down (default: $XDG_STATE_HOME/kubediff or ~/.local/state/kubediff, one per context, none in a Pod; '' keeps none)")
	f.String("cluster-name", "", "name of the cluster on every record (default: the kubeconfig context's name; none in a pod)")
	f.Bool("all-contexts", false, "watch every context of the kubeconfig, side by side (as --context given for each)")
	f.String("history-retention", d.History.Retention, "with a state dir, how long the history keeps records (such as 7d or 36h; 0 turns history off)")
	f.String("history-max-bytes", d.History.MaxBytes, "with a state dir, how much the history may hold on disk, oldest records dropped first (such as 1Gi; 0 turns history off)")
	f.String("history-events-retention", d.History.Events.Retention, "with a state dir, how long the history keeps an Event after it last happened (default: --history-retention)")
	f.String("history-store", "", "also keep the history in this PostgreSQL database (postgres://USER@HOST/DB; no password: --history-store-password-file or PGPASSWORD), shared by a fleet; records wait in --state-dir while it is down (docs/fleet.md)")
	f.String("history-store-password-file", "", "file holding --history-store's password (a mounted Secret)")
	f.Duration("identity-wait", d.Identity.Wait, "with a source of who made each change (--audit-webhook-address, --audit-log, --admission-observer-address), how long a record may wait for it before going on without a user (docs/identity.md)")
	f.StringSlice("helm-storage", d.Release.HelmStorage, "where Helm keeps its release records in this cluster: secrets (Helm's default), configmaps (HELM_DRIVER=configmap), or both; records are believed from these alone (docs/why.md#releases)")
	addAuditFlags(cmd)
	le := d.LeaderElection
	f.Bool("leader-elect", le.Enabled, "run several replicas with one emitting, elected through a Lease")
	f.String("leader-election-namespace", le.Namespace, "namespace of the Lease (default: the pod's namespace, else default)")
	f.String("leader-election-id", le.Name, "name of the Lease")
	f.Duration("leader-election-lease-duration", le.LeaseDuration, "how long a leader's lease lasts without renewal")
	f.Duration("leader-election-renew-deadline", le.RenewDeadline, "how long the leader keeps trying to renew before giving up")
	f.Duration("leader-election-retry-period", le.RetryPeriod, "how often candidates try to acquire or renew the Lease")
	addAdmissionObserverFlags(f)
	// Its default depends on the terminal, which its text says.
	f.Lookup("output").DefValue = ""
	return cmd
}

// addAuditFlags adds the flags of the audit trail's sources of who made
// each change (docs/identity.md).
func addAuditFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.String("audit-webhook-address", "", "serve the API server's audit webhook backend over TLS on this address, to name who made each change (docs/identity.md)")
	f.String("audit-webhook-cert-file", "", "serving certificate of --audit-webhook-address (PEM)")
	f.String("audit-webhook-key-file", "", "key of --audit-webhook-cert-file (PEM)")
	f.String("audit-webhook-client-ca-file", "", "accept audit posts only with a client certificate this CA signed (a CA of the API server's webhook client alone)")
	f.String("audit-webhook-token-file", "", "accept audit posts bearing the token this file holds")
	f.String("audit-log", "", "follow the audit log file the API server writes (--audit-log-path, JSON) to name who made each change (docs/identity.md)")
}

// addAdmissionObserverFlags adds the flags of the admission observer, a
// source of who made each change (docs/identity.md).
func addAdmissionObserverFlags(f *pflag.FlagSet) {
	f.String("admission-observer-address", "", "serve a validating admission webhook that always allows and notes who sent each write, on this TLS address (such as :9443), for clusters whose audit trail kubediff cannot read (EKS, GKE, AKS; docs/identity.md)")
	f.String("admission-observer-cert-file", "", "the admission observer's serving certificate (PEM), which the webhook registration's caBundle trusts; read again when it changes")
	f.String("admission-observer-key-file", "", "the admission observer's serving key (PEM)")
	f.String("admission-observer-client-ca-file", "", "believe only reviews from a caller with a client certificate this CA signed (the API server's, from its admission config); this or the token file is required")
	f.String("admission-observer-token-file", "", "believe only reviews bearing the token this file holds, as a bearer token or as the registration path's last segment (/observe/TOKEN, for managed clusters); this or the client CA file is required")
}
