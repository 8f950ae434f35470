package rbacwords

import (
	"fmt"
	"slices"
	"testing"
)

// bigRole is a ClusterRole of n rules, each on three resources of its
// own API group with four verbs: 12 permissions a rule.
func bigRole(b testing.TB, n int) map[string]any {
	rules := make([]rule, n)
	for i := range rules {
		group := fmt.Sprintf("g%d.example.com", i)
		rules[i] = rule{APIGroups: []string{group}, Resources: []string{"widgets", "widgets/status", "gadgets"}, Verbs: []string{"get", "list", "watch", "create"}}
	}
	return role(b, "ClusterRole", "", "big", rules...)
}

// BenchmarkDescribeBigRole is an update of a 500-rule ClusterRole: its
// rules reversed, ten of them gaining a verb and one lost. Describe runs
// on the watch's goroutine for every RBAC change, so its cost must stay
// small beside the diff's.
func BenchmarkDescribeBigRole(b *testing.B) {
	old := bigRole(b, 500)
	rules := slices.Clone(old["rules"].([]any))
	slices.Reverse(rules)
	for i := range 10 {
		r := with(rules[i].(map[string]any), "verbs", []any{"get", "list", "watch", "create", "delete"})
		rules[i] = r
	}
	rules = rules[:len(rules)-1]
	new := with(old, "rules", rules)
	if got := Describe("ClusterRole", old, new); len(got) != MaxSentences+1 {
		b.Fatalf("want ten sentences gained, one lost, got %q", got)
	}
	b.ReportAllocs()
	for b.Loop() {
		Describe("ClusterRole", old, new)
	}
}
