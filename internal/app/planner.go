package app

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sdiscovery "k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kubediff/kubediff/pkg/config"
	"github.com/kubediff/kubediff/pkg/discovery"
)

// Clients are the API clients kubediff uses, built once per run.
type Clients struct {
	Rest      *rest.Config
	Discovery *k8sdiscovery.DiscoveryClient
	Kube      *kubernetes.Clientset
	Metadata  metadata.Interface // watches CRDs and APIServices for rediscovery
}

// NewClients builds the clients for rc.
func NewClients(rc *rest.Config) (*Clients, error) {
	dc, err := k8sdiscovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &Clients{Rest: rc, Discovery: dc, Kube: kube, Metadata: meta}, nil
}

// NewPlanner turns the config into a discovery.Planner.
func NewPlanner(cfg config.Config, c *Clients) *discovery.Planner {
	scope := discovery.Scope{
		Namespaces:        cfg.Namespaces,
		ExcludeNamespaces: cfg.ExcludeNamespaces,
		LabelSelector:     cfg.LabelSelector,
		FieldSelector:     cfg.FieldSelector,
	}
	for _, s := range cfg.Selectors {
		scope.PerResource = append(scope.PerResource, discovery.TypeSelector{Resources: s.Resources, LabelSelector: s.LabelSelector, FieldSelector: s.FieldSelector})
	}
	p := &discovery.Planner{
		Discoverer: discovery.New(c.Discovery),
		Access:     discovery.NewAccessChecker(c.Kube.AuthorizationV1()),
		ListNamespaces: func(ctx context.Context) ([]string, error) {
			list, err := c.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			names := make([]string, 0, len(list.Items))
			for _, ns := range list.Items {
				names = append(names, ns.Name)
			}
			return names, nil
		},
		Include: cfg.Resources,
		Exclude: cfg.ExcludeResources,
		Objects: objects(cfg.Objects),
		Scope:   scope,
	}
	// Events are read as facts about objects when the stream shows some
	// or the history keeps them (docs/why.md).
	p.EventFacts = cfg.Events != config.EventsNone || cfg.State.Dir != "" && historyOn(cfg)
	if cfg.Diff.Defaults.Events {
		// Events are a stream of their own, not changes to the cluster.
		p.Excluded = func(r discovery.Resource) (bool, string) {
			return r.Kind == "Event", "Event objects are changes only when named in resources (diff.defaults.events)"
		}
	}
	return p
}

// objects turns TYPE/NAME (validated) into the planner's objects.
func objects(names []string) []discovery.ObjectName {
	var out []discovery.ObjectName
	for _, o := range names {
		typ, name, _ := config.ParseObject(o)
		out = append(out, discovery.ObjectName{Resource: typ, Name: name})
	}
	return out
}

// PlanError marks selection mistakes (an unknown --resources name, a
// namespace glob without permission to list namespaces) as ConfigErrors.
func PlanError(err error) error {
	var se *discovery.SelectionError
	if errors.As(err, &se) {
		return ConfigError{err}
	}
	return err
}

// historyOn says whether the config keeps a history (with a state dir).
func historyOn(cfg config.Config) bool {
	retention, maxBytes, err := cfg.History.Bounds()
	return err == nil && retention > 0 && maxBytes > 0
}
