package diff

import (
	"fmt"
	"slices"
	"sync"

	"github.com/kubediff/kubediff/pkg/discovery"
)

// Rules decide which fields' changes are not reported.
type Rules struct {
	// Paths are JSON Pointers ignored for every type; "*" matches any key
	// or list index.
	Paths []string
	// PerResource are paths ignored for some types only.
	PerResource []ResourceRule
	// Defaults turns the built-in rule sets on and off.
	Defaults Defaults
}

// ResourceRule ignores paths on the named types (names as kubectl accepts
// them: plural, kind, short name, resource.group).
type ResourceRule struct {
	Resources []string
	Paths     []string
}

// Defaults are the built-in rule sets that keep an idle cluster quiet.
// Each can be turned off.
type Defaults struct {
	// Bookkeeping: managedFields, resourceVersion, generation and kubectl's
	// last-applied-configuration annotation.
	Bookkeeping bool
	// LeaseRenewals: a Lease's renewTime, which holders bump every few
	// seconds. A change of holder still shows.
	LeaseRenewals bool
	// DeploymentRevision: the deployment.kubernetes.io/revision annotation
	// that the controller bumps on each rollout (the template change shows).
	DeploymentRevision bool
	// StatusTimestamps: heartbeat, probe and update times in status
	// conditions. A condition's status, reason or transition still shows.
	StatusTimestamps bool
}

// AllDefaults turns every built-in rule set on.
var AllDefaults = Defaults{Bookkeeping: true, LeaseRenewals: true, DeploymentRevision: true, StatusTimestamps: true}

// defaultRuleSets returns the built-in rules the switches turn on.
func (d Defaults) ruleSets() (global []string, perResource []ResourceRule) {
	if d.Bookkeeping {
		global = append(global, DefaultIgnorePaths...)
	}
	if d.StatusTimestamps {
		global = append(global,
			"/status/conditions/*/lastHeartbeatTime",
			"/status/conditions/*/lastProbeTime",
			"/status/conditions/*/lastUpdateTime",
		)
	}
	if d.LeaseRenewals {
		perResource = append(perResource, ResourceRule{Resources: []string{"leases.coordination.k8s.io"}, Paths: []string{"/spec/renewTime"}})
	}
	if d.DeploymentRevision {
		perResource = append(perResource, ResourceRule{
			Resources: []string{"deployments.apps", "replicasets.apps"},
			Paths:     []string{"/metadata/annotations/deployment.kubernetes.io~1revision"},
		})
	}
	return global, perResource
}

type compiledResourceRule struct {
	resources []string
	paths     pathRules
}

// compiledRules caches the rules that apply to each type, since the same
// few types are diffed over and over.
type compiledRules struct {
	global      pathRules
	perResource []compiledResourceRule
	cache       sync.Map // GroupVersionResource → pathRules
}

func compileRules(r Rules) (*compiledRules, error) {
	global, perResource := r.Defaults.ruleSets()
	global = append(global, r.Paths...)
	perResource = append(perResource, r.PerResource...)
	c := &compiledRules{}
	var err error
	if c.global, err = parsePathRules(global); err != nil {
		return nil, fmt.Errorf("ignore path: %w", err)
	}
	for _, pr := range perResource {
		paths, err := parsePathRules(pr.Paths)
		if err != nil {
			return nil, fmt.Errorf("ignore path for %v: %w", pr.Resources, err)
		}
		if len(pr.Resources) == 0 {
			return nil, fmt.Errorf("ignore rule for paths %v names no resources (use ignorePaths for every type)", pr.Paths)
		}
		c.perResource = append(c.perResource, compiledResourceRule{resources: pr.Resources, paths: paths})
	}
	return c, nil
}

// forResource returns the global rules plus those naming r.
func (c *compiledRules) forResource(r discovery.Resource) pathRules {
	if v, ok := c.cache.Load(r.GVR); ok {
		return v.(pathRules)
	}
	rules := slices.Clone(c.global)
	for _, pr := range c.perResource {
		if slices.ContainsFunc(pr.resources, r.Matches) {
			rules = append(rules, pr.paths...)
		}
	}
	c.cache.Store(r.GVR, rules)
	return rules
}
