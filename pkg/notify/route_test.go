package notify

import (
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubediff/kubediff/pkg/diff"
)

func TestMatch(t *testing.T) {
	deploy := diff.Change{Type: "updated", APIVersion: "apps/v1", Resource: "deployments", Kind: "Deployment", Namespace: "prod-eu", Name: "web", Labels: map[string]string{"team": "a"}}
	node := diff.Change{Type: "updated", APIVersion: "v1", Resource: "nodes", Kind: "Node", Name: "n1"}
	sel, _ := labels.Parse("team in (a,b)")
	tests := []struct {
		name  string
		match Match
		c     diff.Change
		want  bool
	}{
		{"empty matches all", Match{}, node, true},
		{"resource", Match{Resources: []schema.GroupResource{{Group: "apps", Resource: "deployments"}}}, deploy, true},
		{"resource of another group", Match{Resources: []schema.GroupResource{{Group: "extensions", Resource: "deployments"}}}, deploy, false},
		{"namespace glob", Match{Namespaces: []string{"prod-*"}}, deploy, true},
		{"namespace glob misses", Match{Namespaces: []string{"dev-*"}}, deploy, false},
		{"cluster-scoped objects fail a namespace match", Match{Namespaces: []string{"*"}}, node, false},
		{"type", Match{Types: []string{"deleted"}}, deploy, false},
		{"labels", Match{Labels: sel}, deploy, true},
		{"labels miss", Match{Labels: sel}, node, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.match.Matches(tt.c); got != tt.want {
				t.Fatalf("Matches = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRouterSendsToEveryMatchingSink(t *testing.T) {
	all, deletes := &recorder{}, &recorder{}
	qa := NewQueue("all", all, QueueOptions{Size: 10, Log: quiet})
	qd := NewQueue("deletes", deletes, QueueOptions{Size: 10, Log: quiet})
	r := Router{{Queue: qa}, {Queue: qd, Match: Match{Types: []string{"deleted"}}}}
	r.Dispatch(diff.Change{Type: "updated", Name: "u"})
	r.Dispatch(diff.Change{Type: "deleted", Name: "d"})
	for _, q := range []*Queue{qa, qd} {
		q.Close()
		q.Run(t.Context())
	}
	if len(all.got()) != 2 || len(deletes.got()) != 1 || deletes.got()[0] != "d" {
		t.Fatalf("all got %v, deletes got %v", all.got(), deletes.got())
	}
}
