// Package config holds kubediff's typed configuration, its defaults and its
// validation. It knows nothing about where values come from (file,
// environment, flags): internal/cli layers those with viper and hands the
// result here.
package config

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubediff/kubediff/pkg/glob"
	"github.com/kubediff/kubediff/pkg/notify"
	"github.com/kubediff/kubediff/pkg/notify/sinks"
)

// Output formats accepted by the output key.
const (
	OutputJSON = "json"
	OutputText = "text"
	OutputNone = "none" // only the configured sinks
)

// Config is everything kubediff can be told. Field tags are the keys users
// write in the config file; config.example.yaml documents each one.
type Config struct {
	// Kubeconfig is the path of a kubeconfig file; empty means the usual
	// rules (KUBECONFIG, ~/.kube/config, then in-cluster).
	Kubeconfig string `mapstructure:"kubeconfig"`
	// Context is the kubeconfig context to use; empty means the current one.
	Context string `mapstructure:"context"`
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
	// State keeps what kubediff last saw on disk, so that a restart
	// reports the changes made while it was down.
	State StateConfig `mapstructure:"state"`
	// LeaderElection lets several replicas run with one emitting.
	LeaderElection LeaderElectionConfig `mapstructure:"leaderElection"`
}

// StateConfig configures the state store.
type StateConfig struct {
	// Dir is the state directory; empty keeps state in memory only.
	Dir string `mapstructure:"dir"`
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
		{"conditionDetails", d.ConditionDetails}, {"endpoints", d.Endpoints},
	}
}

// RedactConfig hides values.
type RedactConfig struct {
	// Paths are JSON Pointers redacted in every type.
	Paths []string `mapstructure:"paths"`
	// Keys are glob patterns of ConfigMap keys and env var names.
	Keys []string `mapstructure:"keys"`
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
		Diff: DiffConfig{
			Defaults: DefaultRules{Bookkeeping: true, LeaseRenewals: true, DeploymentRevision: true, StatusTimestamps: true,
				PodLifecycle: true, WorkloadStatus: true, ConditionDetails: true, Endpoints: true, Events: true},
			Redact: RedactConfig{Keys: slices.Clone(DefaultRedactKeys)},
			Style:  StyleCompact,
		},
		Log:                 LogConfig{Level: "info", Format: "text"},
		CompressCache:       true,
		QueueSize:           10000,
		QueueMaxBytes:       "256Mi",
		DrainTimeout:        10 * time.Second,
		RediscoveryInterval: 3 * time.Minute,
		HTTPAddress:         "127.0.0.1:8080",
		LeaderElection: LeaderElectionConfig{
			Name: "kubediff", LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second,
			RetryPeriod: 2 * time.Second, HoldRecords: 50000,
		},
	}
}

// Validate checks values that decode fine but make no sense. Each error
// names the key so the user knows what to fix.
func (c Config) Validate() error {
	var errs []error
	if !oneOf(c.Output, OutputJSON, OutputText, OutputNone) {
		errs = append(errs, fmt.Errorf("output: %q is not one of json, text, none", c.Output))
	}
	if !oneOf(c.Color, "auto", "always", "never") {
		errs = append(errs, fmt.Errorf("color: %q is not one of auto, always, never", c.Color))
	}
	if !oneOf(c.Log.Level, "debug", "info", "warn", "error") {
		errs = append(errs, fmt.Errorf("log.level: %q is not one of debug, info, warn, error", c.Log.Level))
	}
	if !oneOf(c.Log.Format, "text", "json") {
		errs = append(errs, fmt.Errorf("log.format: %q is not one of text, json", c.Log.Format))
	}
	if err := checkQueueSize(c.QueueSize); err != nil {
		errs = append(errs, fmt.Errorf("queueSize (--queue-size): %w", err))
	}
	if _, err := ParseBytes(c.QueueMaxBytes); err != nil {
		errs = append(errs, fmt.Errorf("queueMaxBytes: %w", err))
	}
	for _, o := range c.Objects {
		if _, _, err := ParseObject(o); err != nil {
			errs = append(errs, fmt.Errorf("objects: %w", err))
		}
	}
	for _, ns := range c.Namespaces {
		if strings.TrimSpace(ns) == "" {
			errs = append(errs, errors.New("namespaces: an entry is empty"))
		}
	}
	errs = append(errs, checkPointers("diff.ignorePaths", c.Diff.IgnorePaths)...)
	errs = append(errs, checkPointers("diff.redact.paths", c.Diff.Redact.Paths)...)
	for i, r := range c.Diff.Ignore {
		key := fmt.Sprintf("diff.ignore[%d]", i)
		if len(r.Resources) == 0 {
			errs = append(errs, fmt.Errorf("%s.resources: empty (use diff.ignorePaths for every type)", key))
		}
		if len(r.Paths) == 0 {
			errs = append(errs, fmt.Errorf("%s.paths: empty", key))
		}
		errs = append(errs, checkPointers(key+".paths", r.Paths)...)
	}
	all := ruleNames()
	for i, r := range c.Diff.DefaultsOff {
		if len(r.Rules) == 0 || len(r.Resources) == 0 {
			errs = append(errs, fmt.Errorf("diff.defaultsOff[%d]: name both rules and resources", i))
		}
		for _, name := range r.Rules {
			if !slices.Contains(all, name) {
				errs = append(errs, fmt.Errorf("diff.defaultsOff[%d].rules: %q is not one of %s", i, name, strings.Join(all, ", ")))
			}
		}
	}
	if c.RediscoveryInterval < time.Second {
		errs = append(errs, fmt.Errorf("rediscoveryInterval: %s is shorter than 1s", c.RediscoveryInterval))
	}
	errs = append(errs, checkSelectors("", c.LabelSelector, c.FieldSelector)...)
	for i, ts := range c.Selectors {
		key := fmt.Sprintf("selectors[%d].", i)
		if len(ts.Resources) == 0 {
			errs = append(errs, fmt.Errorf("%sresources: empty (use labelSelector/fieldSelector for every type)", key))
		}
		errs = append(errs, checkSelectors(key, ts.LabelSelector, ts.FieldSelector)...)
	}
	if le := c.LeaderElection; le.Enabled {
		if le.Name == "" {
			errs = append(errs, errors.New("leaderElection.name: empty"))
		}
		// client-go's own rule: renewDeadline > 1.2 × retryPeriod.
		if le.RetryPeriod <= 0 || float64(le.RenewDeadline) <= 1.2*float64(le.RetryPeriod) || le.LeaseDuration <= le.RenewDeadline {
			errs = append(errs, errors.New("leaderElection: want 0 < 1.2 × retryPeriod < renewDeadline < leaseDuration"))
		}
		if le.HoldRecords < 1 {
			errs = append(errs, errors.New("leaderElection.holdRecords: must be at least 1"))
		}
	}
	if err := checkHTTPAddress(c.HTTPAddress); err != nil {
		errs = append(errs, fmt.Errorf("httpAddress (--http-address): %w", err))
	}
	if c.DrainTimeout < 0 {
		errs = append(errs, fmt.Errorf("drainTimeout: %s is negative", c.DrainTimeout))
	}
	names := map[string]bool{}
	for i, s := range c.Sinks {
		key := fmt.Sprintf("sinks[%d]", i)
		if s.Name != "" {
			key = fmt.Sprintf("sinks[%s]", s.Name)
		}
		errs = append(errs, s.validate(key, names)...)
	}
	if !oneOf(c.Diff.Style, StyleCompact, StyleUnified) {
		errs = append(errs, fmt.Errorf("diff.style: %q is not one of compact, unified", c.Diff.Style))
	}
	return errors.Join(errs...)
}

func checkPointers(key string, pointers []string) []error {
	var errs []error
	for _, p := range pointers {
		if !strings.HasPrefix(p, "/") || p == "/" {
			errs = append(errs, fmt.Errorf("%s: %q is not a JSON Pointer to a field (it must start with / and name one)", key, p))
		}
	}
	return errs
}

func oneOf(s string, allowed ...string) bool { return slices.Contains(allowed, s) }

// ParseObject reads an object named as kubectl names it: TYPE/NAME.
func ParseObject(o string) (typ, name string, err error) {
	typ, name, ok := strings.Cut(o, "/")
	switch {
	case !ok || typ == "" || name == "":
		return "", "", fmt.Errorf("%q is not TYPE/NAME (such as deployment/web)", o)
	case strings.ContainsAny(name, ",=!/ \t"):
		return "", "", fmt.Errorf("%q: %q is not an object name", o, name)
	}
	return typ, name, nil
}

// ParseBytes reads a size: a byte count, or a quantity such as 256Mi or
// 1G, as Kubernetes writes memory. It must be at least 1Ki.
func ParseBytes(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size (a byte count, or a quantity such as 256Mi)", s)
	}
	n, ok := q.AsInt64()
	if !ok || n < 1024 {
		return 0, fmt.Errorf("%q must be a whole number of bytes, at least 1Ki", s)
	}
	return n, nil
}

// MaxQueueSize is the most records queueSize lets a sink hold in memory.
// Each sink's queue sets aside room for all of them when it starts (296
// bytes a record: 30 MB at this bound), and the records themselves take
// about 1.5 KB each once queued: 150 MB for a sink that is down for half an
// hour of 50 records a second. A longer outage is what a state dir is
// for: its queues are on disk, bounded by queueMaxBytes.
const MaxQueueSize = 100_000

// checkQueueSize bounds a queueSize: a huge one made kubediff fail at
// start, out of memory or with a panic, instead of saying what is wrong.
func checkQueueSize(n int) error {
	switch {
	case n < 1:
		return fmt.Errorf("%d must be at least 1", n)
	case n > MaxQueueSize:
		return fmt.Errorf("%d is over the maximum of %d records in memory per sink; for longer sink outages set a state dir (--state-dir), whose queues are on disk and bounded by queueMaxBytes", n, MaxQueueSize)
	}
	return nil
}

// checkHTTPAddress accepts host:port with a port number (0 picks one), or
// empty (no server).
func checkHTTPAddress(addr string) error {
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		return fmt.Errorf("%q is not host:port (such as 127.0.0.1:8080, or :8080 for every interface); empty turns the server off", addr)
	}
	return nil
}

// MaxBytes is the sink's queueMaxBytes, or global's when it sets none.
func (s SinkEntry) MaxBytes(global string) int64 {
	v := s.QueueMaxBytes
	if v == "" {
		v = global
	}
	n, _ := ParseBytes(v) // validated
	return n
}

func (s SinkEntry) validate(key string, seen map[string]bool) []error {
	var errs []error
	switch {
	case s.Name == "":
		errs = append(errs, fmt.Errorf("%s.name: empty", key))
	case s.Name == "stdout" || seen[s.Name]:
		errs = append(errs, fmt.Errorf("%s.name: %q is used twice (stdout is taken)", key, s.Name))
	}
	seen[s.Name] = true
	if s.QueueSize != 0 { // 0: the global queueSize
		if err := checkQueueSize(s.QueueSize); err != nil {
			errs = append(errs, fmt.Errorf("%s.queueSize: %w", key, err))
		}
	}
	if s.QueueMaxBytes != "" {
		if _, err := ParseBytes(s.QueueMaxBytes); err != nil {
			errs = append(errs, fmt.Errorf("%s.queueMaxBytes: %w", key, err))
		}
	}
	for _, t := range s.Match.Types {
		if !oneOf(t, "added", "updated", "deleted") {
			errs = append(errs, fmt.Errorf("%s.match.types: %q is not one of added, updated, deleted", key, t))
		}
	}
	if err := glob.Valid(s.Match.Namespaces); err != nil {
		errs = append(errs, fmt.Errorf("%s.match.namespaces: %w", key, err))
	}
	if _, err := labels.Parse(s.Match.Labels); err != nil {
		errs = append(errs, fmt.Errorf("%s.match.labels: %w", key, err))
	}
	sc, err := s.Decode()
	if err == nil {
		err = sc.Validate()
	}
	if err != nil {
		errs = append(errs, prefixErrors(key, err)...)
	}
	return errs
}

// Decode returns the sink type's own config, decoded strictly from the
// entry's other keys over the type's defaults.
func (s SinkEntry) Decode() (notify.SinkConfig, error) {
	t, ok := sinks.Lookup(s.Type)
	if !ok {
		return nil, fmt.Errorf("type: %q is not one of %s", s.Type, strings.Join(sinks.Names(), ", "))
	}
	sc := t.NewConfig()
	var meta mapstructure.Metadata
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		DecodeHook: mapstructure.StringToTimeDurationHookFunc(),
		Metadata:   &meta,
		Result:     sc,
	})
	if err != nil {
		return nil, err
	}
	if err := dec.Decode(s.Options); err != nil {
		var de *mapstructure.DecodeError
		if errors.As(err, &de) {
			return nil, fmt.Errorf("%s: %w", de.Name(), de.Unwrap()) // "timeout: time: invalid duration"
		}
		return nil, err
	}
	if len(meta.Unused) > 0 {
		slices.Sort(meta.Unused)
		return nil, fmt.Errorf("unknown keys for a %s sink: %s", s.Type, strings.Join(meta.Unused, ", "))
	}
	return sc, nil
}

// prefixErrors puts key in front of each joined error: "sinks[a].url: empty".
func prefixErrors(key string, err error) []error {
	var out []error
	for _, line := range strings.Split(err.Error(), "\n") {
		sep := "."
		if !strings.Contains(line, ": ") || strings.Index(line, " ") < strings.Index(line, ":") {
			sep = ": " // a sentence, not a key
		}
		out = append(out, errors.New(key+sep+line))
	}
	return out
}

func checkSelectors(prefix, label, field string) []error {
	var errs []error
	if _, err := labels.Parse(label); err != nil {
		errs = append(errs, fmt.Errorf("%slabelSelector: %w", prefix, err))
	}
	if _, err := fields.ParseSelector(field); err != nil {
		errs = append(errs, fmt.Errorf("%sfieldSelector: %w", prefix, err))
	}
	return errs
}
