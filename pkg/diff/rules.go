package diff

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/record"
)

// Rules decide which changes are not reported.
type Rules struct {
	// Paths are JSON Pointers ignored for every type; "*" matches any key
	// or list index.
	Paths []string
	// PerResource are paths ignored for some types only.
	PerResource []ResourceRule
	// Defaults names the built-in rules that are on (AllDefaults: every
	// one); see DefaultRules.
	Defaults []string
	// DefaultsOff turns some default rules off for some types only.
	DefaultsOff []DefaultsOff
}

// ResourceRule ignores paths on the named types (names as kubectl accepts
// them: plural, kind, short name, resource.group).
type ResourceRule struct {
	Resources []string
	Paths     []string
}

// DefaultsOff turns the named default rules off for the named types.
type DefaultsOff struct {
	Rules     []string
	Resources []string
}

// DefaultRule is one built-in rule that keeps a living cluster quiet.
// Each is on by default and can be turned off (diff.defaults.<Name>), or
// off for some types (diff.defaultsOff); `kubediff rules` lists them.
type DefaultRule struct {
	// Name is the rule's config key under diff.defaults.
	Name string
	// Types says which types it applies to, for people.
	Types string
	// Hides says what it hides, and what still shows.
	Hides string

	resources []string // nil: every type (names as kubectl accepts them)
	paths     []string // ignored JSON Pointers
	news      func(u *updateView, fc record.FieldChange) bool
	hidden    func(obj map[string]any) bool // an object none of whose records is reported
}

// DefaultRules are the built-in rules, in the order docs list them.
var DefaultRules = []DefaultRule{
	{Name: "bookkeeping", Types: "every type",
		Hides: "metadata.managedFields, resourceVersion, generation, kubectl's last-applied-configuration annotation, and the delivery progress kubediff's own leader election keeps in a Lease",
		paths: []string{"/metadata/managedFields", "/metadata/resourceVersion", "/metadata/generation", "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration",
			"/metadata/annotations/" + ProgressAnnotationPointer}},
	{Name: "statusTimestamps", Types: "every type",
		Hides: "lastHeartbeatTime, lastProbeTime and lastUpdateTime in status conditions (a condition's status, reason and lastTransitionTime still show)",
		paths: []string{"/status/conditions/*/lastHeartbeatTime", "/status/conditions/*/lastProbeTime", "/status/conditions/*/lastUpdateTime"}},
	{Name: "leaseRenewals", Types: "leases.coordination.k8s.io",
		Hides:     "a Lease's spec.renewTime (a change of holder still shows)",
		resources: []string{"leases.coordination.k8s.io"}, paths: []string{"/spec/renewTime"}},
	{Name: "deploymentRevision", Types: "deployments.apps, replicasets.apps",
		Hides:     "the deployment.kubernetes.io/revision annotation (the template change that caused it still shows)",
		resources: []string{"deployments.apps", "replicasets.apps"}, paths: []string{"/metadata/annotations/deployment.kubernetes.io~1revision"}},
	{Name: "podLifecycle", Types: "pods",
		Hides: "a Pod starting up (scheduled, IPs, containers running, Ready) and its graceful deletion's marks; " +
			"a restart (with why the container stopped), Ready → not Ready, a Failed/Succeeded/Unknown phase and spec changes still show",
		resources: []string{"pods"}, news: podNews},
	{Name: "workloadStatus", Types: "deployments, replicasets, statefulsets, daemonsets, replicationcontrollers",
		Hides:     "the replica counters and observedGeneration in status (spec, conditions, and each Pod added or deleted still show)",
		resources: []string{"deployments.apps", "replicasets.apps", "statefulsets.apps", "daemonsets.apps", "replicationcontrollers"}, news: workloadNews},
	{Name: "conditionDetails", Types: "every type",
		Hides: "a status condition's reason, message and times when its status did not change (a condition whose status changes shows with them)",
		news:  conditionNews},
	{Name: "crdLifecycle", Types: "customresourcedefinitions.apiextensions.k8s.io",
		Hides: "the API server's steps after a CRD is applied (names accepted, established, stored versions, accepted names) and a deletion's marks; " +
			"spec changes and a condition that goes wrong still show",
		resources: []string{"customresourcedefinitions.apiextensions.k8s.io"}, news: crdNews},
	{Name: "endpoints", Types: "endpointslices.discovery.k8s.io, endpoints",
		Hides:     "the endpoints, ports and last-change-trigger-time annotation, which follow their Pods (slices created or deleted still show)",
		resources: []string{"endpointslices.discovery.k8s.io", "endpoints"}, news: endpointsNews,
		paths: []string{"/metadata/annotations/endpoints.kubernetes.io~1last-change-trigger-time"}},
	{Name: "helmStorage", Types: "secrets, configmaps",
		Hides: "the Secrets (type helm.sh/release.v1) and ConfigMaps in which Helm stores each release's revisions: 2–3 records an install or upgrade " +
			"(the objects the release applied still show, naming it: by helm (release web rev 7))",
		resources: []string{"secrets", "configmaps"}, hidden: helmStorage},
}

// helmStorage tells Helm's own records of a release from the objects
// it applies: named and labelled as Helm's storage drivers write them
// (and a Secret of Helm's type), as pkg/release believes them.
func helmStorage(obj map[string]any) bool {
	meta, _ := obj["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	name, _ := meta["name"].(string)
	if labels["owner"] != "helm" || !strings.HasPrefix(name, "sh.helm.release.v1.") {
		return false
	}
	if kind, _ := obj["kind"].(string); kind == "Secret" {
		typ, _ := obj["type"].(string)
		return typ == "helm.sh/release.v1"
	}
	return true
}

// ProgressAnnotationPointer is the JSON Pointer segment of the annotation in
// which kubediff's leader publishes delivery progress (leader package):
// reporting it would make each publication a record, whose delivery moves
// the progress on, forever.
const ProgressAnnotationPointer = "kubediff.io~1delivered-through"

// AllDefaults turns every built-in rule on.
var AllDefaults = func() []string {
	names := make([]string, len(DefaultRules))
	for i, r := range DefaultRules {
		names[i] = r.Name
	}
	return names
}()

type compiledResourceRule struct {
	resources []string
	paths     pathRules
}

// typeRules are the rules for one type.
type typeRules struct {
	paths  pathRules
	news   []newsFilter
	hidden []func(obj map[string]any) bool
}

// compiledRules caches the rules that apply to each type, since the same
// few types are diffed over and over.
type compiledRules struct {
	defaults    []DefaultRule
	off         []DefaultsOff
	global      pathRules
	perResource []compiledResourceRule
	cache       sync.Map // GroupVersionResource → *typeRules
}

func compileRules(r Rules) (*compiledRules, error) {
	c := &compiledRules{off: r.DefaultsOff}
	for _, name := range r.Defaults {
		i := slices.IndexFunc(DefaultRules, func(d DefaultRule) bool { return d.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("no default rule named %q (there are %s)", name, strings.Join(AllDefaults, ", "))
		}
		c.defaults = append(c.defaults, DefaultRules[i])
	}
	for _, off := range r.DefaultsOff {
		for _, name := range off.Rules {
			if !slices.Contains(AllDefaults, name) {
				return nil, fmt.Errorf("defaultsOff: no default rule named %q (there are %s)", name, strings.Join(AllDefaults, ", "))
			}
		}
	}
	var err error
	if c.global, err = parsePathRules(r.Paths); err != nil {
		return nil, fmt.Errorf("ignore path: %w", err)
	}
	for _, pr := range r.PerResource {
		paths, err := parsePathRules(pr.Paths)
		if err != nil {
			return nil, fmt.Errorf("ignore path for %v: %w", pr.Resources, err)
		}
		if len(pr.Resources) == 0 {
			return nil, fmt.Errorf("ignore rule for paths %v names no resources (use ignorePaths for every type)", pr.Paths)
		}
		c.perResource = append(c.perResource, compiledResourceRule{resources: pr.Resources, paths: paths})
	}
	for _, d := range DefaultRules {
		if _, err := parsePathRules(d.paths); err != nil {
			return nil, fmt.Errorf("default rule %s: %w", d.Name, err)
		}
	}
	return c, nil
}

// forResource returns the rules for type r: the user's paths for every
// type and for r, and the default rules that apply to r and are on for it.
func (c *compiledRules) forResource(r change.Resource) *typeRules {
	if v, ok := c.cache.Load(r.GVR); ok {
		return v.(*typeRules)
	}
	tr := &typeRules{paths: slices.Clone(c.global)}
	for _, pr := range c.perResource {
		if slices.ContainsFunc(pr.resources, r.Matches) {
			tr.paths = append(tr.paths, pr.paths...)
		}
	}
	for _, d := range c.defaults {
		if !d.appliesTo(r) || c.offFor(d.Name, r) {
			continue
		}
		paths, _ := parsePathRules(d.paths) // checked by compileRules
		tr.paths = append(tr.paths, paths...)
		if d.news != nil {
			tr.news = append(tr.news, newsFilter{rule: d.Name, keep: d.news})
		}
		if d.hidden != nil {
			tr.hidden = append(tr.hidden, d.hidden)
		}
	}
	c.cache.Store(r.GVR, tr)
	return tr
}

// hides reports whether a rule hides every record of obj.
func (tr *typeRules) hides(obj map[string]any) bool {
	return slices.ContainsFunc(tr.hidden, func(h func(map[string]any) bool) bool { return h(obj) })
}

func (d DefaultRule) appliesTo(r change.Resource) bool {
	return d.resources == nil || slices.ContainsFunc(d.resources, r.Matches)
}

func (c *compiledRules) offFor(name string, r change.Resource) bool {
	return slices.ContainsFunc(c.off, func(o DefaultsOff) bool {
		return slices.Contains(o.Rules, name) && slices.ContainsFunc(o.Resources, r.Matches)
	})
}

// IgnoredPaths are the JSON Pointers of the fields d prunes from objects
// of type r before it caches or compares them ("*" matches any key or
// list index): what the states kubediff keeps of them lack.
func (d *Differ) IgnoredPaths(r change.Resource) []string {
	var out []string
	for _, p := range d.rules.forResource(r).paths {
		out = append(out, FormatPointer(p))
	}
	return out
}
