package discovery

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

type staticDiscovery struct{ *fakediscovery.FakeDiscovery }

func (staticDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return lists(), nil
}

func planner(scope Scope, include ...string) *Planner {
	return &Planner{
		Discoverer: New(staticDiscovery{&fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}}),
		ListNamespaces: func(context.Context) ([]string, error) {
			return []string{"default", "kube-system", "prod-eu", "prod-us", "dev"}, nil
		},
		Include: include,
		Scope:   scope,
	}
}

func targetKeys(ts []Target) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Resource.GVR.Resource+"@"+t.Namespace+" l="+t.LabelSelector+" f="+t.FieldSelector)
	}
	return out
}

func TestPlanScopes(t *testing.T) {
	tests := []struct {
		name  string
		scope Scope
		want  []string
	}{
		{"all namespaces: one cluster-wide watch per type", Scope{}, []string{
			"events@ l= f=", "namespaces@ l= f=", "pods@ l= f=", "deployments@ l= f=", "crontabs@ l= f=",
		}},
		{"namespaces: namespaced types only, one watch per namespace", Scope{Namespaces: []string{"default", "prod-*"}}, []string{
			"events@default l= f=", "events@prod-eu l= f=", "events@prod-us l= f=",
			"pods@default l= f=", "pods@prod-eu l= f=", "pods@prod-us l= f=",
			"deployments@default l= f=", "deployments@prod-eu l= f=", "deployments@prod-us l= f=",
			"crontabs@default l= f=", "crontabs@prod-eu l= f=", "crontabs@prod-us l= f=",
		}},
		{"exclusions become field selectors for namespaced types", Scope{ExcludeNamespaces: []string{"kube-system", "prod-*"}, LabelSelector: "app"}, []string{
			"events@ l=app f=metadata.namespace!=kube-system,metadata.namespace!=prod-eu,metadata.namespace!=prod-us",
			"namespaces@ l=app f=",
			"pods@ l=app f=metadata.namespace!=kube-system,metadata.namespace!=prod-eu,metadata.namespace!=prod-us",
			"deployments@ l=app f=metadata.namespace!=kube-system,metadata.namespace!=prod-eu,metadata.namespace!=prod-us",
			"crontabs@ l=app f=metadata.namespace!=kube-system,metadata.namespace!=prod-eu,metadata.namespace!=prod-us",
		}},
		{"per-type selectors add to the global one", Scope{Namespaces: []string{"dev"}, LabelSelector: "team=a",
			PerResource: []TypeSelector{{Resources: []string{"deploy"}, LabelSelector: "tier=web", FieldSelector: "metadata.name=web"}}}, []string{
			"events@dev l=team=a f=", "pods@dev l=team=a f=", "deployments@dev l=team=a,tier=web f=metadata.name=web", "crontabs@dev l=team=a f=",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := planner(tt.scope).Plan(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := targetKeys(plan.Targets); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("targets:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestPlanStatuses(t *testing.T) {
	p := planner(Scope{Namespaces: []string{"dev"}}, "pods", "deployments", "events", "namespaces")
	p.Excluded = func(r Resource) (bool, string) { return r.Kind == "Event", "events are quiet by default" }
	plan, err := p.Plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range plan.Statuses {
		got[s.Resource.String()] = s.State
	}
	want := map[string]string{
		"pods": StateWatched, "deployments.apps": StateWatched,
		"events":                      StateWatched,  // named in resources: the default exclusion yields
		"namespaces":                  StateExcluded, // cluster-scoped with namespaces set
		"crontabs.stable.example.com": StateExcluded,
		"bindings":                    StateNotWatchable,
		"events.events.k8s.io":        StateNotWatchable,
		"selfsubjectaccessreviews.authorization.k8s.io": StateNotWatchable,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("statuses:\n got %v\nwant %v", got, want)
	}
}

func TestNamespaceGlobsWithoutListPermissionAreASelectionError(t *testing.T) {
	p := planner(Scope{Namespaces: []string{"prod-*"}})
	p.ListNamespaces = func(context.Context) ([]string, error) { return nil, errors.New("namespaces is forbidden") }
	_, err := p.Plan(context.Background())
	var se *SelectionError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "globs need permission to list namespaces") {
		t.Fatalf("err = %v", err)
	}
}

// manyNamespaces is a planner over a cluster with more namespaces matching
// team-* than are watched apart, and access granted by reviews.
func manyNamespaces(reviewed *[]string, clusterWide bool) *Planner {
	p := planner(Scope{Namespaces: []string{"team-*"}, ExcludeNamespaces: []string{"team-3"}}, "pods")
	p.ListNamespaces = func(context.Context) ([]string, error) {
		names := []string{"default", "kube-system"}
		for i := range namespacesApart + 5 {
			names = append(names, fmt.Sprintf("team-%d", i))
		}
		return names, nil
	}
	client := fake.NewClientset()
	client.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		review := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		attrs := review.Spec.ResourceAttributes
		*reviewed = append(*reviewed, attrs.Resource+"@"+attrs.Namespace)
		review.Status.Allowed = attrs.Resource == "pods" && (attrs.Namespace != "" || clusterWide)
		return true, review, nil
	})
	p.Access = NewAccessChecker(client.AuthorizationV1())
	return p
}

// TestManyNamespacesAreOneFilteredWatch: a glob matching more namespaces
// than are watched apart is one cluster-wide watch per type, keeping the
// matched namespaces' objects (those created later too) and not the
// excluded one's, checked with one access review per verb, not one per
// namespace.
func TestManyNamespacesAreOneFilteredWatch(t *testing.T) {
	var reviewed []string
	plan, err := manyNamespaces(&reviewed, true).Plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Targets) != 1 || plan.Targets[0].Namespace != "" || plan.Targets[0].Namespaces == "" {
		t.Fatalf("targets: %+v", plan.Targets)
	}
	keep := plan.Targets[0].Namespaces.Matcher()
	for ns, want := range map[string]bool{"team-0": true, "team-99-created-later": true, "team-3": false, "default": false} {
		if keep(ns) != want {
			t.Errorf("keeps %s: %v, want %v", ns, !want, want)
		}
	}
	if len(reviewed) > 4 {
		t.Errorf("%d access reviews for one type: %v", len(reviewed), reviewed)
	}
}

// TestManyNamespacesGrantedOneByOne: when the type may not be listed
// cluster-wide, the matched namespaces are watched one by one, as granted.
func TestManyNamespacesGrantedOneByOne(t *testing.T) {
	var reviewed []string
	plan, err := manyNamespaces(&reviewed, false).Plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Targets) != namespacesApart+4 {
		t.Fatalf("want a watch in each of the %d matched namespaces but team-3, got %q", namespacesApart+5, targetKeys(plan.Targets))
	}
	for _, target := range plan.Targets {
		if target.Namespace == "" || target.Namespace == "team-3" || target.Namespaces != "" {
			t.Errorf("target %+v", target)
		}
	}
	for _, s := range plan.Statuses {
		if s.Resource.GVR.Resource == "pods" && s.State != StateWatched {
			t.Errorf("pods: %s %s", s.State, s.Reason)
		}
	}
}

// A global field selector picks objects by name; the Events about them
// are named otherwise, so their watch keeps only its namespace terms.
func TestEventFactsKeepOnlyTheNamespaceOfAFieldSelector(t *testing.T) {
	p := planner(Scope{FieldSelector: "metadata.name=web,metadata.namespace!=dev"})
	p.EventFacts = true
	p.Excluded = func(r Resource) (bool, string) { return r.Kind == "Event", "facts only" }
	plan, err := p.Plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := targetKeys(plan.Targets)
	if want := "events@ l= f=metadata.namespace!=dev"; got[len(got)-1] != want {
		t.Fatalf("targets %q, want the Events' last: %q", got, want)
	}
	if want := "pods@ l= f=metadata.name=web,metadata.namespace!=dev"; !slices.Contains(got, want) {
		t.Fatalf("targets %q, want %q", got, want)
	}
}

// A target is narrowed (Events about objects it leaves out are not kept)
// by the user's selectors, not by TYPE/NAME arguments nor a namespace
// term.
func TestTargetsNarrowedByTheUsersSelectorsOnly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		scope   Scope
		objects []ObjectName
		want    bool
	}{
		{"no selector", Scope{}, nil, false},
		{"a namespace term", Scope{FieldSelector: "metadata.namespace!=dev"}, nil, false},
		{"a name", Scope{FieldSelector: "metadata.name=web"}, nil, true},
		{"a type's own field", Scope{FieldSelector: "spec.nodeName=n1"}, nil, true},
		{"a label selector", Scope{LabelSelector: "app=web"}, nil, true},
		{"pods/web named", Scope{}, []ObjectName{{Resource: "pods", Name: "web"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planner(tc.scope)
			p.Objects = tc.objects
			plan, err := p.Plan(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, target := range plan.Targets {
				if target.Resource.GVR.Resource == "pods" && target.Narrowed != tc.want {
					t.Errorf("pods@%s %q: narrowed %v, want %v", target.Namespace, target.FieldSelector, target.Narrowed, tc.want)
				}
			}
		})
	}
}

// Events read as facts carry no labels: the global label selector picks
// the objects, not the Events about them (the pipeline keeps those about
// the objects picked). A per-type selector naming Events still applies.
func TestEventFactsIgnoreTheGlobalLabelSelector(t *testing.T) {
	for _, tc := range []struct {
		name    string
		perType []TypeSelector
		events  string
	}{
		{"the global selector", nil, "events@ l= f="},
		{"a selector naming events", []TypeSelector{{Resources: []string{"events"}, LabelSelector: "kind=audit"}}, "events@ l=kind=audit f="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planner(Scope{LabelSelector: "app=web", PerResource: tc.perType})
			p.EventFacts = true
			p.Excluded = func(r Resource) (bool, string) { return r.Kind == "Event", "facts only" }
			plan, err := p.Plan(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"namespaces@ l=app=web f=", "pods@ l=app=web f=", "deployments@ l=app=web f=", "crontabs@ l=app=web f=", tc.events}
			if got := targetKeys(plan.Targets); !reflect.DeepEqual(got, want) {
				t.Fatalf("targets:\n got %q\nwant %q", got, want)
			}
		})
	}
}
