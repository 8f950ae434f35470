package discovery

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sdiscovery "k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

var watchable = metav1.Verbs{"get", "list", "watch", "create", "update", "delete"}

func lists() []*metav1.APIResourceList {
	return []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Kind: "Pod", Namespaced: true, SingularName: "pod", ShortNames: []string{"po"}, Verbs: watchable},
			{Name: "pods/log", Kind: "Pod", Namespaced: true, Verbs: metav1.Verbs{"get"}},
			{Name: "pods/status", Kind: "Pod", Namespaced: true, Verbs: watchable},
			{Name: "events", Kind: "Event", Namespaced: true, SingularName: "event", ShortNames: []string{"ev"}, Verbs: watchable},
			{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: metav1.Verbs{"create"}},
			{Name: "namespaces", Kind: "Namespace", SingularName: "namespace", ShortNames: []string{"ns"}, Verbs: watchable},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment", Namespaced: true, SingularName: "deployment", ShortNames: []string{"deploy"}, Verbs: watchable},
			{Name: "deployments/scale", Kind: "Scale", Namespaced: true, Verbs: watchable},
		}},
		{GroupVersion: "events.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "events", Kind: "Event", Namespaced: true, SingularName: "event", ShortNames: []string{"ev"}, Verbs: watchable},
		}},
		{GroupVersion: "authorization.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "selfsubjectaccessreviews", Kind: "SelfSubjectAccessReview", Verbs: metav1.Verbs{"create"}},
		}},
		{GroupVersion: "stable.example.com/v1", APIResources: []metav1.APIResource{
			{Name: "crontabs", Kind: "CronTab", Namespaced: true, SingularName: "crontab", ShortNames: []string{"ct"}, Verbs: watchable},
		}},
	}
}

func names(rs []Resource) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.GVR.GroupVersion().String()+"/"+r.GVR.Resource)
	}
	return out
}

func TestWatchableKeepsListWatchTypesOnce(t *testing.T) {
	got := names(Watchable(lists()))
	want := []string{"v1/events", "v1/namespaces", "v1/pods", "apps/v1/deployments", "stable.example.com/v1/crontabs"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Watchable = %v, want %v", got, want)
	}
}

func TestWatchableKeepsEventsK8sIoWithoutCoreEvents(t *testing.T) {
	var only []*metav1.APIResourceList
	for _, l := range lists() {
		if l.GroupVersion == "events.k8s.io/v1" {
			only = append(only, l)
		}
	}
	if got := names(Watchable(only)); !reflect.DeepEqual(got, []string{"events.k8s.io/v1/events"}) {
		t.Fatalf("Watchable = %v", got)
	}
}

func TestSelect(t *testing.T) {
	all := Watchable(lists())
	tests := []struct {
		name             string
		include, exclude []string
		want             []string
		wantErr          string
	}{
		{name: "everything by default", want: names(all)},
		{name: "plural", include: []string{"pods"}, want: []string{"v1/pods"}},
		{name: "kind, any case", include: []string{"Deployment"}, want: []string{"apps/v1/deployments"}},
		{name: "short name", include: []string{"deploy", "ns"}, want: []string{"v1/namespaces", "apps/v1/deployments"}},
		{name: "singular", include: []string{"crontab"}, want: []string{"stable.example.com/v1/crontabs"}},
		{name: "resource.group", include: []string{"crontabs.stable.example.com"}, want: []string{"stable.example.com/v1/crontabs"}},
		{name: "resource.version.group", include: []string{"deployments.v1.apps"}, want: []string{"apps/v1/deployments"}},
		{name: "core with version", include: []string{"pods.v1"}, want: []string{"v1/pods"}},
		{name: "exclude", exclude: []string{"events", "ns", "ct"}, want: []string{"v1/pods", "apps/v1/deployments"}},
		{name: "include and exclude", include: []string{"pods", "deploy"}, exclude: []string{"deployments.apps"}, want: []string{"v1/pods"}},
		{name: "wrong group", include: []string{"deployments.batch"}, wantErr: `resources: no resource type named "deployments.batch"`},
		{name: "unknown include", include: []string{"pods", "podz"}, wantErr: `resources: no resource type named "podz" on this server`},
		{name: "unknown exclude", exclude: []string{"nope"}, wantErr: `excludeResources: no resource type named "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(all, tt.include, tt.exclude)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(names(got), tt.want) {
				t.Fatalf("Select = %v, want %v", names(got), tt.want)
			}
		})
	}
}

// partialDiscovery answers like a server with an aggregated API down.
type partialDiscovery struct {
	*fakediscovery.FakeDiscovery
	err error
}

func (p partialDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return lists(), p.err
}

func TestResourcesReportsUnavailableGroupsButKeepsTheRest(t *testing.T) {
	groupErr := &k8sdiscovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
		{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("the server is currently unable to handle the request"),
	}}
	d := New(partialDiscovery{&fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}, groupErr})
	got, err := d.Resources(context.Background())
	if len(got.Watchable) != 5 {
		t.Fatalf("got %d resources, want the 5 that were discovered", len(got.Watchable))
	}
	var reasons []string
	for _, s := range got.NotWatchable {
		reasons = append(reasons, s.Resource.String()+": "+s.Reason)
	}
	want := []string{
		"bindings: no list and watch verbs",
		"events.events.k8s.io: same objects as events, which is watched instead",
		"selfsubjectaccessreviews.authorization.k8s.io: no list and watch verbs",
	}
	if !reflect.DeepEqual(reasons, want) {
		t.Errorf("not watchable = %q, want %q", reasons, want)
	}
	if err == nil || !strings.Contains(err.Error(), "API group metrics.k8s.io/v1beta1 is unavailable") {
		t.Fatalf("error = %v, want it to name the unavailable group", err)
	}
}

func TestResourcesFailsWhenNothingIsDiscovered(t *testing.T) {
	d := New(failingDiscovery{&fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}})
	got, err := d.Resources(context.Background())
	if got.Watchable != nil || err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Resources = %v, %v; want nil and the cause", got, err)
	}
}

type failingDiscovery struct{ *fakediscovery.FakeDiscovery }

func (failingDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
}

// A CRD re-applied unchanged, or its status updated, causes no
// rediscovery; a spec change (a new generation) or a deletion does; any
// change of an APIService may (its availability is its status).
func TestMayChangeTypes(t *testing.T) {
	meta := func(gen int64, deleting bool) *metav1.PartialObjectMetadata {
		m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Generation: gen, ResourceVersion: "1",
			CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour))}}
		if deleting {
			now := metav1.Now()
			m.DeletionTimestamp = &now
		}
		return m
	}
	fresh := func(m *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
		m.CreationTimestamp = metav1.Now()
		return m
	}
	crd, apiService := typeSources[0], typeSources[1]
	for _, tc := range []struct {
		r        Resource
		old, new *metav1.PartialObjectMetadata
		want     bool
	}{
		{crd, meta(1, false), meta(1, false), false},
		{crd, meta(1, false), meta(2, false), true},
		{crd, meta(1, false), meta(1, true), true},
		{apiService, meta(1, false), meta(1, false), true},
		{crd, meta(1, false), fresh(meta(1, false)), true}, // a new CRD's status steps
	} {
		if got := mayChangeTypes(tc.r, tc.old, tc.new); got != tc.want {
			t.Errorf("%s %d→%d deleting %v: %v, want %v", tc.r.Kind, tc.old.Generation, tc.new.Generation, tc.new.DeletionTimestamp != nil, got, tc.want)
		}
	}
}

func TestEventsAreReadThroughEventsK8sIoElseCore(t *testing.T) {
	if got := eventsAPI(lists()); got == nil || got.GVR.Group != "events.k8s.io" {
		t.Errorf("with both APIs: %v, want events.k8s.io/v1", got)
	}
	var core []*metav1.APIResourceList
	for _, l := range lists() {
		if l.GroupVersion != "events.k8s.io/v1" {
			core = append(core, l)
		}
	}
	if got := eventsAPI(core); got == nil || got.GVR.Group != "" || got.GVR.Version != "v1" {
		t.Errorf("with core v1 alone: %v, want v1 events", got)
	}
}
