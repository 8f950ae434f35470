package discovery

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/kubediff/kubediff/pkg/glob"
)

// Target is one watch to run: a type, in one namespace or all ("" also
// for cluster-scoped types), with the selectors the server filters by.
type Target struct {
	Resource      Resource
	Namespace     string
	LabelSelector string
	FieldSelector string
	// Namespaces, on a cluster-wide target, keeps only the objects of the
	// namespaces these patterns match ("" keeps all): see namespacesApart.
	Namespaces NamespaceFilter
	// Narrowed says a selector the user gave (a label selector, or a
	// field selector on more than the namespace) picks which objects of
	// the type are watched: an Event about an object left out is then
	// not kept. TYPE/NAME arguments do not narrow this way.
	Narrowed bool
}

// Key identifies a target: a change of version, namespace or selector is a
// different watch.
func (t Target) Key() string {
	key := strings.Join([]string{t.Resource.GVR.String(), t.Namespace, t.LabelSelector, t.FieldSelector}, "|")
	if t.Namespaces != "" {
		key += "|" + string(t.Namespaces)
	}
	return key
}

// namespacesApart is how many namespaces are watched one watch each, per
// type; more are watched through one cluster-wide watch per type whose
// objects outside them kubediff drops before caching. A glob matching
// 1,000 namespaces made 1,000 watches and 2,000 access reviews per type:
// minutes before the first watch. Few namespaces are watched apart, so that
// the server sends only their objects.
const namespacesApart = 10

// NamespaceFilter is the namespace patterns (exact names or globs) a
// cluster-wide target keeps, comma-separated, then those it drops, each
// after a "!"; "" keeps every namespace. A string, so that it is part of
// the target's key.
type NamespaceFilter string

func newNamespaceFilter(keep, drop []string) NamespaceFilter {
	patterns := slices.Clone(keep)
	for _, d := range drop {
		patterns = append(patterns, "!"+d)
	}
	return NamespaceFilter(strings.Join(patterns, ","))
}

// Matcher returns a function reporting whether the filter keeps a
// namespace.
func (f NamespaceFilter) Matcher() func(namespace string) bool {
	if f == "" {
		return func(string) bool { return true }
	}
	var keep, drop []string
	for _, p := range strings.Split(string(f), ",") {
		if d, ok := strings.CutPrefix(p, "!"); ok {
			drop = append(drop, d)
		} else {
			keep = append(keep, p)
		}
	}
	return func(ns string) bool { return glob.MatchAny(keep, ns) && !glob.MatchAny(drop, ns) }
}

// Scope says where and how to watch.
type Scope struct {
	// Namespaces to watch, exact names or globs; empty means all namespaces
	// through one cluster-wide watch per type (cluster-scoped types are
	// watched only then).
	Namespaces []string
	// ExcludeNamespaces, exact names or globs. Exact names and the current
	// matches of globs are excluded by the server (field selector);
	// namespaces created later that match a glob are filtered by kubediff.
	ExcludeNamespaces []string
	// LabelSelector and FieldSelector apply to every type; the label
	// selector not to Events read as facts (Planner.EventFacts), which
	// carry no labels: the objects it picks are what their Events are
	// kept for.
	LabelSelector, FieldSelector string
	// PerResource selectors apply to the named types, on top.
	PerResource []TypeSelector
}

// TypeSelector filters some types server-side.
type TypeSelector struct {
	Resources                    []string
	LabelSelector, FieldSelector string
}

// State of a type in a plan.
const (
	StateWatched      = "watched"
	StateExcluded     = "excluded"
	StateForbidden    = "forbidden"
	StateNotWatchable = "not watchable"
)

// ObjectName names one object of a type, as `kubectl get TYPE/NAME` does.
type ObjectName struct {
	Resource, Name string
}

// Status says whether and why a type is watched.
type Status struct {
	Resource Resource
	State    string
	Reason   string
}

// Plan is what to watch now.
type Plan struct {
	// All is every watchable type the server offers.
	All []Resource
	// Targets are the watches to run.
	Targets []Target
	// Statuses cover every type the server offers, watched or not,
	// ordered by group and resource.
	Statuses []Status
	// Unavailable group/versions failed discovery: keep watching what was
	// watched of them rather than stop and lose changes.
	Unavailable []schema.GroupVersion
	// Waiting are names in resources that match no type now, while API
	// groups are unavailable that may serve them (pods.metrics.k8s.io
	// while metrics-server is down): waited for, not refused.
	Waiting []string
}

// Planner decides, from discovery, config and access, what to watch.
type Planner struct {
	Discoverer *Discoverer
	// Access checks list/watch permission; nil assumes everything allowed.
	Access *AccessChecker
	// ListNamespaces returns existing namespaces, for globs; nil when
	// namespaces cannot be listed.
	ListNamespaces func(ctx context.Context) ([]string, error)
	Include        []string
	Exclude        []string
	// Objects are single objects to watch (kubectl's TYPE/NAME): their
	// types are watched through a metadata.name field selector per object,
	// unless Include names the type, which then is watched whole.
	Objects []ObjectName
	// Excluded is a default filter (Events) that naming a type in Include
	// overrides; it returns the reason.
	Excluded func(Resource) (bool, string)
	// EventFacts watches Events, whatever Exclude and Excluded say, to
	// read them as facts about the objects they regard (Catalog.Events),
	// unless an Event type is watched already, or Include or Objects
	// narrow what is watched (then Events are watched only when Include
	// names them, as changes and facts).
	EventFacts bool
	Scope      Scope

	// frozenExclusions are the namespaces the first plan excluded by field
	// selector. Later plans reuse them: a new namespace matching a glob
	// would otherwise change every namespaced watch's selector and
	// restart them all. kubediff filters such namespaces itself. Plan is
	// called from one goroutine at a time.
	frozenExclusions []string
	frozen           bool
	// planNamespaces are the scope's namespaces during one Plan call.
	planNamespaces []string
}

// isEvent says whether r is an Event type, core or events.k8s.io.
func isEvent(r Resource) bool {
	return r.Kind == "Event" && (r.GVR.Group == "" || r.GVR.Group == "events.k8s.io")
}

// EventFactsReason is the status of the Event type watched for facts
// about objects, not for changes of its own.
const EventFactsReason = "read as facts about the objects Events regard, not as changes (--events, docs/why.md)"

// changes says whether r is watched for its own changes: selected by
// Include and Exclude, and not Excluded by default.
func (p *Planner) changes(r Resource) bool {
	selected, err := Select([]Resource{r}, p.Include, p.Exclude)
	if err != nil || len(selected) == 0 {
		return false
	}
	if p.Excluded != nil && !slices.ContainsFunc(p.Include, r.Matches) {
		excluded, _ := p.Excluded(r)
		return !excluded
	}
	return true
}

// Plan discovers and decides. Unavailable API groups come back as a
// warning error together with a usable plan.
func (p *Planner) Plan(ctx context.Context) (Plan, error) {
	p.planNamespaces = nil
	defer func() { p.planNamespaces = nil }()
	catalog, warn := p.Discoverer.Resources(ctx)
	if catalog.Watchable == nil && warn != nil {
		return Plan{}, warn
	}
	plan := Plan{All: catalog.Watchable, Statuses: catalog.NotWatchable, Unavailable: catalog.Unavailable}
	include := p.Include
	for _, o := range p.Objects {
		include = append(slices.Clip(include), o.Resource)
	}
	include, plan.Waiting = waitForUnavailable(catalog, include)
	selected, err := Select(catalog.Watchable, include, p.Exclude)
	if err != nil {
		return Plan{}, err
	}
	if len(include) == 0 && len(plan.Waiting) > 0 {
		selected = nil // only waited-for names: nothing yet, not everything
	}
	var candidates []Target
	for _, r := range catalog.Watchable {
		if !slices.ContainsFunc(selected, func(s Resource) bool { return s.GVR == r.GVR }) {
			plan.Statuses = append(plan.Statuses, Status{Resource: r, State: StateExcluded, Reason: "not selected by resources/excludeResources"})
			continue
		}
		if p.Excluded != nil && !slices.ContainsFunc(include, r.Matches) {
			if excluded, why := p.Excluded(r); excluded {
				plan.Statuses = append(plan.Statuses, Status{Resource: r, State: StateExcluded, Reason: why})
				continue
			}
		}
		targets, err := p.targets(ctx, r)
		if err != nil {
			return Plan{}, err
		}
		if len(targets) == 0 {
			plan.Statuses = append(plan.Statuses, Status{Resource: r, State: StateExcluded, Reason: "cluster-scoped, and namespaces are set"})
		}
		candidates = append(candidates, targets...)
	}
	if p.EventFacts && len(p.Include) == 0 && len(p.Objects) == 0 && catalog.Events != nil &&
		!slices.ContainsFunc(candidates, func(t Target) bool { return t.Resource.Kind == "Event" }) {
		targets, err := p.targets(ctx, *catalog.Events)
		if err != nil {
			return Plan{}, err
		}
		candidates = append(candidates, targets...)
		plan.Statuses = slices.DeleteFunc(plan.Statuses, func(s Status) bool { return s.Resource.GVR == catalog.Events.GVR })
	}
	allowed, forbidden := candidates, map[string]string{}
	if p.Access != nil {
		if allowed, forbidden, candidates, err = p.checkAccess(ctx, candidates); err != nil {
			return Plan{}, err
		}
	}
	plan.Targets = allowed
	statuses := targetStatuses(candidates, forbidden)
	for i, st := range statuses {
		if p.EventFacts && catalog.Events != nil && st.Resource.GVR == catalog.Events.GVR && st.State == StateWatched && !p.changes(st.Resource) {
			statuses[i].Reason = EventFactsReason
		}
	}
	plan.Statuses = append(plan.Statuses, statuses...)
	slices.SortStableFunc(plan.Statuses, func(a, b Status) int { return byGroupResource(a.Resource, b.Resource) })
	return plan, warn
}

// checkAccess returns the candidates kubediff may list and watch, and why
// the others are forbidden. A cluster-wide target filtered to namespaces
// that is forbidden cluster-wide becomes one target per namespace, checked
// in turn: the scope's namespaces may be granted one by one. The targets
// checked are returned too, for the statuses.
func (p *Planner) checkAccess(ctx context.Context, candidates []Target) (allowed []Target, forbidden map[string]string, checked []Target, err error) {
	allowed, forbidden, err = p.Access.allowedAll(ctx, candidates)
	if err != nil {
		return nil, nil, nil, err
	}
	var narrowed []Target
	for _, t := range candidates {
		if _, denied := forbidden[t.Key()]; denied && t.Namespaces != "" {
			namespaces, err := p.namespaces(ctx)
			if err != nil {
				return nil, nil, nil, err
			}
			narrowed = append(narrowed, t.apart(namespaces)...)
		}
	}
	if len(narrowed) == 0 {
		return allowed, forbidden, candidates, nil
	}
	more, moreForbidden, err := p.Access.allowedAll(ctx, narrowed)
	if err != nil {
		return nil, nil, nil, err
	}
	maps.Copy(forbidden, moreForbidden)
	return append(allowed, more...), forbidden, append(candidates, narrowed...), nil
}

// targetStatuses folds per-target access into one status per type: watched
// if any of its targets is allowed.
func targetStatuses(candidates []Target, forbidden map[string]string) []Status {
	var out []Status
	byType := map[string]int{}
	for _, t := range candidates {
		key := t.Resource.GVR.String()
		reason, denied := forbidden[t.Key()]
		i, seen := byType[key]
		if !seen {
			byType[key] = len(out)
			st := Status{Resource: t.Resource, State: StateWatched}
			if denied {
				st = Status{Resource: t.Resource, State: StateForbidden, Reason: reason}
			}
			out = append(out, st)
			continue
		}
		if !denied {
			out[i].State, out[i].Reason = StateWatched, ""
		}
	}
	return out
}

// targets returns r's watches under the scope.
func (p *Planner) targets(ctx context.Context, r Resource) ([]Target, error) {
	labelSel, fieldSel := p.Scope.LabelSelector, p.Scope.FieldSelector
	if p.EventFacts && isEvent(r) {
		// Events carry no labels, and their names are not their
		// objects': the global selectors pick the objects, and the
		// pipeline keeps the Events about those it picked. A namespace
		// term applies to Events as to their objects.
		labelSel, fieldSel = "", namespaceTerms(fieldSel)
	}
	for _, ts := range p.Scope.PerResource {
		if slices.ContainsFunc(ts.Resources, r.Matches) {
			labelSel = joinSelectors(labelSel, ts.LabelSelector)
			fieldSel = joinSelectors(fieldSel, ts.FieldSelector)
		}
	}
	narrowed := labelSel != "" || PicksObjects(fieldSel)
	if len(p.Scope.Namespaces) == 0 {
		if r.Namespaced {
			if !p.frozen {
				excluded, err := p.expand(ctx, p.Scope.ExcludeNamespaces, true)
				if err != nil {
					return nil, err
				}
				p.frozenExclusions, p.frozen = excluded, true
			}
			for _, ns := range p.frozenExclusions {
				fieldSel = joinSelectors(fieldSel, "metadata.namespace!="+ns)
			}
		}
		return p.perObject(r, []Target{{Resource: r, LabelSelector: labelSel, FieldSelector: fieldSel, Narrowed: narrowed}}), nil
	}
	if !r.Namespaced {
		return nil, nil
	}
	namespaces, err := p.namespaces(ctx)
	if err != nil {
		return nil, err
	}
	wide := Target{Resource: r, LabelSelector: labelSel, FieldSelector: fieldSel, Narrowed: narrowed,
		Namespaces: newNamespaceFilter(p.Scope.Namespaces, p.Scope.ExcludeNamespaces)}
	if len(namespaces) > namespacesApart {
		return p.perObject(r, []Target{wide}), nil
	}
	return p.perObject(r, wide.apart(namespaces)), nil
}

// apart returns t as one target per namespace.
func (t Target) apart(namespaces []string) []Target {
	out := make([]Target, 0, len(namespaces))
	for _, ns := range namespaces {
		one := t
		one.Namespace, one.Namespaces = ns, ""
		out = append(out, one)
	}
	return out
}

// namespaces returns the namespaces the scope names and matches, without
// the excluded ones, listing them once per plan.
func (p *Planner) namespaces(ctx context.Context) ([]string, error) {
	if p.planNamespaces != nil {
		return p.planNamespaces, nil
	}
	all, err := p.expand(ctx, p.Scope.Namespaces, false)
	if err != nil {
		return nil, err
	}
	p.planNamespaces = []string{}
	for _, ns := range all {
		if !glob.MatchAny(p.Scope.ExcludeNamespaces, ns) {
			p.planNamespaces = append(p.planNamespaces, ns)
		}
	}
	return p.planNamespaces, nil
}

// perObject narrows r's targets to the objects named of it, one target
// each (a field selector matches one name), unless r is included whole.
func (p *Planner) perObject(r Resource, targets []Target) []Target {
	var names []string
	for _, o := range p.Objects {
		if r.Matches(o.Resource) && !slices.Contains(names, o.Name) {
			names = append(names, o.Name)
		}
	}
	if len(names) == 0 || slices.ContainsFunc(p.Include, r.Matches) {
		return targets
	}
	var out []Target
	for _, t := range targets {
		for _, name := range names {
			one := t
			one.FieldSelector = joinSelectors(t.FieldSelector, "metadata.name="+name)
			out = append(out, one)
		}
	}
	return out
}

// expand turns patterns into namespace names: exact names as they are,
// globs matched against the namespaces that exist. bestEffort skips globs
// when namespaces cannot be listed (exclusions are also applied by
// kubediff itself).
func (p *Planner) expand(ctx context.Context, patterns []string, bestEffort bool) ([]string, error) {
	var out, globs []string
	for _, pat := range patterns {
		if strings.ContainsAny(pat, "*?[") {
			globs = append(globs, pat)
		} else {
			out = append(out, pat)
		}
	}
	if len(globs) == 0 {
		return out, nil
	}
	var existing []string
	var err error
	if p.ListNamespaces == nil {
		err = errors.New("listing namespaces is not set up")
	} else {
		existing, err = p.ListNamespaces(ctx)
	}
	if err != nil {
		if bestEffort {
			return out, nil
		}
		return nil, &SelectionError{fmt.Errorf("namespaces %v: globs need permission to list namespaces: %w", globs, err)}
	}
	for _, ns := range existing {
		if glob.MatchAny(globs, ns) && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	return out, nil
}

// PicksObjects says whether a field selector picks objects by anything
// but their namespace (metadata.name, a type's own fields): an Event
// about an object it leaves out is then not kept.
func PicksObjects(fieldSelector string) bool {
	sel, err := fields.ParseSelector(fieldSelector)
	if err != nil {
		return fieldSelector != ""
	}
	return slices.ContainsFunc(sel.Requirements(), func(r fields.Requirement) bool { return r.Field != namespaceField })
}

// namespaceField is the field selectors name an object's namespace by.
const namespaceField = "metadata.namespace"

// namespaceTerms is what of a field selector is about the namespace.
func namespaceTerms(fieldSelector string) string {
	sel, err := fields.ParseSelector(fieldSelector)
	if err != nil {
		return fieldSelector // config validation refuses it before
	}
	var kept []string
	for _, r := range sel.Requirements() {
		switch {
		case r.Field != namespaceField:
		case r.Operator == selection.NotEquals:
			kept = append(kept, fields.OneTermNotEqualSelector(r.Field, r.Value).String())
		default:
			kept = append(kept, fields.OneTermEqualSelector(r.Field, r.Value).String())
		}
	}
	return strings.Join(kept, ",")
}

func joinSelectors(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "," + b
}

// waitForUnavailable takes out of include the names that match no type
// now but may belong to an unavailable API group: the group's own
// ("pods.metrics.k8s.io" while metrics.k8s.io is down), or any unqualified
// name while some group is down. A Deployment configured for them then
// waits for its API instead of exiting (and crash-looping).
func waitForUnavailable(catalog Catalog, include []string) (kept, waiting []string) {
	if len(catalog.Unavailable) == 0 {
		return include, nil
	}
	for _, n := range include {
		known := slices.ContainsFunc(catalog.Watchable, func(r Resource) bool { return r.Matches(n) })
		if known || !mayBeServedBy(n, catalog.Unavailable) {
			kept = append(kept, n)
			continue
		}
		waiting = append(waiting, n)
	}
	return kept, waiting
}

func mayBeServedBy(name string, groups []schema.GroupVersion) bool {
	_, qualifier, qualified := strings.Cut(strings.ToLower(name), ".")
	if !qualified {
		return true
	}
	return slices.ContainsFunc(groups, func(gv schema.GroupVersion) bool {
		return qualifier == gv.Group || strings.HasSuffix(qualifier, "."+gv.Group)
	})
}
