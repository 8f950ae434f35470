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
	"github.com/kubediff/kubediff/pkg/record"
	"github.com/kubediff/kubediff/pkg/rules"
)

// Validate checks values that decode fine but make no sense. Each error
// names the key so the user knows what to fix.
func (c Config) Validate() error {
	var errs []error
	errs = append(errs, c.checkOutput()...)
	errs = append(errs, c.checkSelection()...)
	errs = append(errs, c.Diff.check()...)
	errs = append(errs, c.LeaderElection.check()...)
	errs = append(errs, c.checkDelivery()...)
	errs = append(errs, c.checkIdentity()...)
	errs = append(errs, c.Release.check()...)
	errs = append(errs, c.checkRules()...)
	return errors.Join(errs...)
}

// checkRules compiles the rules, as the run will, and checks that each
// sink's match.rules names some of them.
func (c Config) checkRules() []error {
	set, err := rules.Compile(c.Rules, c.RulePack)
	if err != nil {
		return []error{err}
	}
	names := set.Names()
	var errs []error
	for i, s := range c.Sinks {
		key := fmt.Sprintf("sinks[%d]", i)
		if s.Name != "" {
			key = fmt.Sprintf("sinks[%s]", s.Name)
		}
		if err := glob.Valid(s.Match.Rules); err != nil {
			errs = append(errs, fmt.Errorf("%s.match.rules: %w", key, err))
			continue
		}
		for _, pattern := range s.Match.Rules {
			if !rules.MatchesAny(pattern, names) {
				errs = append(errs, fmt.Errorf("%s.match.rules: %q names no rule (rules and rulePack have %s)", key, pattern, orNone(names)))
			}
		}
		if record.SeverityRank(s.Match.Severity) < 0 {
			errs = append(errs, fmt.Errorf("%s.match.severity: %q is not one of %s", key, s.Match.Severity, strings.Join(record.Severities, ", ")))
		}
	}
	return errs
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// checkOutput checks stdout's format and the logs'.
func (c Config) checkOutput() []error {
	var errs []error
	errs = append(errs, notOneOf("output", c.Output, Outputs)...)
	errs = append(errs, notOneOf("color", c.Color, Colors)...)
	errs = append(errs, notOneOf("log.level", c.Log.Level, LogLevels)...)
	errs = append(errs, notOneOf("log.format", c.Log.Format, LogFormats)...)
	if err := checkHTTPAddress(c.HTTPAddress); err != nil {
		errs = append(errs, fmt.Errorf("httpAddress (--http-address): %w", err))
	}
	if err := checkHTTPAddress(c.APIService.Address); err != nil {
		errs = append(errs, fmt.Errorf("apiService.address (--api-service-address): %w", err))
	}
	if c.APIService.Address != "" && c.State.Dir == "" {
		errs = append(errs, errors.New("apiService.address (--api-service-address) serves the history, which needs a state dir (--state-dir)"))
	}
	return errs
}

// checkSelection checks what is watched: objects, namespaces, selectors
// and how often types are looked for.
func (c Config) checkSelection() []error {
	errs := c.checkContexts()
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
	return errs
}

// check checks the diff's rules.
func (d DiffConfig) check() []error {
	var errs []error
	errs = append(errs, checkPointers("diff.ignorePaths", d.IgnorePaths)...)
	errs = append(errs, checkPointers("diff.redact.paths", d.Redact.Paths)...)
	errs = append(errs, checkSafeAnnotations("diff.redact.safeSecretAnnotations", d.Redact.SafeSecretAnnotations)...)
	for i, r := range d.Ignore {
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
	for i, r := range d.DefaultsOff {
		if len(r.Rules) == 0 || len(r.Resources) == 0 {
			errs = append(errs, fmt.Errorf("diff.defaultsOff[%d]: name both rules and resources", i))
		}
		for _, name := range r.Rules {
			if !slices.Contains(all, name) {
				errs = append(errs, fmt.Errorf("diff.defaultsOff[%d].rules: %q is not one of %s", i, name, strings.Join(all, ", ")))
			}
		}
	}
	errs = append(errs, notOneOf("diff.style", d.Style, DiffStyles)...)
	return errs
}

// check checks the election's timings, with client-go's own rule.
func (le LeaderElectionConfig) check() []error {
	if !le.Enabled {
		return nil
	}
	var errs []error
	if le.Name == "" {
		errs = append(errs, errors.New("leaderElection.name: empty"))
	}
	if le.RetryPeriod <= 0 || float64(le.RenewDeadline) <= 1.2*float64(le.RetryPeriod) || le.LeaseDuration <= le.RenewDeadline {
		errs = append(errs, errors.New("leaderElection: want 0 < 1.2 × retryPeriod < renewDeadline < leaseDuration"))
	}
	if le.HoldRecords < 1 {
		errs = append(errs, errors.New("leaderElection.holdRecords: must be at least 1"))
	}
	return errs
}

// checkDelivery checks the queues, the drain and every sink.
func (c Config) checkDelivery() []error {
	var errs []error
	if err := checkQueueSize(c.QueueSize); err != nil {
		errs = append(errs, fmt.Errorf("queueSize (--queue-size): %w", err))
	}
	if _, err := ParseBytes(c.QueueMaxBytes); err != nil {
		errs = append(errs, fmt.Errorf("queueMaxBytes: %w", err))
	}
	if _, _, err := c.History.Bounds(); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.History.EventRetention(); err != nil {
		errs = append(errs, err)
	}
	if err := c.CheckStore(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, notOneOf("events (--events)", c.Events, EventModes)...)
	if c.DrainTimeout < 0 {
		errs = append(errs, fmt.Errorf("drainTimeout: %s is negative", c.DrainTimeout))
	}
	if c.ReadBatching < 0 || c.ReadBatching > time.Second {
		errs = append(errs, fmt.Errorf("readBatching (--read-batching): %s is not between 0 and 1s", c.ReadBatching))
	}
	names := map[string]bool{}
	for i, s := range c.Sinks {
		key := fmt.Sprintf("sinks[%d]", i)
		if s.Name != "" {
			key = fmt.Sprintf("sinks[%s]", s.Name)
		}
		errs = append(errs, s.validate(key, names)...)
	}
	return errs
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

// checkSafeAnnotations refuses a pattern that could show the annotations
// of a tool nobody named: a key's prefix (before /) is written out, and a
// key without one is written whole.
func checkSafeAnnotations(key string, patterns []string) []error {
	var errs []error
	for _, p := range patterns {
		prefix, name, hasPrefix := strings.Cut(p, "/")
		if !hasPrefix {
			prefix = p
		}
		switch {
		case prefix == "" || (hasPrefix && name == "") || strings.ContainsAny(p, " \t\n"):
			errs = append(errs, fmt.Errorf("%s: %q is not an annotation key (such as cert-manager.io/common-name)", key, p))
		case strings.ContainsAny(prefix, "*?[\\"):
			errs = append(errs, fmt.Errorf("%s: %q: write the key's prefix out, wildcards only after the / (such as team.example.com/*), so that no tool's copy of a Secret shows by chance", key, p))
		default:
			if err := glob.Valid([]string{p}); err != nil {
				errs = append(errs, fmt.Errorf("%s: %q: %w", key, p, err))
			}
		}
	}
	return errs
}

// notOneOf is the error of a key whose value is not one of allowed.
func notOneOf(key, value string, allowed []string) []error {
	if slices.Contains(allowed, value) {
		return nil
	}
	return []error{fmt.Errorf("%s: %q is not one of %s", key, value, strings.Join(allowed, ", "))}
}

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
		errs = append(errs, notOneOf(key+".match.types", t, ChangeTypes)...)
	}
	if err := glob.Valid(s.Match.Namespaces); err != nil {
		errs = append(errs, fmt.Errorf("%s.match.namespaces: %w", key, err))
	}
	if err := glob.Valid(s.Match.Clusters); err != nil {
		errs = append(errs, fmt.Errorf("%s.match.clusters: %w", key, err))
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

// checkContexts checks the choice of clusters: several clusters share
// one process's flags, but not what names or elects one of them.
func (c Config) checkContexts() []error {
	var errs []error
	if c.AllContexts && (len(c.Contexts) > 0 || c.Context != "") {
		errs = append(errs, errors.New("allContexts (--all-contexts) and context (--context): choose one"))
	}
	if !c.AllContexts && len(c.Contexts) < 2 {
		return errs
	}
	if c.ClusterName != "" {
		errs = append(errs, errors.New("clusterName (--cluster-name) names one cluster: with several contexts, each is named after its context"))
	}
	if c.LeaderElection.Enabled {
		errs = append(errs, errors.New("leaderElection: elects a replica in one cluster; run one kubediff per cluster for that"))
	}
	if c.APIService.Address != "" {
		errs = append(errs, errors.New("apiService.address: an aggregated API belongs to one cluster's API server; run one kubediff per cluster for that"))
	}
	seen := map[string]bool{}
	for _, name := range c.Contexts {
		if seen[name] || strings.TrimSpace(name) == "" {
			errs = append(errs, fmt.Errorf("contexts: %q is empty or given twice", name))
		}
		seen[name] = true
	}
	return errs
}
