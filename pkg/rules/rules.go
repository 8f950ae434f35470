// Package rules names the records that matter: rules written in CEL, the
// expression language of the API server's validation and admission
// policies, each testing a record and the object's states before and
// after it. A record carries the names of the rules it matched and the
// highest severity among them; sinks route on both, and a rule can drop
// the records it matches (docs/rules.md).
//
// A built-in rule (the pack) is a rule like any other, compiled from a
// YAML file embedded in the binary and enabled by name.
package rules

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common"

	"github.com/kubediff/kubediff/pkg/glob"
	"github.com/kubediff/kubediff/pkg/record"
)

// Spec is one rule as the config file writes it (the rules key).
type Spec struct {
	// Name names the rule on records, in sinks' match and in metrics.
	Name string `mapstructure:"name" json:"name"`
	// When is a CEL expression over record, object and oldObject that
	// is true for the records the rule matches.
	When string `mapstructure:"when" json:"when"`
	// Severity is info, warning or critical (default info).
	Severity string `mapstructure:"severity" json:"severity,omitempty"`
	// Summary is a Go text/template over the record (and .object,
	// .oldObject), set as the record's summary when the rule matches.
	Summary string `mapstructure:"summary" json:"summary,omitempty"`
	// Drop keeps the records the rule matches from every sink; the
	// history still moves the object to its new state.
	Drop bool `mapstructure:"drop" json:"drop,omitempty"`
	// Namespaces limits the rule to the records of objects in a
	// namespace matching one of these globs (prod-*); a cluster-scoped
	// object's records then never match. Empty: every record.
	Namespaces []string `mapstructure:"namespaces" json:"namespaces,omitempty"`
}

// Severities, lowest first (as pkg/record names them).
const (
	Info     = record.SeverityInfo
	Warning  = record.SeverityWarning
	Critical = record.SeverityCritical
)

// Rule is a compiled rule.
type Rule struct {
	Spec
	// Pack is set for a rule of the built-in pack (rulePack).
	Pack    bool
	plan    plan
	summary *summaryTemplate // nil: no summary
	// failing is set while the rule's evaluations fail, so that an
	// episode of failures is logged once (see Set.Judge).
	failing failFlag
	// summaryTold is set once its summary's failure was told: it fails
	// on the records it fails on, so an episode would be told per record.
	summaryTold failFlag
}

// Set is the rules a run evaluates, in the order written (the pack's
// after the config's).
type Set struct {
	rules []*Rule
	// OnError is told when a rule starts failing (healed false: its
	// evaluations fail, and count as not matched) and when it evaluates
	// again (healed true); nil: not told.
	OnError func(rule string, err error, healed bool)
	// OnSummaryError is told the first time a rule's summary fails to
	// render (over its limit, or an error); the rule still matches.
	// nil: not told.
	OnSummaryError func(rule string, err error)
}

// Compile compiles the config's rules and the pack's rules pack
// enables (each limited to its namespaces, at its severity, when the
// entry gives them). Each error names its rule: "rules[name].when: 1:8: undefined
// field 'namspace'", one line each.
func Compile(specs []Spec, pack []PackEntry) (*Set, error) {
	env, err := newEnv()
	if err != nil {
		return nil, err
	}
	all, errs := withPack(specs, pack)
	set := &Set{}
	seen := map[string]bool{}
	for i, s := range all {
		fromPack := i >= len(specs)
		key := fmt.Sprintf("rules[%d]", i)
		switch {
		case fromPack:
			key = "rulePack[" + s.Name + "]"
		case s.Name != "":
			key = "rules[" + s.Name + "]"
		}
		if s.Name == "" {
			errs = append(errs, fmt.Errorf("%s.name: empty", key))
			continue
		}
		if seen[s.Name] {
			errs = append(errs, fmt.Errorf("%s.name: %q is used twice (a rule in rulePack has it too?)", key, s.Name))
			continue
		}
		seen[s.Name] = true
		r, err := compile(env, s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", key, err))
			continue
		}
		r.Pack = fromPack
		set.rules = append(set.rules, r)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return set, nil
}

// compile compiles one rule; an error starts with the key at fault
// ("when: ...").
func compile(env *cel.Env, s Spec) (*Rule, error) {
	if record.SeverityRank(s.Severity) < 0 {
		return nil, fmt.Errorf("severity: %q is not one of %s", s.Severity, strings.Join(record.Severities, ", "))
	}
	if s.Severity == "" {
		s.Severity = Info
	}
	if err := glob.Valid(s.Namespaces); err != nil {
		return nil, fmt.Errorf("namespaces: %w", err)
	}
	if strings.TrimSpace(s.When) == "" {
		return nil, errors.New("when: empty (a CEL expression, such as record.type == \"deleted\")")
	}
	ast, iss := env.Compile(s.When)
	if iss.Err() != nil {
		return nil, fmt.Errorf("when: %s", oneLine(iss.Errors()))
	}
	if ast.OutputType() != cel.BoolType {
		return nil, fmt.Errorf("when: is of type %s, not bool: a rule must say true or false", ast.OutputType())
	}
	p, err := newPlan(env, ast)
	if err != nil {
		return nil, fmt.Errorf("when: %w", err)
	}
	if len(s.Namespaces) > 0 {
		// The scope is tested first: it is one glob match.
		p.prefilter = append(prefilter{func(c *record.Change) bool {
			return c.Namespace != "" && glob.MatchAny(s.Namespaces, c.Namespace)
		}}, p.prefilter...)
	}
	r := &Rule{Spec: s, plan: p}
	if s.Summary != "" {
		t, err := parseSummary(s.Name, s.Summary)
		if err != nil {
			return nil, fmt.Errorf("summary: %w", err)
		}
		r.summary = t
	}
	return r, nil
}

// oneLine says CEL's errors on one line, each with its line and column
// in the expression (CEL's own form spans three lines, with a caret).
func oneLine(errs []*common.Error) string {
	parts := make([]string, 0, len(errs))
	for _, e := range errs {
		parts = append(parts, fmt.Sprintf("%d:%d: %s", e.Location.Line(), e.Location.Column()+1, e.Message))
	}
	return strings.Join(parts, "; ")
}

// Names returns the rules' names, in order.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	names := make([]string, 0, len(s.rules))
	for _, r := range s.rules {
		names = append(names, r.Name)
	}
	return names
}

// Len is how many rules the set has.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.rules)
}

// Severity is the severity of the rule named name, "" when the set has
// no such rule.
func (s *Set) Severity(name string) string {
	for _, r := range s.Rules() {
		if r.Name == name {
			return r.Severity
		}
	}
	return ""
}

// Rules returns the compiled rules, in order.
func (s *Set) Rules() []*Rule {
	if s == nil {
		return nil
	}
	return s.rules
}

// MatchesAny says whether a sink's match pattern (a name or a glob)
// names a rule of names, for validating sinks' match.rules.
func MatchesAny(pattern string, names []string) bool {
	for _, n := range names {
		if glob.MatchAny([]string{pattern}, n) {
			return true
		}
	}
	return false
}
