// Package config holds kubediff's typed configuration, its defaults and its
// validation. It knows nothing about where values come from (file,
// environment, flags): internal/cli layers those with viper and hands the
// result here.
package config

import (
	"slices"
	"time"

	"github.com/kubediff/kubediff/pkg/rules"
)

// Output formats accepted by the output key.
const (
	OutputJSON = "json"
	OutputText = "text"
	OutputNone = "none" // only the configured sinks
)

// DefaultReadBatching batches a watch only past 200 events a second (8 a
// window), where it pays: at 100 updates a second events are read as they
// come, p99 under 10 ms (make bench, docs/benchmarks.md).
const DefaultReadBatching = 40 * time.Millisecond

// Config is everything kubediff can be told. Field tags are the keys users
// write in the config file; config.example.yaml documents each one.
type Config struct {
	// Kubeconfig is the path of a kubeconfig file; empty means the usual
	// rules (KUBECONFIG, ~/.kube/config, then in-cluster).
	Kubeconfig string `mapstructure:"kubeconfig"`
	// Context is the kubeconfig context to use; empty means the current one.
	Context string `mapstructure:"context"`
	// Contexts, two or more, are watched side by side in one process, each
	// cluster with its own pipeline, sinks and state (see docs/fleet.md).
	Contexts []string `mapstructure:"contexts"`
	// AllContexts watches every context of the kubeconfig, as Contexts.
	AllContexts bool `mapstructure:"allContexts"`
	// ClusterName names the cluster on every record; empty means the
	// kubeconfig context's name (none in a pod).
	ClusterName string `mapstructure:"clusterName"`
	// Namespaces limits watching to these namespaces; empty means all.
	Namespaces []string `mapstructure:"namespaces"`
	// ExcludeNamespaces are never watched (exact names or globs).
	ExcludeNamespaces []string `mapstructure:"excludeNamespaces"`
	// LabelSelector and FieldSelector filter every type on the server.
	LabelSelector string `mapstructure:"labelSelector"`
	FieldSelector string `mapstructure:"fieldSelector"`
	// Selectors filter some types on the server.
	Selectors []TypeSelector `mapstructure:"selectors"`
	// RediscoveryInterval is how often the set of types is rediscovered,
	// besides whenever a CRD or APIService changes.
	RediscoveryInterval time.Duration `mapstructure:"rediscoveryInterval"`
	// Resources limits watching to these types (names as kubectl accepts
	// them); empty means every type.
	Resources []string `mapstructure:"resources"`
	// Objects are single objects to watch, as kubectl names them
	// (deployment/web, cm/settings): only these objects of their types
	// (unless resources names the type too), filtered by the server.
	Objects []string `mapstructure:"objects"`
	// ExcludeResources removes these types from what is watched.
	ExcludeResources []string `mapstructure:"excludeResources"`
	// Output is the encoding of change records on stdout: json or text.
	Output string `mapstructure:"output"`
	// Color controls colour in text output: auto, always or never.
	Color string `mapstructure:"color"`
	// Fold, in text output, folds a burst of records of objects one owner
	// controls (a rollout's Pods and ReplicaSets) into one line.
	Fold bool `mapstructure:"fold"`
	// Events says which Kubernetes Events the record stream carries, as
	// records of type event about the object each regards (docs/why.md):
	// none, warnings, or all. The history keeps every Event whatever it
	// says.
	Events string `mapstructure:"events"`
	// Diff configures what counts as a change.
	Diff DiffConfig `mapstructure:"diff"`
	// Log configures operational logging on stderr.
	Log LogConfig `mapstructure:"log"`
	// QueueSize is how many records each sink may have waiting before new
	// ones are dropped (with a log line and a counter).
	QueueSize int `mapstructure:"queueSize"`
	// QueueMaxBytes bounds each sink's queue on disk, with a state dir
	// (a byte count, or a quantity such as 256Mi); queueSize then does
	// not apply. When it is reached, new records are dropped, except
	// stdout's, which wait for room.
	QueueMaxBytes string `mapstructure:"queueMaxBytes"`
	// DrainTimeout bounds how long records still queued at shutdown may
	// take to be delivered.
	DrainTimeout time.Duration `mapstructure:"drainTimeout"`
	// Sinks are where records go besides stdout.
	Sinks []SinkEntry `mapstructure:"sinks"`
	// HTTPAddress serves /healthz, /readyz and /metrics; empty turns it off.
	// The default is loopback only: kubediff in a terminal opens no socket
	// on the network; in a pod, the manifests set ":8080" for the kubelet's
	// probes and Prometheus.
	HTTPAddress string `mapstructure:"httpAddress"`
	// CompressCache packs each type's cached objects (S2) against a
	// dictionary of the type's first objects: a third of the memory for
	// about 2 µs an update. Off, objects are cached as plain JSON.
	CompressCache bool `mapstructure:"compressCache"`
	// ReadBatching lets the events of a watch busy enough to bring 8 in
	// this long wait up to this long to be read together: one wake-up for
	// several (17% less CPU at 300 updates a second), each record at most
	// this much later. Slower watches and lone events are read at once.
	// 0 reads every event as it comes.
	ReadBatching time.Duration `mapstructure:"readBatching"`
	// State keeps what kubediff last saw on disk, so that a restart
	// reports the changes made while it was down.
	State StateConfig `mapstructure:"state"`
	// APIService serves the history as the aggregated API
	// history.kubediff.io, reached through the cluster's API server.
	APIService APIServiceConfig `mapstructure:"apiService"`
	// History keeps every record, with the objects' states, in the state
	// dir, for `kubediff history`, `get --at` and `diff`.
	History HistoryConfig `mapstructure:"history"`
	// LeaderElection lets several replicas run with one emitting.
	LeaderElection LeaderElectionConfig `mapstructure:"leaderElection"`
	// Audit and AdmissionObserver are sources of who made each change,
	// Identity how records wait for them (docs/identity.md).
	Audit             AuditConfig             `mapstructure:"audit"`
	AdmissionObserver AdmissionObserverConfig `mapstructure:"admissionObserver"`
	Identity          IdentityConfig          `mapstructure:"identity"`
	// Release says where releases' states are read from.
	Release ReleaseConfig `mapstructure:"release"`
	// Rules name the records that matter, in CEL (docs/rules.md); RulePack
	// enables built-in rules by name (none by default).
	Rules    []rules.Spec      `mapstructure:"rules"`
	RulePack []rules.PackEntry `mapstructure:"rulePack"`
}

// StateConfig configures the state store.
type StateConfig struct {
	// Dir is the state directory; empty keeps state in memory only.
	Dir string `mapstructure:"dir"`
	// Default says Dir is the default state dir for people, set by the
	// command line when no flag, environment variable or config key
	// named one: a watch that finds it in use carries on without it, and
	// the messages about it say it was not asked for.
	Default bool `mapstructure:"-"`
}

// HistoryConfig bounds the history kept in the state dir.
type HistoryConfig struct {
	// Retention is how long records are kept: a duration such as 36h or
	// a number of days such as 7d; 0 turns history off.
	Retention string `mapstructure:"retention"`
	// MaxBytes bounds the history's size (a byte count, or a quantity
	// such as 1Gi): the oldest records go first; 0 turns history off.
	MaxBytes string `mapstructure:"maxBytes"`
	// Events bounds the Events kept beside the objects' changes.
	Events HistoryEventsConfig `mapstructure:"events"`
	// Store, when set, is a PostgreSQL database (a DSN without a
	// password) that keeps a copy of the history for a fleet
	// (docs/fleet.md); StorePasswordFile holds its password, else
	// libpq's environment (PGPASSWORD, PGPASSFILE) gives it.
	Store             string `mapstructure:"store"`
	StorePasswordFile string `mapstructure:"storePasswordFile"`
}

// HistoryEventsConfig bounds the Events the history keeps.
type HistoryEventsConfig struct {
	// Retention is how long an Event is kept after it last happened
	// (empty: history.retention; at most that).
	Retention string `mapstructure:"retention"`
}

// LeaderElectionConfig configures leader election.
type LeaderElectionConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// Namespace of the Lease; empty means the pod's namespace, else default.
	Namespace     string        `mapstructure:"namespace"`
	Name          string        `mapstructure:"name"`
	LeaseDuration time.Duration `mapstructure:"leaseDuration"`
	RenewDeadline time.Duration `mapstructure:"renewDeadline"`
	RetryPeriod   time.Duration `mapstructure:"retryPeriod"`
	// HoldRecords is how many recent records a follower keeps for a
	// takeover.
	HoldRecords int `mapstructure:"holdRecords"`
}

// TypeSelector filters the named types on the server.
type TypeSelector struct {
	Resources     []string `mapstructure:"resources"`
	LabelSelector string   `mapstructure:"labelSelector"`
	FieldSelector string   `mapstructure:"fieldSelector"`
}

// SinkEntry is one entry of the sinks list, one destination: the keys
// every sink has, and the rest, which belong to its type (pkg/notify/sinks
// lists the types, and each type's package its keys; Decode returns that
// part as the type's notify.SinkConfig).
type SinkEntry struct {
	Name  string      `mapstructure:"name"`
	Type  string      `mapstructure:"type"`
	Match MatchConfig `mapstructure:"match"`
	// QueueSize overrides the global queueSize for this sink.
	QueueSize int `mapstructure:"queueSize"`
	// QueueMaxBytes overrides the global queueMaxBytes for this sink.
	QueueMaxBytes string `mapstructure:"queueMaxBytes"`
	// Options are the type's own keys (url, token, ...), as written.
	Options map[string]any `mapstructure:",remain"`
}

// MatchConfig selects the records a sink receives; empty matches all.
type MatchConfig struct {
	Resources  []string `mapstructure:"resources"`
	Namespaces []string `mapstructure:"namespaces"`
	Types      []string `mapstructure:"types"`
	// Labels is a label selector: "team=a,tier in (web,api)".
	Labels string `mapstructure:"labels"`
	// Clusters are globs of cluster names (records' cluster.name).
	Clusters []string `mapstructure:"clusters"`
	// Rules are names or globs of rules (rules, rulePack): a record
	// matching any of them is sent.
	Rules []string `mapstructure:"rules"`
	// Severity is the least severity sent (info, warning, critical): a
	// record no rule matched has none and is not sent.
	Severity string `mapstructure:"severity"`
}

// DiffConfig configures the diff stage.
type DiffConfig struct {
	// IgnorePaths are JSON Pointers (RFC 6901) of fields whose changes are not
	// reported, on top of the built-in defaults. A segment "*" matches any
	// key or list index.
	IgnorePaths []string `mapstructure:"ignorePaths"`
	// Ignore are paths ignored for some resource types only.
	Ignore []IgnoreRule `mapstructure:"ignore"`
	// Defaults switches the built-in quiet rules on and off.
	Defaults DefaultRules `mapstructure:"defaults"`
	// DefaultsOff turns some built-in rules off for some types only.
	DefaultsOff []DefaultsOffRule `mapstructure:"defaultsOff"`
	// Redact hides values on top of Secrets, which are always hidden.
	Redact RedactConfig `mapstructure:"redact"`
	// Patch adds an RFC 6902 patch to each update record.
	Patch bool `mapstructure:"patch"`
	// Style is how text output shows an update: compact or unified.
	Style string `mapstructure:"style"`
}

// IgnoreRule ignores paths on some resource types.
type IgnoreRule struct {
	Resources []string `mapstructure:"resources"`
	Paths     []string `mapstructure:"paths"`
}

// DefaultRules are the built-in rules that keep an idle cluster quiet.
type DefaultRules struct {
	Bookkeeping        bool `mapstructure:"bookkeeping"`
	LeaseRenewals      bool `mapstructure:"leaseRenewals"`
	DeploymentRevision bool `mapstructure:"deploymentRevision"`
	StatusTimestamps   bool `mapstructure:"statusTimestamps"`
	PodLifecycle       bool `mapstructure:"podLifecycle"`
	WorkloadStatus     bool `mapstructure:"workloadStatus"`
	ConditionDetails   bool `mapstructure:"conditionDetails"`
	Endpoints          bool `mapstructure:"endpoints"`
	CRDLifecycle       bool `mapstructure:"crdLifecycle"`
	// HelmStorage hides Helm's own records of its releases (release
	// Secrets and ConfigMaps); --show-helm-storage shows them.
	HelmStorage bool `mapstructure:"helmStorage"`
	// Events leaves Event objects unwatched unless resources names them.
	Events bool `mapstructure:"events"`
}

// DefaultsOffRule turns the named built-in rules (the keys of
// diff.defaults) off for the named types.
type DefaultsOffRule struct {
	Rules     []string `mapstructure:"rules"`
	Resources []string `mapstructure:"resources"`
}

// Enabled returns the names of the built-in rules that are on.
func (d DefaultRules) Enabled() []string {
	var on []string
	for _, r := range d.switches() {
		if r.on {
			on = append(on, r.name)
		}
	}
	return on
}

// ruleNames are the keys of the built-in diff rules (not events, which
// is about what is watched).
func ruleNames() []string {
	var names []string
	for _, r := range (DefaultRules{}).switches() {
		names = append(names, r.name)
	}
	return names
}

type ruleSwitch struct {
	name string
	on   bool
}

func (d DefaultRules) switches() []ruleSwitch {
	return []ruleSwitch{
		{"bookkeeping", d.Bookkeeping}, {"statusTimestamps", d.StatusTimestamps}, {"leaseRenewals", d.LeaseRenewals},
		{"deploymentRevision", d.DeploymentRevision}, {"podLifecycle", d.PodLifecycle}, {"workloadStatus", d.WorkloadStatus},
		{"conditionDetails", d.ConditionDetails}, {"crdLifecycle", d.CRDLifecycle}, {"endpoints", d.Endpoints},
		{"helmStorage", d.HelmStorage},
	}
}

// RedactConfig hides values.
type RedactConfig struct {
	// Paths are JSON Pointers redacted in every type.
	Paths []string `mapstructure:"paths"`
	// Keys are glob patterns of ConfigMap keys and env var names.
	Keys []string `mapstructure:"keys"`
	// SafeSecretAnnotations are glob patterns of annotation keys whose
	// values a Secret shows, beyond the built-in known-safe ones.
	SafeSecretAnnotations []string `mapstructure:"safeSecretAnnotations"`
}

// Text output styles.
const (
	StyleCompact = "compact"
	StyleUnified = "unified"
)

// DefaultRedactKeys are the key-name patterns whose values are hidden in
// ConfigMaps and env vars unless configured otherwise.
var DefaultRedactKeys = []string{"*password*", "*passwd*", "*secret*", "*token*", "*apikey*", "*api_key*", "*api-key*", "*credential*", "*private*key*"}

// LogConfig configures operational logs.
type LogConfig struct {
	// Level is debug, info, warn or error.
	Level string `mapstructure:"level"`
	// Format is text or json.
	Format string `mapstructure:"format"`
}

// Default returns the configuration used when nothing is set.
func Default() Config {
	return Config{
		Output: OutputJSON,
		Color:  "auto",
		Fold:   true,
		Events: EventsWarnings,
		Diff: DiffConfig{
			Defaults: DefaultRules{Bookkeeping: true, LeaseRenewals: true, DeploymentRevision: true, StatusTimestamps: true,
				PodLifecycle: true, WorkloadStatus: true, ConditionDetails: true, CRDLifecycle: true, Endpoints: true, HelmStorage: true, Events: true},
			Redact: RedactConfig{Keys: slices.Clone(DefaultRedactKeys)},
			Style:  StyleCompact,
		},
		Log:                 LogConfig{Level: "info", Format: "text"},
		CompressCache:       true,
		QueueSize:           10000,
		QueueMaxBytes:       "256Mi",
		History:             HistoryConfig{Retention: "7d", MaxBytes: "1Gi"},
		Identity:            IdentityConfig{Wait: DefaultIdentityWait},
		Release:             ReleaseConfig{HelmStorage: []string{HelmSecrets}},
		DrainTimeout:        10 * time.Second,
		ReadBatching:        DefaultReadBatching,
		RediscoveryInterval: 3 * time.Minute,
		HTTPAddress:         "127.0.0.1:8080",
		LeaderElection: LeaderElectionConfig{
			Name: "kubediff", LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second,
			RetryPeriod: 2 * time.Second, HoldRecords: 50000,
		},
	}
}

// APIServiceConfig configures the history's aggregated API
// (pkg/history/apiservice, docs/history.md).
type APIServiceConfig struct {
	// Address is where the API server's front proxy reaches kubediff, over
	// TLS (host:port); empty: not served. Needs a state dir.
	Address string `mapstructure:"address"`
}
