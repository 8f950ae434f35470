package history

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/kubediff/kubediff/pkg/journal"
	"github.com/kubediff/kubediff/pkg/record"
)

// Records that matched a rule come back by the rule's name or a glob,
// and by severity at least; records no rule matched do not.
func TestRecordsOfARuleOrASeverity(t *testing.T) {
	db := openDB(t)
	judged := func(e journal.Entry, severity string, rules ...string) journal.Entry {
		e.Change.Rules, e.Change.Severity = rules, severity
		return e
	}
	write(t, db, unlimited, t0,
		judged(entryOf("default", "", "a", 1), "warning", "image-changed"),
		entryOf("default", "a", "b", 2),
		judged(entryOf("default", "b", "c", 3), "critical", "rbac-admin-bound", "image-changed"),
		judged(entryOf("default", "c", "d", 4), "info", "rbac-verbs"))
	r := reader(db)
	versions := func(q Query) string {
		t.Helper()
		page, err := r.Records(q)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, raw := range page.Records {
			var c record.Change
			if err := json.Unmarshal(raw, &c); err != nil {
				t.Fatal(err)
			}
			got = append(got, c.ResourceVersion)
		}
		return fmt.Sprint(got)
	}
	for _, tc := range []struct {
		q    Query
		want string
	}{
		{Query{}, "[1 2 3 4]"},
		{Query{Rule: "image-changed"}, "[1 3]"},
		{Query{Rule: "rbac-*"}, "[3 4]"},
		{Query{Rule: "image"}, "[]"},
		{Query{Severity: "warning"}, "[1 3]"},
		{Query{Severity: "info"}, "[1 3 4]"},
		{Query{Rule: "rbac-*", Severity: "critical"}, "[3]"},
	} {
		if got := versions(tc.q); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.q, got, tc.want)
		}
	}
}
