package diff

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/record"
)

var (
	pods           = change.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true}
	deployments    = change.Resource{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment", Namespaced: true}
	nodes          = change.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Kind: "Node"}
	endpointSlices = change.Resource{GVR: schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}, Kind: "EndpointSlice", Namespaced: true}
)

func podJSON(meta, spec, status string) string {
	return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"ns","resourceVersion":"1"` + meta + `},"spec":{"containers":[{"name":"app","image":"nginx"}]` + spec + `},"status":` + status + `}`
}

const (
	ready    = `{"phase":"Running","conditions":[{"type":"Ready","status":"True","reason":""}],"containerStatuses":[{"name":"app","ready":true,"restartCount":0,"state":{"running":{"startedAt":"t1"}},"lastState":{}}]}`
	crashed  = `{"phase":"Running","conditions":[{"type":"Ready","status":"False","reason":"ContainersNotReady"}],"containerStatuses":[{"name":"app","ready":false,"restartCount":1,"state":{"waiting":{"reason":"CrashLoopBackOff"}},"lastState":{"terminated":{"exitCode":1,"reason":"Error"}}}]}`
	restored = `{"phase":"Running","conditions":[{"type":"Ready","status":"True","reason":""}],"containerStatuses":[{"name":"app","ready":true,"restartCount":1,"state":{"running":{"startedAt":"t2"}},"lastState":{"terminated":{"exitCode":1,"reason":"Error"}}}]}`
)

func TestWhatIsNews(t *testing.T) {
	d, err := New(Options{Rules: Rules{Defaults: AllDefaults}, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	deployment := func(status string) string {
		return `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"ns","resourceVersion":"1"},"spec":{"replicas":3},"status":` + status + `}`
	}
	tests := []struct {
		name     string
		resource change.Resource
		old, new string
		want     string // the record's changed fields; "" for no record
	}{
		{"a Pod starting up is not news", pods,
			podJSON("", "", `{"phase":"Pending"}`), podJSON("", `,"nodeName":"n1"`, ready), ""},
		{"a crash is: restart count, why it stopped, Ready lost", pods,
			podJSON("", "", ready), podJSON("", "", crashed),
			"status.conditions[0].status, status.containerStatuses[0].lastState.terminated, status.containerStatuses[0].restartCount"},
		{"coming back Ready after a crash is not", pods,
			podJSON("", "", crashed), podJSON("", "", restored), ""},
		{"a Pod failing is", pods,
			podJSON("", "", ready), podJSON("", "", `{"phase":"Failed","reason":"Evicted"}`), "status.phase, status.reason"},
		{"graceful deletion's marks are not (the deletion record follows)", pods,
			podJSON("", "", ready), podJSON(`,"deletionTimestamp":"t3","deletionGracePeriodSeconds":30`, "", ready), ""},
		{"a Pod's spec still is", pods,
			podJSON("", "", ready), strings.Replace(podJSON("", "", ready), `"image":"nginx"`, `"image":"nginx:2"`, 1), "spec.containers[0].image"},
		{"replica counters are not", deployments,
			deployment(`{"replicas":3,"readyReplicas":2,"observedGeneration":1}`), deployment(`{"replicas":3,"readyReplicas":3,"observedGeneration":2}`), ""},
		{"a condition with a new reason but the same status is not", deployments,
			deployment(`{"conditions":[{"type":"Progressing","status":"True","reason":"ReplicaSetUpdated"}]}`),
			deployment(`{"conditions":[{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable"}]}`), ""},
		{"a condition whose status changed is, with its reason", deployments,
			deployment(`{"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable"}]}`),
			deployment(`{"conditions":[{"type":"Available","status":"False","reason":"MinimumReplicasUnavailable"}]}`),
			"status.conditions[0].reason, status.conditions[0].status"},
		{"a node going NotReady is", nodes,
			`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","resourceVersion":"1"},"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}}`,
			`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","resourceVersion":"2"},"status":{"conditions":[{"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown"}]}}`,
			"status.conditions[0].reason, status.conditions[0].status"},
		{"endpoints following Pods are not", endpointSlices,
			`{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"web-x","namespace":"ns","resourceVersion":"1"},"endpoints":[]}`,
			`{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"web-x","namespace":"ns","resourceVersion":"2"},"endpoints":[{"addresses":["10.0.0.5"]}]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := d.Diff(change.Event{Type: change.Updated, Resource: tt.resource, Old: obj(t, tt.old), New: obj(t, tt.new)})
			got := ""
			if ok {
				got = c.Changed
			}
			if got != tt.want {
				t.Fatalf("changed = %q, want %q (changes %+v)", got, tt.want, c.Changes)
			}
		})
	}
	// Each rule can be turned off: everything then shows.
	all, _ := New(Options{Now: fixedNow})
	if _, ok := all.Diff(change.Event{Type: change.Updated, Resource: pods, Old: obj(t, podJSON("", "", `{"phase":"Pending"}`)), New: obj(t, podJSON("", "", ready))}); !ok {
		t.Fatal("with the default rules off, a Pod starting up must be reported")
	}
}

// A CRD's installing steps and deletion marks are quiet; its spec and a
// condition going wrong are news.
func TestCRDNews(t *testing.T) {
	established := func(status, reason string) map[string]any {
		return map[string]any{"type": "Established", "status": status, "reason": reason}
	}
	newObj := map[string]any{"status": map[string]any{"conditions": []any{established("False", "Conflict")}}}
	u := &updateView{new: newObj}
	for _, tc := range []struct {
		fc   record.FieldChange
		news bool
	}{
		{record.FieldChange{Op: record.OpReplace, Path: "/status/conditions", To: []any{established("False", "Installing")}}, false},
		{record.FieldChange{Op: record.OpReplace, Path: "/status/conditions", To: []any{established("True", "InitialNamesAccepted")}}, false},
		{record.FieldChange{Op: record.OpAdd, Path: "/status/acceptedNames", To: map[string]any{"kind": "Widget"}}, false},
		{record.FieldChange{Op: record.OpAdd, Path: "/metadata/deletionTimestamp", To: "2026-11-23T14:00:00Z"}, false},
		{record.FieldChange{Op: record.OpAdd, Path: "/status/conditions/1", To: map[string]any{"type": "Terminating", "status": "True"}}, false},
		{record.FieldChange{Op: record.OpReplace, Path: "/status/conditions/0/status", From: "True", To: "False"}, true},
		{record.FieldChange{Op: record.OpReplace, Path: "/spec/versions/0/served", From: true, To: false}, true},
		{record.FieldChange{Op: record.OpReplace, Path: "/status/conditions", To: []any{established("False", "Conflict")}}, true},
	} {
		if got := crdNews(u, tc.fc); got != tc.news {
			t.Errorf("%s %s → %v: news %v, want %v", tc.fc.Op, tc.fc.Path, tc.fc.To, got, tc.news)
		}
	}
}
