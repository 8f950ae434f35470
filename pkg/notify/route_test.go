package notify

import (
	"testing"

	"github.com/kubediff/kubediff/pkg/record"
)

func TestMatch(t *testing.T) {
	deploy := record.Change{Type: "updated", APIVersion: "apps/v1", Resource: "deployments", Kind: "Deployment", Namespace: "prod-eu", Name: "web", Labels: map[string]string{"team": "a"}}
	node := record.Change{Type: "updated", APIVersion: "v1", Resource: "nodes", Kind: "Node", Name: "n1"}
	inProd := node
	inProd.Cluster = &record.Cluster{Name: "prod-eu"}
	judged := deploy
	judged.Rules, judged.Severity = []string{"image-changed", "prod-images"}, "warning"
	critical := judged
	critical.Severity = "critical"
	// The CLI parses label selectors; Match only calls the result.
	sel := func(l map[string]string) bool { return l["team"] == "a" || l["team"] == "b" }
	tests := []struct {
		name  string
		match Match
		c     record.Change
		want  bool
	}{
		{"empty matches all", Match{}, node, true},
		{"resource", Match{Resources: []GroupResource{{Group: "apps", Resource: "deployments"}}}, deploy, true},
		{"resource of another group", Match{Resources: []GroupResource{{Group: "extensions", Resource: "deployments"}}}, deploy, false},
		{"namespace glob", Match{Namespaces: []string{"prod-*"}}, deploy, true},
		{"namespace glob misses", Match{Namespaces: []string{"dev-*"}}, deploy, false},
		{"cluster-scoped objects fail a namespace match", Match{Namespaces: []string{"*"}}, node, false},
		{"type", Match{Types: []string{"deleted"}}, deploy, false},
		{"labels", Match{Labels: sel}, deploy, true},
		{"labels miss", Match{Labels: sel}, node, false},
		{"cluster glob", Match{Clusters: []string{"prod-*"}}, inProd, true},
		{"cluster glob misses", Match{Clusters: []string{"dev-*"}}, inProd, false},
		{"a record naming no cluster fails a cluster match", Match{Clusters: []string{"*"}}, deploy, false},
		{"a rule by name", Match{Rules: []string{"image-changed"}}, judged, true},
		{"rules by glob", Match{Rules: []string{"prod-*"}}, judged, true},
		{"a rule the record did not match", Match{Rules: []string{"replicas-*"}}, judged, false},
		{"a record no rule matched fails a rules match", Match{Rules: []string{"*"}}, deploy, false},
		{"severity at least warning: warning", Match{Severity: "warning"}, judged, true},
		{"severity at least warning: critical", Match{Severity: "warning"}, critical, true},
		{"severity at least critical: warning", Match{Severity: "critical"}, judged, false},
		{"severity at least info: no rule matched", Match{Severity: "info"}, deploy, false},
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
	r.Dispatch(record.Change{Type: "updated", Name: "u"})
	r.Dispatch(record.Change{Type: "deleted", Name: "d"})
	for _, q := range []Queue{qa, qd} {
		q.Close()
		q.Run(t.Context())
	}
	if len(all.got()) != 2 || len(deletes.got()) != 1 || deletes.got()[0] != "d" {
		t.Fatalf("all got %v, deletes got %v", all.got(), deletes.got())
	}
}
